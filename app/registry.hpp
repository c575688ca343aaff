#pragma once

// The registry: every mode headroom is built with, one line each (app/registry.cpp). build_agent,
// the settings reader, check-config, --print-actor-tree and the docs test loop over it.

#include <span>

#include "modes/mode.hpp"

namespace headroom::app {

std::span<const modes::registration> builtin_modes();

}  // namespace headroom::app
