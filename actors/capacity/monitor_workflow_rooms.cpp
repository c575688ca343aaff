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
//
// kubernetes-novolume: waiting for the scheduler to find no room is too late. The workflow pod may
// go anywhere, and the scheduler puts it in any free room the moment it comes: room just freed by
// preemption for a runner pod not yet bound included (the runner's nomination holds off only pods
// of its priority or lower). In a burst the workflow pods of the first runners took the rooms of the
// last, whose jobs, claimed, waited for a job to end (bench/job_outcomes, two clusters). So the hook
// template gates each workflow pod, and it is given a held room as it comes: pinned to that room's
// node and ungated in one patch, nominated there, and the room freed. With no hand-off holding room
// it is ungated at once and takes room as any pod (a ready pair's given by the path above if the
// scheduler finds none).

#include <algorithm>

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
// The one node a pod's required node affinity names (headroom's pin: a `metadata.name In [node]`
// field requirement in each term), "" none.
std::string pinned_node(const k8s::pod& p) {
  std::string node;
  for (const auto& t : p.spec->required_node_affinity) {
    std::string here;
    for (const auto& f : t.match_fields)
      if (f.key == "metadata.name" && f.op == "In" && f.values.size() == 1)
        here = f.values[0];
    if (here.empty() || (!node.empty() && here != node))
      return {};
    node = here;
  }
  return node;
}

std::optional<destination> destination_of(const monitor_state& st, const k8s::pod& workflow) {
  if (!runners::same_node_pairs(st.ctx->spec))
    return destination{pinned_node(workflow), ""};
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
  for (const auto& [pod, n] : st.pinning)
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

// Nominates workflow pod `name` to the node of the room `r` holds, then (on_workflow_nominated)
// frees that room for it.
void nominate(monitor_self* self, const std::string& name, const room& r) {
  auto& st = self->state;
  const auto* holder = workflow_placeholder(st, r.slot);
  if (holder == nullptr)
    return;  // gone meanwhile: nothing to give
  runtime::log::info(actor_name, "workflow pod given a held room",
                     {{"scale_set", st.ctx->spec.name}, {"pod", name}, {"slot", r.slot}, {"from", std::string{r.from}}, {"node", holder->node_name}});
  st.ctx->metrics.add("headroom_capacity_workflow_rooms_given_total", 1);
  st.nominating[name] = {r.slot, r.from};
  runtime::json_writer w;
  w.begin_object().key("status").begin_object().field("nominatedNodeName", holder->node_name);
  w.end_object().end_object();
  start_call(self, {call_kind::workflow_nominate, name, 0},
             [kube = st.ctx->kube, ns = st.ctx->spec.ns, pod = name, body = w.take()](k8s::api_callback cb) {
               kube->merge_patch(k8s::kinds::pods, ns, pod, body, std::move(cb), "status");
             });
}

// A node known to take no new pods (cordoned, tainted, gone): a pod pinned there could not run.
bool node_refuses(const monitor_state& st, const std::string& node) {
  const auto& nodes = st.ctx->nodes;
  if (!nodes || !nodes->synced())
    return false;
  const auto n = nodes->get("", node);
  return !n || !node_refuses_pods(n.get(), st.ctx->spec.tolerations).empty();
}

bool gated_here(const k8s::pod& p) {
  const auto& gates = p.spec->scheduling_gates;
  return std::find(gates.begin(), gates.end(), runners::keys::held_room_gate) != gates.end();
}

// Each gated workflow pod: pinned to the node of the oldest hand-off's held room and ungated, or
// only ungated.
void pin_gated(monitor_self* self) {
  auto& st = self->state;
  for (const auto& [name, pod] : st.census.workflows()) {
    if (st.pinning.count(name) > 0 || st.nominating.count(name) > 0 || st.ungated.count(name) > 0 || !gated_here(*pod))
      continue;
    // A hand-off's room only: one held for a job's workflow. A ready pair is capacity still
    // offered; it is given only to a pod the scheduler then finds no room for (above). Never one
    // on a node that takes no new pods (cordoned, tainted): pinned there the pod could not run.
    room r;
    for (const auto& slot : st.handoff_order)
      if (st.handoffs.count(slot) > 0 && holds_room(st, slot, "") && !node_refuses(st, workflow_placeholder(st, slot)->node_name)) {
        r = {slot, "hand-off"};
        break;
      }
    const auto* holder = r.slot.empty() ? nullptr : workflow_placeholder(st, r.slot);
    const std::string node = holder == nullptr ? std::string{} : holder->node_name;
    st.pinning[name] = {node.empty() ? std::string{} : r.slot, r.from};
    if (!node.empty())
      st.rooms_given[name] = {r.slot, 1, std::nullopt};  // one room per pod: this one
    start_call(self, {call_kind::workflow_pin, name, 0},
               [kube = st.ctx->kube, ns = st.ctx->spec.ns, pod = name, body = runners::held_room_patch(*pod, node)](k8s::api_callback cb) {
                 kube->merge_patch(k8s::kinds::pods, ns, pod, body, std::move(cb));
               });
  }
}

// The in-flight call's entry for pod `name`, removed (nullopt: none, its reply is stale).
std::optional<monitor_state::nomination> take(std::map<std::string, monitor_state::nomination>& calls, const std::string& name) {
  const auto it = calls.find(name);
  if (it == calls.end())
    return std::nullopt;
  auto n = std::move(it->second);
  calls.erase(it);
  return n;
}

}  // namespace

