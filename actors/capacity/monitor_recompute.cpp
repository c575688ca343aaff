// capacity_monitor's capacity loop (see capacity_monitor.cpp): on every change, count the scale
// set's pods, size the placeholder pairs, renew old pairs, and publish the capacity.

#include <caf/all.hpp>

#include <algorithm>

#include "actors/capacity/monitor.hpp"
#include "actors/k8s/event_recorder.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::capacity::monitor {

namespace {

// What the decision reads from the scale set's pods (the running count, pod_census).
struct census_view {
  int64_t placeholder_pods = 0;
  int64_t runners_going = 0;     // runner pods not finished and not being deleted
  int64_t ended_unreported = 0;  // finished runner pods whose job the service still counts
  int64_t runners_pending = 0, runners_running = 0, runners_failed = 0;  // ARC's controller series
  std::set<std::string> slots_seen;
};

// Its node is known, synced and takes new pods (not cordoned, no NoSchedule taint it lacks a
// toleration for): the pair's own test (placeholder_pair.cpp, refusing_node).
bool on_a_node_taking_pods(const monitor_state& st, const k8s::pod& p) {
  const auto& nodes = st.ctx->nodes;
  if (!nodes || !nodes->synced() || p.node_name.empty())
    return false;
  const auto node = nodes->get("", p.node_name);
  return node && node_refuses_pods(node.get(), st.ctx->spec.tolerations).empty();
}

// Made by this configuration: the placeholder's spec-hash label is the one its role's pods get now.
bool made_as_now(const monitor_state& st, const k8s::pod& p, role r) {
  const auto* hash = p.meta.label(keys::spec_hash);
  return hash != nullptr && *hash == (r == role::runner_placeholder ? st.runner_spec_hash : st.workflow_spec_hash);
}

// A placeholder outside every pair this monitor runs: another owner's (deleted; that owner's
// deletion would garbage-collect it too), one an ended pair left behind (deleted after a grace),
// or one of the scale set's owner this monitor has not adopted: a restarted monitor's, or an
// earlier process's (a rollout, an upgrade, a new leader). Its pair is adopted when both pods are
// still fine and made from the pod spec this configuration makes; otherwise the pair is over and
// its pods go.
void judge_placeholder(monitor_self* self, const k8s::pod& p, role r, const std::string* slot) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  if (!owned_by(p, st.owner.uid)) {
    if (st.deleting.insert(p.meta.name).second) {
      runtime::log::info(actor_name, "deleting a placeholder of another owner", {{"pod", p.meta.name}});
      delete_placeholder(self, p.meta.name);
    }
    return;
  }
  if (slot == nullptr || st.pairs.count(*slot) > 0 || st.handoffs.count(*slot) > 0)
    return;
  if (r == role::pair_probe) {  // a probe without its pair: never adopted (its pair is made again)
    if (p.meta.deletion_timestamp.empty() && st.deleting.insert(p.meta.name).second)
      delete_placeholder(self, p.meta.name);
    return;
  }
  const role other_role = r == role::runner_placeholder ? role::workflow_placeholder : role::runner_placeholder;
  const auto other = st.ctx->pods->get(spec.ns, placeholder_pod_name(spec, *slot, other_role));
  if (!made_as_now(st, p, r)) {  // never adopted: deleted at once, with the rest of its pair as it shows
    if (st.retired.count(*slot) == 0)
      runtime::log::info(actor_name, "deleting a placeholder pair made from another pod spec (the configuration changed)",
                         {{"scale_set", spec.name}, {"slot", *slot}});
    retire(self, *slot);
    for (const k8s::pod* gone : {&p, other.get()})
      if (gone != nullptr && gone->meta.deletion_timestamp.empty() && st.deleting.insert(gone->meta.name).second)
        delete_placeholder(self, gone->meta.name);
    return;
  }
  if (auto ended = st.retired.find(*slot); ended != st.retired.end()) {
    if (p.meta.deletion_timestamp.empty() && self->clock().now() - ended->second > retire_grace &&
        st.deleting.insert(p.meta.name).second) {
      runtime::log::info(actor_name, "deleting a placeholder its ended pair left behind",
                         {{"scale_set", spec.name}, {"slot", *slot}, {"pod", p.meta.name}});
      delete_placeholder(self, p.meta.name);
    }
    return;
  }
  const auto mine = placeholder_state(&p), theirs = placeholder_state(other.get());
  const bool other_current = other == nullptr || made_as_now(st, *other, other_role);
  retire(self, *slot);  // decided once
  if (other_current && mine != pod_state::gone && theirs != pod_state::gone && theirs != pod_state::absent) {
    runtime::log::info(actor_name, "adopting a placeholder pair", {{"scale_set", spec.name}, {"slot", *slot}});
    st.ctx->metrics.add("headroom_capacity_pairs_adopted_total", 1);
    st.retired.erase(*slot);
    spawn_pair(self, *slot, true);
    // Placed as the pair itself would judge it (both Running, on nodes that take pods): counted
    // in this recompute, so a new process's first capacity is the whole adopted pool, not one
    // pair more per report (the pair's own verdict follows and corrects it).
    if (mine == pod_state::running && theirs == pod_state::running && on_a_node_taking_pods(st, p) && on_a_node_taking_pods(st, *other))
      st.pairs[*slot].state = state_t::ready;
  } else if (mine != pod_state::gone && st.deleting.insert(p.meta.name).second) {
    delete_placeholder(self, p.meta.name);  // the other, judged in turn, goes as well
  }
}

