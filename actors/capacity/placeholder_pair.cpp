// placeholder_pair: one actor per pair of placeholder pods. It creates (or, adopting, finds) a
// runner placeholder and a workflow placeholder and tells the monitor what they say:
//
//   ready      both Running on a node: the scheduler has placed the pair, a job fits
//   consumed   the runner placeholder went (a runner pod preempted it) while the workflow
//              placeholder is Running: the workflow placeholder keeps the workflow's room until the
//              workflow pod (priority 20) preempts it, or until placeholderReadyTimeout passes
//   lost       the workflow placeholder went first, or the pair could not be made (the survivor is
//              deleted); after `consumed`, the end of the hand-off
//   timed_out  not ready within placeholderReadyTimeout (both deleted)
//
// In kubernetes mode the hook pins the workflow pod to its runner's node, so the pair's two pods
// must share one. Made at once with a pod affinity to each other, the first placed may take a node
// with room for itself alone, the second then waits there for good, and Karpenter (which cannot
// put it anywhere else) makes no node: a full cluster never grows. So the pair is placed by one pod
// first, the probe, which holds the whole pair's room at the runner placeholder's rung; where the
// scheduler (or a node Karpenter made for it) puts it, the two placeholders are made, required on
// that node, and the probe is deleted: its room is theirs.
//
// The monitor feeds it its two pods' events. Stopped by the monitor (scale-down) or by an orderly
// shutdown, it deletes its pods; when it dies with its monitor's crash it leaves them for the
// restarted monitor to adopt by label.

#include <caf/all.hpp>

#include <ctime>

#include "actors/k8s/event_recorder.hpp"
#include "actors/capacity/capacity.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "messages/type_ids.hpp"
#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/time.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::capacity {

namespace {

constexpr std::string_view actor_name = "placeholder_pair";
using state_t = msg::pair_report::state;

struct pair_state {
  context_ptr ctx;
  std::string slot;
  pair_owner monitor;
  owner_ref owner;
  std::string names[2];       // runner placeholder, workflow placeholder
  bool seen[2] = {false, false};  // the informer has shown the pod at least once
  bool deleted[2] = {false, false};  // and then its deletion (nothing of it left to delete)
  int creating = 0;
  state_t reported = state_t::pending;
  bool consumed = false;  // handing the workflow's room over to the workflow pod
  std::string runner_node;  // where the runner placeholder was placed
  std::string probe;        // kubernetes mode: the probe's name ("" none, or adopted)
  bool probe_seen = false, probe_deleted = false;
  std::string pinned_node;  // where the probe was placed: the node the placeholders are made on
  int undecided = 0;        // looks for the runner pod that took the runner placeholder
  bool done = false;      // lost or timed out: quitting
  bool unavailable = false;  // a create failed for the API server's availability (pair_report)
  // Timed out: the Events about the placeholders not Running still being read (Karpenter's word on
  // why it made no node), and what the timeout says so far.
  int asking = 0;
  std::string timed_out_why;
  static inline const char* name = "headroom.placeholder_pair";
};

// The pair's timers: messages it sends only itself, one type each.
struct ready_timeout {};    // placeholderReadyTimeout since the pair was made
struct handoff_timeout {};  // placeholderReadyTimeout since the pair was consumed: no workflow pod came
struct look_again {};       // the runner pod's binding may trail the runner placeholder's deletion
struct events_bound {};     // the Event reads of a timed-out pair took too long

}  // namespace
}  // namespace headroom::actors::capacity

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::ready_timeout)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::handoff_timeout)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::look_again)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::events_bound)

