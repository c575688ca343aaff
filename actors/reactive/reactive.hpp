#pragma once

// Reactive metric-driven scaling (seed 001): one reactive_scaler per target workload, and one
// reactive_quota keeper for the tenants' caps.
//
//   reactive (supervisor) ── reactive_quota
//                         ├─ metric_reader         (Prometheus, batched; the evaluations' clock)
//                         └─ reactive_scaler × N   (one per target; subscribes to the reader, asks the quota)
//
// A scaler evaluates its target every evaluationInterval: the metric reader, which keeps the
// evaluations' clock, sends it the metric's samples over the longest window; the scaler decides
// with model.hpp and carries a step out on the target's /scale subresource. What must survive a
// restart lives on the target: its replicas, and the last scale event (annotation
// headroom.dev/reactive-scale), written *before* /scale as the step's intent, so a headroom
// killed between the two finishes the step on restart instead of losing or repeating it.

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/k8s/event_recorder.hpp"
#include "actors/reactive/model.hpp"
#include "messages/type_ids.hpp"
#include "runtime/relay.hpp"

namespace headroom::k8s {
class client;
}
namespace headroom::prom {
class client;
}

namespace headroom::actors::reactive {

struct target_ref {
  std::string api_version = "apps/v1";
  std::string kind = "Deployment";
  std::string ns = "default";
  std::string name;
  std::string id() const { return ns + "/" + kind + "/" + name; }  // metrics label, logs, quota
};

// Per-target series, bound to the target's labels by app/.
struct scaler_metrics {
  std::function<void(const char* gauge, double)> set;
  std::function<void(const char* counter, double)> add;
  std::function<void(const char* action, const char* reason)> decided;  // counts it, marks it last
  std::function<void(double seconds)> scale_latency;                    // evaluation due → /scale written
};

struct scaler_spec {
  target_ref target;
  std::string tenant;  // "" = no quota
  // The metrics (PromQL: one series each); the largest proposal wins (model.hpp, decide_metrics).
  struct metric {
    std::string query;
    double target = 0;
    double activation = 0;     // activationThreshold (minReplicas 0)
    bool absent_zero = false;  // ifAbsent: zero: no series means 0, not "no metric"
  };
  std::vector<metric> metrics;
  reactive::rules rules;
  bool subresource_writes = false;  // never the one-patch write on the object (scaleWrite: subresource)
};

struct scaler_context {
  scaler_spec spec;
  k8s::client* kube = nullptr;
  scaler_metrics metrics;
  actors::event_sink events;  // the event_recorder's relay (actors/k8s/event_recorder.hpp)
};
using scaler_context_ptr = std::shared_ptr<const scaler_context>;

// ---- the contracts --------------------------------------------------------------------------------

// metric_reader: a scaler subscribes (and subscribes again after the reader restarts); each
// evaluation's msg::metric_samples go back to the subscriber, a metric_subscriber.
using metric_reader_actor = caf::typed_actor<caf::reacts_to<msg::metric_subscription>>;
using metric_subscriber = caf::typed_actor<caf::reacts_to<msg::metric_samples>>;
// reactive_quota: each scaler's replicas, and its claims for more (answered granted or not).
using quota_actor = caf::typed_actor<caf::reacts_to<msg::quota_report>,
                                     caf::replies_to<msg::quota_claim>::with<msg::quota_verdict>>;
// reactive_scaler: its samples, and the reader's relay saying the reader restarted.
using reactive_scaler_actor = caf::typed_actor<caf::reacts_to<msg::metric_samples>, caf::reacts_to<msg::restarted_atom, std::string>>;

// `quota`: the quota keeper's relay (ignored when the spec has no tenant); `reader`: the metric
// reader's relay, watched for restarts.
reactive_scaler_actor spawn_reactive_scaler(caf::actor_system& sys, scaler_context_ptr ctx, quota_actor quota,
                                            runtime::watched_relay<metric_reader_actor> reader);

struct reader_options {
  std::shared_ptr<prom::client> prom;
  size_t max_batch = 250;  // queries in one remote read
  std::function<void(const char* kind, double queries)> count;  // kind: read (a remote read), query
  std::function<void(double seconds)> request_seconds;          // each request, sent → answered
};

metric_reader_actor spawn_metric_reader(caf::actor_system& sys, reader_options opts);

using quota_caps = std::map<std::string, int32_t>;  // tenant → hard cap on replicas summed

struct quota_options {
  quota_caps caps;
  std::map<std::string, std::vector<std::string>> members;  // tenant → its targets' ids
  // Re-reads the caps (the configuration file, which a ConfigMap update rewrites): the new caps,
  // nullopt with `error` empty when nothing changed, or nullopt with the error. Unset = the caps
  // never change.
  std::function<std::optional<quota_caps>(std::string& error)> reload;
  std::chrono::milliseconds reload_interval{10'000};
  std::function<void(const std::string& tenant, int32_t used, int32_t cap)> report;  // metrics
};

quota_actor spawn_reactive_quota(caf::actor_system& sys, quota_options opts);

}  // namespace headroom::actors::reactive
