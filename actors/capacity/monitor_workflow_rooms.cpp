// capacity_monitor's hand-over of a held room to a workflow pod (see capacity_monitor.cpp).
//
// On the seed's ladder a workflow pod (20) took its room by preempting a workflow placeholder (10).
// But it may preempt anything below it, a running runner pod (0) too, and the scheduler does so
// whenever no placeholder makes the room: a pod disruption budget does not stop it there. A
// runner put where no workflow placeholder held its workflow's room (a slot a finished job freed
// and the service filled at once, a pair lost while its job was on the way, an API server restart
// after which the scheduler evicted more than it needed) then cost another job its runner: the
// chaos suite's API server restart lost a job in about 1 run of 3 under load. No ordering of four
// priorities rules that out (a workflow pod must outrank its placeholder, which must outrank the
// runner pod, or runners take workflow rooms). So the workflow PriorityClass has preemptionPolicy
// Never: a workflow pod never evicts anything, and headroom gives it a room instead. When the
// scheduler has found none for it (PodScheduled False, Unschedulable), the oldest hand-off's
// workflow placeholder is deleted (in kubernetes mode one on the node the hook pins the pod to,
// its runner's), else a ready pair's, else (pinned) that of a pair whose runner placeholder found no
// room beside it; the scheduler places the pod in the room that frees, before
// any placeholder (it is the highest priority waiting). With none held it waits for room as any
// pod does (Karpenter makes a node), and no job loses its runner.

#include <caf/all.hpp>

#include "actors/capacity/monitor.hpp"
#include "runtime/json_writer.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::capacity::monitor {

namespace {

// Where a workflow pod must go: in kubernetes mode its runner's node (the hook pins it there, the
// `work` volume being ReadWriteOnce; it labels the pod with its runner pod's name) and the slot of
// the pair its runner was pinned to ("" none); node "" anywhere; nullopt when that runner's node is
// not known.
struct destination {
  std::string node, slot;
};
std::optional<destination> destination_of(const monitor_state& st, const k8s::pod& workflow) {
  if (!runners::same_node_pairs(st.ctx->spec))
    return destination{};
  const auto* runner = workflow.meta.label("runner-pod");
  const auto p = runner == nullptr ? nullptr : st.ctx->pods->get(st.ctx->spec.ns, *runner);
  if (!p || p->node_name.empty())
    return std::nullopt;
  const auto* slot = p->meta.annotation(runners::keys::workflow_room);
  return destination{p->node_name, slot == nullptr ? std::string{} : *slot};
}

// The workflow placeholder of `slot` (nullptr none).
const k8s::pod* workflow_placeholder(const monitor_state& st, const std::string& slot) {
  const auto& all = st.census.placeholders();
  const auto it = all.find(placeholder_pod_name(st.ctx->spec, slot, role::workflow_placeholder));
  return it == all.end() ? nullptr : it->second.get();
}

// The workflow placeholder of `slot` holds room (on `node`, when one is asked for), not yet given.
bool holds_room(const monitor_state& st, const std::string& slot, const std::string& node) {
  for (const auto& [pod, n] : st.nominating)
    if (n.slot == slot)
      return false;
  const auto* p = workflow_placeholder(st, slot);
  return p != nullptr && placeholder_state(p) == pod_state::running && (node.empty() || p->node_name == node);
}

struct room {
  std::string slot;
  const char* from = "";  // hand-off, ready pair, pair not placed yet
};

// kubernetes mode: the room of the pair its runner was pinned to first (held for this very pod).
// Then the oldest hand-off holding room where it is needed, else a ready pair; where the pod is
// pinned to a node (kubernetes mode), else a pair whose workflow placeholder runs there but whose
// runner placeholder, pinned beside it, has not been placed (the node had no room left for it: it
// may never be, and the pinned pod has nowhere else to go). Never the room of a pair another
// runner still going was pinned to: that is its workflow pod's.
room find_room(const monitor_state& st, const destination& to) {
  const auto& node = to.node;
  if (!to.slot.empty() && holds_room(st, to.slot, node)) {
    if (st.handoffs.count(to.slot) > 0)
      return {to.slot, "hand-off"};
    if (auto it = st.pairs.find(to.slot); it != st.pairs.end())
      return {to.slot, it->second.state == state_t::ready ? "ready pair" : "pair not placed yet"};
  }
  const bool pinned = rooms_pinned(st);
  auto free = [&](const std::string& slot) { return holds_room(st, slot, node) && !(pinned && room_claimed(st, slot)); };
  for (const auto& slot : st.handoff_order)
    if (st.handoffs.count(slot) > 0 && free(slot))
      return {slot, "hand-off"};
  for (const auto& [slot, e] : st.pairs)
    if (e.state == state_t::ready && free(slot))
      return {slot, "ready pair"};
  if (!node.empty())
    for (const auto& [slot, e] : st.pairs)
      if (e.state != state_t::ready && free(slot))
        return {slot, "pair not placed yet"};
  return {};
}

// Frees the room: the hand-off ends (it deletes its workflow placeholder), or the pair stops.
void free_room(monitor_self* self, const std::string& slot, const std::string& from) {
  auto& st = self->state;
  if (from == "hand-off") {
    const auto it = st.handoffs.find(slot);
    if (it == st.handoffs.end())
      return;  // ended meanwhile: its room is free already
    self->send_exit(it->second, caf::exit_reason::user_shutdown);
    st.handoffs.erase(it);
    retire(self, slot);
  } else if (st.pairs.count(slot) > 0) {
    stop_pair(self, slot);
  }
}

}  // namespace