namespace headroom::actors::capacity {
namespace {

// The pair's own messages: the API server's answers to its creates (correlation: the pod's index)
// and to its Event reads (events_correlation + the pod's index), and its timers.
using pair_impl = pair_actor::extend<caf::reacts_to<msg::api_reply>, caf::reacts_to<ready_timeout>, caf::reacts_to<handoff_timeout>,
                                     caf::reacts_to<look_again>, caf::reacts_to<events_bound>>;
using pair_self = pair_impl::stateful_base<pair_state>;
constexpr uint64_t events_correlation = 100;

void delete_pod(k8s::client* kube, const std::string& ns, const std::string& name) {
  k8s::delete_options o;
  o.grace_period_seconds = 0;
  kube->remove(k8s::kinds::pods, ns, name, o, [name](k8s::api_result r) {
    if (auto* e = std::get_if<k8s::api_error>(&r); e && e->what != k8s::api_error::kind::not_found)
      runtime::log::warn(actor_name, "placeholder delete failed", {{"pod", name}, {"error", e->describe()}});
  });
}

// The pair's pods but those already deleted (one DELETE fewer for most lost pairs: the pod whose
// loss ended the pair is gone already).
void delete_pods(k8s::client* kube, const std::string& ns, const std::string (&names)[2], const bool (&deleted)[2]) {
  for (int i = 0; i < 2; ++i)
    if (!deleted[i])
      delete_pod(kube, ns, names[i]);
}

bool probing(const pair_state& st) { return !st.probe.empty() && st.pinned_node.empty(); }

// The pods whose placement the pair waits for: the probe while it is placed, then the placeholders.
std::vector<std::string> watched(const pair_state& st) {
  return probing(st) ? std::vector<std::string>{st.probe} : std::vector<std::string>{st.names[0], st.names[1]};
}

void delete_probe(pair_state& st) {
  if (st.probe.empty() || st.probe_deleted)
    return;
  st.probe_deleted = true;
  delete_pod(st.ctx->kube, st.ctx->spec.ns, st.probe);
}

// Everything of the pair still there.
void delete_all(pair_state& st) {
  delete_probe(st);
  delete_pods(st.ctx->kube, st.ctx->spec.ns, st.names, st.deleted);
}

void report(pair_self* self, state_t s, std::string reason = {}) {
  auto& st = self->state;
  if (s == st.reported && s != state_t::lost && s != state_t::timed_out && s != state_t::consumed)
    return;
  st.reported = s;
  self->send(st.monitor, msg::pair_report{s, st.slot, std::move(reason), s == state_t::lost && st.unavailable});
}

// How a pair's end is told on the ScaleSet object.
enum class notice {
  warning,   // PlaceholderPairLost / PlaceholderPairTimedOut
  handoff,   // the designed end of a hand-off: no Event
  node_gone, // its node stopped taking pods (cordon, drain, disruption): Normal, a new pair follows
};

void finish(pair_self* self, state_t s, const std::string& reason, notice how = notice::warning) {
  auto& st = self->state;
  if (st.done)
    return;
  st.done = true;
  const bool warn = how == notice::warning;
  runtime::log::info(actor_name,
                     how == notice::handoff     ? "hand-off over"
                     : how == notice::node_gone ? "pair no longer room: its node takes no new pods"
                     : s == state_t::lost       ? "pair lost"
                                                : "pair timed out",
                     {{"scale_set", st.ctx->spec.name}, {"slot", st.slot}, {"reason", reason}});
  // About the scale set's ScaleSet object (kubectl describe scaleset shows it), not the pair's pods,
  // which are deleted now; the monitor passes it on to scale_set_status, which knows the object's
  // uid. The designed end of a hand-off (the workflow pod took the room) is every job's path, not a
  // warning: no Event (the soak benchmark found one per job, 2,000 Warnings for 2,000 healthy jobs,
  // and the event book's memory growing with them).
  if (how != notice::handoff)
    tell_event(st.monitor, {"headroom.dev/v1alpha1", "ScaleSet", st.ctx->spec.ns, st.ctx->spec.name, "", warn ? "Warning" : "Normal",
                              !warn ? "PlaceholderPairReplaced" : s == state_t::lost ? "PlaceholderPairLost" : "PlaceholderPairTimedOut",
                              "Reserve",
                              "scale set " + st.ctx->spec.name + ", pair " + st.slot + " (" + st.names[0] + ", " +
                                  st.names[1] + "): " + reason});
  delete_all(st);
  report(self, s, reason);
  self->demonitor(st.monitor.address());  // see the exit handler
  self->quit();
}

// Did a runner pod of this scale set take the runner placeholder's room? The scheduler nominates
// the preemptor to the victim's node and binds it there; a pod of any other kind preempting the
// placeholder (a busy cluster's higher-priority pod) means the pair is simply lost.
bool runner_took(const pair_state& st, std::time_t now) {
  if (st.runner_node.empty())
    return false;
  for (const auto& p : st.ctx->pods->list()) {
    if (!runners::is_runner_pod(p->meta))
      continue;
    if (p->nominated_node_name == st.runner_node)
      return true;
    if (p->node_name != st.runner_node)
      continue;
    if (const auto& created = p->meta.created; created && static_cast<double>(now) - *created < 120)
      return true;
  }
  return false;
}

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

// "node N cordoned" when a placeholder of the pair sits on a node that takes no new pods: the
// runner that would take the pair's room could not be placed there, so the pair is not room (#61:
// pairs on cordoned and disrupted nodes were advertised for minutes). "" otherwise, and while the
// node cache has not synced yet (no verdict before it knows the nodes).
std::string refusing_node(const pair_state& st, const std::shared_ptr<const k8s::pod> (&pods)[2], const pod_state (&states)[2]) {
  const auto& nodes = st.ctx->nodes;
  if (!nodes || !nodes->synced())
    return {};
  for (int i = 0; i < 2; ++i) {
    if (!pods[i] || pods[i]->node_name.empty() || states[i] == pod_state::gone)
      continue;
    const auto node = nodes->get("", pods[i]->node_name);
    if (auto why = node_refuses_pods(node.get(), st.ctx->spec.tolerations); !why.empty())
      return "node " + pods[i]->node_name + " " + why;
  }
  return {};
}

void create_pod(pair_self* self, role r, int index);

// The probe's turn: once the scheduler has put it on a node, the placeholders are made there.
void evaluate_probe(pair_self* self) {
  auto& st = self->state;
  const auto p = st.ctx->pods->get(st.ctx->spec.ns, st.probe);
  st.probe_seen = st.probe_seen || p != nullptr;
  if (placeholder_state(p.get()) == pod_state::gone || (!p && st.probe_seen && st.creating == 0)) {
    st.probe_deleted = st.probe_deleted || !p;  // nothing of it left to delete
    return finish(self, state_t::lost, st.probe + (p ? " " + p->phase : " deleted"));
  }
  if (!p || p->node_name.empty())
    return report(self, state_t::pending);
  st.pinned_node = p->node_name;
  st.deleted[0] = st.deleted[1] = false;
  create_pod(self, role::runner_placeholder, 0);
  create_pod(self, role::workflow_placeholder, 1);
  delete_probe(st);  // its room is theirs; they are in the scheduler's queue already, or on the way
  report(self, state_t::pending);
}

void evaluate(pair_self* self) {
  auto& st = self->state;
  if (st.done)
    return;
  if (probing(st))
    return evaluate_probe(self);
  pod_state states[2];
  std::shared_ptr<const k8s::pod> pods[2];
  bool went[2];
  for (int i = 0; i < 2; ++i) {
    pods[i] = st.ctx->pods->get(st.ctx->spec.ns, st.names[i]);
    states[i] = placeholder_state(pods[i].get());
    if (pods[i])
      st.seen[i] = true;
    if (i == 0 && pods[i] && !pods[i]->node_name.empty())
      st.runner_node = pods[i]->node_name;
    st.deleted[i] = states[i] == pod_state::absent && st.seen[i] && st.creating == 0;
    went[i] = states[i] == pod_state::gone || st.deleted[i];
  }
  auto why = [&](int i) {
    return st.names[i] + " " + (!pods[i] ? "deleted" : pods[i]->meta.deletion_timestamp.empty() ? pods[i]->phase : "terminating");
  };
  if (st.consumed) {
    if (went[1])
      finish(self, state_t::lost, "hand-off over: " + why(1), notice::handoff);
    return;
  }
  // dind and none: no workflow pod will come (dind's runner pod holds the workflow's room itself,
  // in its sidecar, so it may preempt either placeholder or both; none runs the job in the runner):
  // once a runner took the pair, its hand-off is over and the workflow placeholder goes.
  if (runners::no_workflow_pod(st.ctx->spec) && (went[0] || (went[1] && runners::workflow_in_runner_pod(st.ctx->spec)))) {
    if (runner_took(st, static_cast<std::time_t>(runtime::actor_system_clock{self->clock()}.wall_seconds())))
      return finish(self, state_t::lost, "hand-off over: no workflow pod comes (the job runs in its runner pod)", notice::handoff);
    if (st.undecided++ < 6) {  // the runner pod's binding may trail the victims' deletion
      report(self, state_t::pending);
      self->delayed_send(self, std::chrono::milliseconds(500), look_again{});
      return;
    }
  }
  if (went[1])
    return finish(self, state_t::lost, why(1));
  if (auto refused = refusing_node(st, pods, states); !refused.empty())
    return finish(self, state_t::lost, refused + ": a new pair is made elsewhere", notice::node_gone);
  if (went[0]) {
    if (states[1] != pod_state::running)
      return finish(self, state_t::lost, why(0));
    if (!runner_took(st, static_cast<std::time_t>(runtime::actor_system_clock{self->clock()}.wall_seconds()))) {
      if (st.undecided++ < 6) {  // the runner pod's binding may trail the victim's deletion
        report(self, state_t::pending);
        self->delayed_send(self, std::chrono::milliseconds(500), look_again{});
        return;
      }
      return finish(self, state_t::lost, why(0) + ", not by a runner");
    }
    // A runner took the runner placeholder: keep the workflow's room until its pod arrives.
    st.consumed = true;
    runtime::log::info(actor_name, "pair consumed: the workflow placeholder holds on",
                       {{"scale_set", st.ctx->spec.name}, {"slot", st.slot}, {"reason", why(0)}});
    report(self, state_t::consumed, why(0));
    self->delayed_send(self, st.ctx->spec.placeholder_ready_timeout, handoff_timeout{});
    return;
  }
  report(self, states[0] == pod_state::running && states[1] == pod_state::running ? state_t::ready : state_t::pending);
}

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

void create_pod(pair_self* self, role r, int index) {
  auto& st = self->state;
  ++st.creating;
  auto* kube = st.ctx->kube;
  call_into(self, static_cast<uint64_t>(index),
            [kube, ns = st.ctx->spec.ns, body = placeholder_pod(st.ctx->spec, st.slot, r, st.owner, st.pinned_node)](k8s::api_callback cb) {
              kube->create(k8s::kinds::pods, ns, body, std::move(cb));
            });
}

// The pair's pods made (adopting: those missing); in kubernetes mode its probe first.
void make_pods(pair_self* self, bool adopt) {
  auto& st = self->state;
  const role roles[2] = {role::runner_placeholder, role::workflow_placeholder};
  if (runners::same_node_pairs(st.ctx->spec)) {
    st.probe = placeholder_pod_name(st.ctx->spec, st.slot, role::pair_probe);
    if (adopt) {  // adopted by its placeholders: a probe left beside them goes
      st.probe_seen = st.probe_deleted = st.ctx->pods->get(st.ctx->spec.ns, st.probe) == nullptr;
      delete_probe(st);
      st.probe.clear();
    } else {
      st.deleted[0] = st.deleted[1] = true;  // not made yet: nothing to delete
      create_pod(self, role::pair_probe, 2);
    }
  }
  for (int i = 0; i < 2 && st.probe.empty(); ++i)
    if (!adopt || !st.ctx->pods->get(st.ctx->spec.ns, st.names[i]))
      create_pod(self, roles[i], i);
}

pair_impl::behavior_type pair_behavior(pair_self* self, context_ptr ctx, std::string slot, bool adopt, pair_owner monitor,
                                       owner_ref owner) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.slot = std::move(slot);
  st.monitor = std::move(monitor);
  st.owner = std::move(owner);
  st.names[0] = placeholder_pod_name(st.ctx->spec, st.slot, role::runner_placeholder);
  st.names[1] = placeholder_pod_name(st.ctx->spec, st.slot, role::workflow_placeholder);
  make_pods(self, adopt);
  self->delayed_send(self, st.ctx->spec.placeholder_ready_timeout, ready_timeout{});
  // Scale-down (an exit from the monitor) and an orderly shutdown (the monitor stopping) delete
  // the pods; a crash of the monitor leaves them for its successor to adopt.
  auto orderly = [](const caf::error& reason) {
    return !reason || reason == caf::exit_reason::user_shutdown || reason == caf::exit_reason::normal;
  };
  self->set_exit_handler([self, orderly](caf::exit_msg& m) {
    if (orderly(m.reason))
      delete_all(self->state);
    // A monitor is attached to the observed actor and stays there until that actor ends: without
    // this, the capacity monitor kept one per pair it ever had, and each kept the pair's memory
    // (CAF frees an actor's block with its last weak reference) - the soak's RSS slope.
    self->demonitor(self->state.monitor.address());
    self->quit(m.reason);
  });
  self->monitor(st.monitor);
  self->set_down_handler([self, orderly](caf::down_msg& d) {
    if (orderly(d.reason))
      delete_all(self->state);
    self->quit(d.reason);
  });
  if (adopt)
    evaluate(self);
  return {
      [self](msg::pod_event&) { evaluate(self); },
      [self](msg::pair_handoff) {  // the monitor hands this pair to a newly assigned job
        auto& s = self->state;
        if (s.consumed || s.done)
          return;
        s.consumed = true;
        s.reported = state_t::consumed;
        const bool whole = runners::no_workflow_pod(s.ctx->spec);
        runtime::log::info(actor_name,
                           whole ? "pair handed to a job: no workflow pod comes, both placeholders go"
                                 : "pair handed to a job: the workflow placeholder holds on",
                           {{"scale_set", s.ctx->spec.name}, {"slot", s.slot}});
        k8s::delete_options o;
        o.grace_period_seconds = 0;
        s.ctx->kube->remove(k8s::kinds::pods, s.ctx->spec.ns, s.names[0], o, [](k8s::api_result) {});
        if (whole)  // dind: the runner pod needs the workflow's room too; none: nothing does
          s.ctx->kube->remove(k8s::kinds::pods, s.ctx->spec.ns, s.names[1], o, [](k8s::api_result) {});
        self->delayed_send(self, s.ctx->spec.placeholder_ready_timeout, handoff_timeout{});
      },
      [self](msg::api_reply& r) {
        auto& s = self->state;
        if (r.correlation >= events_correlation)
          return karpenter_said(self, r);
        --s.creating;
        const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
        if (!r.ok && kind != k8s::api_error::kind::already_exists) {
          s.unavailable = kind == k8s::api_error::kind::transport || kind == k8s::api_error::kind::too_many_requests ||
                          kind == k8s::api_error::kind::server;
          return finish(self, state_t::lost, "create " + (r.correlation < 2 ? s.names[r.correlation] : s.probe) + " failed: " + r.error);
        }
        evaluate(self);
      },
      [self](look_again) { evaluate(self); },
      [self](handoff_timeout) {
        if (self->state.consumed)  // no workflow pod came for the held room
          finish(self, state_t::lost, "hand-off timed out: deleting the workflow placeholder");
      },
      [self](ready_timeout) {
        const auto& s = self->state;
        if (!s.consumed && s.reported != state_t::ready && s.asking == 0)
          time_out(self);
      },
      [self](events_bound) {
        if (self->state.asking > 0)  // the Event reads took too long: time out without them
          end_timed_out(self);
      },
  };
}

}  // namespace

pair_actor spawn_placeholder_pair(caf::actor_system& sys, context_ptr ctx, std::string slot, bool adopt, pair_owner monitor,
                                  owner_ref owner) {
  return sys.spawn(pair_behavior, std::move(ctx), std::move(slot), adopt, std::move(monitor), std::move(owner));
}

}  // namespace headroom::actors::capacity
