#pragma once

// Test-only fault injection for the chaos suite (tests/chaos): makes a supervised actor fail as if
// it had crashed, so a test can check that its supervisor restarts it, that its state is rebuilt
// from the cluster, and that the escalation rule holds when it keeps failing.
//
// Off unless the process starts with HEADROOM_TEST_FAULTS=1 in its environment (the Helm chart
// and the image never set it). When on:
//   - a fault broker actor is registered in the actor system's registry;
//   - every supervisor joins it at start;
//   - POST /debug/fault?child=NAME on the HTTP endpoint kills (exit reason `kill`: no handler
//     runs, exactly like a crash) every running child of that name in every supervisor, and
//     answers how many it hit. Each injection is logged as a warning.

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>

#include <cstdint>
#include <string>

#include "runtime/supervisor.hpp"

namespace headroom::runtime {

// HEADROOM_TEST_FAULTS=1 at start-up (read once).
bool fault_hooks_enabled();

// The broker: a supervisor joins it; (fault, child name) fails that child in every supervisor
// that has one, answering how many were hit.
using fault_broker_actor = caf::typed_actor<caf::reacts_to<msg::fault_atom, supervisor_actor>,
                                            caf::replies_to<msg::fault_atom, std::string>::with<int64_t>>;

// Spawns the broker and registers it; an invalid handle when the hooks are off.
fault_broker_actor spawn_fault_broker(caf::actor_system& sys);

// Unregisters and stops the broker (a no-op for an invalid handle).
void stop_fault_broker(caf::actor_system& sys, const fault_broker_actor& broker);

// A supervisor joins the broker (a no-op when the hooks are off or no broker runs).
void join_fault_broker(caf::local_actor* supervisor);

// From any thread: fails every running child named `child`; the number hit, or -1 when the hooks
// are off or the broker did not answer within 2 s.
int64_t inject_fault(caf::actor_system& sys, const std::string& child);

}  // namespace headroom::runtime
