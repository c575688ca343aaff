#pragma once

// listener_session: one per scale set. Owns the Actions Service message session (create; a 409
// is retried a bounded number of times by the client; a 404 gets a new session; deleted on
// shutdown), the long-poll loop with X-ScaleSetMaxCapacity, acks and job acquisition; forwards
// statistics and job transitions to the runner provisioner.
//
// Capacity arrives from the capacity monitor through a coalescing slot (only the newest value
// matters). When it drops below the value the in-flight poll carried, the poll is cancelled and
// re-issued at once with the new value: the service reads the capacity only when a poll starts,
// and would otherwise keep assigning by the old value for up to 50 s.

#include <caf/actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "adapters/github/actions_client.hpp"
#include "runtime/mailbox/coalescing_slot.hpp"

namespace headroom::actors {

struct listener_options {
  int64_t scale_set_id = 0;
  std::string owner;              // the session's owner name: the Pod's or the host's name
  int64_t initial_capacity = 0;   // advertised until the capacity monitor says otherwise
  std::chrono::milliseconds backoff_initial{1'000}, backoff_max{30'000};  // after a failed call
};

struct listener_handle {
  caf::actor actor;
  // set_max_capacity: offer the newest capacity from any thread.
  std::shared_ptr<runtime::coalescing_slot<int64_t>> capacity;
};

// `provisioner` receives msg::scale_set_update after every message (may be empty).
listener_handle spawn_listener_session(caf::actor_system& sys, std::shared_ptr<github::actions_client> client,
                                       caf::actor provisioner, listener_options opts);

}  // namespace headroom::actors
