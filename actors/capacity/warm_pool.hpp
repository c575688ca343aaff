#pragma once

// The warm pool over time (#59): proactiveCapacity is its floor; capacityAware.warmPool can raise
// it in time windows (a schedule, UTC) and to the demand the scale set has seen (a percentile of
// the jobs queued per minute over a trailing window, capped). A warm pool of 0 costs start
// latency, a fixed one node-minutes at night: these follow the day instead. Pure (unit-tested);
// the capacity monitor samples the queue and asks for the size at each decision.

#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace headroom::actors::capacity {

// One window: on `days` (bit 0 Monday … bit 6 Sunday), from `from_minute` to `to_minute` of the
// day (UTC; a window ending before it starts runs past midnight into the next day), `size` pairs.
struct warm_window {
  uint8_t days = 0x7f;
  int from_minute = 0, to_minute = 24 * 60;
  int64_t size = 0;
};

struct warm_pool_policy {
  std::vector<warm_window> schedule;
  // followDemand: the `percentile` of the per-minute queue over `window`, at most `max`.
  bool follow_demand = false;
  double percentile = 90;
  std::chrono::milliseconds window{3'600'000};
  int64_t max = 0;
  bool empty() const { return schedule.empty() && !follow_demand; }
};

// The largest number of queued jobs seen in each minute, the last `keep` minutes of them.
class demand_history {
 public:
  // `minute`: minutes since the epoch; a minute not sampled (the process was down) is absent.
  void observe(int64_t minute, int64_t queued, int64_t keep);
  // The p-th percentile (nearest rank, 0 < p ≤ 100) of the minutes in (now − window, now]; 0 with none.
  int64_t percentile(int64_t now_minute, int64_t window_minutes, double p) const;
  size_t minutes() const { return minutes_.size(); }

 private:
  std::deque<std::pair<int64_t, int64_t>> minutes_;  // (minute, largest queue), oldest first
};

// The window of `schedule` that holds `now` with the largest size; 0 when none holds it.
int64_t scheduled_size(const std::vector<warm_window>& schedule, std::chrono::system_clock::time_point now);

// max(floor, the schedule's size now, min(max, the demand's percentile)).
int64_t warm_pool_size(int64_t floor, const warm_pool_policy& policy, std::chrono::system_clock::time_point now,
                       const demand_history& demand);

}  // namespace headroom::actors::capacity
