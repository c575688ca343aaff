// libFuzzer: parse_quantity never crashes, never hangs, and what it accepts is consistent:
// milli and units share a sign, and units = ceil(milli / 1000) unless milli saturated.
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "adapters/k8s/quantity.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text{reinterpret_cast<const char*>(data), size};
  auto r = headroom::k8s::parse_quantity(text);
  if (const auto* q = std::get_if<headroom::k8s::quantity>(&r)) {
    if ((q->milli > 0) != (q->units > 0) || (q->milli < 0) != (q->units < 0))
      std::abort();
    constexpr int64_t max = std::numeric_limits<int64_t>::max();
    if (q->milli != max && q->milli != -max) {
      const int64_t m = q->milli < 0 ? -q->milli : q->milli;
      const int64_t u = q->units < 0 ? -q->units : q->units;
      if (u != m / 1000 + (m % 1000 != 0 ? 1 : 0))  // ceil without overflowing near the cap
        std::abort();
    }
  }
  return 0;
}
