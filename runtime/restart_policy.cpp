#include "runtime/restart_policy.hpp"

#include <algorithm>
#include <cmath>

namespace headroom::runtime {

std::optional<clock::duration> restart_policy::on_exit(clock::time_point now, clock::duration lived) {
  exits_.erase(exits_.begin(), std::find_if(exits_.begin(), exits_.end(),
                                            [&](clock::time_point t) { return now - t < opts_.window; }));
  exits_.push_back(now);
  short_lived_in_a_row_ = lived < opts_.healthy_after ? short_lived_in_a_row_ + 1 : 0;
  if (exits_.size() > opts_.max_restarts || short_lived_in_a_row_ > opts_.max_restarts)
    return std::nullopt;
  const double base = static_cast<double>(opts_.initial.count()) * std::pow(2.0, static_cast<double>(exits_.size() - 1));
  const double capped = std::min(base, static_cast<double>(opts_.max.count()));
  double factor = 1.0;
  if (opts_.jitter > 0) {
    std::uniform_real_distribution<double> spread{-opts_.jitter, opts_.jitter};
    factor += spread(rng_);
  }
  const auto ms = std::max(0.0, capped * factor);
  return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

}  // namespace headroom::runtime
