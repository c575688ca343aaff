// The reactive scaler (see reactive_scaler.cpp): one step carried out - the quota's consent, the
// newest pod marked for deletion on a scale-down, the write (one patch, or annotation then /scale),
// and the check of a write whose answer was lost.

#include "actors/reactive/scaler.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::actors::reactive::scaler {

void write_annotation(scaler_self* self, const std::string& text, call what) {
  const auto t = spec(self).target;
  runtime::json_writer w;
  w.begin_object().key("metadata").begin_object().key("annotations").begin_object().key(scale_annotation);
  if (text.empty())
    w.null();  // a merge patch removes the annotation
  else
    w.value(text);
  w.end_object().end_object().end_object();
  const std::string patch = w.take();
  start(self, what, [t, patch](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.merge_patch(k, t.ns, t.name, patch, std::move(cb));
  });
}

// The write itself. From a known count above 0, a JSON patch whose `test` is the count the step
// starts from: a compare-and-set, so a change made elsewhere since our last read fails it (422)
// instead of being overwritten, with no read first. From 0 (which a Scale omits, so there is
// nothing to test) it is a PUT with the resourceVersion of the fresh read.
void write_scale(scaler_self* self) {
  const auto t = spec(self).target;
  const auto& st = *self->state.stepping;
  if (st.from > 0) {
    runtime::json_writer w;
    w.begin_array();
    w.begin_object().field("op", "test").field("path", "/spec/replicas").field("value", st.from).end_object();
    w.begin_object().field("op", "replace").field("path", "/spec/replicas").field("value", st.to).end_object();
    w.end_array();
    const std::string patch = w.take();
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
bool write_atomic(scaler_self* self) {
  auto& s = self->state;
  auto& st = *s.stepping;
  if (s.replicas_pointer.empty() || spec(self).subresource_writes || st.from <= 0 || !s.has_annotations)
    return false;
  const auto t = spec(self).target;
  const std::string annotation_pointer = "/metadata/annotations/" + k8s::json_pointer_escape(scale_annotation);
  runtime::json_writer w;
  w.begin_array();
  w.begin_object().field("op", "test").field("path", s.replicas_pointer).field("value", st.from).end_object();
  w.begin_object().field("op", "replace").field("path", s.replicas_pointer).field("value", st.to).end_object();
  w.begin_object().field("op", "add").field("path", annotation_pointer).field("value", encode_last_scale(st.next)).end_object();
  w.end_array();
  const std::string patch = w.take();
  st.atomic = true;
  start(self, call::write_both, [t, patch](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.json_patch(k, t.ns, t.name, patch, std::move(cb));
  });
  return true;
}

// The intent and the count: one patch where it can be, else the annotation and then /scale.
void write_step(scaler_self* self) {
  if (!write_atomic(self))
    write_annotation(self, encode_last_scale(self->state.stepping->next), call::annotate);
}

void step_done(scaler_self* self) {
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
void step_refused(scaler_self* self, const std::string& error) {
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

void continue_step(scaler_self* self);

// A step is due: first the target's pause annotation (read only when a step would be taken, so
// an idle target costs nothing), then the step.
void begin_step(scaler_self* self, const decision& d) {
  auto& s = self->state;
  step st;
  st.d = d;
  st.from = s.current;
  st.to = d.replicas;
  st.due = s.due;
  s.stepping = st;
  const auto t = spec(self).target;
  start(self, call::read_paused, [t](k8s::client& kube, const k8s::resource_kind& k, k8s::api_callback cb) {
    kube.get(k, t.ns, t.name, std::move(cb));
  });
}

void on_paused_read(scaler_self* self, const msg::api_reply& r) {
  auto& s = self->state;
  if (!s.stepping)
    return;
  if (!r.ok) {  // not known whether it is paused: no step now, the next evaluation tries again
    runtime::log::debug(actor_name, "cannot read the target before a step; trying at the next evaluation", {{"target", tid(self)}, {"error", r.error}});
    return finish_evaluation(self);
  }
  auto obj = k8s::decode_unstructured(r.body);
  if (auto* e = std::get_if<k8s::decode_error>(&obj)) {
    runtime::log::warn(actor_name, "cannot decode the target before a step; trying at the next evaluation", {{"target", tid(self)}, {"error", e->message}});
    return finish_evaluation(self);
  }
  const auto* mark = std::get<k8s::unstructured>(obj).meta.annotation(pause_annotation);
  const bool paused = mark != nullptr && *mark == "true";
  s.ctx->metrics.set("headroom_reactive_paused", paused ? 1 : 0);
  if (paused != s.paused) {
    s.paused = paused;
    runtime::log::info(actor_name, paused ? "paused: no step until the annotation is removed" : "resumed: the pause annotation is gone",
                       {{"target", tid(self)}});
    record_event(self, "Normal", paused ? "ScalingPaused" : "ScalingResumed", "Evaluate",
                 paused ? std::string{"annotated "} + std::string{pause_annotation} + "=true: no step (wanted " +
                              std::to_string(s.stepping->from) + " → " + std::to_string(s.stepping->to) + ")"
                        : std::string{"the "} + std::string{pause_annotation} +
                              " annotation is gone: scaling again after the cooldown, on windows from now");
    if (!paused) {
      // The design's resume: the metric is judged afresh and the cooldown applies from the resume
      // (on_current decides as if a scale event had happened now), so the step wanted at the
      // moment of resuming is not taken.
      s.resumed_at = wall_now(self);
      s.ctx->metrics.decided(to_string(action::none), to_string(reason::cooldown));
      return finish_evaluation(self);
    }
  }
  if (paused) {
    s.ctx->metrics.decided(to_string(action::none), to_string(reason::paused));
    return finish_evaluation(self);
  }
  // A step up reads /scale for the pods' selector (its replicas must all be placed first), as does a
  // step down (the newest pod goes first); a step to a bound goes straight on (the write tests the count).
  const auto& st = *s.stepping;
  if (st.to > st.from && st.from > 0 && st.d.what != action::up)
    continue_step(self);
  else
    read_scale(self);
}

// After the fresh read: the quota's consent for a scale-up, the newest pod for a scale-down.
void continue_step(scaler_self* self) {
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

void mark_newest_pod(scaler_self* self, const std::string& selector) {
  const auto ns = spec(self).target.ns;
  start(self, call::list_pods, [ns, selector](k8s::client& kube, const k8s::resource_kind&, k8s::api_callback cb) {
    k8s::list_options o;
    o.label_selector = selector;
    kube.list(k8s::kinds::pods, ns, o, std::move(cb));
  });
}

// Before a step up: the target's pods that are Pending and unschedulable. While one is, the last
// step's replicas have found no room (or were preempted and cannot come back), so another step up
// would only add more of them: it waits until they are placed (reason `unschedulable`, a Warning
// Event when the hold starts, headroom_reactive_unschedulable_replicas).
void check_unplaced(scaler_self* self, const std::string& selector) {
  const auto ns = spec(self).target.ns;
  start(self, call::list_unplaced, [ns, selector](k8s::client& kube, const k8s::resource_kind&, k8s::api_callback cb) {
    k8s::list_options o;
    o.label_selector = selector;
    o.field_selector = "status.phase=Pending";
    kube.list(k8s::kinds::pods, ns, o, std::move(cb));
  });
}

void on_unplaced_listed(scaler_self* self, const msg::api_reply& r) {
  auto& s = self->state;
  if (!s.stepping)
    return;
  int64_t unplaced = 0;
  std::string why;
  if (r.ok) {
    auto list = k8s::decode_list<k8s::pod>(r.body);
    if (auto* l = std::get_if<k8s::list_result<k8s::pod>>(&list))
      for (const auto& p : l->items) {
        const auto* c = p.find_condition("PodScheduled");
        if (p.meta.deletion_timestamp.empty() && p.node_name.empty() && c && c->status == "False" && c->reason == "Unschedulable") {
          ++unplaced;
          why = c->message;
        }
      }
  }  // unreadable: the step goes on, as before this check (the write still tests the count)
  s.ctx->metrics.set("headroom_reactive_unschedulable_replicas", unplaced);
  if (unplaced == 0) {
    if (s.unplaced > 0)
      runtime::log::info(actor_name, "every replica is placed: stepping up again", {{"target", tid(self)}});
    s.unplaced = 0;
    return continue_step(self);
  }
  s.ctx->metrics.decided(to_string(action::up), to_string(reason::unschedulable));
  if (s.unplaced == 0) {
    const std::string msg = std::to_string(unplaced) + " replica(s) Pending, unschedulable (" + why +
                            "): no step up until they are placed";
    runtime::log::warn(actor_name, "scale-up held: replicas cannot be placed", {{"target", tid(self)}, {"unschedulable", unplaced}, {"scheduler", why}});
    record_event(self, "Warning", "ScaleUpHeld", "Scale", msg);
  }
  s.unplaced = unplaced;
  finish_evaluation(self);
}

// --- evaluation ------------------------------------------------------------------------------------

// The target's pods: the newest is marked to go first on a scale-down.
void on_pods_listed(scaler_self* self, const msg::api_reply& r) {
  const auto& t = spec(self).target;
  if (r.ok) {
    auto list = k8s::decode_list<k8s::pod>(r.body);
    if (auto* l = std::get_if<k8s::list_result<k8s::pod>>(&list)) {
      const k8s::pod* newest = nullptr;
      for (const auto& p : l->items) {
        if (!p.meta.deletion_timestamp.empty())
          continue;
        if (newest == nullptr ||
            std::tie(p.meta.created, p.meta.name) > std::tie(newest->meta.created, newest->meta.name))
          newest = &p;
      }
      if (newest != nullptr) {
        // Lower costs go first; a newer mark is lower than any older one left behind.
        const auto cost = -static_cast<int64_t>(wall_now(self));
        runtime::json_writer w;
        w.begin_object().key("metadata").begin_object().key("annotations").begin_object();
        w.field("controller.kubernetes.io/pod-deletion-cost", std::to_string(cost)).end_object().end_object().end_object();
        const std::string patch = w.take();
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
void on_annotated(scaler_self* self, const msg::api_reply& r) {
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
void on_verified(scaler_self* self, const msg::api_reply& r) {
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
void on_written(scaler_self* self, const msg::api_reply& r, bool one_patch) {
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

}  // namespace headroom::actors::reactive::scaler
