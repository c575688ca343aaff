#include "runtime/clock.hpp"

#include <caf/actor_clock.hpp>

namespace headroom::runtime {

clock::time_point actor_system_clock::now() const { return source_.now(); }

}  // namespace headroom::runtime
