#pragma once

// The reactive scaling rules of seed 001, as pure functions over the TSDB's samples: what to do
// with one target now. The reactive_scaler actor asks Prometheus, calls decide() and carries the
// decision out; everything here is deterministic and tested over recorded traces.
//
// - Bounds first: replicas outside [min, max] are set to the bound.
// - Up by exactly 1 when every sample of the last scaleUpWindow is above `target`; down by 1 when
//   every sample of the last scaleDownWindow is below `target × scaleDownThreshold`.
// - "Stayed for the window" is read from the TSDB's history, so a restarted headroom neither
//   forgets a window nor acts early: the value in effect at the window's start (the last sample
//   at or before it) and every sample after it must hold. A window with a gap (no sample in effect
//   at its start, two samples more than 2 × resolution apart, or a newest sample older than that)
//   does not count.
// - After a scale event: nothing for `cooldown`, and a window counts only once it lies wholly after
//   the event (so each step needs a fresh window: +1 per window, never +2).
// - The last event is kept on the target itself (an annotation, see encode_last_scale), with the
//   count of direction changes in a row that raises the oscillation alert.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/prometheus/query.hpp"

namespace headroom::actors::reactive {

using std::chrono::milliseconds;

struct rules {
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;
  double target = 0;
  double scale_down_threshold = 0.5;
  milliseconds evaluation_interval{60'000};
  milliseconds scale_up_window{120'000};
  milliseconds scale_down_window{300'000};
  milliseconds cooldown{180'000};
  milliseconds resolution{15'000};  // the spacing of the metric's samples (its scrape interval)
};

// The target's last scale event (the annotation headroom.dev/reactive-scale). `time` is wall-clock
// seconds since the epoch, the TSDB's time.
struct last_scale {
  double time = 0;
  int32_t from = 0, to = 0;
  int32_t alternations = 0;  // direction changes in a row ending with this event
  friend bool operator==(const last_scale&, const last_scale&) = default;
};

inline constexpr std::string_view scale_annotation = "headroom.dev/reactive-scale";
// "true" on the target: headroom takes no step on it (KEDA's autoscaling.keda.sh/paused), until removed.
inline constexpr std::string_view pause_annotation = "headroom.dev/reactive-paused";
// More direction changes in a row than this raise the oscillation alert (seed: "more than 5 cycles").
inline constexpr int32_t oscillation_alert_after = 5;

enum class action { none, up, down, to_bound };

// Why; each is a stable label value for headroom_reactive_decisions_total.
enum class reason {
  below_min,           // replicas < minReplicas: set to min
  above_max,           // replicas > maxReplicas: set to max
  sustained_high,      // up
  sustained_low,       // down
  at_max,              // high for the window, already at max
  at_min,              // low for the window, already at min
  cooldown,            // within the cooldown after the last scale event
  window_since_scale,  // the window reaches back before the last scale event
  backoff,             // after 3 refused writes of one step: 2 cooldowns
  gap,                 // the window has a gap in the data
  not_sustained,       // out of band now, but not for the whole window
  within_band,         // between target × threshold and target
  activated,           // at 0 replicas, a metric is above its activation threshold: to 1
  inactive,            // at 0 replicas, no metric is above its activation threshold
  deactivated,         // at 1 with minReplicas 0, every metric at or below its activation threshold for the down-window: to 0
  paused,              // the target is annotated headroom.dev/reactive-paused: "true" (actor)
  no_metric,           // no query gave a number; or one did not, and the others would have stepped down
  quota,               // the tenant's quota has no room for +1 (actor)
  unschedulable,       // a replica is Pending, unschedulable: no step up until it is placed (actor)
  refused,             // the /scale write was refused (actor)
  changed_elsewhere,   // replicas changed by someone else since the last read (actor)
};
const char* to_string(reason r);
const char* to_string(action a);

struct decision {
  action what = action::none;
  int32_t replicas = 0;  // to write, when what != none
  reason why = reason::within_band;
  std::string detail;    // for logs and Events
};

// `samples` are the metric's over at least max(scaleUpWindow, scaleDownWindow) up to `now`
// (seconds since the epoch); `current` the replicas on /scale now.
decision decide(const rules& r, const std::vector<prom::sample>& samples, double now, int32_t current,
                const std::optional<last_scale>& last, double backoff_until = 0);

// One metric of a target, for one evaluation.
struct metric_view {
  double target = 0;
  // With minReplicas 0: a target at 0 goes to 1 when the newest sample is above this, and from 1
  // to 0 when every sample of the down-window is at or below it (KEDA's activation threshold).
  double activation = 0;
  std::vector<prom::sample> samples;
  // Set when its query gave no number this evaluation (an error, NaN, no series): why. The metric
  // is left out, and since it might have wanted more, no step down is taken without it.
  std::optional<std::string> unread{};
};

// Several metrics (the HPA's rule: the largest proposal wins): up when any metric says up, down
// only when every metric says down, else nothing, with the reason of a metric that held it. With
// minReplicas 0 the activation thresholds decide 0 → 1 and 1 → 0; the band rules apply from 1 up.
// Metrics that could not be read are skipped, as the HPA skips them: the others may take a step
// up (or to a bound), never a step down (no_metric when only the missing ones held it); none read
// is no_metric.
decision decide_metrics(const rules& r, const std::vector<metric_view>& metrics, double now, int32_t current,
                        const std::optional<last_scale>& last, double backoff_until = 0);

// The event a scale from → to at `now` writes, continuing `last`'s run of direction changes.
last_scale next_scale(const std::optional<last_scale>& last, int32_t from, int32_t to, double now);

// The annotation's text: {"time":"2026-11-23T10:00:00.123Z","from":2,"to":3,"alternations":0}.
std::string encode_last_scale(const last_scale& s);
// nullopt with `error` set when the text is not one (a user edited it): the caller warns, counts
// it, and treats the target as never scaled.
std::optional<last_scale> decode_last_scale(std::string_view text, std::string& error);

// RFC 3339 with milliseconds, UTC.
std::string format_time(double seconds);
std::optional<double> parse_time(std::string_view text);

// The window the query must cover: max(scaleUpWindow, scaleDownWindow) and the sample in effect
// at its start (2 × resolution more), whole seconds.
long query_window_seconds(const rules& r);

}  // namespace headroom::actors::reactive
