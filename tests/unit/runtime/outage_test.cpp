#include "runtime/outage.hpp"

#include <gtest/gtest.h>

namespace headroom::runtime {
namespace {

using namespace std::chrono_literals;
using note = outage::note;

TEST(outage, logs_once_when_it_goes_down_then_only_a_reminder_per_interval_then_once_when_back) {
  outage o{{.initial = 250ms, .max = 10'000ms, .reminder = 60'000ms, .jitter = 0.5}, 7};
  int64_t now = 1'000'000;
  EXPECT_EQ(o.succeeded(now).log, note::none) << "nothing to say while it is up";
  auto first = o.failed(now);
  EXPECT_EQ(first.log, note::went_down);
  EXPECT_TRUE(o.down());
  int logged = 1, attempts = 1;
  // 20 minutes down, retrying at the pace the verdicts set.
  const int64_t until = now + 20 * 60'000;
  auto v = first;
  while (now < until) {
    now += v.retry_in.count();
    v = o.failed(now);
    ++attempts;
    if (v.log != note::none) {
      EXPECT_EQ(v.log, note::still_down);
      ++logged;
    }
  }
  EXPECT_LE(logged, 21) << "one line when it went down and at most one reminder a minute";
  EXPECT_GE(logged, 19);
  EXPECT_LE(attempts, 20 * 60 / 5 + 10) << "the backoff reaches its cap: at most about one attempt per 5 s (10 s × [0.5, 1])";
  EXPECT_GE(v.down_for_ms, 20 * 60'000);
  auto back = o.succeeded(now + 1);
  EXPECT_EQ(back.log, note::came_back);
  EXPECT_EQ(back.failures, static_cast<uint64_t>(attempts));
  EXPECT_FALSE(o.down());
  EXPECT_EQ(o.failed(now + 2).log, note::went_down) << "a new outage is news again";
}

TEST(outage, backoff_doubles_from_initial_to_the_cap_and_stays_within_its_jitter) {
  outage o{{.initial = 100ms, .max = 3'000ms, .reminder = 60'000ms, .jitter = 0.5}, 42};
  int64_t expected = 100;
  for (int i = 0; i < 12; ++i) {
    auto v = o.failed(i);
    EXPECT_LE(v.retry_in.count(), expected) << "attempt " << i;
    EXPECT_GE(v.retry_in.count(), expected / 2) << "attempt " << i;
    expected = std::min<int64_t>(expected * 2, 3'000);
  }
  o.succeeded(100);
  auto fresh = o.failed(200);
  EXPECT_LE(fresh.retry_in.count(), 100) << "after a success the backoff starts over";
}

TEST(outage, jitter_spreads_callers_that_failed_together) {
  outage a{{}, 1}, b{{}, 2};
  bool differ = false;
  for (int i = 0; i < 8; ++i)
    differ |= a.failed(i).retry_in != b.failed(i).retry_in;
  EXPECT_TRUE(differ);
}

}  // namespace
}  // namespace headroom::runtime
