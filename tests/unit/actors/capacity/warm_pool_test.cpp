// The warm pool over time (actors/capacity/warm_pool.hpp, #59): schedule windows in UTC (days,
// past midnight), the queue's per-minute percentile over a trailing window, and the floor.

#include <gtest/gtest.h>

#include "actors/capacity/warm_pool.hpp"

namespace {

using namespace headroom::actors::capacity;
using namespace std::chrono;

// 2026-09-21 is a Monday.
system_clock::time_point at(int day_of_week_from_monday, int hour, int minute) {
  return sys_days{year{2026} / September / 21} + days{day_of_week_from_monday} + hours{hour} + minutes{minute};
}

constexpr uint8_t weekdays = 0x1f;  // mon … fri

TEST(warm_pool, a_window_holds_its_days_from_its_start_until_before_its_end) {
  const std::vector<warm_window> s{{weekdays, 7 * 60, 19 * 60, 4}};
  EXPECT_EQ(scheduled_size(s, at(0, 7, 0)), 4) << "Monday 07:00";
  EXPECT_EQ(scheduled_size(s, at(0, 18, 59)), 4);
  EXPECT_EQ(scheduled_size(s, at(0, 19, 0)), 0) << "the end is not in it";
  EXPECT_EQ(scheduled_size(s, at(0, 6, 59)), 0);
  EXPECT_EQ(scheduled_size(s, at(4, 12, 0)), 4) << "Friday";
  EXPECT_EQ(scheduled_size(s, at(5, 12, 0)), 0) << "Saturday";
  EXPECT_EQ(scheduled_size(s, at(6, 12, 0)), 0) << "Sunday";
}

TEST(warm_pool, a_window_ending_before_it_starts_runs_past_midnight_into_the_next_day) {
  const std::vector<warm_window> s{{1u << 4, 22 * 60, 2 * 60, 3}};  // Friday 22:00 → Saturday 02:00
  EXPECT_EQ(scheduled_size(s, at(4, 23, 30)), 3) << "Friday night";
  EXPECT_EQ(scheduled_size(s, at(5, 1, 59)), 3) << "Saturday early, the window started Friday";
  EXPECT_EQ(scheduled_size(s, at(5, 2, 0)), 0);
  EXPECT_EQ(scheduled_size(s, at(5, 23, 0)), 0) << "Saturday night: not a Friday";
  EXPECT_EQ(scheduled_size(s, at(4, 1, 0)), 0) << "Friday early: Thursday is not in it";
}

TEST(warm_pool, overlapping_windows_give_the_largest) {
  const std::vector<warm_window> s{{0x7f, 0, 24 * 60, 1}, {weekdays, 9 * 60, 17 * 60, 5}, {weekdays, 12 * 60, 13 * 60, 2}};
  EXPECT_EQ(scheduled_size(s, at(2, 12, 30)), 5);
  EXPECT_EQ(scheduled_size(s, at(6, 12, 30)), 1) << "Sunday: the all-day window";
}

TEST(warm_pool, the_demand_percentile_is_over_the_largest_queue_of_each_minute_in_the_window) {
  demand_history d;
  // Minutes 0..9: the queue's largest each minute is the minute's number; two samples in a minute
  // keep the larger.
  for (int64_t m = 0; m < 10; ++m) {
    d.observe(m, m / 2, 60);
    d.observe(m, m, 60);
  }
  EXPECT_EQ(d.minutes(), 10u);
  EXPECT_EQ(d.percentile(9, 60, 100), 9);
  EXPECT_EQ(d.percentile(9, 60, 50), 4) << "nearest rank: the 5th of 10";
  EXPECT_EQ(d.percentile(9, 60, 90), 8);
  EXPECT_EQ(d.percentile(9, 3, 100), 9) << "minutes 7, 8, 9";
  EXPECT_EQ(d.percentile(9, 3, 1), 7);
  EXPECT_EQ(d.percentile(100, 60, 90), 0) << "nothing seen in the last hour";
}

TEST(warm_pool, the_history_keeps_only_its_window_and_ignores_a_clock_stepped_back) {
  demand_history d;
  for (int64_t m = 0; m < 200; ++m)
    d.observe(m, 1, 61);
  EXPECT_EQ(d.minutes(), 61u);
  d.observe(150, 50, 61);
  EXPECT_EQ(d.percentile(199, 61, 100), 1) << "an older minute is not recorded";
  d.observe(200, -3, 61);
  EXPECT_EQ(d.percentile(200, 1, 100), 0) << "a negative count is 0";
}

TEST(warm_pool, the_size_is_the_floor_the_schedule_or_the_demand_capped_whichever_is_largest) {
  warm_pool_policy p;
  demand_history d;
  const auto noon = at(1, 12, 0);  // Tuesday
  const int64_t minute = duration_cast<minutes>(noon.time_since_epoch()).count();
  EXPECT_EQ(warm_pool_size(2, p, noon, d), 2) << "no policy: the floor";
  p.schedule = {{weekdays, 8 * 60, 18 * 60, 4}};
  EXPECT_EQ(warm_pool_size(2, p, noon, d), 4);
  EXPECT_EQ(warm_pool_size(6, p, noon, d), 6) << "never below proactiveCapacity";
  EXPECT_EQ(warm_pool_size(1, p, at(1, 20, 0), d), 1) << "after the window";
  p.follow_demand = true;
  p.percentile = 90;
  p.window = hours{1};
  p.max = 7;
  for (int64_t m = minute - 59; m <= minute; ++m)
    d.observe(m, m == minute ? 30 : 5, 61);  // one spike of 30 among 59 minutes of 5
  EXPECT_EQ(warm_pool_size(1, p, noon, d), 5) << "the 90th percentile ignores the one spike";
  p.percentile = 100;
  EXPECT_EQ(warm_pool_size(1, p, noon, d), 7) << "capped by max";
  EXPECT_EQ(warm_pool_size(1, p, noon + hours{2}, d), 4) << "the demand is two hours old; the schedule still holds";
}

}  // namespace