// Step 1: the scale set's pods, counted (O(placeholders + started jobs): the runner pods are
// counted as their changes arrive); loose placeholders judged.
census_view count_pods(monitor_self* self, capacity_inputs& in) {
  auto& st = self->state;
  if (!st.census.built())
    st.census.rebuild(st.ctx->pods->list());
  const auto& runners = st.census.runners();
  census_view c;
  in.runners_placed += runners.placed;
  in.runners_stuck += runners.stuck;
  c.runners_pending = runners.pending;
  c.runners_running = runners.running;
  c.runners_failed = runners.failed;
  c.runners_going = runners.going;
  for (const auto& name : st.started)
    if (const auto* m = st.census.runner(name); m != nullptr && !m->going)
      ++c.ended_unreported;
  for (const auto& [name, p] : st.census.placeholders()) {
    ++c.placeholder_pods;
    const auto* slot = p->meta.label(keys::slot);
    if (slot != nullptr)
      c.slots_seen.insert(*slot);
    judge_placeholder(self, *p, *role_of(*p), slot);
  }
  // Forgotten once no pod of it has been seen for a while (a create still in flight when the pair
  // ended lands later; forgetting its slot sooner would adopt the pods it makes).
  std::erase_if(st.retired, [&, at = self->clock().now()](const auto& r) {
    return c.slots_seen.count(r.first) == 0 && at - r.second > retire_memory;
  });
  return c;
}

// The old pairs that successors (placeholderTTL renewals) are placed for: the successors are
// extra until they take over.
std::set<std::string> renewing_pairs(monitor_state& st) {
  std::set<std::string> renewing;
  for (auto& [slot, e] : st.pairs)
    if (!e.predecessor.empty()) {
      auto p = st.pairs.find(e.predecessor);
      if (p == st.pairs.end() || p->second.state != state_t::ready)
        e.predecessor.clear();  // the old pair went another way: this one is a plain pair now
      else
        renewing.insert(e.predecessor);
    }
  return renewing;
}

// Pairs made and not placed yet (not both placeholders Running).
int64_t pending_pairs(const monitor_state& st) {
  int64_t n = 0;
  for (const auto& [slot, e] : st.pairs)
    n += e.state != state_t::ready ? 1 : 0;
  return n;
}

// New pairs this recompute may make before any burst limit: all that are missing, or, while every
// NodePool that could make a node for them is at its limits, one waiting for a node at a time (it
// finds any room the existing nodes still have; more could only time out).
int64_t spawn_budget(monitor_self* self) {
  auto& st = self->state;
  int64_t budget = INT64_MAX;
  const int64_t waiting = pending_pairs(st);
  const auto room = pool_room(self);
  if (room.limited())
    budget = std::max<int64_t>(0, 1 - waiting);
  if (room.limited() != st.pools_limited) {
    st.pools_limited = room.limited();
    std::string names;
    for (const auto& n : room.full)
      names += (names.empty() ? "" : ",") + n;
    if (st.pools_limited)
      runtime::log::warn(actor_name, "every NodePool for this scale set is at its limits: placing one pair at a time on existing nodes",
                         {{"scale_set", st.ctx->spec.name}, {"nodepools", names}});
    else
      runtime::log::info(actor_name, "a NodePool for this scale set has room again", {{"scale_set", st.ctx->spec.name}});
  }
  return budget;
}

