// The warm pool over time (see warm_pool.hpp).

#include "actors/capacity/warm_pool.hpp"

#include <algorithm>
#include <cmath>

namespace headroom::actors::capacity {

void demand_history::observe(int64_t minute, int64_t queued, int64_t keep) {
  queued = std::max<int64_t>(0, queued);
  if (!minutes_.empty() && minutes_.back().first == minute)
    minutes_.back().second = std::max(minutes_.back().second, queued);
  else if (minutes_.empty() || minutes_.back().first < minute)
    minutes_.emplace_back(minute, queued);
  // (a minute older than the newest — the wall clock stepped back — is not recorded)
  while (!minutes_.empty() && minutes_.front().first <= minutes_.back().first - keep)
    minutes_.pop_front();
}

int64_t demand_history::percentile(int64_t now_minute, int64_t window_minutes, double p) const {
  std::vector<int64_t> seen;
  for (const auto& [minute, queued] : minutes_)
    if (minute > now_minute - window_minutes && minute <= now_minute)
      seen.push_back(queued);
  if (seen.empty())
    return 0;
  std::sort(seen.begin(), seen.end());
  const auto rank = static_cast<size_t>(std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(seen.size())));
  return seen[std::clamp<size_t>(rank, 1, seen.size()) - 1];
}

int64_t scheduled_size(const std::vector<warm_window>& schedule, std::chrono::system_clock::time_point now) {
  using namespace std::chrono;
  const auto day = floor<days>(now);
  const int minute = static_cast<int>(duration_cast<minutes>(now - day).count());
  // Monday = 0 … Sunday = 6 (ISO encodes Monday 1 … Sunday 7).
  const auto monday_based = [](sys_days d) { return static_cast<int>((weekday{d}.iso_encoding() + 6) % 7); };
  const int today = monday_based(day), yesterday = monday_based(day - days{1});
  int64_t size = 0;
  for (const auto& w : schedule) {
    const bool on = [&] {
      if (w.from_minute <= w.to_minute)
        return (w.days >> today & 1) != 0 && minute >= w.from_minute && minute < w.to_minute;
      return ((w.days >> today & 1) != 0 && minute >= w.from_minute) || ((w.days >> yesterday & 1) != 0 && minute < w.to_minute);
    }();
    if (on)
      size = std::max(size, w.size);
  }
  return size;
}

int64_t warm_pool_size(int64_t floor, const warm_pool_policy& policy, std::chrono::system_clock::time_point now,
                       const demand_history& demand) {
  int64_t size = std::max(floor, scheduled_size(policy.schedule, now));
  if (policy.follow_demand) {
    const int64_t now_minute = std::chrono::duration_cast<std::chrono::minutes>(now.time_since_epoch()).count();
    const int64_t window = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::minutes>(policy.window).count());
    size = std::max(size, std::min(policy.max, demand.percentile(now_minute, window, policy.percentile)));
  }
  return size;
}

}  // namespace headroom::actors::capacity
