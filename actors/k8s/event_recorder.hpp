#pragma once

// event_recorder: the one writer of Kubernetes Events (events.k8s.io/v1) in a process. Actors send
// it msg::k8s_event (through its relay, see tell_event); it deduplicates repeats into series and
// rate-limits per object (adapters/k8s/events.hpp), creates the Events with a bounded number of
// writes in flight, and writes each changed series' count once per flush interval. Events are
// best effort: what cannot be written is counted and logged at debug, never retried forever, and
// never holds up the actor that reported it.

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "adapters/k8s/events.hpp"
#include "messages/k8s.hpp"

namespace headroom::k8s {
class client;
}

namespace headroom::actors {

struct event_recorder_options {
  k8s::client* kube = nullptr;
  std::string controller = "headroom.dev/headroom";  // reportingController
  std::string instance;                              // reportingInstance: the Pod's name, or the host's
  std::function<double()> wall_clock;                // seconds since the epoch
  k8s::event_book::options book;
  std::chrono::milliseconds flush_interval{30'000};  // series counts are written this often
  size_t max_in_flight = 8;                          // creates and series writes
  size_t max_pending = 512;                          // creates waiting for a slot; newer ones are dropped
  // created, series, rate_limited, queue_full, failed (a create or series write the API refused)
  std::function<void(const char* outcome)> counted;
};

// Where an actor sends the Events it reports: the recorder (its relay), or an actor that forwards
// them to it (a scale set's monitor and status take a pair's Events).
using event_sink = caf::typed_actor<caf::reacts_to<msg::k8s_event>>;

event_sink spawn_event_recorder(caf::actor_system& sys, std::shared_ptr<const event_recorder_options> opts);

// Sends `e` to the recorder (its relay); nothing when there is none (no cluster).
void tell_event(const event_sink& recorder, msg::k8s_event e);

}  // namespace headroom::actors