// New pairs wait while a runner pod is nominated to a room it preempted and not bound yet: its
// victim is going, and a new pair's workflow placeholder, which outranks runner pods on the
// ladder, would be put in that room first (the real-node test: the warm pool's refill took the
// room of the runner that had just preempted its runner placeholder, and the runner waited, its
// job claimed, until the new pair timed out a minute later). Held for handoff_hold at most: a
// victim with a long grace period must not stop the warm pool for good.
constexpr auto handoff_hold = std::chrono::seconds(10);

bool held_for_handoff(monitor_self* self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  if (st.census.runners().nominated == 0) {
    st.nominated_since = {};
    return false;
  }
  if (st.nominated_since == caf::actor_clock::time_point{}) {
    st.nominated_since = now;
    self->delayed_send(self, handoff_hold, recompute_timer{});
  }
  return now - st.nominated_since < handoff_hold;
}

// The burst limits on top: maxBurstCapacity of this scale set, and its share of the cluster's
// burstBudget (0 until the budget has answered).
struct burst_limits {
  int64_t scale_set = INT64_MAX, cluster = INT64_MAX;
  int64_t room() const { return std::min(scale_set, cluster); }
};

burst_limits burst_rooms(const monitor_state& st, int64_t pending) {
  burst_limits out;
  out.scale_set = burst_room(st.ctx->spec.max_burst_capacity, pending);
  if (st.peers.budget)
    out.cluster = std::max<int64_t>(0, st.burst_cap - pending);
  return out;
}

// A burst limit holds `waiting` pairs back: one log line and one Event (on the ScaleSet object)
// when pairs start waiting, or the limit that holds them changes; one line when none waits any more.
void note_burst_wait(monitor_self* self, int64_t waiting, const burst_limits& limits, int64_t pending) {
  auto& st = self->state;
  std::string kind = waiting <= 0 ? "" : limits.cluster < limits.scale_set ? "cluster" : "scale set";
  if (kind == "cluster" && st.burst_applied == 0)
    kind.clear();  // no share yet (the budget answers within its settle window): not a wait to tell
  if (kind == st.burst_waiting)
    return;
  st.burst_waiting = kind;
  const auto& spec = st.ctx->spec;
  if (kind.empty()) {
    runtime::log::info(actor_name, "no pair waits for the burst budget any more", {{"scale_set", spec.name}});
    return;
  }
  const std::string note =
      "scale set " + spec.name + ": " + std::to_string(waiting) + " pair(s) wait: " +
      (kind == "cluster" ? "its share of the cluster's burstBudget.maxPendingPairs is " + std::to_string(st.burst_cap) +
                               " pending pairs, and " + std::to_string(pending) + " are pending placement"
                         : "maxBurstCapacity " + std::to_string(spec.max_burst_capacity) + " pairs are pending placement already");
  runtime::log::info(actor_name, "pairs wait for the burst budget",
                     {{"scale_set", spec.name}, {"waiting", waiting}, {"limit", kind},
                      {"max_burst_capacity", spec.max_burst_capacity}, {"cluster_share", st.burst_cap}});
  tell_event(scale_set_events(st),
             {"headroom.dev/v1alpha1", "ScaleSet", spec.ns, spec.name, "", "Normal", "PairsWaitForBurstBudget", "Reserve", note});
}

// What this scale set holds and wants of the cluster's budget, told when it changed.
void tell_burst_need(monitor_self* self, int64_t pending, int64_t wanted) {
  auto& st = self->state;
  if (!st.peers.budget)
    return;
  msg::burst_need need{st.ctx->spec.name, pending, wanted, st.burst_cap, st.burst_applied};
  if (st.burst_told && *st.burst_told == need)
    return;
  st.burst_told = need;
  self->send(st.peers.budget, std::move(need));
}

