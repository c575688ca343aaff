// reactive_scaler: one target workload scaled between minReplicas and maxReplicas by a metric
// (seed 001). See reactive.hpp for the flow and model.hpp for the rules.
//
// Each evaluation: Prometheus → decide() → for a step, a fresh read of /scale (someone else may
// have changed it), the quota's consent for +1, for −1 the newest pod marked with the lowest
// pod-deletion-cost, then the write. Where the kind's replicas path is known (the built-in
// workloads; a custom resource's CRD specReplicasPath, read once after discovery), the write is
// one JSON patch on the object: `test` the count the step starts from, `replace` it, and `add` the
// intent annotation - the count and its cooldown land together or not at all, in one round trip.
// Otherwise (or `scaleWrite: subresource`, or when that patch is refused as invalid: no annotations
// map yet, or the count moved) the intent annotation first, then /scale with the count as a `test`
// (or the annotation's resourceVersion from 0); a refused /scale puts the previous annotation back.
// A failed write is checked by reading /scale again (a lost response may have applied it); a
// refused one is retried at the next evaluation, and after 3 refusals of the same step backs off
// for 2 cooldowns.

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>

#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/event_recorder.hpp"
#include "actors/reactive/reactive.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/scale.hpp"
#include "adapters/prometheus/query.hpp"  // prom::sample; the metric reader owns the client
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"


