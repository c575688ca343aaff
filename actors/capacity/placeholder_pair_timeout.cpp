// placeholder_pair's end when it is not placed within placeholderReadyTimeout (see
// placeholder_pair.cpp): why, in the words of the scheduler (the pods' PodScheduled condition) and
// of Karpenter (an Event about the pod), so the Event and the ScaleSet's condition keep the cause
// after the pods are deleted.

#include <caf/all.hpp>

#include "actors/capacity/pair.hpp"
#include "actors/k8s/api_calls.hpp"
#include "adapters/k8s/decode.hpp"

namespace headroom::actors::capacity::pair {

namespace {

// Why the pair is not placed, as the scheduler said it on each placeholder not Running (its
// PodScheduled condition: "0/6 nodes are available: …"), so the Event and the ScaleSet's condition
// keep the cause after the pods are deleted (#61: "not Running within 20000 ms" said nothing).
std::string unplaced_why(const pair_state& st) {
  constexpr size_t max_message = 400;
  std::string out;
  for (const auto& name : watched(st)) {
    const auto p = st.ctx->pods->get(st.ctx->spec.ns, name);
    if (p && p->phase == "Running")
      continue;
    std::string said = !p ? "not seen" : p->phase.empty() ? "Pending" : p->phase;
    if (const auto* c = p ? p->find_condition("PodScheduled") : nullptr; c != nullptr && c->status == "False") {
      said = c->reason.empty() ? "not scheduled" : c->reason;
      if (!c->message.empty())
        said += ": " + c->message.substr(0, max_message) + (c->message.size() > max_message ? "…" : "");
    }
    out += "; " + name + " " + said;
  }
  return out;
}

}  // namespace

// The end of a timed-out pair, once what Karpenter said (if anything) is known. A pair that became
// ready or ended otherwise meanwhile is not timed out.
void end_timed_out(pair_self* self) {
  auto& st = self->state;
  st.asking = 0;
  if (st.done || st.consumed || st.reported == state_t::ready)
    return;
  finish(self, state_t::timed_out, st.timed_out_why);
}

// Not ready within placeholderReadyTimeout: what the scheduler said is on the pods; what Karpenter
// said (why it made no node: "all available instance types exceed limits for nodepool …") is only
// in an Event about the pod, so those are read first, one list per placeholder not Running, bounded
// by 5 s. Without the grant to list Events (chart: scaleSets' Role) the pair times out as before.
void time_out(pair_self* self) {
  auto& st = self->state;
  st.timed_out_why = "not Running within " + std::to_string(st.ctx->spec.placeholder_ready_timeout.count()) + " ms" + unplaced_why(st);
  const auto names = watched(st);
  for (size_t i = 0; i < names.size(); ++i) {
    const auto p = st.ctx->pods->get(st.ctx->spec.ns, names[i]);
    if (p && p->phase == "Running")
      continue;
    ++st.asking;
    k8s::list_options o;
    o.field_selector = "involvedObject.name=" + names[i];
    call_into(self, events_correlation + static_cast<uint64_t>(i),
              [kube = st.ctx->kube, ns = st.ctx->spec.ns, o](k8s::api_callback cb) { kube->list(k8s::kinds::events, ns, o, std::move(cb)); });
  }
  if (st.asking == 0)
    return end_timed_out(self);
  self->delayed_send(self, std::chrono::seconds(5), events_bound{});
}

// One placeholder's Events: the newest Karpenter said is added to the reason.
void karpenter_said(pair_self* self, const msg::api_reply& r) {
  auto& st = self->state;
  if (st.asking == 0)
    return;  // after the bound: the pair has timed out already
  const auto names = watched(st);
  const auto& name = names[(r.correlation - events_correlation) % names.size()];
  if (r.ok)
    if (auto note = k8s::newest_event_from(r.body, "karpenter"); !note.empty())
      st.timed_out_why += "; " + name + " Karpenter: " + note;
  if (--st.asking == 0)
    end_timed_out(self);
}

}  // namespace headroom::actors::capacity::pair
