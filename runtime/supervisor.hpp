#pragma once

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "runtime/messages.hpp"
#include "runtime/restart_policy.hpp"

namespace headroom::runtime {

class supervision_metrics;
class readiness;

// A typed handle as the wiring and the supervisor hold it: they start, watch and stop actors
// whatever their contract, and never send them a message of one.
template <class Handle>
caf::actor untyped(const Handle& h) {
  return caf::actor_cast<caf::actor>(h);
}

struct supervisor_options {
  std::string name;
  restart_policy::options restart;
  std::chrono::milliseconds stop_deadline{10'000};  // per child, during an orderly stop
  supervision_metrics* metrics = nullptr;            // optional; must outlive the supervisor
  readiness* ready = nullptr;                        // optional; reports "supervisor/<name>"
  uint64_t jitter_seed = 0;                          // 0: random
  // Children independent of one another (one per scale set): an orderly stop asks them all at
  // once, each within `stop_deadline`, not one after the other (1,000 scale sets deleting their
  // sessions in turn took minutes, and the deadline killed them).
  bool parallel_stop = false;
};

// Whether a supervisor killed a child at its stop deadline in this process: its own children may
// still run then (a kill does not reach them), so main must not tear down what they use.
bool a_child_was_killed();
void note_child_killed();  // for a kill outside a supervisor (the leadership gate's)

// A supervisor starts its children in order and monitors them.
//
// - A child that exits abnormally is restarted after its restart_policy's backoff. A child that
//   exits more than `max_restarts` times within the window makes the supervisor give up: it stops
//   its other children and exits with an error, so *its* supervisor sees an abnormal exit.
// - An exit message to the supervisor (SIGTERM reaches the root this way, and a parent's stop
//   reaches nested supervisors the same way) stops the children one at a time in reverse start
//   order (all at once with `parallel_stop`), each with `stop_deadline` before it is killed, then
//   the supervisor exits with the reason it was given.
// - `get_atom` answers with a msg::supervisor_status.
// - A child_spec message adds a child while the supervisor runs (answering false when a running
//   child has its name); (stop_child_atom, name) stops one child for good, in order and within
//   `stop_deadline`, answering once it is down. The others never notice either.
//
// Only exit reasons leave a child: supervisors keep no state a restart could not rebuild.
//
// The supervisor holds its children untyped (it starts, monitors and stops them, whatever their
// contract, and sends them no message of one); its own contract: its status, and the test-only
// fault hook (runtime/fault_hooks.hpp), which answers how many children it failed.
using supervisor_actor = caf::typed_actor<caf::replies_to<caf::get_atom>::with<msg::supervisor_status>,
                                          caf::replies_to<child_spec>::with<bool>,
                                          caf::replies_to<msg::stop_child_atom, std::string>::with<bool>,
                                          caf::replies_to<msg::fault_atom, std::string>::with<int64_t>>;

supervisor_actor spawn_supervisor(caf::actor_system& sys, supervisor_options opts, std::vector<child_spec> children);

// Options for a supervisor named `name` with the configured restart policy and stop deadline.
struct config;
class metrics;
supervisor_options supervisor_options_from(const config& cfg, std::string name, metrics* m, readiness* ready);

// A nested supervisor as a child of another one.
child_spec supervisor_child(supervisor_options opts, std::vector<child_spec> children);

// A short, label-friendly name for an exit reason ("normal", "user_shutdown", "kill", …).
std::string exit_reason_label(const caf::actor_system& sys, const caf::error& reason);
// What an exit reason says beyond its label (the message an actor quit with; "" when none), so a
// child's exit names its cause in the supervisor's log.
std::string exit_reason_detail(const caf::error& reason);

}  // namespace headroom::runtime
