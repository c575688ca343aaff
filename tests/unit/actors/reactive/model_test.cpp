// The reactive scaling rules (actors/reactive/model.cpp) over recorded traces: a sample every
// second, as the test Prometheus scrapes, decisions taken at chosen instants.
#include <gtest/gtest.h>

#include <functional>

#include "actors/reactive/model.hpp"

namespace headroom::actors::reactive {
namespace {

using namespace std::chrono_literals;

constexpr double t0 = 1'800'000'000;  // the trace's first second

rules seconds_rules() {
  rules r;
  r.min_replicas = 1;
  r.max_replicas = 4;
  r.target = 100;
  r.scale_down_threshold = 0.5;
  r.evaluation_interval = 1s;
  r.scale_up_window = 10s;
  r.scale_down_window = 20s;
  r.cooldown = 5s;
  r.resolution = 1s;
  return r;
}

// value(t) for t = t0 … t0 + seconds, one sample a second.
std::vector<prom::sample> trace(int seconds, const std::function<double(int)>& value) {
  std::vector<prom::sample> out;
  for (int i = 0; i <= seconds; ++i)
    out.push_back({t0 + i, value(i)});
  return out;
}

TEST(reactive_model, sustained_high_for_the_whole_window_scales_up_by_exactly_one) {
  const auto r = seconds_rules();
  const auto samples = trace(30, [](int) { return 150; });
  auto d = decide(r, samples, t0 + 30, 1, std::nullopt);
  EXPECT_EQ(d.what, action::up);
  EXPECT_EQ(d.replicas, 2);
  EXPECT_EQ(d.why, reason::sustained_high);
}

TEST(reactive_model, a_spike_shorter_than_the_window_does_nothing) {
  const auto r = seconds_rules();
  // High for the last 9 s of a 10 s window.
  const auto samples = trace(30, [](int i) { return i > 21 ? 500 : 80; });
  auto d = decide(r, samples, t0 + 30, 2, std::nullopt);
  EXPECT_EQ(d.what, action::none);
  EXPECT_EQ(d.why, reason::not_sustained);
  // High since the sample at 22: the window is full once it starts there (at 32), not before.
  const auto longer = trace(32, [](int i) { return i > 21 ? 500 : 80; });
  EXPECT_EQ(decide(r, longer, t0 + 31, 2, std::nullopt).what, action::none);
  EXPECT_EQ(decide(r, longer, t0 + 32, 2, std::nullopt).what, action::up);
}

TEST(reactive_model, between_threshold_and_target_does_nothing) {
  const auto r = seconds_rules();
  const auto samples = trace(60, [](int i) { return 50 + (i % 50); });  // 50 … 99: never < 50, never > 100
  auto d = decide(r, samples, t0 + 60, 3, std::nullopt);
  EXPECT_EQ(d.what, action::none);
  EXPECT_EQ(d.why, reason::within_band);
}

TEST(reactive_model, equal_to_target_is_not_above_it) {
  const auto r = seconds_rules();
  EXPECT_EQ(decide(r, trace(30, [](int) { return 100; }), t0 + 30, 2, std::nullopt).what, action::none);
  EXPECT_EQ(decide(r, trace(30, [](int) { return 50; }), t0 + 30, 2, std::nullopt).what, action::none);
}

TEST(reactive_model, sustained_low_for_the_down_window_scales_down_by_one_never_below_min) {
  const auto r = seconds_rules();
  const auto samples = trace(30, [](int) { return 10; });
  auto d = decide(r, samples, t0 + 30, 3, std::nullopt);
  EXPECT_EQ(d.what, action::down);
  EXPECT_EQ(d.replicas, 2);
  auto at_min = decide(r, samples, t0 + 30, 1, std::nullopt);
  EXPECT_EQ(at_min.what, action::none);
  EXPECT_EQ(at_min.why, reason::at_min);
  // Low for the 10 s up-window but not the 20 s down-window: nothing yet.
  const auto shorter = trace(30, [](int i) { return i > 15 ? 10 : 70; });
  EXPECT_EQ(decide(r, shorter, t0 + 30, 3, std::nullopt).why, reason::not_sustained);
}

TEST(reactive_model, never_above_max) {
  const auto r = seconds_rules();
  auto d = decide(r, trace(30, [](int) { return 900; }), t0 + 30, 4, std::nullopt);
  EXPECT_EQ(d.what, action::none);
  EXPECT_EQ(d.why, reason::at_max);
}

TEST(reactive_model, out_of_bounds_is_set_to_the_bound_first) {
  const auto r = seconds_rules();
  const auto samples = trace(30, [](int) { return 75; });
  auto low = decide(r, samples, t0 + 30, 0, std::nullopt);
  EXPECT_EQ(low.what, action::to_bound);
  EXPECT_EQ(low.replicas, 1);
  EXPECT_EQ(low.why, reason::below_min);
  auto high = decide(r, samples, t0 + 30, 9, std::nullopt);
  EXPECT_EQ(high.replicas, 4);
  EXPECT_EQ(high.why, reason::above_max);
}

TEST(reactive_model, cooldown_then_a_fresh_window_after_every_scale_event) {
  const auto r = seconds_rules();
  const auto samples = trace(60, [](int) { return 150; });
  const last_scale last{t0 + 40, 1, 2, 0};
  // 3 s after the event: cooldown (5 s).
  EXPECT_EQ(decide(r, samples, t0 + 43, 2, last).why, reason::cooldown);
  // 7 s after: out of cooldown, but the 10 s window still reaches back before the event.
  EXPECT_EQ(decide(r, samples, t0 + 47, 2, last).why, reason::window_since_scale);
  // 10 s after: a whole window since the event.
  auto d = decide(r, samples, t0 + 50, 2, last);
  EXPECT_EQ(d.what, action::up);
  EXPECT_EQ(d.replicas, 3);
}

// Evaluated every second over a long high plateau from 1 replica: one step per window, never two
// in one window, up to max and no further.
TEST(reactive_model, a_plateau_steps_once_per_window_up_to_max) {
  const auto r = seconds_rules();
  const auto samples = trace(120, [](int) { return 400; });
  int32_t replicas = 1;
  std::optional<last_scale> last;
  std::vector<int> step_times;
  for (int now = 0; now <= 120; ++now) {
    auto d = decide(r, samples, t0 + now, replicas, last);
    if (d.what == action::none)
      continue;
    ASSERT_EQ(d.replicas, replicas + 1);
    last = next_scale(last, replicas, d.replicas, t0 + now);
    replicas = d.replicas;
    step_times.push_back(now);
  }
  EXPECT_EQ(replicas, 4);
  ASSERT_EQ(step_times.size(), 3u);
  EXPECT_EQ(step_times[0], 10);  // the first full window (from the sample at 0)
  EXPECT_EQ(step_times[1], 20);
  EXPECT_EQ(step_times[2], 30);
}

TEST(reactive_model, a_gap_in_the_window_does_not_count_as_stayed) {
  const auto r = seconds_rules();
  auto samples = trace(30, [](int) { return 150; });
  samples.erase(samples.begin() + 24, samples.begin() + 27);  // 3 s without samples (> 2 × 1 s)
  auto d = decide(r, samples, t0 + 30, 2, std::nullopt);
  EXPECT_EQ(d.what, action::none);
  EXPECT_EQ(d.why, reason::gap);
  // A stale end (the newest sample 3 s old) is a gap as well.
  auto stale = trace(27, [](int) { return 150; });
  EXPECT_EQ(decide(r, stale, t0 + 30, 2, std::nullopt).why, reason::gap);
  // The window's start uncovered (data only since 5 s ago) is one too.
  auto young = trace(30, [](int) { return 150; });
  young.erase(young.begin(), young.begin() + 25);
  EXPECT_EQ(decide(r, young, t0 + 30, 2, std::nullopt).why, reason::gap);
}

TEST(reactive_model, backoff_holds_every_step) {
  const auto r = seconds_rules();
  auto d = decide(r, trace(30, [](int) { return 150; }), t0 + 30, 2, std::nullopt, t0 + 35);
  EXPECT_EQ(d.why, reason::backoff);
  EXPECT_EQ(decide(r, trace(30, [](int) { return 150; }), t0 + 30, 2, std::nullopt, t0 + 29).what, action::up);
}

TEST(reactive_model, alternating_events_count_up_and_a_repeat_direction_resets) {
  std::optional<last_scale> last;
  int32_t replicas = 2;
  for (int i = 0; i < 7; ++i) {
    const int32_t to = i % 2 == 0 ? replicas + 1 : replicas - 1;
    last = next_scale(last, replicas, to, t0 + i * 10);
    replicas = to;
  }
  EXPECT_EQ(last->alternations, 6);
  EXPECT_GE(last->alternations, oscillation_alert_after);
  EXPECT_EQ(next_scale(last, replicas, replicas - 1, t0 + 100).alternations, 7);
  last = next_scale(last, replicas, replicas + 1, t0 + 100);  // the previous one was up too
  EXPECT_EQ(last->alternations, 0);
}

TEST(reactive_model, the_annotation_round_trips_and_malformed_ones_are_named) {
  const last_scale s{1'800'000'123.456, 3, 4, 2};
  const auto text = encode_last_scale(s);
  EXPECT_EQ(text, R"({"time":"2027-01-15T08:02:03.456Z","from":3,"to":4,"alternations":2})");
  std::string error;
  auto back = decode_last_scale(text, error);
  ASSERT_TRUE(back) << error;
  EXPECT_NEAR(back->time, s.time, 0.001);
  EXPECT_EQ(back->from, 3);
  EXPECT_EQ(back->to, 4);
  EXPECT_EQ(back->alternations, 2);
  for (const char* bad : {"", "3 4", R"({"time":"yesterday","from":1,"to":2})", R"({"from":1,"to":2})",
                          R"({"time":"2027-01-15T08:02:03Z","from":-1,"to":2})", R"({"time":"2027-01-15T08:02:03Z","from":1,"to":"2"})"}) {
    error.clear();
    EXPECT_FALSE(decode_last_scale(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

// Several metrics: the largest proposal wins (the HPA's rule).
TEST(reactive_model, several_metrics_up_when_any_says_up_down_only_when_all_say_down) {
  const auto r = seconds_rules();
  const auto high = trace(30, [](int) { return 150; }), low = trace(30, [](int) { return 10; }),
             band = trace(30, [](int) { return 70; });
  auto d = decide_metrics(r, {{100, 0, low}, {100, 0, high}}, t0 + 30, 2, std::nullopt);
  EXPECT_EQ(d.what, action::up) << "one metric high is enough";
  EXPECT_EQ(d.replicas, 3);
  EXPECT_NE(d.detail.find("metric 2"), std::string::npos) << d.detail;
  d = decide_metrics(r, {{100, 0, low}, {100, 0, band}}, t0 + 30, 2, std::nullopt);
  EXPECT_EQ(d.what, action::none) << "one metric in its band holds the scale-down";
  EXPECT_EQ(d.why, reason::within_band);
  d = decide_metrics(r, {{100, 0, low}, {1000, 0, band}}, t0 + 30, 2, std::nullopt);
  EXPECT_EQ(d.what, action::down) << "each against its own target: 70 is low for a target of 1000";
  EXPECT_EQ(d.replicas, 1);
  // One metric is the same as decide().
  const auto one = decide(r, high, t0 + 30, 2, std::nullopt);
  d = decide_metrics(r, {{100, 0, high}}, t0 + 30, 2, std::nullopt);
  EXPECT_EQ(d.what, one.what);
  EXPECT_EQ(d.replicas, one.replicas);
  EXPECT_EQ(d.detail, one.detail);
}

TEST(reactive_model, scale_from_zero_on_activation_and_to_zero_when_quiet_for_the_down_window) {
  auto r = seconds_rules();
  r.min_replicas = 0;
  const auto quiet = trace(30, [](int) { return 0; }), trickle = trace(30, [](int i) { return i == 30 ? 3 : 0; });
  // At 0: the newest sample above the activation threshold wakes it at once (no window).
  auto d = decide_metrics(r, {{100, 2, trickle}}, t0 + 30, 0, std::nullopt);
  EXPECT_EQ(d.what, action::up);
  EXPECT_EQ(d.replicas, 1);
  EXPECT_EQ(d.why, reason::activated);
  d = decide_metrics(r, {{100, 5, trickle}}, t0 + 30, 0, std::nullopt);
  EXPECT_EQ(d.what, action::none);
  EXPECT_EQ(d.why, reason::inactive);
  // At 1: the band rules never take it to 0; quiet at or below the threshold for the down-window does.
  d = decide_metrics(r, {{100, 0, quiet}}, t0 + 30, 1, std::nullopt);
  EXPECT_EQ(d.what, action::down);
  EXPECT_EQ(d.replicas, 0);
  EXPECT_EQ(d.why, reason::deactivated);
  const auto low_but_busy = trace(30, [](int) { return 10; });  // below target × threshold, above activation 2
  d = decide_metrics(r, {{100, 2, low_but_busy}}, t0 + 30, 1, std::nullopt);
  EXPECT_EQ(d.what, action::none) << d.detail;
  // Not within the cooldown of the last event, nor with a window reaching back before it.
  d = decide_metrics(r, {{100, 0, quiet}}, t0 + 30, 1, last_scale{t0 + 28, 0, 1, 0});
  EXPECT_EQ(d.what, action::none);
  d = decide_metrics(r, {{100, 0, quiet}}, t0 + 30, 1, last_scale{t0 + 15, 0, 1, 0});
  EXPECT_EQ(d.what, action::none) << "the 20 s down-window starts before the event at 15";
  // A second metric still busy keeps it at 1.
  d = decide_metrics(r, {{100, 0, quiet}, {100, 2, low_but_busy}}, t0 + 30, 1, std::nullopt);
  EXPECT_EQ(d.what, action::none);
}

// A metric whose query gave no number is left out, as the HPA leaves it out: the others may step
// up (issue #61: one NaN froze a target whose other metric was at 5 × its target).
TEST(reactive_model, an_unread_metric_is_skipped_and_the_others_may_step_up) {
  const auto r = seconds_rules();
  const auto five_times = trace(30, [](int) { return 500; });
  auto d = decide_metrics(r, {{100, 0, {}, "NaN"}, {100, 0, five_times}}, t0 + 30, 2, std::nullopt);
  EXPECT_EQ(d.what, action::up);
  EXPECT_EQ(d.replicas, 3) << "still one step";
  EXPECT_EQ(d.why, reason::sustained_high);
  EXPECT_NE(d.detail.find("metric 2: above target"), std::string::npos) << d.detail;
  EXPECT_NE(d.detail.find("not read: metric 1 (NaN)"), std::string::npos) << d.detail;
  d = decide_metrics(r, {{100, 0, five_times}, {100, 0, {}, "NaN"}}, t0 + 30, 2, std::nullopt);
  EXPECT_EQ(d.what, action::up) << "in either order";
  // The cooldown and the bounds hold as with every metric read.
  d = decide_metrics(r, {{100, 0, {}, "NaN"}, {100, 0, five_times}}, t0 + 30, 3, last_scale{t0 + 28, 2, 3, 0});
  EXPECT_EQ(d.why, reason::cooldown);
  d = decide_metrics(r, {{100, 0, {}, "NaN"}, {100, 0, five_times}}, t0 + 30, 4, std::nullopt);
  EXPECT_EQ(d.why, reason::at_max);
  d = decide_metrics(r, {{100, 0, {}, "NaN"}, {100, 0, five_times}}, t0 + 30, 9, std::nullopt);
  EXPECT_EQ(d.what, action::to_bound) << "a bound is the configuration's, not a metric's";
  EXPECT_EQ(d.replicas, 4);
}

// ...but never down: the missing metric might have wanted more.
TEST(reactive_model, an_unread_metric_holds_a_step_down) {
  const auto r = seconds_rules();
  const auto low = trace(30, [](int) { return 10; }), band = trace(30, [](int) { return 70; });
  EXPECT_EQ(decide_metrics(r, {{100, 0, low}, {100, 0, low}}, t0 + 30, 3, std::nullopt).what, action::down)
      << "every metric read and low";
  auto d = decide_metrics(r, {{100, 0, low}, {100, 0, {}, "no series"}}, t0 + 30, 3, std::nullopt);
  EXPECT_EQ(d.what, action::none);
  EXPECT_EQ(d.replicas, 3);
  EXPECT_EQ(d.why, reason::no_metric) << "only the missing metric held it";
  EXPECT_NE(d.detail.find("no step down without metric 2 (no series)"), std::string::npos) << d.detail;
  d = decide_metrics(r, {{100, 0, low}, {100, 0, low}, {100, 0, {}, "NaN"}}, t0 + 30, 3, std::nullopt);
  EXPECT_EQ(d.what, action::none);
  EXPECT_EQ(d.why, reason::no_metric);
  d = decide_metrics(r, {{100, 0, band}, {100, 0, {}, "NaN"}}, t0 + 30, 3, std::nullopt);
  EXPECT_EQ(d.why, reason::within_band) << "a metric read held it itself";
  // To zero is a step down too; from zero is a step up.
  auto to_zero = r;
  to_zero.min_replicas = 0;
  const auto quiet = trace(30, [](int) { return 0; }), trickle = trace(30, [](int i) { return i == 30 ? 3 : 0; });
  d = decide_metrics(to_zero, {{100, 0, quiet}, {100, 0, {}, "NaN"}}, t0 + 30, 1, std::nullopt);
  EXPECT_EQ(d.what, action::none) << d.detail;
  d = decide_metrics(to_zero, {{100, 0, {}, "NaN"}, {100, 2, trickle}}, t0 + 30, 0, std::nullopt);
  EXPECT_EQ(d.what, action::up);
  EXPECT_EQ(d.why, reason::activated);
}

TEST(reactive_model, no_metric_read_is_no_metric) {
  auto r = seconds_rules();
  auto d = decide_metrics(r, {{100, 0, {}, "NaN"}, {100, 0, {}, "no series"}}, t0 + 30, 2, std::nullopt);
  EXPECT_EQ(d.what, action::none);
  EXPECT_EQ(d.replicas, 2);
  EXPECT_EQ(d.why, reason::no_metric);
  EXPECT_NE(d.detail.find("metric 1 (NaN), metric 2 (no series)"), std::string::npos) << d.detail;
  EXPECT_EQ(decide_metrics(r, {}, t0 + 30, 2, std::nullopt).why, reason::no_metric);
  r.min_replicas = 0;
  EXPECT_EQ(decide_metrics(r, {{100, 0, {}, "NaN"}}, t0 + 30, 0, std::nullopt).why, reason::no_metric);
}

}  // namespace
}  // namespace headroom::actors::reactive
