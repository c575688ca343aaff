#pragma once

#include "app/settings.hpp"
#include "runtime/app.hpp"

namespace headroom::app {

// The agent's actor tree beyond `http`, for this configuration:
//
//   root ── http
//        └─ leadership_gate ── acting (supervisor of everything that writes to the cluster)
//
// With a cluster (kubeconfig or in-cluster service account), a Lease elects one headroom process
// per cluster and only it runs `acting`; SIGTERM releases the Lease first so a standby takes
// over at its next retry. Without a cluster, or with leaderElection.enabled false, `acting` runs
// directly. Later work adds the scale-set and BigFleet supervisors under `acting`.
std::variant<runtime::agent_plan, runtime::start_failure> build_agent(const runtime::config& cfg, const settings& modes, caf::actor_system& sys,
                                                           runtime::metrics& m, runtime::readiness& ready);

}  // namespace headroom::app
