#include "runtime/clock.hpp"

#include <caf/actor_clock.hpp>
#include <caf/detail/test_actor_clock.hpp>

namespace headroom::runtime {

clock::time_point steady_clock_source::now() const { return std::chrono::steady_clock::now(); }

clock::wall_time_point steady_clock_source::wall() const { return std::chrono::system_clock::now(); }

const clock& real_clock() {
  static const steady_clock_source source;
  return source;
}

clock::time_point actor_system_clock::now() const { return source_.now(); }

clock::wall_time_point actor_system_clock::wall() const {
  if (dynamic_cast<const caf::detail::test_actor_clock*>(&source_) != nullptr) {
    // The test clock starts where the test coordinator put it: a fixed wall origin keeps runs
    // reproducible.
    static const wall_time_point origin{std::chrono::seconds(1'790'000'000)};
    return origin + std::chrono::duration_cast<wall_time_point::duration>(source_.now().time_since_epoch());
  }
  return std::chrono::system_clock::now();
}

}  // namespace headroom::runtime