namespace headroom::actors::reactive {

namespace {

constexpr std::string_view actor_name = "reactive_scaler";
constexpr int max_refusals = 3;              // of one step, then back off
constexpr int metric_alert_after = 3;        // consecutive query failures
using steady = std::chrono::steady_clock;

enum class call : uint8_t { discover, read_crd, read_object, read_scale, read_current, list_pods, deletion_cost, annotate,
                            write_scale, write_both, verify_scale, revert };

struct call_info {
  call what = call::discover;
};

// A step being carried out.
struct step {
  decision d;
  int32_t from = 0, to = 0;
  last_scale next;
  std::string resource_version;
  steady::time_point due;
  bool recovery = false;  // finishing an interrupted step found at start
  bool atomic = false;    // written as one patch on the object: nothing to put back if refused
};

struct scaler_state {
  scaler_context_ptr ctx;
  std::string id;  // the target's id, for logs
  caf::actor quota;
  caf::actor reader;  // the metric reader's relay
  api_calls<call_info> calls;
  std::shared_ptr<const k8s::resource_kind> kind;  // held by every call's callback too
  std::string replicas_pointer;  // the count's JSON pointer in the object; "" = write through /scale
  bool has_annotations = false;  // the object has an annotations map (a JSON patch `add` needs it)
  std::string uid;
  bool ready = false;          // discovered and recovered
  bool recovering = false;     // a discovery/recovery is in flight
  steady::time_point retry_at; // no new discovery/recovery before this (after a failure)
  int32_t current = -1;        // replicas on /scale, as last read or written
  std::optional<last_scale> last;
  std::string last_text;       // the annotation as it is on the target ("" = none)
  double backoff_until = 0;
  int refusals = 0;
  int32_t refused_to = -1;
  int failures = 0;            // consecutive metric failures
  bool metric_alert = false;
  bool oscillation_alert = false;
  bool evaluating = false;     // a step in flight
  steady::time_point last_samples;  // when the reader last sent an evaluation
  steady::time_point due;      // of the evaluation in flight
  std::optional<step> stepping;
  std::vector<prom::sample> samples;  // of the evaluation in flight, decided once /scale is read
  bool gone = false;                  // the target was deleted (logged once; resumed when it returns)
  bool quota_held = false;            // the last scale-up the quota was asked for was held
  runtime::outage metric_outage{{.reminder = std::chrono::minutes(1)}};  // when to log a missing metric
  static inline const char* name = "headroom.reactive_scaler";
};

using scaler_actor = caf::stateful_actor<scaler_state>;

double wall_now(scaler_actor* self) { return runtime::actor_system_clock{self->clock()}.wall_seconds(); }

// Seconds since the epoch on the actor system's clock (the cooldowns and windows are kept in the
// target's annotation as wall time).


const scaler_spec& spec(scaler_actor* self) { return self->state.ctx->spec; }

int64_t ms_now(scaler_actor* self) { return runtime::actor_system_clock{self->clock()}.now_ms(); }

const std::string& tid(scaler_actor* self) { return self->state.id; }

// Starts a Kubernetes call whose reply comes back as msg::api_reply. The callback keeps the
// target's resource kind alive for the client's retries.
void start(scaler_actor* self, call what, const std::function<void(k8s::client&, const k8s::resource_kind&, k8s::api_callback)>& fn) {
  auto kind = self->state.kind;
  auto* kube = self->state.ctx->kube;
  self->state.calls.start(caf::actor_cast<caf::actor>(self), call_info{what}, [kind, kube, fn](k8s::api_callback cb) {
    fn(*kube, kind ? *kind : k8s::kinds::pods, [kind, cb = std::move(cb)](k8s::api_result r) { cb(std::move(r)); });
  });
}

// `action` is what headroom did (or tried): Scale, or Evaluate for what it saw of the metric.
void record_event(scaler_actor* self, const char* type, const char* reason, const char* action, const std::string& message) {
  const auto& t = spec(self).target;
  if (self->state.uid.empty())
    return;
  tell_event(self->state.ctx->events, {t.api_version, t.kind, t.ns, t.name, self->state.uid, type, reason, action, message});
}

void report_quota(scaler_actor* self) {
  if (!spec(self).tenant.empty() && self->state.quota && self->state.current >= 0)
    caf::anon_send(self->state.quota, msg::quota_report{spec(self).tenant, spec(self).target.id(), self->state.current});
}

void set_current(scaler_actor* self, int32_t replicas) {
  self->state.current = replicas;
  self->state.ctx->metrics.set("headroom_reactive_replicas", replicas);
  report_quota(self);
}

void finish_evaluation(scaler_actor* self) {
  self->state.evaluating = false;
  self->state.stepping.reset();
}

void note(scaler_actor* self, const decision& d) {
  self->state.ctx->metrics.decided(to_string(d.what), to_string(d.why));
  self->state.ctx->metrics.set("headroom_reactive_desired_replicas", d.what == action::none ? self->state.current : d.replicas);
}

// --- start-up: discovery, then the target and its /scale -------------------------------------

void recover(scaler_actor* self) {
  auto& s = self->state;
  if (s.recovering || self->clock().now() < s.retry_at)
    return;
  s.recovering = true;
  if (!s.kind) {
    const auto api_version = spec(self).target.api_version;
    start(self, call::discover, [api_version](k8s::client& kube, const k8s::resource_kind&, k8s::api_callback cb) {
      kube.discover(api_version, std::move(cb));
    });
    return;
  }
  const auto t = spec(self).target;
  start(self, call::read_object, [t](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.get(k, t.ns, t.name, std::move(cb));
  });
}

void read_scale(scaler_actor* self) {
  const auto t = spec(self).target;
  start(self, call::read_scale, [t](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.get(k, t.ns, t.name, std::move(cb), "scale");
  });
}

// A failed start-up read is tried again after max(evaluationInterval, 10 s), not at every tick.
void startup_failed(scaler_actor* self, const std::string& error) {
  self->state.recovering = false;
  self->state.retry_at = self->clock().now() + std::max<std::chrono::milliseconds>(spec(self).rules.evaluation_interval,
                                                                                 std::chrono::seconds(10));
  self->state.ctx->metrics.add("headroom_reactive_errors_total", 1);
  if (self->state.gone)  // said once when it went; looked for quietly until it returns
    runtime::log::debug(actor_name, "the target is still gone", {{"target", tid(self)}, {"error", error}});
  else
    runtime::log::warn(actor_name, "cannot read the target; retrying at the next evaluation", {{"target", tid(self)}, {"error", error}});
}

// The target was deleted: say so once, forget what was known of it (a recreated one is a new
// object: its own count, no cooldown of the old one's), and look for it again at each evaluation.
void target_gone(scaler_actor* self) {
  auto& s = self->state;
  if (!s.gone)
    runtime::log::warn(actor_name, "the target is gone; not scaling until it returns", {{"target", tid(self)}});
  s.gone = true;
  s.ready = false;
  s.uid.clear();
  s.last.reset();
  s.last_text.clear();
  s.current = -1;
  s.evaluating = false;
  s.stepping.reset();
}

// --- a step --------------------------------------------------------------------------------------

void write_annotation(scaler_actor* self, const std::string& text, call what) {
  const auto t = spec(self).target;
  const std::string value = text.empty() ? "null" : runtime::json_escape(text);
  const std::string patch = "{\"metadata\":{\"annotations\":{" + runtime::json_escape(scale_annotation) + ":" + value + "}}}";
  start(self, what, [t, patch](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.merge_patch(k, t.ns, t.name, patch, std::move(cb));
  });
}

// The write itself. From a known count above 0, a JSON patch whose `test` is the count the step
// starts from: a compare-and-set, so a change made elsewhere since our last read fails it (422)
// instead of being overwritten, with no read first. From 0 (which a Scale omits, so there is
// nothing to test) it is a PUT with the resourceVersion of the fresh read.
void write_scale(scaler_actor* self) {
  const auto t = spec(self).target;
  const auto& st = *self->state.stepping;
  if (st.from > 0) {
    const std::string patch = "[{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":" + std::to_string(st.from) +
                              "},{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":" + std::to_string(st.to) + "}]";
    start(self, call::write_scale, [t, patch](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
      kube.json_patch(k, t.ns, t.name, patch, std::move(cb), "scale");
    });
    return;
  }
  const auto body = k8s::encode_scale(t.ns, t.name, st.resource_version, st.to);
  start(self, call::write_scale, [t, body](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.replace(k, t.ns, t.name, body, std::move(cb), "scale");
  });
}

