#pragma once

#include <map>
#include <string>

#include "app/settings.hpp"
#include "runtime/clock.hpp"
#include "runtime/lifecycle.hpp"

namespace headroom::app {

// The agent's actor tree beyond `http`, for this configuration:
//
//   root ── http
//        └─ leadership_gate ── acting (supervisor of everything that writes to the cluster)
//
// With a cluster (kubeconfig or in-cluster service account), a Lease elects one headroom process
// per cluster and only it runs `acting`; SIGTERM releases the Lease first so a standby takes
// over at its next retry. Without a cluster, or with leaderElection.enabled false, `acting` runs
// directly. Each registered mode (modes/, app/registry.cpp) adds its own children: those every
// replica runs under the root, the rest under `acting`.
// Prepares each enabled mode of `configured` (the registry's order) and hangs its children in the
// tree: every_replica() under the root, leader_only() under `acting`. `env` holds the credentials.
std::variant<runtime::agent_plan, runtime::start_failure> build_agent(const runtime::config& cfg, settings& configured, caf::actor_system& sys,
                                                           runtime::metrics& m, runtime::readiness& ready,
                                                           const std::map<std::string, std::string>& env,
                                                           const runtime::clock& clock);

// The static actor tree of every registered mode, as docs/architecture.md shows it.
std::string actor_tree(const settings& configured);

}  // namespace headroom::app