// Pairs beyond `keep` go, pending ones first. Jobs assigned recently that no runner has consumed
// a pair for yet (`owed`): a ready pair that would go is handed to such a job instead (its runner
// placeholder goes, its workflow placeholder holds the workflow's room until the workflow pod
// takes it), so a runner that found room elsewhere does not leave its workflow pod unprotected.
// kubernetes mode: no runner finds room elsewhere (each is pinned to a pair's node), so a pair a
// runner is pinned to stays for it, and no other is handed over: its runner placeholder's room,
// freed, could be taken by any pod before a runner came for it, while a Running one is a victim
// only a runner preempts.
void scale_down(monitor_self* self, capacity_inputs& in, int64_t count, int64_t keep) {
  auto& st = self->state;
  const bool pinned = rooms_pinned(st);
  std::vector<std::string> victims;
  for (const auto& [slot, e] : st.pairs)  // pending first
    if (e.state != state_t::ready && e.predecessor.empty() && !(pinned && room_claimed(st, slot)))
      victims.push_back(slot);
  for (const auto& [slot, e] : st.pairs)
    if (e.state == state_t::ready && !(pinned && room_claimed(st, slot)))
      victims.push_back(slot);
  const auto now = self->clock().now();
  while (!st.owed.empty() && now - st.owed.front() > st.ctx->spec.placeholder_ready_timeout)
    st.owed.pop_front();  // a job that long without its pair found room on its own
  for (size_t i = 0; count > keep && i < victims.size(); ++i, --count) {
    auto& e = st.pairs[victims[i]];
    if (e.state == state_t::ready) {
      --in.ready_pairs;
      if (!st.owed.empty() && !pinned) {
        st.owed.pop_front();
        self->send(e.actor, msg::pair_handoff{});
        st.handoffs[victims[i]] = e.actor;
        st.handoff_order.push_back(victims[i]);
        st.pairs.erase(victims[i]);
        continue;
      }
    }
    stop_pair(self, victims[i]);
  }
  // A stopped pair's successor goes with it (it would only be a plain extra pair now).
  std::vector<std::string> orphans;
  for (const auto& [slot, e] : st.pairs)
    if (!e.predecessor.empty() && st.pairs.count(e.predecessor) == 0)
      orphans.push_back(slot);
  for (const auto& slot : orphans)
    stop_pair(self, slot);
}

// placeholderTTL: a ready pair past it gets a successor; the old one stays capacity until the
// successor is placed (pair_report ready), so advertised capacity never dips for a renewal.
void renew_expired(monitor_self* self, const std::set<std::string>& renewing, int64_t budget) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  const auto now = self->clock().now();
  std::vector<std::string> expired;
  for (const auto& [slot, e] : st.pairs)
    if (e.state == state_t::ready && e.predecessor.empty() && renewing.count(slot) == 0 && now - e.born >= spec.placeholder_ttl)
      expired.push_back(slot);
  for (const auto& old : expired) {
    if (now < st.spawn_blocked_until || budget <= 0)
      break;
    --budget;
    const auto slot = new_slot_id();
    spawn_pair(self, slot, false);
    st.pairs[slot].predecessor = old;
    runtime::log::info(actor_name, "placeholder pair past placeholderTTL: placing its successor before deleting it",
                       {{"scale_set", spec.name}, {"slot", old}, {"successor", slot}});
  }
}

// The pairs to have. kubernetes mode: also one for every assigned job whose runner is not placed
// (`keep`). There a runner pod is made only in a pair's room (pinned to its node: the hook pins its
// workflow pod beside it, the `work` volume being ReadWriteOnce), so a job with no pair left for
// it (one lost to a node, preempted, timed out after its capacity was advertised) would wait for
// good; the new pair's probe is unpinned, so Karpenter makes a node for it when none has room.
// In the other modes a runner pod takes any runner placeholder, or room of its own, wherever the
// scheduler finds it, and a pair made for it would only compete with it.
int64_t spawn_target(const monitor_state& st, int64_t desired, int64_t keep) { return rooms_pinned(st) ? keep : desired; }