// The step as one JSON patch on the object (see the header): from a known count above 0 only
// (`test` needs the count there), when the kind's replicas path is known.
bool write_atomic(scaler_actor* self) {
  auto& s = self->state;
  auto& st = *s.stepping;
  if (s.replicas_pointer.empty() || spec(self).subresource_writes || st.from <= 0 || !s.has_annotations)
    return false;
  const auto t = spec(self).target;
  const std::string annotation_pointer = "/metadata/annotations/" + k8s::json_pointer_escape(scale_annotation);
  const std::string patch = "[{\"op\":\"test\",\"path\":" + runtime::json_escape(s.replicas_pointer) +
                            ",\"value\":" + std::to_string(st.from) + "},{\"op\":\"replace\",\"path\":" +
                            runtime::json_escape(s.replicas_pointer) + ",\"value\":" + std::to_string(st.to) +
                            "},{\"op\":\"add\",\"path\":" + runtime::json_escape(annotation_pointer) +
                            ",\"value\":" + runtime::json_escape(encode_last_scale(st.next)) + "}]";
  st.atomic = true;
  start(self, call::write_both, [t, patch](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.json_patch(k, t.ns, t.name, patch, std::move(cb));
  });
  return true;
}

// The intent and the count: one patch where it can be, else the annotation and then /scale.
void write_step(scaler_actor* self) {
  if (!write_atomic(self))
    write_annotation(self, encode_last_scale(self->state.stepping->next), call::annotate);
}

void step_done(scaler_actor* self) {
  auto& s = self->state;
  auto& st = *s.stepping;
  const auto& m = s.ctx->metrics;
  const bool up = st.to > st.from;
  set_current(self, st.to);
  s.last = st.next;
  s.last_text = encode_last_scale(st.next);
  s.refusals = 0;
  s.refused_to = -1;
  m.add(up ? "headroom_reactive_scale_ups_total" : "headroom_reactive_scale_downs_total", 1);
  const double latency = std::chrono::duration<double>(self->clock().now() - st.due).count();
  m.scale_latency(latency);
  const std::string what = std::to_string(st.from) + " → " + std::to_string(st.to) + " replicas: " + st.d.detail;
  runtime::log::info(actor_name, st.recovery ? "finished an interrupted scale" : "scaled",
                     {{"target", tid(self)}, {"from", static_cast<int64_t>(st.from)}, {"to", static_cast<int64_t>(st.to)},
                      {"reason", to_string(st.d.why)}, {"write", st.atomic ? "object" : "subresource"},
                      {"latency_ms", latency * 1000}});
  record_event(self, "Normal", up ? "ScaledUp" : "ScaledDown", "Scale", what);
  if (st.next.alternations >= oscillation_alert_after) {
    m.add("headroom_reactive_oscillation_alerts_total", 1);
    m.set("headroom_reactive_oscillation_alert", 1);
    if (!s.oscillation_alert) {
      s.oscillation_alert = true;
      const std::string msg = std::to_string(st.next.alternations + 1) +
                              " scale events in a row alternated direction: raise the cooldown or move the target";
      runtime::log::warn(actor_name, "scaling oscillates", {{"target", tid(self)}, {"alternations", static_cast<int64_t>(st.next.alternations)}});
      record_event(self, "Warning", "ScalingOscillation", "Scale", msg);
    }
  } else if (s.oscillation_alert && st.next.alternations == 0) {
    s.oscillation_alert = false;
    m.set("headroom_reactive_oscillation_alert", 0);
  }
  finish_evaluation(self);
}

