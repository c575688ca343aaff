// reclaim_drain: one actor per ReclaimInstruction.
//
//   1. Cordon every named node and walk its UpcomingNode to Draining; then ack with the nodes
//      whose cordon landed (nodes_started) through the outbox. The ack carries post-cordon truth
//      and does not wait for the drain, which can take minutes.
//   2. Drain on the instruction's own deadline (grace_period_seconds, default 30 s): evict every
//      non-DaemonSet Pod through policy/v1 eviction; a PodDisruptionBudget refusal (429) is retried
//      every 2 s until the deadline.
//   3. Per node: Drained (the UpcomingNode is then deleted) or Failed with lastError.

#include <caf/all.hpp>

#include <unordered_map>

#include "actors/k8s/event_recorder.hpp"
#include "actors/bigfleet/bigfleet.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/json_writer.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::bigfleet {

namespace pb = ::bigfleet::v1alpha1;

namespace {

constexpr std::string_view actor_name = "reclaim_drain";
constexpr std::chrono::milliseconds pdb_retry{2'000};
constexpr uint64_t cordon_base = uint64_t{1} << 62;  // correlations of cordons; evictions count from 1

struct node_drain {
  std::string name;
  bool started = false, finished = false;
  size_t pending = 0;  // evictions not yet accepted
  std::string last_error;
};

struct eviction {
  size_t node;
  std::string ns, pod;
};

struct drain_state {
  operator_deps deps;
  pb::ReclaimInstruction instruction;
  std::vector<node_drain> nodes;
  size_t cordons_pending = 0;
  uint64_t next_correlation = 1;
  std::unordered_map<uint64_t, eviction> evictions;
  caf::actor_clock::time_point deadline;
  static inline const char* name = "headroom.reclaim_drain";
};

// Its own timers: a step to try again (correlation), and its deadline.
using drain_impl = reclaim_drain_actor::extend<caf::reacts_to<msg::retry_atom, uint64_t>,
                                               caf::reacts_to<msg::deadline_atom, uint32_t, uint64_t>>;
using drain_actor = drain_impl::stateful_base<drain_state>;

bool is_daemonset_pod(const k8s::pod& p) {
  for (const auto& o : p.meta.owners)
    if (o.kind == "DaemonSet")
      return true;
  return false;
}

// The UpcomingNode whose status.nodeRef.name is `node` (a scan: few nodes are in flight).
std::string upcoming_for(const operator_deps& deps, const std::string& node) {
  if (!deps.upcoming_nodes)
    return {};
  for (const auto& u : deps.upcoming_nodes->list())
    if (status_node_name(u->raw) == node)
      return u->meta.name;
  return {};
}

void set_upcoming_phase(drain_actor* self, const std::string& node, std::string_view phase, const std::string& error,
                        bool then_delete) {
  const auto name = upcoming_for(self->state.deps, node);
  if (name.empty())
    return;
  auto& client = *self->state.deps.client;
  runtime::json_writer w;
  w.begin_object().key("status").begin_object().field("phase", phase);
  if (!error.empty())
    w.field("lastError", error);
  w.end_object().end_object();
  const std::string status = w.take();
  client.merge_patch(kinds::upcoming_nodes, "", name, status,
                     [&client, name, then_delete, node](k8s::api_result r) {
                       if (auto* e = std::get_if<k8s::api_error>(&r)) {
                         if (e->what != k8s::api_error::kind::not_found)
                           runtime::log::warn(actor_name, "UpcomingNode status write failed",
                                              {{"node", node}, {"error", e->describe()}});
                         return;
                       }
                       if (then_delete)
                         client.remove(kinds::upcoming_nodes, "", name, {}, [](k8s::api_result) {});
                     },
                     "status");
}

void maybe_quit(drain_actor* self) {
  auto& st = self->state;
  if (st.cordons_pending > 0)
    return;
  for (const auto& n : st.nodes)
    if (n.started && !n.finished)
      return;
  runtime::log::info(actor_name, "reclaim finished", {{"instruction", st.instruction.instruction_id()}});
  self->quit();
}

void finish_node(drain_actor* self, size_t i, bool drained) {
  auto& n = self->state.nodes[i];
  if (n.finished)
    return;
  n.finished = true;
  if (drained) {
    runtime::log::info(actor_name, "node drained", {{"node", n.name}, {"instruction", self->state.instruction.instruction_id()}});
    set_upcoming_phase(self, n.name, "Drained", "", true);
    tell_event(self->state.deps.events, {"v1", "Node", "", n.name, "", "Normal", "ReclaimDrained", "Drain",
                                         "drained for BigFleet reclaim " + self->state.instruction.instruction_id()});
  } else {
    runtime::log::warn(actor_name, "node drain failed", {{"node", n.name}, {"error", n.last_error}});
    set_upcoming_phase(self, n.name, "Failed", n.last_error, false);
    tell_event(self->state.deps.events, {"v1", "Node", "", n.name, "", "Warning", "ReclaimDrainFailed", "Drain",
                                         "BigFleet reclaim " + self->state.instruction.instruction_id() + " could not drain it: " + n.last_error});
  }
}

void evict(drain_actor* self, uint64_t correlation) {
  auto& st = self->state;
  const auto& e = st.evictions.at(correlation);
  const auto me = runtime::handle_of(self);
  call_into(me, correlation, [&st, &e](k8s::api_callback cb) { st.deps.client->evict(e.ns, e.pod, {}, std::move(cb)); });
}

void start_drain(drain_actor* self) {
  auto& st = self->state;
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    auto& n = st.nodes[i];
    if (!n.started)
      continue;
    for (const auto& pod : st.deps.pods->by_index("node", n.name)) {
      if (is_daemonset_pod(*pod) || pod->phase == "Succeeded" || pod->phase == "Failed")
        continue;
      const uint64_t c = st.next_correlation++;
      st.evictions[c] = {i, pod->meta.ns, pod->meta.name};
      ++n.pending;
      evict(self, c);
    }
    if (n.pending == 0)
      finish_node(self, i, true);
  }
  maybe_quit(self);
}

// A node cordoned (or not): once every cordon has answered, ack the instruction and drain.
void on_cordoned(drain_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  if (s.cordons_pending == 0 || r.correlation - cordon_base >= s.nodes.size())
    return;  // after the deadline
  auto& n = s.nodes[r.correlation - cordon_base];
  n.started = r.ok;
  if (r.ok)
    set_upcoming_phase(self, n.name, "Draining", "", false);
  else
    runtime::log::warn(actor_name, "cordon failed: node not drained", {{"node", n.name}, {"error", r.error}});
  if (--s.cordons_pending > 0)
    return;
  pb::OperatorMessage ack;
  ack.mutable_reclaim_ack()->set_instruction_id(s.instruction.instruction_id());
  for (const auto& node : s.nodes)
    if (node.started)
      ack.mutable_reclaim_ack()->add_nodes_started(node.name);
  if (s.deps.outbox)  // the session writes it (and logs a full outbox)
    self->send(s.deps.outbox, outbox_message{std::move(ack)});
  start_drain(self);
}

// An eviction answered: done, gone already, or retried (a PodDisruptionBudget) until the deadline.
void on_evicted(drain_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  auto it = s.evictions.find(r.correlation);
  if (it == s.evictions.end())
    return;
  auto& n = s.nodes[it->second.node];
  const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
  if (r.ok || kind == k8s::api_error::kind::not_found) {
    s.evictions.erase(it);
    if (--n.pending == 0)
      finish_node(self, &n - s.nodes.data(), true);
    maybe_quit(self);
    return;
  }
  n.last_error = kind == k8s::api_error::kind::disruption_blocked
                     ? "eviction of " + it->second.ns + "/" + it->second.pod + " blocked by a PodDisruptionBudget"
                     : r.error;
  if (n.finished || self->clock().now() + pdb_retry > s.deadline)
    return;  // the deadline handler fails the node
  self->delayed_send(self, pdb_retry, msg::retry_atom_v, r.correlation);
}

// The grace period is over: every node still draining fails.
void on_deadline(drain_actor* self) {
  auto& s = self->state;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    auto& n = s.nodes[i];
    if (!n.started || n.finished)
      continue;
    n.last_error = "grace period passed with " + std::to_string(n.pending) + " pods not evicted" +
                   (n.last_error.empty() ? "" : ": " + n.last_error);
    finish_node(self, i, false);
  }
  s.cordons_pending = 0;
  maybe_quit(self);
}

