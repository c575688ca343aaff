// The fault hooks as the program the image ships has them: none (runtime/fault_hooks.hpp). Linked
// into `headroom`; `headroom-faults`, the chaos suite's build, links runtime/fault_hooks.cpp
// instead. Each function here defines exactly what that file does, so the linker never takes both.

#include <cstdlib>
#include <cstring>

#include "runtime/fault_hooks.hpp"
#include "runtime/log.hpp"

namespace headroom::runtime {

bool fault_hooks_enabled() { return false; }

fault_broker_actor spawn_fault_broker(caf::actor_system&) {
  // Said once, at start-up, so a test run against the wrong program fails with a reason.
  if (const char* v = std::getenv("HEADROOM_TEST_FAULTS"); v != nullptr && std::strcmp(v, "1") == 0)
    log::warn("faults", "HEADROOM_TEST_FAULTS=1 is ignored: this program carries no fault hooks (the test build headroom-faults does)");
  return {};
}

void stop_fault_broker(caf::actor_system&, const fault_broker_actor&) {}

void join_fault_broker(caf::local_actor*) {}

std::optional<web_route> fault_route(caf::actor_system&) { return std::nullopt; }

}  // namespace headroom::runtime
