#pragma once

#include <caf/actor_system_config.hpp>

#include "runtime/config.hpp"

namespace headroom::runtime {

// Scheduler threads and throughput from our config.
void configure_actor_system(caf::actor_system_config& caf_cfg, const config& cfg);

// Runs the agent until SIGTERM/SIGINT (exit code 0 after an orderly stop) or until the root
// supervisor gives up (exit code 1). SIGTERM and SIGINT must already be blocked in the calling
// thread (see block_shutdown_signals), so every thread the runtime starts inherits the mask and
// only the signal thread receives them.
int run_agent(const config& cfg);

void block_shutdown_signals();

}  // namespace headroom::runtime