// The write did not happen (refused, or failed and /scale still shows the old count).
void step_refused(scaler_actor* self, const std::string& error) {
  auto& s = self->state;
  auto& st = *s.stepping;
  s.ctx->metrics.add("headroom_reactive_scale_refused_total", 1);
  s.ctx->metrics.decided(to_string(st.d.what), to_string(reason::refused));
  s.refusals = s.refused_to == st.to ? s.refusals + 1 : 1;
  s.refused_to = st.to;
  runtime::log::warn(actor_name, "scale refused; retrying at the next evaluation",
                     {{"target", tid(self)}, {"to", static_cast<int64_t>(st.to)}, {"refusals", static_cast<int64_t>(s.refusals)}, {"error", error}});
  if (s.refusals >= max_refusals) {
    const auto cooldown = std::chrono::duration<double>(spec(self).rules.cooldown).count();
    s.backoff_until = wall_now(self) + 2 * cooldown;
    s.refusals = 0;
    s.refused_to = -1;
    runtime::log::warn(actor_name, "3 refused scale writes of one step: backing off for 2 cooldowns", {{"target", tid(self)}});
    record_event(self, "Warning", "ScaleRefused", "Scale",
                 "scale to " + std::to_string(st.to) + " refused 3 times (" + error + "); backing off for 2 cooldowns");
  }
  // Put the previous event back, so the refused step does not start a cooldown. At start-up the
  // previous one is unknown: the intent stays (its cooldown is the conservative choice).
  if (st.recovery || st.atomic) {
    finish_evaluation(self);
    return;
  }
  write_annotation(self, s.last_text, call::revert);
}

void continue_step(scaler_actor* self);

void begin_step(scaler_actor* self, const decision& d) {
  auto& s = self->state;
  step st;
  st.d = d;
  st.from = s.current;
  st.to = d.replicas;
  st.due = s.due;
  s.stepping = st;
  // A step up from a known count goes straight on (the write tests the count); a step down reads
  // /scale for the pods' selector, and a step from 0 for the resourceVersion to write against.
  if (st.to > st.from && st.from > 0)
    continue_step(self);
  else
    read_scale(self);
}

// After the fresh read: the quota's consent for a scale-up, the newest pod for a scale-down.
void continue_step(scaler_actor* self) {
  auto& s = self->state;
  auto& st = *s.stepping;
  if (st.to > st.from && st.d.what == action::up && !spec(self).tenant.empty() && s.quota) {
    self->request(s.quota, std::chrono::seconds(5),
                  msg::quota_claim{spec(self).tenant, spec(self).target.id(), st.from, st.to})
        .then(
            [self](const msg::quota_verdict& v) {
              auto& s = self->state;
              if (!s.stepping)
                return;
              if (!v.granted) {
                s.ctx->metrics.decided(to_string(action::up), to_string(reason::quota));
                if (!s.quota_held)  // said when it starts, not at every evaluation it lasts
                  runtime::log::info(actor_name, "scale-up held by the quota", {{"target", tid(self)}, {"detail", v.detail}});
                s.quota_held = true;
                finish_evaluation(self);
                return;
              }
              if (s.quota_held)
                runtime::log::info(actor_name, "the quota allows the scale-up now", {{"target", tid(self)}});
              s.quota_held = false;
              s.stepping->next = next_scale(s.last, s.stepping->from, s.stepping->to, wall_now(self));
              write_step(self);
            },
            [self](caf::error& e) {
              self->state.ctx->metrics.decided(to_string(action::up), to_string(reason::quota));
              runtime::log::warn(actor_name, "the quota keeper did not answer; no scale-up", {{"target", tid(self)}, {"error", to_string(e)}});
              finish_evaluation(self);
            });
    return;
  }
  st.next = next_scale(s.last, st.from, st.to, wall_now(self));
  write_step(self);
}

void mark_newest_pod(scaler_actor* self, const std::string& selector) {
  const auto ns = spec(self).target.ns;
  start(self, call::list_pods, [ns, selector](k8s::client& kube, const k8s::resource_kind&, k8s::api_callback cb) {
    k8s::list_options o;
    o.label_selector = selector;
    kube.list(k8s::kinds::pods, ns, o, std::move(cb));
  });
}

// --- evaluation ------------------------------------------------------------------------------------

void subscribe(scaler_actor* self) {
  const auto& sp = spec(self);
  msg::metric_subscription sub;
  sub.target = self->state.id;
  sub.metric = sp.metric;
  sub.window_s = query_window_seconds(sp.rules);
  sub.step_s = std::max<long>(1, static_cast<long>(sp.rules.resolution.count() / 1000));
  sub.interval_ms = sp.rules.evaluation_interval.count();
  self->send(self->state.reader, std::move(sub));
}

