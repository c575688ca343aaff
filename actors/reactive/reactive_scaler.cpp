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

#include "actors/reactive/scaler.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::reactive {

namespace scaler {

// Starts a Kubernetes call whose reply comes back as msg::api_reply. The callback keeps the
// target's resource kind alive for the client's retries.
void start(scaler_self* self, call what, const std::function<void(k8s::client&, const k8s::resource_kind&, k8s::api_callback)>& fn) {
  auto kind = self->state.kind;
  auto* kube = self->state.ctx->kube;
  self->state.calls.start(self, call_info{what}, [kind, kube, fn](k8s::api_callback cb) {
    fn(*kube, kind ? *kind : k8s::kinds::pods, [kind, cb = std::move(cb)](k8s::api_result r) { cb(std::move(r)); });
  });
}

// `action` is what headroom did (or tried): Scale, or Evaluate for what it saw of the metric.
void record_event(scaler_self* self, const char* type, const char* reason, const char* action, const std::string& message) {
  const auto& t = spec(self).target;
  if (self->state.uid.empty())
    return;
  tell_event(self->state.ctx->events, {t.api_version, t.kind, t.ns, t.name, self->state.uid, type, reason, action, message});
}

void report_quota(scaler_self* self) {
  if (!spec(self).tenant.empty() && self->state.quota && self->state.current >= 0)
    caf::anon_send(self->state.quota, msg::quota_report{spec(self).tenant, spec(self).target.id(), self->state.current});
}

void set_current(scaler_self* self, int32_t replicas) {
  self->state.current = replicas;
  self->state.ctx->metrics.set("headroom_reactive_replicas", replicas);
  report_quota(self);
}

void finish_evaluation(scaler_self* self) {
  self->state.evaluating = false;
  self->state.stepping.reset();
}

void note(scaler_self* self, const decision& d) {
  self->state.ctx->metrics.decided(to_string(d.what), to_string(d.why));
  self->state.ctx->metrics.set("headroom_reactive_desired_replicas", d.what == action::none ? self->state.current : d.replicas);
}

// --- start-up: discovery, then the target and its /scale -------------------------------------

void recover(scaler_self* self) {
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

void subscribe(scaler_self* self) {
  const auto& sp = spec(self);
  msg::metric_subscription sub;
  sub.target = self->state.id;
  for (const auto& m : sp.metrics)
    sub.metrics.push_back(m.query);
  sub.window_s = query_window_seconds(sp.rules);
  sub.step_s = std::max<long>(1, static_cast<long>(sp.rules.resolution.count() / 1000));
  sub.interval_ms = sp.rules.evaluation_interval.count();
  self->send(self->state.reader, std::move(sub));
}

// How long without an evaluation from the reader before the scaler counts a failed one and
// subscribes again (the reader restarted and lost its subscribers, or its relay was down).
std::chrono::milliseconds samples_overdue_after(scaler_self* self) {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(15), 3 * spec(self).rules.evaluation_interval);
}

// Samples of 0 from `from` to now, one per resolution step and one at now: an `ifAbsent: zero`
// metric that Prometheus does not have (or no longer has).
void zeros_since(scaler_self* self, double from, std::vector<prom::sample>& out) {
  const double now = wall_now(self), step = std::max(1.0, static_cast<double>(spec(self).rules.resolution.count()) / 1000.0);
  for (double t = from; t < now; t += step)
    out.push_back(prom::sample{t, 0});
  out.push_back(prom::sample{now, 0});
}

// One metric's samples from its reply into `out`, or why it has none. A metric declared `ifAbsent:
// zero` whose series Prometheus does not have reads as 0 over the window (a workload at 0 replicas
// exports nothing).
std::optional<std::string> read_metric(scaler_self* self, size_t i, const msg::metric_samples& reply, std::vector<prom::sample>& out) {
  const auto& metrics = spec(self).metrics;
  const bool absent_zero = i < metrics.size() && metrics[i].absent_zero;
  if (absent_zero && !reply.ok && reply.absent) {
    zeros_since(self, wall_now(self) - static_cast<double>(query_window_seconds(spec(self).rules)), out);
    return std::nullopt;
  }
  if (!reply.ok || reply.times.empty())
    return reply.ok ? std::string{"no samples"} : reply.reason;
  out.resize(reply.times.size());
  for (size_t k = 0; k < reply.times.size(); ++k)
    out[k] = prom::sample{reply.times[k], reply.values[k]};
  if (reply.ended_at > 0 && absent_zero)  // gone since: 0 from then on
    zeros_since(self, reply.ended_at, out);
  return std::nullopt;
}

// A metric missing from an evaluation: with none read the evaluation is skipped; otherwise the
// others decide (a step up, never down: model.hpp). Both count towards the alert, so a metric
// that stays unreadable is told even while the others keep scaling the target.
void metric_missing(scaler_self* self, const std::string& why, bool skipped) {
  auto& s = self->state;
  const auto& m = s.ctx->metrics;
  ++s.failures;
  if (skipped) {
    m.add("headroom_reactive_metric_query_failures_total", 1);
    m.decided(to_string(action::none), to_string(reason::no_metric));
  }
  // Prometheus down for minutes is one line, a reminder a minute and one when it is back.
  const auto v = s.metric_outage.failed(ms_now(self));
  if (v.log != runtime::outage::note::none) {
    const bool first = v.log == runtime::outage::note::went_down;
    const char* text = skipped ? (first ? "no metric: skipping evaluations until it returns" : "still no metric: not scaling")
                               : (first ? "a metric cannot be read: deciding on the others, no step down"
                                        : "still a metric that cannot be read: deciding on the others, no step down");
    runtime::log::warn(actor_name, text,
                       {{"target", tid(self)}, {"reason", why}, {"consecutive", static_cast<int64_t>(s.failures)},
                        {"down_for_ms", v.down_for_ms}});
  }
  if (s.failures >= metric_alert_after && !s.metric_alert) {
    s.metric_alert = true;
    m.set("headroom_reactive_metric_alert", 1);
    record_event(self, "Warning", "MetricUnavailable", "Evaluate",
                 std::to_string(s.failures) + " evaluations in a row without the metric (" + why + "); " +
                     (skipped ? "not scaling until it returns" : "deciding on the others, with no step down, until it returns"));
  }
}

// Every metric read: the alert, if raised, is cleared.
void metrics_back(scaler_self* self) {
  auto& s = self->state;
  if (s.metric_alert) {
    s.metric_alert = false;
    s.ctx->metrics.set("headroom_reactive_metric_alert", 0);
    record_event(self, "Normal", "MetricRecovered", "Evaluate", "the metric is back after " + std::to_string(s.failures) + " failed evaluations");
  }
  s.failures = 0;
  if (const auto v = s.metric_outage.succeeded(ms_now(self)); v.log == runtime::outage::note::came_back)
    runtime::log::info(actor_name, "the metric is back", {{"target", tid(self)}, {"down_for_ms", v.down_for_ms}, {"evaluations_missed", v.failures}});
}

// One evaluation's samples, a metric_samples per metric (all with its due time). A metric that
// cannot be read is left out (the HPA's rule): the others decide, but never a step down; with none
// read the evaluation is skipped.
void on_metric(scaler_self* self, std::vector<msg::metric_samples>& replies) {
  auto& s = self->state;
  const auto& metrics = spec(self).metrics;
  std::vector<metric_view> views(replies.size());
  std::string why;  // the metrics not read, for the log and the Event
  size_t read = 0;
  for (size_t i = 0; i < replies.size(); ++i) {
    auto& v = views[i];
    if (i < metrics.size()) {
      v.target = metrics[i].target;
      v.activation = metrics[i].activation;
    }
    v.unread = read_metric(self, i, replies[i], v.samples);
    if (!v.unread) {
      ++read;
      continue;
    }
    if (!why.empty())
      why += "; ";
    why += replies.size() > 1 ? "metric " + std::to_string(i + 1) + ": " + *v.unread : *v.unread;
  }
  if (read == 0) {
    metric_missing(self, why.empty() ? "no metric" : why, true);
    s.evaluating = false;
    return;
  }
  if (read < replies.size())
    metric_missing(self, why, false);
  else
    metrics_back(self);
  if (!views.front().unread)
    s.ctx->metrics.set("headroom_reactive_metric_value", views.front().samples.back().v);
  // The count is read at every evaluation (as the HPA reads /scale at each sync): someone may have
  // scaled the target, or deleted it, while headroom had nothing to do. Decided on its reply.
  views.resize(std::min(views.size(), metrics.size()));
  s.views = std::move(views);
  const auto t = spec(self).target;
  start(self, call::read_current, [t](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.get(k, t.ns, t.name, std::move(cb), "scale");
  });
}

// A metric's samples for the evaluation due at r.due_ns: kept until every metric's are in.
void on_samples(scaler_self* self, msg::metric_samples& r) {
  auto& s = self->state;
  s.last_samples = self->clock().now();
  if (!s.ready) {
    recover(self);
    return;
  }
  const size_t n = std::max<size_t>(1, spec(self).metrics.size());
  if (r.due_ns != s.gathering_due || s.gathered.size() != n) {  // a new evaluation (an unfinished one is dropped)
    s.gathering_due = r.due_ns;
    s.gathered.assign(n, std::nullopt);
  }
  if (r.index >= n)
    return;
  s.gathered[r.index] = std::move(r);
  if (std::any_of(s.gathered.begin(), s.gathered.end(), [](const auto& x) { return !x.has_value(); }))
    return;
  std::vector<msg::metric_samples> replies;
  for (auto& x : s.gathered)
    replies.push_back(std::move(*x));
  s.gathered.clear();
  if (s.evaluating) {
    s.ctx->metrics.add("headroom_reactive_evaluations_skipped_total", 1);
    return;
  }
  s.evaluating = true;
  s.due = steady::time_point{std::chrono::duration_cast<steady::duration>(std::chrono::nanoseconds{replies.front().due_ns})};
  on_metric(self, replies);
}

// A Kubernetes answer, by the call it answers.
void on_api(scaler_self* self, msg::api_reply& r) {
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
    case call::read_paused: return on_paused_read(self, r);
    case call::list_unplaced: return on_unplaced_listed(self, r);
    case call::revert:
      if (!r.ok)
        runtime::log::warn(actor_name, "cannot put the previous scale annotation back", {{"target", tid(self)}, {"error", r.error}});
      return finish_evaluation(self);
  }
}

scaler_impl::behavior_type scaler_behavior(scaler_self* self, scaler_context_ptr ctx, quota_actor quota,
                                           runtime::watched_relay<metric_reader_actor> reader) {
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
  self->delayed_send(self, samples_overdue_after(self), msg::watchdog_atom_v);
  return {
      [self](msg::watchdog_atom) {
        auto& s = self->state;
        const auto limit = samples_overdue_after(self);
        self->delayed_send(self, limit, msg::watchdog_atom_v);
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
          std::vector<msg::metric_samples> one{std::move(lost)};
          on_metric(self, one);
        }
      },
      [self](msg::metric_samples& r) { on_samples(self, r); },
      [self](msg::api_reply& r) { on_api(self, r); },
      [self](msg::restarted_atom, const std::string&) { subscribe(self); },  // the metric reader restarted
  };
}

}  // namespace scaler


reactive_scaler_actor spawn_reactive_scaler(caf::actor_system& sys, scaler_context_ptr ctx, quota_actor quota,
                                            runtime::watched_relay<metric_reader_actor> reader) {
  return sys.spawn(scaler::scaler_behavior, std::move(ctx), std::move(quota), std::move(reader));
}

}  // namespace headroom::actors::reactive