void on_workflow_pinned(monitor_self* self, const call_info& call, msg::api_reply& r) {
  auto& st = self->state;
  const auto found = take(st.pinning, call.name);
  if (!found)
    return;
  const auto& n = *found;
  const auto kind = static_cast<api_kind>(r.error_kind);
  if (!r.ok) {
    st.rooms_given.erase(call.name);
    // Gone (its job cancelled): nothing to do. Changed meanwhile (409): judged again as it is now,
    // at the next recompute. Refused: said once; retried at each recompute, the pod waiting gated.
    if (kind != api_kind::not_found && kind != api_kind::conflict && !st.pin_refused) {
      st.pin_refused = true;
      runtime::log::warn(actor_name, "could not ungate a workflow pod: it waits, gated, and is tried again at each recompute",
                         {{"scale_set", st.ctx->spec.name}, {"pod", call.name}, {"error", r.error}});
    }
    return;
  }
  if (st.pin_refused) {
    st.pin_refused = false;
    runtime::log::info(actor_name, "workflow pods are ungated again", {{"scale_set", st.ctx->spec.name}});
  }
  st.ctx->metrics.add("headroom_capacity_workflow_pods_ungated_total", 1);
  st.ungated.insert(call.name);
  if (!n.slot.empty() && st.census.workflows().count(call.name) > 0)
    nominate(self, call.name, {n.slot, n.from.c_str()});
}

void on_workflow_nominated(monitor_self* self, const call_info& call, msg::api_reply& r) {
  auto& st = self->state;
  const auto found = take(st.nominating, call.name);
  if (!found)
    return;
  const auto& n = *found;
  const auto kind = static_cast<api_kind>(r.error_kind);
  if (kind == api_kind::not_found)
    return;  // the workflow pod is gone (its job cancelled): the room stays held
  // 422: the pod is bound already (a pinned pod found room left on its node at once): its job's
  // workflow has its room, and the hand-off's is freed as it would have been.
  if (kind == api_kind::invalid)
    return free_room(self, n.slot, n.from);
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

namespace {

// A workflow pod given a room and still not placed may be given another once that room is freed
// (its workflow placeholder gone) and the scheduler has had regive_after to place the pod there,
// up to max_rooms in all. The room it was given can be lost: taken by a pod the scheduler placed
// before the nomination reached it (an API server restart in between), or never enough: pods
// nominated to one node count against each other in the scheduler (each sees the others' requests
// there), so if one of them cannot fit none fits, and pinned there they can go nowhere else. Their
// jobs then waited for jobs that could not end (the chaos suite's API server restart, about 1 run
// in 4). A pod the scheduler cannot place for another reason (a node selector no node has) must
// not take every placeholder in turn: hence the bound.
constexpr auto regive_after = std::chrono::seconds(10);
constexpr int max_rooms = 3;

bool may_give_again(monitor_self* self, monitor_state::room_given& g) {
  auto& st = self->state;
  if (g.rooms >= max_rooms || workflow_placeholder(st, g.slot) != nullptr)
    return false;  // enough given, or its room still held (being given)
  const auto now = self->clock().now();
  if (!g.freed) {
    g.freed = now;
    self->delayed_send(self, regive_after, recompute_timer{});  // looked at again then, events or not
  }
  return now - *g.freed >= regive_after;
}

}  // namespace

void give_workflow_rooms(monitor_self* self) {
  auto& st = self->state;
  if (runners::workflow_pods_gated(st.ctx->spec))
    pin_gated(self);
  const auto& workflows = st.census.workflows();
  std::erase_if(st.rooms_given, [&](const auto& entry) {  // placed, or gone
    const auto it = workflows.find(entry.first);
    return it == workflows.end() || !it->second->node_name.empty();
  });
  std::erase_if(st.ungated, [&](const std::string& name) { return workflows.count(name) == 0; });
  int64_t waiting = 0;
  for (const auto& [name, pod] : workflows) {
    if (!scheduler_found_no_room(*pod) || st.pinning.count(name) > 0 || st.nominating.count(name) > 0)
      continue;
    // Given one already: another only once that one is freed and the pod still waits (above).
    const auto given = st.rooms_given.find(name);
    if (given != st.rooms_given.end() && !may_give_again(self, given->second))
      continue;
    const auto to = destination_of(st, *pod);
    const auto r = to ? find_room(st, *to) : room{};
    if (r.slot.empty()) {
      ++waiting;
      continue;
    }
    if (given == st.rooms_given.end())
      st.rooms_given[name] = {r.slot, 1, std::nullopt};
    else
      given->second = {r.slot, given->second.rooms + 1, std::nullopt};
    nominate(self, name, r);  // the room's node: its placeholder runs (find_room)
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
