#pragma once

// Messages between the reactive scalers, their tenants' quota keeper and the metric reader
// (local-only; registered in type_ids.hpp). A tenant's quota is a hard cap on the replicas of all
// its targets together.

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::msg {

/// reactive_scaler → reactive_quota, at every evaluation and after every write: its replicas now.
struct quota_report {
  std::string tenant, target;
  int32_t replicas = 0;
};

/// reactive_scaler → reactive_quota (request): may `target` go from `current` to `wanted`?
/// Answered with quota_verdict.
struct quota_claim {
  std::string tenant, target;
  int32_t current = 0, wanted = 0;
};

struct quota_verdict {
  bool granted = false;
  std::string detail;  // why not: "tenant ml: 10 of 10 replicas in use", "waiting for 2 targets to report"
};

/// reactive_scaler → metric_reader: the samples of `metric` (PromQL, one series) over the
/// `window_s` seconds before `at` (seconds since the epoch); subqueries step `step_s`. Answered
/// (not as a response: the reader batches) with metric_samples carrying the same `evaluation`.
struct metric_request {
  uint64_t evaluation = 0;
  std::string metric;
  int64_t window_s = 0, step_s = 1;
  double at = 0;
};

/// metric_reader → reactive_scaler: the one series' samples in time order, or why there is none
/// (never a number then).
struct metric_samples {
  uint64_t evaluation = 0;
  bool ok = false;
  std::string reason;  // !ok
  std::string labels;  // ok: the series, for messages
  std::vector<double> times, values;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metric_request& x) {
  return f(caf::meta::type_name("metric_request"), x.evaluation, x.metric, x.window_s, x.step_s, x.at);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metric_samples& x) {
  return f(caf::meta::type_name("metric_samples"), x.evaluation, x.ok, x.reason, x.labels, x.times, x.values);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quota_report& x) {
  return f(caf::meta::type_name("quota_report"), x.tenant, x.target, x.replicas);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quota_claim& x) {
  return f(caf::meta::type_name("quota_claim"), x.tenant, x.target, x.current, x.wanted);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quota_verdict& x) {
  return f(caf::meta::type_name("quota_verdict"), x.granted, x.detail);
}

}  // namespace headroom::msg
