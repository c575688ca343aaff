#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "runtime/config.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::runtime {

// Scheduler threads and throughput from our config.
void configure_actor_system(caf::actor_system_config& caf_cfg, const config& cfg);

class metrics;
class readiness;

// What the agent runs, decided by the layer above the runtime (actors/agent): the root
// supervisor's children after `http`, the services they use (kept alive until the actor system is
// gone), and what must happen first on shutdown (e.g. releasing the leader Lease).
struct agent_plan {
  std::vector<child_spec> children;
  std::vector<caf::actor> relays;  // stable addresses of the children (runtime/relay.hpp), owned by the root
  std::shared_ptr<void> services;
  std::function<void()> before_stop;
};
// Why the agent could not start, and the exit code: 1, or 2 when what is wrong is the setup itself
// (a database migrated by a newer headroom), like an invalid configuration.
struct start_failure {
  start_failure(std::string m, int code = 1) : message(std::move(m)), exit_code(code) {}  // NOLINT: from a message
  std::string message;
  int exit_code = 1;
};
using plan_builder =
    std::function<std::variant<agent_plan, start_failure>(const config&, caf::actor_system&, metrics&, readiness&)>;

// Runs the agent until SIGTERM/SIGINT (exit code 0 after an orderly stop) or until the root
// supervisor gives up (exit code 1). SIGTERM and SIGINT must already be blocked in the calling
// thread (see block_shutdown_signals), so every thread the runtime starts inherits the mask and
// only the signal thread receives them.
int run_agent(const config& cfg, const plan_builder& plan = {});

void block_shutdown_signals();

}  // namespace headroom::runtime
