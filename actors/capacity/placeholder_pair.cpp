// placeholder_pair: one actor per pair of placeholder pods. It creates (or, adopting, finds) a
// runner placeholder and a workflow placeholder and tells the monitor what they say:
//
//   ready      both Running on a node: the scheduler has placed the pair, a job fits
//   consumed   the runner placeholder went (a runner pod preempted it): the workflow placeholder
//              keeps the workflow's room (or, not placed yet, stays to get some) until the monitor
//              gives it to a workflow pod (monitor_workflow_rooms.cpp), or the hand-off ends
//   lost       the workflow placeholder went first, or the pair could not be made (the survivor is
//              deleted); after `consumed`, the end of the hand-off
//   timed_out  not ready within placeholderReadyTimeout (both deleted)
//
// The runner placeholder is made last. A runner pod takes any runner placeholder the scheduler
// finds (all are the same to it), so one made with its pair would be taken while the workflow
// placeholder still waited for a node, and that runner's workflow pod would find no room held for
// it (on a workflow class that preempts, it preempted a running runner: capacity_chaos_test's API
// server restart failed a job so). So a pair starts with a probe in the runner placeholder's place, on the
// workflow placeholder's rung, where no runner pod can preempt it; Karpenter sees it and the
// workflow placeholder together and makes room for both. Once both are on nodes, the runner
// placeholder is made, required on the probe's node, and the probe deleted: its room is theirs.
// In kubernetes mode the hook pins the workflow pod to its runner's node, and a dind runner pod
// needs both rooms on its node, so the pair's two pods must share one. Made at once with a pod
// affinity to each other, the first placed may take a node with room for itself alone, the second
// then waits there for good, and Karpenter (which cannot put it anywhere else) makes no node: a
// full cluster never grows. So there the probe holds the whole pair's room, alone; where the
// scheduler (or a node Karpenter made for it) puts it, both placeholders are made, required on
// that node, and the probe is deleted.
//
// The monitor feeds it its two pods' events. Stopped by the monitor (scale-down) or by an orderly
// shutdown, it deletes its pods; when it dies with its monitor's crash it leaves them for the
// restarted monitor to adopt by label.

#include <caf/all.hpp>

#include <ctime>

#include "actors/k8s/event_recorder.hpp"
#include "actors/capacity/capacity.hpp"
#include "actors/capacity/pair.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "messages/type_ids.hpp"
#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/time.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::capacity::pair {

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
// The probe holds the whole pair's room, and the placeholders are made after it (kubernetes, dind);
// otherwise it holds the runner's, beside the workflow placeholder made at once.
bool whole_pair_probe(const pair_state& st) { return runners::same_node_pairs(st.ctx->spec); }

std::vector<std::string> watched(const pair_state& st) {
  if (!probing(st))
    return {st.names[0], st.names[1]};
  return whole_pair_probe(st) ? std::vector<std::string>{st.probe} : std::vector<std::string>{st.probe, st.names[1]};
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
  msg::pair_report r{s, st.slot, std::move(reason), s == state_t::lost && st.unavailable, std::exchange(st.last_event, {})};
  if (r.trace.from_watch())
    r.trace.judged = self->clock().now();
  self->send(st.monitor, std::move(r));
}