// The advertised capacity and the series; a new capacity goes to the listener and the provisioner.
void publish(monitor_self* self, const capacity_inputs& in, const census_view& c, int64_t desired) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  const int64_t capacity = spec.capacity_aware ? advertised_capacity(in) : spec.max_runners;
  auto& m = st.ctx->metrics;
  m.set("headroom_capacity_advertised_max_runners", capacity);
  m.set("headroom_capacity_advertised_pairs", static_cast<int64_t>(st.pairs.size()));
  m.set("headroom_capacity_advertised_running_pairs", in.ready_pairs);
  m.set("headroom_capacity_advertised_placeholder_pods", c.placeholder_pods);
  m.set("headroom_capacity_advertised_queued_jobs", in.queued);
  m.set("gha_max_runners", spec.max_runners);
  m.set("gha_controller_pending_ephemeral_runners", c.runners_pending);
  m.set("gha_controller_running_ephemeral_runners", c.runners_running);
  m.set("gha_controller_failed_ephemeral_runners", c.runners_failed);
  const msg::capacity_view view{capacity,      spec.max_runners, desired, static_cast<int64_t>(st.pairs.size()), in.ready_pairs,
                                c.runners_going, st.unplaced};
  if (st.peers.status && !(view == st.last_view)) {
    st.last_view = view;
    self->send(st.peers.status, view);
  }
  if (capacity == st.last_published)
    return;
  st.published_trace = st.cause;
  st.published_steady = self->clock().now();
  const auto& t = st.published_trace;
  if (t.from_watch()) {  // the watch event behind it, and the time each hop took until now (ms)
    const auto ms = [](auto from, auto to) { return std::chrono::duration<double, std::milli>(to - from).count(); };
    runtime::log::info(actor_name, "capacity",
                       {{"scale_set", spec.name}, {"capacity", capacity}, {"assigned", in.assigned_jobs},
                        {"ready_pairs", in.ready_pairs}, {"runners_placed", in.runners_placed},
                        {"pairs", static_cast<int64_t>(st.pairs.size())}, {"desired_pairs", desired},
                        {"event_rv", t.resource_version}, {"since_event_ms", ms(t.received, st.published_steady)},
                        {"event_to_monitor_ms", ms(t.received, t.woken)}, {"monitor_to_judged_ms", ms(t.woken, t.judged)}});
  } else {
    runtime::log::info(actor_name, "capacity",
                       {{"scale_set", spec.name}, {"capacity", capacity}, {"assigned", in.assigned_jobs},
                        {"ready_pairs", in.ready_pairs}, {"runners_placed", in.runners_placed},
                        {"pairs", static_cast<int64_t>(st.pairs.size())}, {"desired_pairs", desired}});
  }
  st.last_published = capacity;
  st.published_at = self->clock().now();
  st.published_polled = false;
  for (const capacity_sink& peer : {capacity_sink{st.peers.listener}, capacity_sink{st.peers.provisioner}})
    if (peer)
      self->send(peer, msg::set_max_capacity{capacity});
}

// The service's count of the jobs queued for the scale set, this cluster's share of it (hud.share:
// the remainder from cluster 0 on, as the key is the same on every cluster); the whole of it once it
// has stayed above zero for takeAllAfter, as the HUD's old jobs are.
int64_t available_share(monitor_self* self) {
  const auto& st = self->state;
  const auto& share = st.ctx->spec.queue_share;
  if (share.count <= 1 || st.available == 0)
    return st.available;
  const auto waited = std::chrono::duration<double, std::ratio<60>>(self->clock().now() - st.available_since).count();
  if (share.take_all_after_minutes > 0 && waited >= share.take_all_after_minutes)
    return st.available;
  return hud::share_of(st.available, 0, share);
}

// The node cache has synced, or node_sync_wait has passed since the monitor started (said once).
bool node_cache_ready(monitor_self* self) {
  auto& st = self->state;
  if (st.node_wait_over || !st.ctx->nodes || st.ctx->nodes->synced())
    return st.node_wait_over = true;
  if (self->clock().now() - st.began < node_sync_wait)
    return false;
  runtime::log::warn(actor_name, "the nodes are not listed yet: deciding without them (adopted pairs count once each has judged its pods)",
                     {{"scale_set", st.ctx->spec.name}, {"waited_seconds", std::chrono::duration_cast<std::chrono::seconds>(node_sync_wait).count()}});
  return st.node_wait_over = true;
}

// The warm pool now: proactiveCapacity, or above it in a window of the schedule or following the
// queue (warm_pool.hpp). The schedule's times are UTC, of the actor system's wall clock.
int64_t warm_pool_now(monitor_self* self, int64_t queued) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  if (spec.warm_pool.empty())
    return spec.proactive_capacity;
  const auto now = runtime::actor_system_clock{self->clock()}.wall();
  if (spec.warm_pool.follow_demand) {
    const auto minute = std::chrono::duration_cast<std::chrono::minutes>(now.time_since_epoch()).count();
    st.demand.observe(minute, queued, std::chrono::duration_cast<std::chrono::minutes>(spec.warm_pool.window).count() + 1);
  }
  const int64_t size = warm_pool_size(spec.proactive_capacity, spec.warm_pool, now, st.demand);
  if (size != st.warm_pool)
    runtime::log::info(actor_name, "warm pool", {{"scale_set", spec.name}, {"pairs", size}, {"was", st.warm_pool},
                                                 {"floor", spec.proactive_capacity}, {"scheduled", scheduled_size(spec.warm_pool.schedule, now)}});
  st.warm_pool = size;
  st.ctx->metrics.set("headroom_capacity_warm_pool_pairs", size);
  return size;
}

}  // namespace