drain_impl::behavior_type drain_behavior(drain_actor* self, operator_deps deps, pb::ReclaimInstruction instruction) {
  auto& st = self->state;
  st.deps = std::move(deps);
  st.instruction = std::move(instruction);
  const int64_t grace = st.instruction.grace_period_seconds() > 0 ? st.instruction.grace_period_seconds() : 30;
  st.deadline = self->clock().now() + std::chrono::seconds(grace);
  runtime::log::info(actor_name, "reclaim started",
                     {{"instruction", st.instruction.instruction_id()}, {"nodes", st.instruction.nodes_size()},
                      {"grace_s", grace}, {"preemptor_priority", st.instruction.preemptor_priority()}});
  const auto me = runtime::handle_of(self);
  for (const auto& name : st.instruction.nodes()) {
    node_drain n;
    n.name = name;
    st.nodes.push_back(std::move(n));
  }
  st.cordons_pending = st.nodes.size();
  for (size_t i = 0; i < st.nodes.size(); ++i)
    call_into(me, cordon_base + i, [&st, i](k8s::api_callback cb) { st.deps.client->cordon(st.nodes[i].name, true, std::move(cb)); });
  self->delayed_send(self, std::chrono::seconds(grace), msg::deadline_atom_v, uint32_t{0}, uint64_t{0});
  if (st.nodes.empty())
    maybe_quit(self);
  return {
      [self](msg::api_reply& r) {
        if (r.correlation >= cordon_base)
          on_cordoned(self, r);
        else
          on_evicted(self, r);
      },
      [self](msg::retry_atom, uint64_t correlation) {
        if (self->state.evictions.count(correlation) > 0)
          evict(self, correlation);
      },
      [self](msg::deadline_atom, uint32_t, uint64_t) { on_deadline(self); },
  };
}

}  // namespace

reclaim_drain_actor spawn_reclaim_drain(caf::actor_system& sys, operator_deps deps, pb::ReclaimInstruction instruction) {
  return sys.spawn(drain_behavior, std::move(deps), std::move(instruction));
}

}  // namespace headroom::actors::bigfleet
