#pragma once

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/actor_system.hpp>

#include <chrono>

#include "messages/type_ids.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::actors {

// Runs `acting` — the subtree of actors that write to the cluster — only while this process holds
// the leader Lease. msg::leadership{true} starts it; {false} stops it at once (exit
// user_shutdown, kill after `stop_deadline`), so of two headroom processes only one acts.
// If the acting subtree dies abnormally while leading, the gate exits with that reason and its own
// supervisor decides (restart with backoff, or escalate). `get_atom` answers whether the acting
// subtree runs. An exit message stops the subtree first, then the gate.
using leadership_gate_actor =
    caf::typed_actor<caf::reacts_to<msg::leadership>, caf::replies_to<caf::get_atom>::with<bool>>;

leadership_gate_actor spawn_leadership_gate(caf::actor_system& sys, runtime::child_spec acting,
                                            std::chrono::milliseconds stop_deadline = std::chrono::seconds(10));

}  // namespace headroom::actors
