#include "app/registry.hpp"

#include "modes/bigfleet/mode.hpp"
#include "modes/gates/mode.hpp"
#include "modes/reactive/mode.hpp"
#include "modes/scale_sets/mode.hpp"
#include "modes/scheduler/mode.hpp"

namespace headroom::app {

namespace {

// Adding a mode: its folder under modes/, its line here, its headroom_mode(…) in CMakeLists.txt;
// then scripts/gen-docs regenerates the references that list the modes (docs/architecture.md).
// The order is the acting subtree's start order (and the reverse of its stop order).
constexpr modes::registration registry[] = {
    {"bigfleet", &modes::bigfleet::make},
    {"scale_sets", &modes::scale_sets::make},
    {"reactive", &modes::reactive::make},
    {"gates", &modes::gates::make},
    {"scheduler", &modes::scheduler::make},
};

}  // namespace

std::span<const modes::registration> builtin_modes() { return registry; }

}  // namespace headroom::app