// How long without an evaluation from the reader before the scaler counts a failed one and
// subscribes again (the reader restarted and lost its subscribers, or its relay was down).
std::chrono::milliseconds samples_overdue_after(scaler_actor* self) {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(15), 3 * spec(self).rules.evaluation_interval);
}

void on_metric(scaler_actor* self, msg::metric_samples& reply) {
  auto& s = self->state;
  const auto& m = s.ctx->metrics;
  if (!reply.ok || reply.times.empty()) {
    const std::string& why = reply.ok ? "no samples" : reply.reason;
    ++s.failures;
    m.add("headroom_reactive_metric_query_failures_total", 1);
    m.decided(to_string(action::none), to_string(reason::no_metric));
    // Prometheus down for minutes is one line, a reminder a minute and one when it is back.
    const auto v = s.metric_outage.failed(ms_now(self));
    if (v.log != runtime::outage::note::none)
      runtime::log::warn(actor_name, v.log == runtime::outage::note::went_down ? "no metric: skipping evaluations until it returns"
                                                                               : "still no metric: not scaling",
                         {{"target", tid(self)}, {"reason", why}, {"consecutive", static_cast<int64_t>(s.failures)},
                          {"down_for_ms", v.down_for_ms}});
    if (s.failures >= metric_alert_after && !s.metric_alert) {
      s.metric_alert = true;
      m.set("headroom_reactive_metric_alert", 1);
      record_event(self, "Warning", "MetricUnavailable", "Evaluate",
                   std::to_string(s.failures) + " evaluations in a row without the metric (" + why +
                       "); not scaling until it returns");
    }
    s.evaluating = false;
    return;
  }
  if (s.metric_alert) {
    s.metric_alert = false;
    m.set("headroom_reactive_metric_alert", 0);
    record_event(self, "Normal", "MetricRecovered", "Evaluate", "the metric is back after " + std::to_string(s.failures) + " failed evaluations");
  }
  s.failures = 0;
  if (const auto v = s.metric_outage.succeeded(ms_now(self)); v.log == runtime::outage::note::came_back)
    runtime::log::info(actor_name, "the metric is back", {{"target", tid(self)}, {"down_for_ms", v.down_for_ms}, {"evaluations_missed", v.failures}});
  std::vector<prom::sample> samples(reply.times.size());
  for (size_t i = 0; i < samples.size(); ++i)
    samples[i] = prom::sample{reply.times[i], reply.values[i]};
  m.set("headroom_reactive_metric_value", samples.back().v);
  // The count is read at every evaluation (as the HPA reads /scale at each sync): someone may have
  // scaled the target, or deleted it, while headroom had nothing to do. Decided on its reply.
  s.samples = std::move(samples);
  const auto t = spec(self).target;
  start(self, call::read_current, [t](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.get(k, t.ns, t.name, std::move(cb), "scale");
  });
}

// The evaluation's fresh read of /scale came back: the count it shows is the truth for this decision.
void on_current(scaler_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  if (!r.ok && static_cast<k8s::api_error::kind>(r.error_kind) == k8s::api_error::kind::not_found)
    return target_gone(self);
  if (r.ok) {
    auto decoded = k8s::decode_scale(r.body);
    if (auto* sc = std::get_if<k8s::scale>(&decoded); sc && sc->spec_replicas != s.current) {
      runtime::log::info(actor_name, "replicas changed elsewhere",
                         {{"target", tid(self)}, {"was", static_cast<int64_t>(s.current)}, {"now", static_cast<int64_t>(sc->spec_replicas)}});
      set_current(self, sc->spec_replicas);
    }
  } else {
    // Decided from the last count known; a step reads /scale again before it writes.
    runtime::log::debug(actor_name, "cannot read /scale; deciding from the last count", {{"target", tid(self)}, {"error", r.error}});
  }
  report_quota(self);
  auto d = decide(spec(self).rules, s.samples, wall_now(self), s.current, s.last, s.backoff_until);
  note(self, d);
  if (d.what == action::none) {
    s.evaluating = false;
    return;
  }
  begin_step(self, d);
}

// --- replies from the API server --------------------------------------------------------------------

