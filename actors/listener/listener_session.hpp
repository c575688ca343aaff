#pragma once

// listener_session: one per scale set. Owns the Actions Service message session (create; a 409
// is retried a bounded number of times by the client; a 404 gets a new session; deleted on
// shutdown), the long-poll loop with X-ScaleSetMaxCapacity, acks and job acquisition; forwards
// statistics and job transitions to the runner provisioner.
//
// Capacity arrives from the capacity monitor through a coalescing slot (only the newest value
// matters). When it differs from the value the in-flight poll carried, the poll is cancelled and
// re-issued at once with the new value: the service reads the capacity only when a poll starts,
// and would otherwise keep assigning by an old, higher value (or leave placed room idle under an
// old, lower one) for up to 50 s.

#include <caf/actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/github/actions_client.hpp"
#include "messages/listener.hpp"
#include "runtime/mailbox/coalescing_slot.hpp"

namespace headroom::actors {

struct listener_options {
  // The scale set: by id, or (id 0) by name in a runner group, created with `labels` (and its name
  // as a label) when it does not exist yet.
  int64_t scale_set_id = 0;
  std::string scale_set_name, runner_group = "default";
  std::vector<std::string> labels;
  std::function<void(int64_t id)> on_resolved;      // once the scale set is known
  std::function<void(int64_t capacity)> on_poll;    // each poll as it starts, with the capacity it carries
  std::string owner;              // the session's owner name: the Pod's or the host's name
  int64_t initial_capacity = 0;   // advertised until the capacity monitor says otherwise
  bool repoll_on_change = true;   // false: a new capacity waits for the next poll (the stock behaviour)
  std::chrono::milliseconds backoff_initial{1'000}, backoff_max{30'000};  // after a failed call
};

struct listener_handle {
  caf::actor actor;
  // set_max_capacity: offer the newest capacity from any thread.
  std::shared_ptr<runtime::coalescing_slot<int64_t>> capacity;
};

// `publish` receives msg::scale_set_update after every message (runs in the actor).
using update_sink = std::function<void(const msg::scale_set_update&)>;
listener_handle spawn_listener_session(caf::actor_system& sys, std::shared_ptr<github::actions_client> client,
                                       update_sink publish, listener_options opts);
// The same, with the updates sent to an actor.
listener_handle spawn_listener_session(caf::actor_system& sys, std::shared_ptr<github::actions_client> client,
                                       caf::actor provisioner, listener_options opts);

}  // namespace headroom::actors
