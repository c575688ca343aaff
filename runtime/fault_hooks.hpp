#pragma once

// Test-only fault injection for the chaos suite (tests/chaos): makes a supervised actor fail as if
// it had crashed, so a test can check that its supervisor restarts it, that its state is rebuilt
// from the cluster, and that the escalation rule holds when it keeps failing.
//
// Only the test build of the program carries it: `headroom-faults` links runtime/fault_hooks.cpp;
// `headroom` (the program the image ships) links runtime/fault_hooks_off.cpp, where every function
// below does nothing, so no route, broker or switch of it exists there. In `headroom-faults` the
// hooks are off unless the process starts with HEADROOM_TEST_FAULTS=1. When on:
//   - a fault broker actor is registered in the actor system's registry;
//   - every supervisor joins it at start;
//   - POST /debug/fault?child=NAME on the HTTP endpoint kills (exit reason `kill`: no handler
//     runs, exactly like a crash) every running child of that name in every supervisor, and
//     answers how many it hit. Each injection is logged as a warning.

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/supervisor.hpp"
#include "runtime/web_server.hpp"

namespace headroom::runtime {

// HEADROOM_TEST_FAULTS=1 at start-up (read once) in a program that carries the hooks.
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

// POST /debug/fault?child=NAME: fails every running child of that name, answering the number hit
// (503 and -1 when the broker did not answer within 2 s). Nothing when the hooks are off.
std::optional<web_route> fault_route(caf::actor_system& sys);

}  // namespace headroom::runtime
