#include "runtime/outage.hpp"

#include <algorithm>

namespace headroom::runtime {

outage::verdict outage::failed(int64_t now_ms) {
  verdict v;
  if (failures_ == 0) {
    since_ms_ = reminded_ms_ = now_ms;
    v.log = note::went_down;
  } else if (now_ms - reminded_ms_ >= opts_.reminder.count()) {
    reminded_ms_ = now_ms;
    v.log = note::still_down;
  }
  ++failures_;
  const int shift = static_cast<int>(std::min<uint64_t>(failures_ - 1, 30));
  const int64_t cap = std::max<int64_t>(1, opts_.max.count());
  const int64_t base = std::min<int64_t>(cap, std::max<int64_t>(1, opts_.initial.count()) << std::min(shift, 30));
  const double jitter = std::clamp(opts_.jitter, 0.0, 1.0);
  std::uniform_int_distribution<int64_t> draw{static_cast<int64_t>(static_cast<double>(base) * (1.0 - jitter)), base};
  v.retry_in = std::chrono::milliseconds{std::max<int64_t>(1, draw(rng_))};
  v.down_for_ms = now_ms - since_ms_;
  v.failures = failures_;
  return v;
}

outage::verdict outage::succeeded(int64_t now_ms) {
  verdict v;
  if (failures_ > 0) {
    v.log = note::came_back;
    v.down_for_ms = now_ms - since_ms_;
    v.failures = failures_;
  }
  failures_ = 0;
  return v;
}

void outage::log(std::string_view actor, const verdict& v, std::string_view went_down, std::string_view still_down,
                 std::initializer_list<log_field> fields) {
  switch (v.log) {
    case note::went_down: return runtime::log::warn(actor, went_down, fields);
    case note::still_down: return runtime::log::warn(actor, still_down, fields);
    case note::none: return runtime::log::debug(actor, went_down, fields);
    case note::came_back: return;
  }
}

}  // namespace headroom::runtime