// The capacity loop: count, size the pairs (up to the desired count within the NodePools'
// budget; down to what assigned jobs still need), renew old pairs, publish.
void recompute(monitor_self* self) {
  auto& st = self->state;
  if (!st.acting) {
    st.cause = {};
    return;
  }
  // Before the namespace's pods are listed the cache is not the cluster: counting it would place
  // pairs an earlier process left placed (and adopt those after). Nor before the nodes are listed
  // (for node_sync_wait at most): adopted pairs count as placed only on nodes known to take pods.
  // Looked at again every 100 ms.
  if (!st.ctx->pods->synced() || !node_cache_ready(self)) {
    if (!st.awaiting_pod_sync) {
      st.awaiting_pod_sync = true;
      self->delayed_send(self, std::chrono::milliseconds(100), recompute_timer{});
    }
    return;
  }
  const auto& spec = st.ctx->spec;
  const auto began = self->clock().now();
  capacity_inputs in;
  in.max_runners = spec.max_runners;
  in.queued = std::max(st.queued, available_share(self));
  in.proactive = warm_pool_now(self, in.queued);
  const auto census = count_pods(self, in);
  in.assigned_jobs = std::max<int64_t>(0, st.assigned - census.ended_unreported);
  std::erase_if(st.started, [&](const std::string& n) { return st.census.runner(n) == nullptr; });  // its pod is gone
  give_workflow_rooms(self);
  end_finished_handoffs(self, std::max(in.assigned_jobs, census.runners_going));
  for (const auto& [slot, e] : st.pairs)
    if (e.state == state_t::ready)
      ++in.ready_pairs;

  const int64_t desired = spec.capacity_aware ? desired_pairs(in) : 0;
  // A job whose runner pod is not placed yet is about to consume a pair (its runner preempts the
  // runner placeholder, and the workflow placeholder must then hold on): scale-down keeps that
  // many pairs beyond the desired ones.
  const int64_t keep = desired + std::max<int64_t>(0, in.assigned_jobs - in.runners_placed);
  const int64_t target = spawn_target(st, desired, keep);
  const auto renewing = renewing_pairs(st);
  auto count = static_cast<int64_t>(st.pairs.size() - renewing.size());
  const int64_t pending = pending_pairs(st);
  const int64_t unlimited = spawn_budget(self);  // before the burst limits
  const auto limits = burst_rooms(st, pending);
  int64_t budget = held_for_handoff(self) ? 0 : std::min(unlimited, limits.room());
  const int64_t missing = std::max<int64_t>(0, target - count);
  st.ctx->metrics.set("headroom_capacity_nodepool_limited", st.pools_limited ? 1 : 0);
  st.ctx->metrics.set("headroom_capacity_pairs_withheld", std::max<int64_t>(0, missing - budget));
  note_burst_wait(self, st.pools_limited || count >= target ? 0 : std::max<int64_t>(0, missing - limits.room()), limits, pending);
  // The cluster's budget hears what this scale set would hold within its own limits.
  const int64_t own = std::min(unlimited, limits.scale_set);
  if (count < target && self->clock().now() >= st.spawn_blocked_until)
    for (; count < target && budget > 0; ++count, --budget)
      spawn_pair(self, new_slot_id(), false);
  if (count > keep)
    scale_down(self, in, count, keep);
  if (spec.capacity_aware && spec.placeholder_ttl.count() > 0)
    renew_expired(self, renewing, budget);
  const int64_t pending_now = pending_pairs(st);
  tell_burst_need(self, pending_now, std::max(pending_now, pending + std::min(missing, own)));
  publish(self, in, census, desired);
  st.cause = {};
  st.ctx->metrics.observe("headroom_capacity_decision_seconds", std::chrono::duration<double>(self->clock().now() - began).count());
}

}  // namespace headroom::actors::capacity::monitor
