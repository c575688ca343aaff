// arc mode's provisioner step: ARC's controller makes the runners, headroom sets how many by
// merge-patching the EphemeralRunnerSet's spec.replicas and spec.patchID, with the rules ARC's own
// listener follows (gha-runner-scale-set 0.14's cmd/ghalistener/scaler, read against its
// EphemeralRunnerSet controller):
//
// - The controller acts on a patch only when spec.patchID is 0 or differs from the newest
//   `actions.github.com/patch-id` its EphemeralRunners carry (each carries the patchID it was made
//   under); with patchID > 0 it only scales up (a runner finished and deleted is replaced), and a
//   scale-down waits for patchID 0, when it deletes idle runners (removed at the service first,
//   which refuses a runner a job was assigned to).
// - So: a new patchID for each change of the desired count and for each batch of job events
//   (a runner whose job completed is deleted by ARC and must be replaced up to the count), and
//   patchID 0 once the count has stayed put with no job event for `settle_after`, once.
// - The sequence continues from the EphemeralRunnerSet's own spec.patchID, read when the set is
//   found: a restarted headroom starting again at 1 could repeat the patchID the newest runners
//   carry, and the controller would skip the patch.
//
// The EphemeralRunnerSet is the one named in the configuration, or else the newest live one
// labelled with the AutoscalingRunnerSet's name (ARC makes a new one, with a generated name, when
// the runner spec changes); it is looked up again when a patch finds it gone. A set not found or
// not patched is an outage (runtime/outage.hpp): retried with jittered backoff from 5 s to a
// minute, a warning when it starts, a reminder every 5 minutes, a line when it ends, and the gauge
// headroom_arc_runner_set_unavailable meanwhile.

#include "actors/capacity/provisioner.hpp"
#include "adapters/k8s/fields.hpp"
#include "runtime/clock.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::actors::capacity::provisioner {

namespace {

constexpr std::chrono::seconds settle_after{30};

int64_t ms_now(provisioner_self* self) { return runtime::actor_system_clock{self->clock()}.now_ms(); }

// The set could not be found or patched: `why` said once per outage (and as a reminder), retried later.
void trouble(provisioner_self* self, const std::string& why) {
  auto& st = self->state;
  const auto v = st.arc.outage.failed(ms_now(self));
  st.ctx->metrics.set("headroom_arc_runner_set_unavailable", 1);
  if (v.log != runtime::outage::note::none)
    runtime::log::warn(actor_name,
                       v.log == runtime::outage::note::went_down ? "arc mode cannot scale ARC's runners; retrying with backoff"
                                                                 : "arc mode still cannot scale ARC's runners",
                       {{"scale_set", st.ctx->spec.name}, {"autoscaling_runner_set", st.ctx->spec.arc_set}, {"error", why},
                        {"retry_in_ms", v.retry_in.count()}, {"down_for_ms", v.down_for_ms}});
  self->delayed_send(self, v.retry_in, msg::reconcile_atom_v);
}

void no_trouble(provisioner_self* self) {
  auto& st = self->state;
  if (const auto v = st.arc.outage.succeeded(ms_now(self)); v.log == runtime::outage::note::came_back)
    runtime::log::info(actor_name, "arc mode scales ARC's runners again", {{"scale_set", st.ctx->spec.name}, {"down_for_ms", v.down_for_ms}});
  st.ctx->metrics.set("headroom_arc_runner_set_unavailable", 0);
}

void find_set(provisioner_self* self) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  auto* kube = st.ctx->kube;
  st.arc.in_flight = true;
  if (!spec.ephemeral_runner_set.empty()) {
    start_call(self, creation{creation::arc_find, spec.ephemeral_runner_set, 0, {}},
               [kube, ns = spec.ns, name = spec.ephemeral_runner_set](k8s::api_callback cb) {
                 kube->get(ephemeral_runner_sets, ns, name, std::move(cb));
               });
    return;
  }
  k8s::list_options o;
  o.label_selector = std::string{runners::keys::arc_scale_set_name} + "=" + spec.arc_set;
  start_call(self, creation{creation::arc_find, {}, 0, {}},
             [kube, ns = spec.ns, o](k8s::api_callback cb) { kube->list(ephemeral_runner_sets, ns, o, std::move(cb)); });
}

}  // namespace

void reconcile_arc(provisioner_self* self, int64_t desired) {
  auto& st = self->state;
  auto& a = st.arc;
  if (a.in_flight)
    return;  // its answer reconciles again
  if (a.set.empty()) {
    find_set(self);
    return;
  }
  const auto now = self->clock().now();
  const bool changed = desired != a.replicas;
  const bool settled = !changed && !a.dirty && now - a.patched_at >= settle_after;
  if (!changed && !a.dirty && (!settled || a.last_patch_id == 0))
    return;
  if (!settled)
    a.patch_seq = a.patch_seq >= INT32_MAX ? 1 : a.patch_seq + 1;  // ARC's patchID is an int32
  const int64_t patch_id = settled ? 0 : a.patch_seq;
  runtime::json_writer w;
  w.begin_object().key("spec").begin_object().field("replicas", desired).field("patchID", patch_id);
  w.end_object().end_object();
  a.in_flight = true;
  a.dirty = false;
  a.replicas = desired;
  a.last_patch_id = patch_id;
  a.patched_at = now;
  auto* kube = st.ctx->kube;
  start_call(self, creation{creation::arc_patch, a.set, patch_id, {}},
             [kube, ns = st.ctx->spec.ns, name = a.set, patch = w.take()](k8s::api_callback cb) {
               kube->merge_patch(ephemeral_runner_sets, ns, name, patch, std::move(cb));
             });
  if (patch_id != 0)
    self->delayed_send(self, settle_after, msg::reconcile_atom_v);
}

void on_arc_reply(provisioner_self* self, const creation& c, const msg::api_reply& r) {
  auto& st = self->state;
  auto& a = st.arc;
  a.in_flight = false;
  const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
  if (c.at == creation::arc_find) {
    std::optional<k8s::newest_item> found;
    if (r.ok && !c.name.empty())
      found = k8s::newest_item{c.name, k8s::int_at(r.body, {"spec", "patchID"}).value_or(0)};
    else if (r.ok)
      found = k8s::newest_live_item(r.body);
    if (!found) {
      trouble(self, r.ok || kind == k8s::api_error::kind::not_found
                        ? "no EphemeralRunnerSet " + (c.name.empty() ? "labelled " + std::string{runners::keys::arc_scale_set_name} +
                                                                           "=" + st.ctx->spec.arc_set
                                                                     : c.name) +
                              " in namespace " + st.ctx->spec.ns
                        : r.error);
      return;
    }
    no_trouble(self);
    runtime::log::info(actor_name, "scaling ARC's EphemeralRunnerSet",
                       {{"scale_set", st.ctx->spec.name}, {"ephemeral_runner_set", found->name}, {"patch_id", found->patch_id}});
    a.set = found->name;
    a.patch_seq = std::max(a.patch_seq, found->patch_id);
    a.replicas = -1;
    reconcile(self);
    return;
  }
  if (!r.ok) {
    if (kind == k8s::api_error::kind::not_found)
      a.set.clear();  // replaced by ARC: found again
    a.replicas = -1;
    trouble(self, "patch of EphemeralRunnerSet " + c.name + ": " + r.error);
    return;
  }
  no_trouble(self);
  runtime::log::info(actor_name, "EphemeralRunnerSet replicas",
                     {{"ephemeral_runner_set", c.name}, {"replicas", a.replicas}, {"patch_id", c.runner_id}});
  reconcile(self);
}

}  // namespace headroom::actors::capacity::provisioner
