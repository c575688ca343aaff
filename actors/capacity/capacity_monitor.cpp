// capacity_monitor: one per scale set. Turns demand into placeholder pairs and pairs into the
// capacity the listener advertises.
//
//   desired_pairs = max(0, min(proactiveCapacity + queued, maxRunners − assigned))
//   capacity      = min(assigned + ready pairs not about to be taken by a placed job, maxRunners)
//
// Recomputed on every pod event of the scale set, every job update, every HUD result, every pair
// report, and every recalculateInterval as a fallback. On scale-down, pending pairs go first.
//
// Start-up: the PriorityClass ladder must exist with the right values (created when absent; a
// class with another value stops the monitor with a message naming it), then the scale set's owner
// ConfigMap is created or found; placeholders of another owner are deleted; the placed pairs the
// owner's earlier process or monitor left are adopted by their slot label when made from the pod
// spec this configuration makes (their spec-hash label), the others deleted. An orderly stop keeps
// the placed pairs for the next process (on_exit).
//
// The state and the shared helpers: monitor.hpp; the capacity loop: monitor_recompute.cpp; start-up:
// monitor_setup.cpp.

#include <caf/all.hpp>

#include <algorithm>

#include "actors/capacity/monitor.hpp"
#include "actors/k8s/event_recorder.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::capacity {
namespace monitor {

void start_call(monitor_self* self, call_info info, const std::function<void(k8s::api_callback)>& start) {
  self->state.calls.start(self, std::move(info), start);
}

int64_t ms_now(monitor_self* self) { return runtime::actor_system_clock{self->clock()}.now_ms(); }

bool owned_by(const k8s::pod& p, const std::string& uid) {
  for (const auto& o : p.meta.owners)
    if (o.uid == uid)
      return true;
  return false;
}

std::optional<role> role_of(const k8s::pod& p) {
  if (runners::is_runner_pod(p.meta))
    return role::runner;
  const auto* r = p.meta.label(keys::role);
  if (r == nullptr)
    return std::nullopt;
  if (*r == role_label(role::runner_placeholder))
    return role::runner_placeholder;
  if (*r == role_label(role::workflow_placeholder))
    return role::workflow_placeholder;
  if (*r == role_label(role::pair_probe))
    return role::pair_probe;
  return std::nullopt;
}


void retire(monitor_self* self, const std::string& slot) {
  self->state.retired.emplace(slot, self->clock().now());
}

void stop_pair(monitor_self* self, const std::string& slot) {
  auto& st = self->state;
  auto it = st.pairs.find(slot);
  if (it == st.pairs.end())
    return;
  self->send_exit(it->second.actor, caf::exit_reason::user_shutdown);
  st.pairs.erase(it);
  retire(self, slot);
  ++st.pair_deletes;
  st.ctx->metrics.add("headroom_capacity_advertised_pair_deletes_total", 1);
}

void spawn_pair(monitor_self* self, std::string slot, bool adopt) {
  auto& st = self->state;
  auto a = spawn_placeholder_pair(self->home_system(), st.ctx, slot, adopt, pair_owner{self}, st.owner);
  self->monitor(a);
  st.pairs[slot] = pair_entry{a, state_t::pending, self->clock().now(), {}};
  if (!adopt) {
    ++st.pair_creates;
    st.ctx->metrics.add("headroom_capacity_advertised_pair_creates_total", 1);
  }
}

nodepool_room pool_room(monitor_self* self) {
  nodepool_room room;
  for (const auto& [name, v] : self->state.pools) {
    if (!v.matches)
      continue;
    ++room.matching;
    if (v.room)
      ++room.with_room;
    else
      room.full.push_back(name);
  }
  return room;
}

void on_pool(monitor_self* self, const msg::object_event<k8s::unstructured>& e) {
  auto& st = self->state;
  const auto& name = e.object->meta.name;
  if (e.change == msg::object_change::deleted) {
    st.pools.erase(name);
    return;
  }
  auto pool = k8s::decode_nodepool(e.object->raw);
  if (auto* err = std::get_if<k8s::decode_error>(&pool)) {
    // A pool headroom cannot read limits nothing: better a pair that times out than none made.
    runtime::log::warn(actor_name, "NodePool not understood; not limiting pairs by it", {{"error", err->message}});
    st.pools.erase(name);
    return;
  }
  const auto& p = std::get<k8s::nodepool>(pool);
  const auto& spec = st.ctx->spec;
  const monitor_state::pool_verdict now{nodepool_matches(p, spec), nodepool_has_room(p, pair_requests(spec))};
  auto& was = st.pools[name];
  if (now.matches && now.room && !(was.matches && was.room) && st.create_backoff.count() > 0) {
    // Room the pairs that timed out did not have: try again now, not when the backoff ends.
    st.create_backoff = milliseconds{0};
    st.spawn_blocked_until = self->clock().now();
  }
  was = now;
}

// A hand-off holds a workflow's room for a job in flight, and there are at most as many of those
// as assigned jobs or runner pods still going. Beyond that a hand-off holds room for a job that is
// over, because its workflow pod ran elsewhere; without this it would hold that room until
// placeholderReadyTimeout (found by the burst scenario's metric check: 8 placeholders Running for 2
// ready pairs after the jobs). The oldest go first: their jobs started first.
// kubernetes mode: a hand-off a runner still going is pinned to is that runner's job's, in flight
// whatever the counts say (they trail the pods): ending it deleted the one room its workflow pod
// could have (pinned to the runner's node), and the runner, waiting there for room of its own,
// could take that workflow room instead (the migration e2e under load).
void end_finished_handoffs(monitor_self* self, int64_t jobs_in_flight) {
  auto& st = self->state;
  std::deque<std::string> kept;
  while (static_cast<int64_t>(st.handoffs.size()) > jobs_in_flight && !st.handoff_order.empty()) {
    const auto slot = st.handoff_order.front();
    st.handoff_order.pop_front();
    auto h = st.handoffs.find(slot);
    if (h == st.handoffs.end())
      continue;  // ended another way already
    if (rooms_pinned(st) && room_claimed(st, slot)) {
      kept.push_back(slot);
      continue;
    }
    runtime::log::info(actor_name, "hand-off ended: no job in flight needs its workflow room",
                       {{"scale_set", st.ctx->spec.name}, {"slot", slot}, {"jobs_in_flight", jobs_in_flight}});
    self->send_exit(h->second, caf::exit_reason::user_shutdown);
    st.handoffs.erase(h);
    retire(self, slot);
  }
  st.handoff_order.insert(st.handoff_order.begin(), kept.begin(), kept.end());
  while (!st.handoff_order.empty() && st.handoffs.count(st.handoff_order.front()) == 0)
    st.handoff_order.pop_front();  // keep the order list as short as the map
}

// A placeholder no pair actor owns, deleted at once (zero grace); `deleting` keeps it to one
// delete in flight (the caller inserts the name).
void delete_placeholder(monitor_self* self, const std::string& name) {
  auto& st = self->state;
  k8s::delete_options o;
  o.grace_period_seconds = 0;
  auto* kube = st.ctx->kube;
  start_call(self, {call_kind::pod_delete, name, 0}, [kube, ns = st.ctx->spec.ns, name, o](k8s::api_callback cb) {
    kube->remove(k8s::kinds::pods, ns, name, o, std::move(cb));
  });
}

namespace {

// An orderly stop (SIGTERM, losing the Lease, a parent stopping): the placed pairs keep their pods
// and the owner ConfigMap stays, so the next process (a rollout, an upgrade, the new leader)
// adopts them as they are instead of placing them again; pairs not placed yet and hand-offs delete
// theirs (a next process would only delete them: it adopts whole placed pairs). A crash leaves
// every pod (the pairs see their monitor go for a reason not orderly) for the restarted monitor.
void on_exit(monitor_self* self, const caf::exit_msg& m) {
  auto& s = self->state;
  if (m.reason != caf::exit_reason::user_shutdown && m.reason != caf::exit_reason::normal) {
    self->quit(m.reason);
    return;
  }
  int64_t kept = 0;
  for (auto& [slot, e] : s.pairs) {
    const bool placed = e.state == state_t::ready;
    kept += placed ? 1 : 0;
    self->send_exit(e.actor, placed ? keep_pods() : caf::make_error(caf::exit_reason::user_shutdown));
  }
  for (auto& [slot, a] : s.handoffs)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  if (!s.pairs.empty() || !s.handoffs.empty())
    runtime::log::info(actor_name, "stopping: placed pairs kept for the next process to adopt",
                       {{"scale_set", s.ctx->spec.name}, {"kept", kept}, {"deleted", static_cast<int64_t>(s.pairs.size()) - kept},
                        {"handoffs_deleted", static_cast<int64_t>(s.handoffs.size())}});
  self->quit(m.reason);
}

// A pair ended (it reported first, or crashed).
void on_pair_down(monitor_self* self, const caf::down_msg& d) {
  auto& s = self->state;
  for (auto it = s.pairs.begin(); it != s.pairs.end(); ++it)
    if (it->second.actor.address() == d.source) {
      retire(self, it->first);
      s.pairs.erase(it);
      recompute(self);
      return;
    }
  for (auto it = s.handoffs.begin(); it != s.handoffs.end(); ++it)
    if (it->second.address() == d.source) {
      retire(self, it->first);
      s.handoffs.erase(it);
      return;
    }
}

// NodePool changes, or pod changes: each pod's to its pair (or the hand-off holding its slot).
// A node stopped taking pods: the pairs with a placeholder on it look again (placeholder_pair
// ends a pair on such a node, and the recompute its report brings makes a new one elsewhere).
void on_node_refusing(monitor_self* self, const std::string& node) {
  auto& s = self->state;
  for (const auto& [name, p] : s.census.placeholders()) {
    if (p->node_name != node)
      continue;
    const auto* slot = p->meta.label(keys::slot);
    if (slot == nullptr)
      continue;
    if (auto it = s.pairs.find(*slot); it != s.pairs.end())
      self->send(it->second.actor, msg::pod_event{msg::object_change::modified, p});
  }
}

// A pod change for a running pair (or a hand-off holding its slot) goes to that pair alone.
bool route_to_pair(monitor_self* self, const msg::pod_event& e) {
  auto& s = self->state;
  const auto r = role_of(*e.object);
  const auto* slot = e.object->meta.label(keys::slot);
  if (slot == nullptr || !r || *r == role::runner)
    return false;
  if (auto it = s.pairs.find(*slot); it != s.pairs.end()) {
    self->send(it->second.actor, e);
    return true;
  }
  if (auto h = s.handoffs.find(*slot); h != s.handoffs.end()) {
    self->send(h->second, e);
    return true;
  }
  return false;
}

void on_wakeup(monitor_self* self, msg::buffer_wakeup w) {
  auto& s = self->state;
  if (w.buffer == nodes_buffer) {
    s.node_feed->drain([self](const msg::object_event<k8s::node>& e) { on_node_refusing(self, e.object->meta.name); });
    return;
  }
  if (w.buffer == pools_buffer) {
    s.pool_feed->drain([self](const msg::object_event<k8s::unstructured>& e) { on_pool(self, e); });
    recompute(self);
    return;
  }
  // A pod of a running pair is that pair's to judge: the monitor counts it and hands it on, and
  // decides again when the pair reports a new state (on_pair_report), not before it has judged.
  // Anything else (runner pods, placeholders no pair owns) is the monitor's own: it decides now.
  // Each change is stamped with the moment it was drained (its hop_trace); a decision taken here
  // answers the last change that asked for one.
  bool decide = false;
  const auto woken = self->clock().now();
  s.feed->drain([self, &decide, woken](msg::pod_event e) {
    auto& s = self->state;
    e.trace.woken = woken;
    s.census.apply(e.change, e.object);
    if (!route_to_pair(self, e)) {
      decide = true;
      s.cause = std::move(e.trace);
      s.cause.judged = woken;
    }
  });
  if (s.census.mend(s.feed->stats()->dropped.load(std::memory_order_relaxed), [&] { return s.ctx->pods->list(); }))
    decide = true;
  if (decide)
    recompute(self);
  else
    s.cause = {};
}

void on_setup_retry(monitor_self* self) {
  const auto& s = self->state;
  if (!s.acting && s.setup_pending == 0)
    begin_setup(self);
}

// The periodic recalculation counts from the cache, whatever the feed brought.
void on_recalculate(monitor_self* self) {
  self->state.census.rebuild(self->state.ctx->pods->list());
  recompute(self);
  self->delayed_send(self, self->state.ctx->spec.recalculate_interval, recalculate_timer{});
}

// The service's statistics: assigned jobs, and each newly assigned one owed a pair.
void on_scale_set_update(monitor_self* self, const msg::scale_set_update& u) {
  auto& s = self->state;
  s.assigned = u.stats.total_assigned_jobs;
  s.running_jobs = u.stats.total_running_jobs;
  const int64_t available = std::max<int64_t>(0, u.stats.total_available_jobs);
  if (available > 0 && s.available == 0)
    s.available_since = self->clock().now();
  s.available = available;
  for (const auto& j : u.jobs) {
    if (j.type == msg::job_transition::started && !j.runner_name.empty())
      s.started.insert(j.runner_name);
    else if (j.type == msg::job_transition::completed)
      s.started.erase(j.runner_name);
  }

  if (!s.assigned_known) {  // jobs assigned before this monitor started are not new
    s.assigned_known = true;
    s.assigned_seen = s.assigned;
  }
  for (int64_t n = s.assigned - s.assigned_seen; n > 0; --n)
    s.owed.push_back(self->clock().now());
  s.assigned_seen = s.assigned;
  while (static_cast<int64_t>(s.owed.size()) > s.assigned)
    s.owed.pop_front();
  recompute(self);
}

// A pair's news: placed (ready), consumed by a job (a hand-off), lost or timed out (a backoff
// before the next create), or a renewal's successor placed (the old pair goes).
void on_pair_report(monitor_self* self, const msg::pair_report& r) {
  auto& s = self->state;
  s.cause = r.trace;  // the decision below answers the pod change the pair judged (if any)
  if (auto h = s.handoffs.find(r.slot); h != s.handoffs.end()) {
    if (r.what == state_t::lost || r.what == state_t::timed_out) {  // the hand-off ended
      s.handoffs.erase(h);
      retire(self, r.slot);
    }
    s.cause = {};
    return;
  }
  auto it = s.pairs.find(r.slot);
  if (it == s.pairs.end()) {
    s.cause = {};
    return;
  }
  if (r.what == state_t::consumed) {  // no longer capacity; a replacement is made at once
    if (!s.owed.empty())
      s.owed.pop_front();
    s.handoffs[r.slot] = it->second.actor;
    s.handoff_order.push_back(r.slot);
    s.pairs.erase(it);
    recompute(self);
    return;
  }
  it->second.state = r.what;
  if (r.what == state_t::lost || r.what == state_t::timed_out) {
    s.pairs.erase(it);
    retire(self, r.slot);
    if (r.what == state_t::timed_out) {
      ++s.pair_timeouts;
      s.ctx->metrics.add("headroom_capacity_advertised_pair_timeouts_total", 1);
      s.unplaced = r.reason;
    }
    // A pair that could not even be created, or never got a node: back off before the next,
    // so a cluster without room is not flooded with pending placeholders. A create the API
    // server could not take (no answer, 429, 5xx) says nothing about room: its backoff is
    // capped at 5 s, as the informers' reconnects are, or a 30 s outage left the warm pool
    // waiting up to 40 s after it ended (the chaos suite's 429/5xx scenario saw 35 s).
    // A pair that timed out backs off up to 10 minutes: a scale set whose pairs can never be
    // placed (a nodeSelector no node has) made a pair and a Warning every ~30 s for good (#61).
    // A NodePool that gains room (on_pool) or a pair placed ends the backoff at once.
    if (r.what == state_t::timed_out || r.reason.find("create") != std::string::npos) {
      const bool unavailable = r.what == state_t::lost && r.unavailable;
      const milliseconds first{unavailable ? 1'000 : 5'000},
          cap{unavailable ? 5'000 : r.what == state_t::timed_out ? 600'000 : 60'000};
      s.create_backoff = s.create_backoff.count() == 0 ? first : std::min(s.create_backoff * 2, cap);
      s.spawn_blocked_until = self->clock().now() + s.create_backoff;
      self->delayed_send(self, s.create_backoff, recompute_timer{});
    }
  } else if (r.what == state_t::ready) {
    s.create_backoff = milliseconds{0};
    s.unplaced.clear();
    if (s.ctx->spec.placeholder_ttl.count() > 0)  // look again when its TTL is up
      self->delayed_send(self, s.ctx->spec.placeholder_ttl, recompute_timer{});
    if (auto old = it->second.predecessor; !old.empty()) {  // a renewal took over: break the old pair
      it->second.predecessor.clear();
      if (s.pairs.count(old) > 0) {
        stop_pair(self, old);
        s.ctx->metrics.add("headroom_capacity_placeholder_renewals_total", 1);
        runtime::log::info(actor_name, "placeholder pair renewed", {{"scale_set", s.ctx->spec.name}, {"old", old}, {"slot", r.slot}});
      }
    }
  }
  recompute(self);
}

monitor_impl::behavior_type monitor_behavior(monitor_self* self, context_ptr ctx, scale_set_peers peers) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.runner_spec_hash = placeholder_spec_hash(st.ctx->spec, role::runner_placeholder);
  st.workflow_spec_hash = placeholder_spec_hash(st.ctx->spec, role::workflow_placeholder);
  st.census = pod_census{st.ctx->spec.ns};
  st.peers = std::move(peers);
  st.feed = std::make_unique<informer_feed<k8s::pod>>("capacity_monitor/" + st.ctx->spec.name,
                                                      self, pods_buffer);
  st.feed->attach(st.ctx->pods);
  if (st.ctx->nodepools) {
    st.pool_feed = std::make_unique<informer_feed<k8s::unstructured>>("capacity_monitor/" + st.ctx->spec.name + "/nodepools",
                                                                      self, pools_buffer);
    st.pool_feed->attach(st.ctx->nodepools);
    for (const auto& p : st.ctx->nodepools->list())  // a restarted monitor: what is cached already
      on_pool(self, {msg::object_change::added, p});
  }
  if (st.ctx->nodes) {
    st.node_feed = std::make_unique<informer_feed<k8s::node>>("capacity_monitor/" + st.ctx->spec.name + "/nodes",
                                                              self, nodes_buffer);
    st.node_feed->attach(st.ctx->nodes, [tolerations = st.ctx->spec.tolerations](const msg::object_event<k8s::node>& e) {
      return e.change == msg::object_change::deleted || !node_refuses_pods(e.object.get(), tolerations).empty();
    });
  }
  if (st.peers.listener)  // a restarted monitor learns the assigned jobs now, not at the next message
    self->send(st.peers.listener, msg::update_atom_v);
  st.began = self->clock().now();
  begin_setup(self);
  self->delayed_send(self, st.ctx->spec.recalculate_interval, recalculate_timer{});
  // An orderly stop leaves the placed pairs for the next process (on_exit).
  self->set_exit_handler([self](caf::exit_msg& m) { on_exit(self, m); });
  self->set_down_handler([self](caf::down_msg& d) { on_pair_down(self, d); });
  return {
      [self](msg::buffer_wakeup w) { on_wakeup(self, w); },
      [self](recalculate_timer) { on_recalculate(self); },
      [self](recompute_timer) {
        self->state.awaiting_pod_sync = false;
        recompute(self);
      },
      [self](setup_retry_timer) { on_setup_retry(self); },
      [self](const msg::scale_set_update& u) { on_scale_set_update(self, u); },
      [self](msg::capacity_atom) {  // a (re)started peer asks for the newest capacity
        auto& s = self->state;
        if (s.last_published >= 0)
          self->send(caf::actor_cast<capacity_sink>(self->current_sender()), msg::set_max_capacity{s.last_published});
      },
      [self](msg::view_atom) {  // a restarted scale_set_status: the view last sent
        const auto& s = self->state;
        if (s.last_view.advertised >= 0)
          self->send(caf::actor_cast<status_actor>(self->current_sender()), s.last_view);
      },
      [self](msg::burst_atom) {  // a (re)started burst budget: what this scale set holds and wants
        self->state.burst_told.reset();
        recompute(self);
      },
      [self](const msg::burst_share& s) {
        auto& st = self->state;
        if (s.seq <= st.burst_applied)
          return;  // an older share overtaken by a newer one
        st.burst_cap = s.cap;
        st.burst_applied = s.seq;
        st.ctx->metrics.set("headroom_capacity_burst_share", s.cap);
        recompute(self);  // makes what the share allows, and says it applied it
      },
      [self](msg::capacity_polled p) { on_polled(self, p); },
      [self](const msg::queued_jobs& q) {
        self->state.queued = q.ok ? std::max<int64_t>(0, q.count) : 0;
        recompute(self);
      },
      [self](msg::pair_report& r) { on_pair_report(self, r); },
      [self](msg::api_reply& r) {
        if (auto call = self->state.calls.take(r))
          on_setup_reply(self, *call, r);
      },
      [self](msg::k8s_event& e) {  // a pair's, about the ScaleSet object: its uid is the status actor's
        const auto& s = self->state;
        tell_event(scale_set_events(s), std::move(e));
      },
  };
}

}  // namespace
}  // namespace monitor

monitor_actor spawn_capacity_monitor(caf::actor_system& sys, context_ptr ctx, scale_set_peers peers) {
  return sys.spawn(monitor::monitor_behavior, std::move(ctx), std::move(peers));
}

}  // namespace headroom::actors::capacity
