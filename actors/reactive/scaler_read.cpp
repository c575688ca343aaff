// The reactive scaler (see reactive_scaler.cpp): discovery of the target's kind, its CRD's replicas
// path, the object and /scale read at start and before each step, recovery of an interrupted step.

#include "actors/reactive/scaler.hpp"

namespace headroom::actors::reactive::scaler {

void read_scale(scaler_self* self) {
  const auto t = spec(self).target;
  start(self, call::read_scale, [t](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.get(k, t.ns, t.name, std::move(cb), "scale");
  });
}

// A failed start-up read is tried again after max(evaluationInterval, 10 s), not at every tick.
void startup_failed(scaler_self* self, const std::string& error) {
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
void target_gone(scaler_self* self) {
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

// The evaluation's fresh read of /scale came back: the count it shows is the truth for this decision.
void on_current(scaler_self* self, const msg::api_reply& r) {
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
  // After a pause, the cooldown and the windows run from its end, as from a scale event.
  auto basis = s.last;
  const bool since_resume = s.resumed_at > 0 && (!s.last || s.resumed_at > s.last->time);
  if (since_resume)
    basis = last_scale{s.resumed_at, s.current, s.current, s.last ? s.last->alternations : 0};
  auto d = decide_metrics(spec(self).rules, std::exchange(s.views, {}), wall_now(self), s.current, basis, s.backoff_until);
  if (since_resume && d.why == reason::cooldown)
    d.detail = "cooldown after the pause ended, " +
               std::to_string(static_cast<int64_t>(std::chrono::duration<double>(spec(self).rules.cooldown).count() -
                                                   (wall_now(self) - s.resumed_at))) +
               " s left";
  else if (since_resume && d.why == reason::window_since_scale)
    d.detail = "the window reaches back before the pause ended";
  note(self, d);
  if (d.what == action::none) {
    s.evaluating = false;
    return;
  }
  begin_step(self, d);
}

// --- replies from the API server --------------------------------------------------------------------

// The target's kind found: /scale is needed; a custom resource's replicas path is read from its CRD.
void on_discovered(scaler_self* self, const msg::api_reply& r) {
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
void on_crd(scaler_self* self, const msg::api_reply& r) {
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
void on_object(scaler_self* self, const msg::api_reply& r) {
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
void on_scale(scaler_self* self, const msg::api_reply& r) {
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
  // Read again after it was gone: by the start-up read, or by a step's check when an evaluation
  // was under way as it returned (which used to leave it marked gone, and unlogged).
  if (s.gone)
    runtime::log::info(actor_name, "the target is back", {{"target", tid(self)}});
  s.gone = false;
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
    if (st.d.what == action::up && !sc.selector.empty())
      return check_unplaced(self, sc.selector);
    return continue_step(self);
  }
  // Start-up: a step whose intent is on the target but whose write is not finishes now.
  set_current(self, sc.spec_replicas);
  s.recovering = false;
  s.ready = true;
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

}  // namespace headroom::actors::reactive::scaler