void on_workflow_nominated(monitor_self* self, const call_info& call, msg::api_reply& r) {
  auto& st = self->state;
  const auto it = st.nominating.find(call.name);
  if (it == st.nominating.end())
    return;
  const auto n = it->second;
  st.nominating.erase(it);
  const auto kind = static_cast<api_kind>(r.error_kind);
  if (kind == api_kind::not_found)
    return;  // the workflow pod is gone (its job cancelled): the room stays held
  // Refused (no pods/status patch in the Role, an older chart's) or not answered: the room is
  // freed all the same, as before nominations; a placeholder may then take it first.
  if (!r.ok != st.nominate_refused) {
    st.nominate_refused = !r.ok;
    if (!r.ok)
      runtime::log::warn(actor_name, "could not nominate a workflow pod to its room's node; freeing the room anyway (a waiting placeholder may take it first)",
                         {{"scale_set", st.ctx->spec.name}, {"pod", call.name}, {"error", r.error}});
    else
      runtime::log::info(actor_name, "workflow pods are nominated to their rooms again", {{"scale_set", st.ctx->spec.name}});
  }
  free_room(self, n.slot, n.from);
}

void give_workflow_rooms(monitor_self* self) {
  auto& st = self->state;
  const auto& workflows = st.census.workflows();
  std::erase_if(st.rooms_given, [&](const std::string& name) {  // placed, or gone
    const auto it = workflows.find(name);
    return it == workflows.end() || !it->second->node_name.empty();
  });
  int64_t waiting = 0;
  for (const auto& [name, pod] : workflows) {
    // One room per pod: one the scheduler cannot place for another reason (a node selector no node
    // has) must not take every placeholder in turn. Given one already, it waits like any pod.
    if (st.rooms_given.count(name) > 0 || !scheduler_found_no_room(*pod))
      continue;
    const auto to = destination_of(st, *pod);
    const auto r = to ? find_room(st, *to) : room{};
    if (r.slot.empty()) {
      ++waiting;
      continue;
    }
    st.rooms_given.insert(name);
    runtime::log::info(actor_name, "workflow pod given a held room",
                       {{"scale_set", st.ctx->spec.name}, {"pod", name}, {"slot", r.slot}, {"from", std::string{r.from}}});
    st.ctx->metrics.add("headroom_capacity_workflow_rooms_given_total", 1);
    st.nominating[name] = {r.slot, r.from};
    runtime::json_writer w;  // the room's node: its placeholder runs (find_room)
    w.begin_object().key("status").begin_object().field("nominatedNodeName", workflow_placeholder(st, r.slot)->node_name);
    w.end_object().end_object();
    start_call(self, {call_kind::workflow_nominate, name, 0},
               [kube = st.ctx->kube, ns = st.ctx->spec.ns, pod = name, body = w.take()](k8s::api_callback cb) {
                 kube->merge_patch(k8s::kinds::pods, ns, pod, body, std::move(cb), "status");
               });
  }
  st.ctx->metrics.set("headroom_capacity_workflow_pods_waiting", waiting);
  if ((waiting > 0) != st.workflows_waiting) {
    st.workflows_waiting = waiting > 0;
    if (st.workflows_waiting)
      runtime::log::warn(actor_name, "workflow pods wait for room: no workflow placeholder holds any for them",
                         {{"scale_set", st.ctx->spec.name}, {"waiting", waiting}});
    else
      runtime::log::info(actor_name, "no workflow pod waits for room any more", {{"scale_set", st.ctx->spec.name}});
  }
}

}  // namespace headroom::actors::capacity::monitor
