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

/// reactive_scaler → metric_reader (through its relay), at start and again whenever samples stop
/// coming (a restarted reader knows no one): evaluate me every `interval_ms` with `metric`'s
/// samples (PromQL, one series) over the `window_s` seconds before each evaluation instant;
/// subqueries step `step_s`. The reader places each subscriber in one of its slots by `target`
/// (the target's id), reads every subscriber of a slot in one request when the slot is due, and
/// sends each its metric_samples. One message per evaluation, not a timer, a request through the
/// relay and an answer: see metric_reader.cpp.
struct metric_subscription {
  std::string target;
  std::vector<std::string> metrics;  // each evaluation reads them all (one metric_samples each)
  int64_t window_s = 0, step_s = 1, interval_ms = 0;
};

/// metric_reader → reactive_scaler: one evaluation's samples in time order, or why there are
/// none (never a number then). `due_ns`: the evaluation's instant on the actor system's clock
/// (steady, nanoseconds since its epoch), from which a step's latency is measured.
struct metric_samples {
  int64_t due_ns = 0;
  uint32_t index = 0;  // of the subscription's metrics
  bool ok = false;
  bool absent = false;  // !ok because Prometheus has no such series (or no sample of it) in the window
  std::string reason;  // !ok
  std::string labels;  // ok: the series, for messages
  std::vector<double> times, values;
  double ended_at = 0;  // ok: > 0 when the series ended then (a staleness marker after the last sample)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metric_subscription& x) {
  return f(caf::meta::type_name("metric_subscription"), x.target, x.metrics, x.window_s, x.step_s, x.interval_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metric_samples& x) {
  return f(caf::meta::type_name("metric_samples"), x.due_ns, x.index, x.ok, x.absent, x.reason, x.labels, x.times, x.values, x.ended_at);
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