// The target's kind found: /scale is needed; a custom resource's replicas path is read from its CRD.
void on_discovered(scaler_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  const auto& t = spec(self).target;
  if (!r.ok)
    return startup_failed(self, r.error);
  std::string error;
  auto found = k8s::find_resource(r.body, t.api_version, t.kind, error);
  if (!found)
    return startup_failed(self, error);
  if (!found->has_scale) {
    s.recovering = false;
    s.ctx->metrics.add("headroom_reactive_errors_total", 1);
    runtime::log::error(actor_name, "the target's kind has no /scale subresource; it cannot be scaled (looking again in 5 minutes)",
                        {{"target", tid(self)}});
    s.retry_at = self->clock().now() + std::chrono::minutes(5);
    return;
  }
  s.kind = std::make_shared<const k8s::resource_kind>(found->kind);
  if (auto ptr = k8s::builtin_replicas_pointer(found->kind)) {
    s.replicas_pointer = *ptr;
  } else if (!spec(self).subresource_writes && !found->kind.group.empty()) {
    // A custom resource: its CRD says where the count is (no CRD, e.g. an aggregated API, or
    // no right to read it: every step goes through /scale).
    const auto name = k8s::crd_name(found->kind);
    start(self, call::read_crd, [name](k8s::client& kube, const k8s::resource_kind&, k8s::api_callback cb) {
      kube.get(k8s::resource_kind{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false}, "", name, std::move(cb));
    });
    return;
  }
  s.recovering = false;
  recover(self);
  return;
}

// The CRD of a custom resource: where its replicas are (else every step goes through /scale).
void on_crd(scaler_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  std::string error = r.error;
  if (r.ok) {
    if (auto ptr = k8s::crd_replicas_pointer(r.body, s.kind->version, error))
      s.replicas_pointer = *ptr;
  }
  if (s.replicas_pointer.empty())
    runtime::log::info(actor_name, "the replicas path is not known: each step is two writes (the annotation, then /scale)",
                       {{"target", tid(self)}, {"crd", k8s::crd_name(*s.kind)}, {"why", error}});
  s.recovering = false;
  recover(self);
  return;
}

// The target object: its uid and the last scale intent headroom wrote on it.
void on_object(scaler_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  if (!r.ok) {
    if (static_cast<k8s::api_error::kind>(r.error_kind) == k8s::api_error::kind::not_found)
      target_gone(self);
    return startup_failed(self, r.error);
  }
  auto obj = k8s::decode_unstructured(r.body);
  if (auto* e = std::get_if<k8s::decode_error>(&obj))
    return startup_failed(self, e->message);
  const auto& meta = std::get<k8s::unstructured>(obj).meta;
  s.uid = meta.uid;
  s.has_annotations = !meta.annotations.empty();
  s.last.reset();
  s.last_text.clear();
  if (const auto* text = meta.annotation(scale_annotation)) {
    std::string error;
    s.last = decode_last_scale(*text, error);
    if (s.last) {
      s.last_text = *text;
    } else {
      s.ctx->metrics.add("headroom_reactive_errors_total", 1);
      runtime::log::warn(actor_name, "ignoring a malformed scale annotation (treated as never scaled)",
                         {{"target", tid(self)}, {"annotation", std::string{scale_annotation}}, {"error", error}});
    }
  }
  read_scale(self);
  return;
}

// /scale read: during a step, the count checked (changed elsewhere?) before the write; at start-up,
// the current count, and a step a restart interrupted is finished.
void on_scale(scaler_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  if (!r.ok) {
    if (s.stepping) {
      runtime::log::warn(actor_name, "cannot read /scale; no step this evaluation", {{"target", tid(self)}, {"error", r.error}});
      return finish_evaluation(self);
    }
    return startup_failed(self, r.error);
  }
  auto decoded = k8s::decode_scale(r.body);
  if (auto* e = std::get_if<k8s::decode_error>(&decoded)) {
    if (s.stepping)
      return finish_evaluation(self);
    return startup_failed(self, e->message);
  }
  const auto& sc = std::get<k8s::scale>(decoded);
  if (s.stepping) {
    auto& st = *s.stepping;
    if (sc.spec_replicas != st.from) {
      s.ctx->metrics.decided(to_string(st.d.what), to_string(reason::changed_elsewhere));
      runtime::log::info(actor_name, "replicas changed elsewhere; deciding again at the next evaluation",
                         {{"target", tid(self)}, {"expected", static_cast<int64_t>(st.from)}, {"found", static_cast<int64_t>(sc.spec_replicas)}});
      set_current(self, sc.spec_replicas);
      return finish_evaluation(self);
    }
    st.resource_version = sc.resource_version;
    if (st.to < st.from && !sc.selector.empty()) {
      mark_newest_pod(self, sc.selector);
      return;
    }
    return continue_step(self);
  }
  // Start-up: a step whose intent is on the target but whose write is not finishes now.
  set_current(self, sc.spec_replicas);
  s.recovering = false;
  s.ready = true;
  if (s.gone)
    runtime::log::info(actor_name, "the target is back", {{"target", tid(self)}});
  s.gone = false;
  runtime::log::info(actor_name, "watching",
                     {{"target", tid(self)}, {"replicas", static_cast<int64_t>(sc.spec_replicas)},
                                {"last_scale", s.last_text.empty() ? std::string{"none"} : s.last_text}});
  if (s.last && s.last->to != s.last->from && sc.spec_replicas == s.last->from) {
    step st;
    st.d = {s.last->to > s.last->from ? action::up : action::down, s.last->to, reason::refused,
            "finishing the step interrupted by a restart"};
    st.from = s.last->from;
    st.to = s.last->to;
    st.next = *s.last;
    st.resource_version = sc.resource_version;
    st.due = self->clock().now();
    st.recovery = true;
    s.stepping = st;
    s.evaluating = true;
    write_scale(self);
  }
  return;
}

