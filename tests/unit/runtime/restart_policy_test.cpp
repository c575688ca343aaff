#include "runtime/restart_policy.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using headroom::runtime::manual_clock;
using headroom::runtime::restart_policy;

namespace {
restart_policy::options no_jitter() {
  restart_policy::options o;
  o.jitter = 0;
  return o;
}
}  // namespace

// Backoff doubles per exit inside the window: 100 ms, 200 ms, 400 ms, 800 ms, 1.6 s.
TEST(restart_policy, backoff_doubles_from_100ms) {
  manual_clock clock;
  restart_policy policy{no_jitter()};
  for (auto expected : {100ms, 200ms, 400ms, 800ms, 1600ms}) {
    auto d = policy.on_exit(clock.now());
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, expected);
    clock.advance(1s);
  }
}

// The sixth exit within 60 s means give up (more than 5 restarts in the window).
TEST(restart_policy, gives_up_after_five_restarts_in_the_window) {
  manual_clock clock;
  restart_policy policy{no_jitter()};
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(policy.on_exit(clock.now())) << "exit " << i + 1;
    clock.advance(10s);
  }
  EXPECT_FALSE(policy.on_exit(clock.now()));
}

// Exits spread wider than the window never give up, and the backoff falls back to the start.
TEST(restart_policy, quiet_window_resets_backoff) {
  manual_clock clock;
  restart_policy policy{no_jitter()};
  for (int i = 0; i < 20; ++i) {
    auto d = policy.on_exit(clock.now());
    ASSERT_TRUE(d) << "exit " << i + 1;
    EXPECT_EQ(*d, 100ms);
    clock.advance(61s);
  }
}

// #40: a child that never runs healthy_after (10 minutes) before it exits (a nested supervisor that
// gives up each time) is given up on after more than max_restarts such exits in a row, however far
// apart; one that ran that long starts the count again.
TEST(restart_policy, gives_up_on_a_child_that_never_runs_healthy_after_however_slowly_it_fails) {
  manual_clock clock;
  restart_policy policy{no_jitter()};
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(policy.on_exit(clock.now(), 50s)) << "exit " << i + 1;
    clock.advance(2min);  // never two in one window
  }
  EXPECT_FALSE(policy.on_exit(clock.now(), 50s)) << "the sixth short-lived exit in a row";
  restart_policy healthy{no_jitter()};
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(healthy.on_exit(clock.now(), i % 5 == 4 ? 10min : 50s)) << "exit " << i + 1;
    clock.advance(2min);
  }
}

// The cap holds at 30 s however often a child fails.
TEST(restart_policy, backoff_is_capped) {
  manual_clock clock;
  auto o = no_jitter();
  o.max_restarts = 100;
  o.window = 1h;
  restart_policy policy{o};
  std::optional<manual_clock::duration> last;
  for (int i = 0; i < 20; ++i)
    last = policy.on_exit(clock.now());
  ASSERT_TRUE(last);
  EXPECT_EQ(*last, 30s);
}

// Jitter stays within ±20 % and is not constant.
TEST(restart_policy, jitter_spreads_within_bounds) {
  manual_clock clock;
  restart_policy::options o;
  o.max_restarts = 1000;
  o.window = 1ms;
  restart_policy policy{o, 42};
  std::set<long> seen;
  for (int i = 0; i < 200; ++i) {
    auto d = policy.on_exit(clock.now());
    ASSERT_TRUE(d);
    const auto ms = std::chrono::duration_cast<std::chrono::microseconds>(*d).count();
    EXPECT_GE(ms, 80'000);
    EXPECT_LE(ms, 120'000);
    seen.insert(ms);
    clock.advance(1s);
  }
  EXPECT_GT(seen.size(), 50u);
}
