#include "actors/reactive/model.hpp"

#include "adapters/k8s/time.hpp"
#include "runtime/json_writer.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace headroom::actors::reactive {

namespace {

double secs(milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

// What the samples of [now - window, now] say against `pred`.
struct window_view {
  bool empty = true;
  bool gap = false;
  bool all = false;  // every sample satisfies pred (and there is at least one)
};

// The value in effect at the window's start is the last sample at or before it: it must exist
// (within max_gap of the start), and it and every later sample up to `now` must satisfy pred.
template <class Pred>
window_view look(const std::vector<prom::sample>& samples, double now, double window, double max_gap, Pred pred) {
  window_view w;
  const double start = now - window;
  size_t first = samples.size();
  for (size_t i = 0; i < samples.size() && samples[i].t <= start; ++i)
    first = i;
  if (first == samples.size() || start - samples[first].t > max_gap) {
    // Nothing in effect at the window's start: the data begins inside the window (or is too old).
    w.gap = true;
    first = 0;
  }
  double prev = first < samples.size() ? samples[first].t : start;
  bool all = true;
  for (size_t i = first; i < samples.size(); ++i) {
    const auto& s = samples[i];
    if (s.t > now)
      break;
    if (s.t < start - max_gap)
      continue;
    w.empty = false;
    if (s.t - prev > max_gap)
      w.gap = true;
    prev = s.t;
    all = all && pred(s.v);
  }
  if (w.empty || now - prev > max_gap)
    w.gap = true;
  w.all = !w.empty && all;
  return w;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

const char* to_string(reason r) {
  switch (r) {
    case reason::below_min: return "below_min";
    case reason::above_max: return "above_max";
    case reason::sustained_high: return "sustained_high";
    case reason::sustained_low: return "sustained_low";
    case reason::at_max: return "at_max";
    case reason::at_min: return "at_min";
    case reason::cooldown: return "cooldown";
    case reason::window_since_scale: return "window_since_scale";
    case reason::backoff: return "backoff";
    case reason::gap: return "gap";
    case reason::not_sustained: return "not_sustained";
    case reason::within_band: return "within_band";
    case reason::activated: return "activated";
    case reason::inactive: return "inactive";
    case reason::deactivated: return "deactivated";
    case reason::paused: return "paused";
    case reason::no_metric: return "no_metric";
    case reason::quota: return "quota";
    case reason::unschedulable: return "unschedulable";
    case reason::refused: return "refused";
    case reason::changed_elsewhere: return "changed_elsewhere";
  }
  return "unknown";
}

const char* to_string(action a) {
  switch (a) {
    case action::none: return "none";
    case action::up: return "up";
    case action::down: return "down";
    case action::to_bound: return "to_bound";
  }
  return "unknown";
}

long query_window_seconds(const rules& r) {
  const auto w = std::max(r.scale_up_window, r.scale_down_window) + 2 * r.resolution;
  return static_cast<long>((w.count() + 999) / 1000);
}

decision decide(const rules& r, const std::vector<prom::sample>& samples, double now, int32_t current,
                const std::optional<last_scale>& last, double backoff_until) {
  decision d;
  d.replicas = current;
  if (current < r.min_replicas) {
    d = {action::to_bound, r.min_replicas, reason::below_min,
         std::to_string(current) + " replicas, below minReplicas " + std::to_string(r.min_replicas)};
    return d;
  }
  if (current > r.max_replicas) {
    d = {action::to_bound, r.max_replicas, reason::above_max,
         std::to_string(current) + " replicas, above maxReplicas " + std::to_string(r.max_replicas)};
    return d;
  }
  const double max_gap = 2 * secs(r.resolution);
  const double low_mark = r.target * r.scale_down_threshold;
  const auto high = look(samples, now, secs(r.scale_up_window), max_gap, [&](double v) { return v > r.target; });
  const auto low = look(samples, now, secs(r.scale_down_window), max_gap, [&](double v) { return v < low_mark; });
  const double latest = samples.empty() ? std::nan("") : samples.back().v;

  if (backoff_until > now) {
    d.why = reason::backoff;
    d.detail = "backing off after 3 refused scale writes, " + num(backoff_until - now) + " s left";
    return d;
  }
  if (last && now - last->time < secs(r.cooldown)) {
    d.why = reason::cooldown;
    d.detail = "cooldown after the scale " + std::to_string(last->from) + " → " + std::to_string(last->to) + ", " +
               num(secs(r.cooldown) - (now - last->time)) + " s left";
    return d;
  }
  auto fresh = [&](milliseconds window) { return !last || now - secs(window) >= last->time; };

  if (high.all && !high.gap) {
    if (current >= r.max_replicas) {
      d.why = reason::at_max;
      d.detail = "above target " + num(r.target) + " for the whole window, already at maxReplicas";
    } else if (!fresh(r.scale_up_window)) {
      d.why = reason::window_since_scale;
      d.detail = "above target, but the up-window reaches back before the last scale event";
    } else {
      d = {action::up, current + 1, reason::sustained_high,
           "above target " + num(r.target) + " for the whole up-window (latest " + num(latest) + ")"};
    }
    return d;
  }
  if (low.all && !low.gap) {
    if (current <= r.min_replicas) {
      d.why = reason::at_min;
      d.detail = "below " + num(low_mark) + " for the whole window, already at minReplicas";
    } else if (!fresh(r.scale_down_window)) {
      d.why = reason::window_since_scale;
      d.detail = "below target × threshold, but the down-window reaches back before the last scale event";
    } else {
      d = {action::down, current - 1, reason::sustained_low,
           "below " + num(low_mark) + " (target × scaleDownThreshold) for the whole down-window (latest " + num(latest) + ")"};
    }
    return d;
  }
  if ((high.all && high.gap) || (low.all && low.gap)) {
    d.why = reason::gap;
    d.detail = "the window has a gap in the data (more than " + num(max_gap) + " s between samples)";
    return d;
  }
  if (latest > r.target || latest < low_mark) {
    d.why = reason::not_sustained;
    d.detail = "latest " + num(latest) + " is outside [" + num(low_mark) + ", " + num(r.target) + "], not for the whole window";
    return d;
  }
  d.why = reason::within_band;
  d.detail = "latest " + num(latest) + " is within [" + num(low_mark) + ", " + num(r.target) + "]";
  return d;
}

namespace {

// "metric 2 (NaN)", the metrics an evaluation left out, for its detail ("" = every one was read).
std::string unread_list(const std::vector<metric_view>& metrics) {
  std::string out;
  for (size_t i = 0; i < metrics.size(); ++i)
    if (metrics[i].unread)
      out += (out.empty() ? "metric " : ", metric ") + std::to_string(i + 1) + " (" + *metrics[i].unread + ")";
  return out;
}

decision with_unread(decision d, const std::string& unread) {
  if (!unread.empty())
    d.detail += "; not read: " + unread;
  return d;
}

// At 0 replicas with minReplicas 0: the newest sample of any metric read above its threshold.
decision activate(const std::vector<metric_view>& metrics) {
  for (size_t i = 0; i < metrics.size(); ++i) {
    const auto& m = metrics[i];
    if (!m.unread && !m.samples.empty() && m.samples.back().v > m.activation)
      return {action::up, 1, reason::activated,
              "metric " + std::to_string(i + 1) + " is " + num(m.samples.back().v) + ", above its activation threshold " +
                  num(m.activation)};
  }
  return {action::none, 0, reason::inactive, "at 0 replicas and no metric is above its activation threshold"};
}

// At 1 with minReplicas 0: every metric at or below its threshold for a whole down-window lying
// after the last event, out of its cooldown. A step down, so every metric must have been read.
bool deactivates(const rules& r, const std::vector<metric_view>& metrics, double now, const std::optional<last_scale>& last) {
  const double max_gap = 2 * secs(r.resolution);
  for (const auto& m : metrics) {
    const auto w = look(m.samples, now, secs(r.scale_down_window), max_gap, [&](double v) { return v <= m.activation; });
    if (m.unread || !w.all || w.gap)
      return false;
  }
  const bool cooling = last && now - last->time < secs(r.cooldown);
  const bool fresh = !last || now - secs(r.scale_down_window) >= last->time;
  return !cooling && fresh;
}

}  // namespace

decision decide_metrics(const rules& r, const std::vector<metric_view>& metrics, double now, int32_t current,
                        const std::optional<last_scale>& last, double backoff_until) {
  const std::string unread = unread_list(metrics);
  const bool several = metrics.size() > 1;
  if (std::all_of(metrics.begin(), metrics.end(), [](const metric_view& m) { return m.unread.has_value(); }))
    return {action::none, current, reason::no_metric, unread.empty() ? "no metric" : "no metric could be read: " + unread};
  rules one = r;
  const bool to_zero = r.min_replicas == 0;
  if (to_zero && current >= 0 && current <= 1 && current <= r.max_replicas && !(backoff_until > now)) {
    if (current == 0)
      return with_unread(activate(metrics), unread);
    one.min_replicas = 1;  // the band rules from 1 up; 1 → 0 is the activation thresholds' call
  }
  // Each metric read, decided on its own (with its index, for the detail).
  std::vector<std::pair<size_t, decision>> each;
  for (size_t i = 0; i < metrics.size(); ++i) {
    if (metrics[i].unread)
      continue;
    one.target = metrics[i].target;
    each.emplace_back(i, decide(one, metrics[i].samples, now, current, last, backoff_until));
  }
  auto pick = [&](auto pred) { return std::find_if(each.begin(), each.end(), [&](const auto& x) { return pred(x.second); }); };
  auto named = [&](const std::pair<size_t, decision>& x) {
    auto d = x.second;
    if (several)
      d.detail = "metric " + std::to_string(x.first + 1) + ": " + d.detail;
    return with_unread(std::move(d), unread);
  };
  // Bounds, cooldown and backoff say the same for every metric; a bound is the configuration's,
  // not a metric's, so it holds with one missing too.
  if (auto up = pick([](const decision& x) { return x.what == action::up || x.what == action::to_bound; }); up != each.end())
    return up->second.what == action::up ? named(*up) : with_unread(up->second, unread);
  const bool all_down = std::all_of(each.begin(), each.end(), [](const auto& x) { return x.second.what == action::down; });
  if (all_down && unread.empty()) {
    auto out = each.front().second;
    if (several)
      out.detail = "every metric: " + out.detail;
    return out;
  }
  if (to_zero && current == 1 && deactivates(r, metrics, now, last))
    return {action::down, 0, reason::deactivated, "every metric at or below its activation threshold for the whole down-window"};
  // The metrics read would step down; the missing one might have wanted more (the HPA's rule).
  if (all_down) {
    const auto& first = each.front();
    return {action::none, current, reason::no_metric,
            (each.size() > 1 ? std::string{"every metric read: "} : "metric " + std::to_string(first.first + 1) + ": ") +
                first.second.detail + "; no step down without " + unread};
  }
  // Held: the reason of the first metric read that did not agree to go down.
  auto held = pick([](const decision& x) { return x.what == action::none; });
  return held != each.end() ? named(*held) : with_unread(each.front().second, unread);
}

last_scale next_scale(const std::optional<last_scale>& last, int32_t from, int32_t to, double now) {
  last_scale s{now, from, to, 0};
  if (last) {
    const int prev = (last->to > last->from) - (last->to < last->from);
    const int dir = (to > from) - (to < from);
    if (prev != 0 && dir != 0 && prev != dir)
      s.alternations = last->alternations + 1;
  }
  return s;
}

std::string format_time(double seconds) { return k8s::format_rfc3339(seconds); }

std::optional<double> parse_time(std::string_view text) { return k8s::parse_rfc3339(text); }

std::string encode_last_scale(const last_scale& s) {
  runtime::json_writer w;
  w.begin_object().field("time", format_time(s.time)).field("from", s.from).field("to", s.to);
  w.field("alternations", s.alternations).end_object();
  return w.take();
}

std::optional<last_scale> decode_last_scale(std::string_view text, std::string& error) {
  last_scale s;
  bool time = false, from = false, to = false;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded{text};
    auto doc = parser.iterate(padded);
    for (auto f : doc.get_object()) {
      std::string_view key = f.unescaped_key();
      auto v = f.value();
      auto replicas = [&](const char* name) {
        const int64_t n = v.get_int64();
        if (n < 0 || n > INT32_MAX)
          throw std::string{name} + ": " + std::to_string(n) + " is not a replica count";
        return static_cast<int32_t>(n);
      };
      if (key == "time") {
        std::string_view t = v.get_string();
        auto parsed = parse_time(t);
        if (!parsed)
          throw std::string{"time: \""} + std::string{t.substr(0, 40)} + "\" is not RFC 3339 UTC";
        s.time = *parsed;
        time = true;
      } else if (key == "from") {
        s.from = replicas("from");
        from = true;
      } else if (key == "to") {
        s.to = replicas("to");
        to = true;
      } else if (key == "alternations") {
        s.alternations = replicas("alternations");
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    error = std::string{"not JSON: "} + simdjson::error_message(e.error());
    return std::nullopt;
  } catch (const std::string& why) {
    error = why;
    return std::nullopt;
  }
  if (!time || !from || !to) {
    error = std::string{"missing "} + (!time ? "time" : !from ? "from" : "to");
    return std::nullopt;
  }
  return s;
}

}  // namespace headroom::actors::reactive