// The target's pods: the newest is marked to go first on a scale-down.
void on_pods_listed(scaler_actor* self, const msg::api_reply& r) {
  const auto& t = spec(self).target;
  if (r.ok) {
    auto list = k8s::decode_list<k8s::pod>(r.body);
    if (auto* l = std::get_if<k8s::list_result<k8s::pod>>(&list)) {
      const k8s::pod* newest = nullptr;
      for (const auto& p : l->items) {
        if (!p.meta.deletion_timestamp.empty())
          continue;
        if (newest == nullptr ||
            std::tie(p.meta.creation_timestamp, p.meta.name) > std::tie(newest->meta.creation_timestamp, newest->meta.name))
          newest = &p;
      }
      if (newest != nullptr) {
        // Lower costs go first; a newer mark is lower than any older one left behind.
        const auto cost = -static_cast<int64_t>(wall_now(self));
        const std::string patch = "{\"metadata\":{\"annotations\":{\"controller.kubernetes.io/pod-deletion-cost\":\"" +
                                  std::to_string(cost) + "\"}}}";
        const auto ns = t.ns;
        const auto pod = newest->meta.name;
        runtime::log::debug(actor_name, "marking the newest pod to go first", {{"target", tid(self)}, {"pod", pod}});
        start(self, call::deletion_cost, [ns, pod, patch](k8s::client& kube, const k8s::resource_kind&, k8s::api_callback cb) {
          kube.merge_patch(k8s::kinds::pods, ns, pod, patch, std::move(cb));
        });
        return;
      }
    }
  }
  return continue_step(self);
}

// The intent written (the two-write path): /scale next.
void on_annotated(scaler_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  if (!s.stepping)
    return;
  if (!r.ok) {
    runtime::log::warn(actor_name, "cannot write the scale intent; no step this evaluation", {{"target", tid(self)}, {"error", r.error}});
    s.ctx->metrics.add("headroom_reactive_errors_total", 1);
    return finish_evaluation(self);
  }
  s.has_annotations = true;
  auto obj = k8s::decode_unstructured(r.body);
  if (auto* u = std::get_if<k8s::unstructured>(&obj))
    s.stepping->resource_version = u->meta.resource_version;
  return write_scale(self);
}

// A write answered with an error, read again: done after all, changed elsewhere, or refused.
void on_verified(scaler_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  if (!s.stepping)
    return;
  if (r.ok) {
    auto decoded = k8s::decode_scale(r.body);
    if (auto* sc = std::get_if<k8s::scale>(&decoded)) {
      if (sc->spec_replicas == s.stepping->to)
        return step_done(self);
      if (sc->spec_replicas != s.stepping->from) {
        // Changed elsewhere since our last read: not a refusal. Decide again from what is there.
        s.ctx->metrics.decided(to_string(s.stepping->d.what), to_string(reason::changed_elsewhere));
        runtime::log::info(actor_name, "replicas changed elsewhere; deciding again at the next evaluation",
                           {{"target", tid(self)}, {"expected", static_cast<int64_t>(s.stepping->from)},
                            {"found", static_cast<int64_t>(sc->spec_replicas)}});
        set_current(self, sc->spec_replicas);
        if (s.stepping->recovery || s.stepping->atomic)
          return finish_evaluation(self);
        return write_annotation(self, s.last_text, call::revert);
      }
    }
  }
  return step_refused(self, s.stepping->d.detail);
}