void finish(pair_self* self, state_t s, const std::string& reason, notice how) {
  auto& st = self->state;
  if (st.done)
    return;
  st.done = true;
  const bool warn = how == notice::warning;
  runtime::log::info(actor_name,
                     how == notice::handoff     ? "hand-off over"
                     : how == notice::node_gone ? "pair no longer room: its node takes no new pods"
                     : how == notice::no_room   ? "pair replaced: its node has no room left for it"
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
  // A create still in flight makes its pod after the deletes above: the pair stays until it is
  // answered and deletes that pod then (settled_create). Left to the monitor's sweep, such a pod sat
  // Pending for its grace, a pending pair to whoever counts them (the burst budget e2e: 64 of 60).
  if (st.creating > 0) {
    self->delayed_send(self, std::chrono::seconds(30), settle_bound{});
    return;
  }
  self->quit();
}

// An ended pair's create answered: the pod it made goes, and the pair once nothing is in flight.
void settled_create(pair_self* self, const msg::api_reply& r) {
  auto& st = self->state;
  if (r.ok && r.correlation <= 2)
    delete_pod(st.ctx->kube, st.ctx->spec.ns, r.correlation < 2 ? st.names[r.correlation] : st.probe);
  if (st.creating <= 0)
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

// The runner pod that preempted the runner placeholder shows its nomination or binding on the
// victim's node some time after the victim's deletion: on a busy API server over a second. So the
// pair stays pending (not capacity) and looks again every 500 ms, and at every event of its pods,
// for up to runner_binding_wait from its first look; false once that has passed. (Counting looks,
// as it once did, ended the wait within a second in a burst, where every pod event is a look: the
// pair was declared lost, its workflow placeholder deleted, and the runner that had taken it found
// no room for its workflow pod on its node: CI's migration e2e, kubernetes mode.)
constexpr auto runner_binding_wait = std::chrono::seconds(5);

bool still_looking(pair_self* self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  if (!st.looking_since)
    st.looking_since = now;
  if (now - *st.looking_since >= runner_binding_wait)
    return false;
  report(self, state_t::pending);
  if (!st.look_pending) {
    st.look_pending = true;
    self->delayed_send(self, std::chrono::milliseconds(500), look_again{});
  }
  return true;
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
  // The node the probe chose, which a placeholder made after it is required on, though not bound yet.
  if (!st.pinned_node.empty())
    if (auto why = node_refuses_pods(nodes->get("", st.pinned_node).get(), st.ctx->spec.tolerations); !why.empty())
      return "node " + st.pinned_node + " " + why;
  return {};
}

void create_pod(pair_self* self, role r, int index);

// Same-node pairs (kubernetes, dind): the probe's room is freed for the placeholders made on its
// node, but a pod waiting with a higher priority (a runner pod, another pair's probe) may take it
// first, and a placeholder pinned there then waits for good: Karpenter makes no node for a pod that
// may only go to one. A workflow pod pinned to that node may be given the room of the half placed
// (monitor_workflow_rooms.cpp); otherwise, Unschedulable for stuck_wait, the pair gives up the node
// and the monitor makes a new one, whose probe goes wherever room is (or is made).
constexpr auto stuck_wait = std::chrono::seconds(10);

// true when the pair ended for it.
bool stuck_beside(pair_self* self, const std::shared_ptr<const k8s::pod> (&pods)[2]) {
  auto& st = self->state;
  int stuck = -1;
  for (int i = 0; i < 2 && !st.pinned_node.empty() && whole_pair_probe(st); ++i)
    if (pods[i] && scheduler_found_no_room(*pods[i]))
      stuck = i;
  if (stuck < 0) {
    st.stuck_since.reset();
    return false;
  }
  const auto now = self->clock().now();
  if (!st.stuck_since)
    st.stuck_since = now;
  if (now - *st.stuck_since < stuck_wait) {
    if (!st.stuck_pending) {
      st.stuck_pending = true;
      self->delayed_send(self, stuck_wait - (now - *st.stuck_since), stuck_check{});
    }
    return false;
  }
  finish(self, state_t::lost,
         st.names[stuck] + " found no room on node " + st.pinned_node + " (its probe's room was taken first): a new pair is made",
         notice::no_room);
  return true;
}

// The probe's turn: once the scheduler has put it (and the workflow placeholder beside it) on a
// node, the runner placeholder (or both placeholders) is made on the probe's node.
void evaluate_probe(pair_self* self) {
  auto& st = self->state;
  const auto p = st.ctx->pods->get(st.ctx->spec.ns, st.probe);
  st.probe_seen = st.probe_seen || p != nullptr;
  if (placeholder_state(p.get()) == pod_state::gone || (!p && st.probe_seen && st.creating == 0)) {
    st.probe_deleted = st.probe_deleted || !p;  // nothing of it left to delete
    return finish(self, state_t::lost, st.probe + (p ? " " + p->phase : " deleted"));
  }
  bool workflow_placed = true;
  if (!whole_pair_probe(st)) {
    const auto w = st.ctx->pods->get(st.ctx->spec.ns, st.names[1]);
    st.seen[1] = st.seen[1] || w != nullptr;
    st.deleted[1] = !w && st.seen[1] && st.creating == 0;
    if (placeholder_state(w.get()) == pod_state::gone || st.deleted[1])
      return finish(self, state_t::lost, st.names[1] + (w ? " " + w->phase : " deleted"));
    workflow_placed = w && !w->node_name.empty();
  }
  if (!p || p->node_name.empty() || !workflow_placed)
    return report(self, state_t::pending);
  st.pinned_node = p->node_name;
  st.deleted[0] = false;
  create_pod(self, role::runner_placeholder, 0);
  if (whole_pair_probe(st)) {
    st.deleted[1] = false;
    create_pod(self, role::workflow_placeholder, 1);
  }
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
    if (still_looking(self))
      return;
  }
  if (went[1])
    return finish(self, state_t::lost, why(1));
  if (auto refused = refusing_node(st, pods, states); !refused.empty())
    return finish(self, state_t::lost, refused + ": a new pair is made elsewhere", notice::node_gone);
  if (went[0]) {
    if (!runner_took(st, static_cast<std::time_t>(runtime::actor_system_clock{self->clock()}.wall_seconds()))) {
      if (still_looking(self))
        return;
      return finish(self, state_t::lost, why(0) + ", not by a runner");
    }
    // A runner took the runner placeholder: keep the workflow's room until its pod arrives. Also
    // when the workflow placeholder is not placed yet: the scheduler takes any runner placeholder
    // for a runner pod, a pending pair's too, and that runner's workflow pod then has no room held
    // anywhere; ending the pair (as it once did) deleted the one pod that would get it some (a
    // node from Karpenter, room freed), and the workflow pod, finding none, preempted a running
    // runner (capacity_chaos_test's apiserver restart: the job failed with its runner).
    st.consumed = true;
    runtime::log::info(actor_name,
                       states[1] == pod_state::running ? "pair consumed: the workflow placeholder holds on"
                                                       : "pair consumed before it was placed: the workflow placeholder stays to hold the room once placed",
                       {{"scale_set", st.ctx->spec.name}, {"slot", st.slot}, {"reason", why(0)}});
    report(self, state_t::consumed, why(0));
    self->delayed_send(self, st.ctx->spec.placeholder_ready_timeout, handoff_timeout{});
    return;
  }
  if (stuck_beside(self, pods))
    return;
  report(self, states[0] == pod_state::running && states[1] == pod_state::running ? state_t::ready : state_t::pending);
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

// The pair's pods made (adopting: those missing): the probe first, with the workflow placeholder
// beside it unless the probe holds the whole pair's room (see the top of this file). In `none`
// mode no workflow pod comes to need the room a runner took: both placeholders at once.
void make_pods(pair_self* self, bool adopt) {
  auto& st = self->state;
  const role roles[2] = {role::runner_placeholder, role::workflow_placeholder};
  if (adopt) {  // adopted by its placeholders: a probe left beside them goes
    st.probe = placeholder_pod_name(st.ctx->spec, st.slot, role::pair_probe);
    st.probe_seen = st.probe_deleted = st.ctx->pods->get(st.ctx->spec.ns, st.probe) == nullptr;
    delete_probe(st);
    st.probe.clear();
    for (int i = 0; i < 2; ++i)
      if (!st.ctx->pods->get(st.ctx->spec.ns, st.names[i]))
        create_pod(self, roles[i], i);
    return;
  }
  if (runners::no_workflow_pod(st.ctx->spec) && !whole_pair_probe(st)) {  // none: the job runs in the runner pod
    for (int i = 0; i < 2; ++i)
      create_pod(self, roles[i], i);
    return;
  }
  st.probe = placeholder_pod_name(st.ctx->spec, st.slot, role::pair_probe);
  st.deleted[0] = st.deleted[1] = true;  // not made yet: nothing to delete
  create_pod(self, role::pair_probe, 2);
  if (!whole_pair_probe(st)) {
    st.deleted[1] = false;
    create_pod(self, role::workflow_placeholder, 1);
  }
}

void look_again_now(pair_self* self) {
  self->state.look_pending = false;
  evaluate(self);
}

// The monitor hands this pair to a newly assigned job: its runner placeholder goes (and in dind and
// none modes its workflow placeholder too).
void hand_off(pair_self* self) {
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
      [self](msg::pod_event& e) {
        self->state.last_event = std::move(e.trace);
        evaluate(self);
        self->state.last_event = {};
      },
      [self](msg::pair_handoff) { hand_off(self); },
      [self](msg::api_reply& r) {
        auto& s = self->state;
        if (r.correlation >= events_correlation)
          return karpenter_said(self, r);
        --s.creating;
        if (s.done)
          return settled_create(self, r);
        const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
        if (!r.ok && kind != k8s::api_error::kind::already_exists) {
          s.unavailable = kind == k8s::api_error::kind::transport || kind == k8s::api_error::kind::too_many_requests ||
                          kind == k8s::api_error::kind::server;
          return finish(self, state_t::lost, "create " + (r.correlation < 2 ? s.names[r.correlation] : s.probe) + " failed: " + r.error);
        }
        evaluate(self);
      },
      [self](look_again) { look_again_now(self); },
      [self](settle_bound) { self->quit(); },
      [self](stuck_check) {
        self->state.stuck_pending = false;
        evaluate(self);
      },
      [self](handoff_timeout) {
        if (self->state.consumed)  // no workflow pod came for the held room
          finish(self, state_t::lost, "hand-off timed out: deleting the workflow placeholder");
      },
      [self](ready_timeout) {
        const auto& s = self->state;
        if (!s.done && !s.consumed && s.reported != state_t::ready && s.asking == 0)
          time_out(self);
      },
      [self](events_bound) {
        if (self->state.asking > 0)  // the Event reads took too long: time out without them
          end_timed_out(self);
      },
  };
}

}  // namespace headroom::actors::capacity::pair

namespace headroom::actors::capacity {

pair_actor spawn_placeholder_pair(caf::actor_system& sys, context_ptr ctx, std::string slot, bool adopt, pair_owner monitor,
                                  owner_ref owner) {
  return sys.spawn(pair::pair_behavior, std::move(ctx), std::move(slot), adopt, std::move(monitor), std::move(owner));
}

}  // namespace headroom::actors::capacity