// A step's write answered (one patch, or /scale after the intent): done; a one-patch step refused
// as invalid is written in two; any other error is read again before it counts as refused.
void on_written(scaler_actor* self, const msg::api_reply& r, bool one_patch) {
  auto& s = self->state;
  const auto& t = spec(self).target;
  if (!s.stepping)
    return;
  if (r.ok)
    return step_done(self);
  if (one_patch && static_cast<k8s::api_error::kind>(r.error_kind) == k8s::api_error::kind::invalid) {
    // Not applied: the object has no annotations map yet, or the count moved. The two-write
    // path creates the map, and its own `test` tells a moved count apart.
    runtime::log::info(actor_name, "one-patch step refused as invalid; writing it in two", {{"target", tid(self)}, {"error", r.error}});
    s.stepping->atomic = false;
    return write_annotation(self, encode_last_scale(s.stepping->next), call::annotate);
  }
  // Did it happen anyway (a response lost after the write)? Read again before calling it refused.
  s.stepping->d.detail += " (write answered: " + r.error + ")";
  start(self, call::verify_scale, [t](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.get(k, t.ns, t.name, std::move(cb), "scale");
  });
}

// A Kubernetes answer, by the call it answers.
void on_api(scaler_actor* self, msg::api_reply& r) {
  auto& s = self->state;
  auto info = s.calls.take(r);
  if (!info)
    return;
  switch (info->what) {
    case call::read_current:
      if (s.evaluating && !s.stepping)
        on_current(self, r);
      return;
    case call::discover: return on_discovered(self, r);
    case call::read_crd: return on_crd(self, r);
    case call::read_object: return on_object(self, r);
    case call::read_scale: return on_scale(self, r);
    case call::list_pods: return on_pods_listed(self, r);
    case call::deletion_cost:
      if (!r.ok)
        runtime::log::warn(actor_name, "cannot mark the newest pod; the workload's controller picks", {{"target", tid(self)}, {"error", r.error}});
      if (!s.stepping)
        return;
      return continue_step(self);
    case call::annotate: return on_annotated(self, r);
    case call::write_both: return on_written(self, r, true);
    case call::write_scale: return on_written(self, r, false);
    case call::verify_scale: return on_verified(self, r);
    case call::revert:
      if (!r.ok)
        runtime::log::warn(actor_name, "cannot put the previous scale annotation back", {{"target", tid(self)}, {"error", r.error}});
      return finish_evaluation(self);
  }
}

caf::behavior scaler_behavior(scaler_actor* self, scaler_context_ptr ctx, caf::actor quota, caf::actor reader) {
  auto& s = self->state;
  s.ctx = std::move(ctx);
  s.id = s.ctx->spec.target.id();
  s.quota = std::move(quota);
  s.reader = std::move(reader);
  // The metric reader keeps the evaluations' clock (one slot of its 25 per interval by a hash of
  // the target's id, so a slot's targets leave as one remote read): subscribe, and watch that its
  // evaluations keep coming.
  subscribe(self);
  self->send(s.reader, msg::watch_atom_v);  // a restarted reader knows no one: subscribe again then
  s.last_samples = self->clock().now();
  self->delayed_send(self, samples_overdue_after(self), msg::tick_atom_v, uint64_t{0});
  return {
      [self](msg::tick_atom, uint64_t) {  // the watchdog
        auto& s = self->state;
        const auto limit = samples_overdue_after(self);
        self->delayed_send(self, limit, msg::tick_atom_v, uint64_t{0});
        const auto now = self->clock().now();
        if (!s.ready)
          recover(self);
        if (now - s.last_samples < limit)
          return;
        s.last_samples = now;
        subscribe(self);
        if (s.ready && !s.evaluating) {
          msg::metric_samples lost;
          lost.due_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
          lost.reason = "no evaluation from the metric reader in " + std::to_string(limit.count() / 1000) + " s";
          s.evaluating = true;
          s.due = now;
          on_metric(self, lost);
        }
      },
      [self](msg::metric_samples& r) {
        auto& s = self->state;
        s.last_samples = self->clock().now();
        if (!s.ready) {
          recover(self);
          return;
        }
        if (s.evaluating) {
          s.ctx->metrics.add("headroom_reactive_evaluations_skipped_total", 1);
          return;
        }
        s.evaluating = true;
        s.due = steady::time_point{std::chrono::duration_cast<steady::duration>(std::chrono::nanoseconds{r.due_ns})};
        on_metric(self, r);
      },
      [self](msg::api_reply& r) { on_api(self, r); },
      [self](msg::restarted_atom, const std::string&) { subscribe(self); },  // the metric reader restarted
  };
}

}  // namespace

caf::actor spawn_reactive_scaler(caf::actor_system& sys, scaler_context_ptr ctx, caf::actor quota, caf::actor reader) {
  return sys.spawn(scaler_behavior, std::move(ctx), std::move(quota), std::move(reader));
}

}  // namespace headroom::actors::reactive
