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
// class with another value stops the monitor with a message naming it), then the per-process owner
// ConfigMap is created; placeholders of earlier processes (another owner) are deleted, those of
// this process (a restarted monitor) are adopted by their slot label.

#include <caf/all.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <simdjson.h>

#include "actors/capacity/capacity.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"

namespace headroom::actors::capacity {

namespace {

constexpr std::string_view actor_name = "capacity_monitor";
constexpr uint32_t pods_buffer = 1;
constexpr uint32_t pools_buffer = 2;
constexpr uint64_t setup_retry_tick = 3;  // tick_atom's payload: try the start-up again
using state_t = msg::pair_report::state;
using api_kind = k8s::api_error::kind;

struct pair_entry {
  caf::actor actor;
  state_t state = state_t::pending;
  caf::actor_clock::time_point born{};
  // placeholderTTL, make before break: this pair replaces `predecessor`, a ready pair past its TTL
  // that is stopped once this one is ready. Not counted as capacity or demand until then; stale
  // (treated as a plain pair) once the predecessor has gone another way.
  std::string predecessor;
};

enum class call_kind { priority_class, priority_class_get, owner_create, owner_release, owner_get, owner_list, owner_delete, pod_delete, runner_pdb };
struct call_info {
  call_kind kind;
  std::string name;
  int32_t expected_value = 0;
};

struct monitor_state {
  context_ptr ctx;
  scale_set_peers peers;
  std::unique_ptr<informer_feed<k8s::pod>> feed;
  std::unique_ptr<informer_feed<k8s::unstructured>> pool_feed;
  // Karpenter NodePools by name: whether each can make this scale set's nodes, and has room for a
  // pair under its limits (decided once per change of the pool, not per recompute).
  struct pool_verdict {
    bool matches = false, room = false;
  };
  std::map<std::string, pool_verdict> pools;
  bool pools_limited = false;  // as last logged
  std::map<std::string, pair_entry> pairs;  // slot → pair (capacity, placed or not yet)
  std::map<std::string, caf::actor> handoffs;  // slot → consumed pair still holding the workflow's room
  std::deque<std::string> handoff_order;       // their slots, oldest first (ended ones skipped)
  std::set<std::string> deleting;           // foreign placeholders being deleted
  // Slots whose pair ended (never adopted again), and when. A pod of one that outlives its pair by
  // retire_grace is deleted here: a pair stopped while its creates were in flight deletes before
  // they land, and the pods it made then have no owner but this process's owner ConfigMap.
  std::map<std::string, caf::actor_clock::time_point> retired;
  api_calls<call_info> calls;
  int setup_pending = 0;
  // A start-up call the API server could not answer (down, overloaded): the round finishes, then
  // the whole start-up is tried again after a backoff (each step is idempotent), not an exit that
  // would restart the tree in a loop while the API server is away.
  bool setup_failed = false;
  std::string setup_error;
  runtime::outage setup_outage{{.initial = std::chrono::milliseconds{500}, .max = std::chrono::seconds{30}}};
  bool acting = false;  // start-up done: the owner is known
  owner_ref owner;
  int64_t assigned = 0, running_jobs = 0, queued = 0;
  // Runners whose job started and whose completion has not come yet. The service's statistics are
  // as of the last message: when the Actions Service is out, jobs finish without the statistics
  // saying so, and the first poll after it would advertise their room again (found by the chaos
  // suite: 4 advertised with 2 jobs held and no pair placed). A runner pod that has ended while
  // its job is in this set is a job done whose completion is on its way, and is not counted.
  std::set<std::string> started;
  // Newly assigned jobs that no pair has been consumed by or handed to yet (when each was seen).
  std::deque<caf::actor_clock::time_point> owed;
  // The session the scale set's listener holds (msg::session_held), and the newest message it
  // handled there: a listener that crashes leaves the session in the service, and its successor
  // adopts it. Lost if this monitor restarts too; the successor then waits for the service to
  // expire it (409s).
  msg::session_held listener_session;
  int64_t assigned_seen = 0;
  bool assigned_known = false;
  int64_t last_published = -1;
  caf::actor_clock::time_point published_at{};  // when it last changed
  bool published_polled = true;  // a poll has carried it (propagation observed)
  milliseconds create_backoff{0};
  bool stopping = false;  // waiting for the owner's delete, then quitting with stop_reason
  caf::error stop_reason;
  caf::actor_clock::time_point spawn_blocked_until{};
  uint64_t pair_creates = 0, pair_deletes = 0, pair_timeouts = 0;
  static inline const char* name = "headroom.capacity_monitor";
};

using monitor_actor = caf::stateful_actor<monitor_state>;

const k8s::resource_kind priority_classes{"scheduling.k8s.io", "v1", "priorityclasses", false};

void start_call(monitor_actor* self, call_info info, const std::function<void(k8s::api_callback)>& start) {
  self->state.calls.start(caf::actor_cast<caf::actor>(self), std::move(info), start);
}

int64_t ms_now(monitor_actor* self) { return runtime::actor_system_clock{self->clock()}.now_ms(); }

bool owned_by(const k8s::pod& p, const std::string& uid) {
  for (const auto& o : p.meta.owners)
    if (o.uid == uid)
      return true;
  return false;
}

std::optional<role> role_of(const k8s::pod& p) {
  const auto* r = p.meta.label(keys::role);
  if (r == nullptr)
    return std::nullopt;
  if (*r == role_label(role::runner))
    return role::runner;
  if (*r == role_label(role::runner_placeholder))
    return role::runner_placeholder;
  if (*r == role_label(role::workflow_placeholder))
    return role::workflow_placeholder;
  return std::nullopt;
}

constexpr auto retire_grace = std::chrono::seconds(2);
constexpr auto retire_memory = std::chrono::seconds(60);

void retire(monitor_actor* self, const std::string& slot) {
  self->state.retired.emplace(slot, self->clock().now());
}

void stop_pair(monitor_actor* self, const std::string& slot) {
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

void spawn_pair(monitor_actor* self, std::string slot, bool adopt) {
  auto& st = self->state;
  auto a = spawn_placeholder_pair(self->home_system(), st.ctx, slot, adopt, caf::actor_cast<caf::actor>(self), st.owner);
  self->monitor(a);
  st.pairs[slot] = pair_entry{a, state_t::pending, self->clock().now(), {}};
  if (!adopt) {
    ++st.pair_creates;
    st.ctx->metrics.add("headroom_capacity_advertised_pair_creates_total", 1);
  }
}

nodepool_room pool_room(monitor_actor* self) {
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

void on_pool(monitor_actor* self, const msg::object_event<k8s::unstructured>& e) {
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
  st.pools[name] = {nodepool_matches(p, spec), nodepool_has_room(p, pair_requests(spec))};
}

// A hand-off holds a workflow's room for a job in flight, and there are at most as many of those
// as assigned jobs or runner pods still going. Beyond that a hand-off holds room for a job that is
// over, because its workflow pod ran elsewhere; without this it would hold that room until
// placeholderReadyTimeout (found by the burst scenario's metric check: 8 placeholders Running for 2
// ready pairs after the jobs). The oldest go first: their jobs started first.
void end_finished_handoffs(monitor_actor* self, int64_t jobs_in_flight) {
  auto& st = self->state;
  while (static_cast<int64_t>(st.handoffs.size()) > jobs_in_flight && !st.handoff_order.empty()) {
    const auto slot = st.handoff_order.front();
    st.handoff_order.pop_front();
    auto h = st.handoffs.find(slot);
    if (h == st.handoffs.end())
      continue;  // ended another way already
    runtime::log::info(actor_name, "hand-off ended: no job in flight needs its workflow room",
                       {{"scale_set", st.ctx->spec.name}, {"slot", slot}, {"jobs_in_flight", jobs_in_flight}});
    self->send_exit(h->second, caf::exit_reason::user_shutdown);
    st.handoffs.erase(h);
    retire(self, slot);
  }
  while (!st.handoff_order.empty() && st.handoffs.count(st.handoff_order.front()) == 0)
    st.handoff_order.pop_front();  // keep the order list as short as the map
}

// A placeholder no pair actor owns, deleted at once (zero grace); `deleting` keeps it to one
// delete in flight (the caller inserts the name).
void delete_placeholder(monitor_actor* self, const std::string& name) {
  auto& st = self->state;
  k8s::delete_options o;
  o.grace_period_seconds = 0;
  auto* kube = st.ctx->kube;
  start_call(self, {call_kind::pod_delete, name, 0}, [kube, ns = st.ctx->spec.ns, name, o](k8s::api_callback cb) {
    kube->remove(k8s::kinds::pods, ns, name, o, std::move(cb));
  });
}

// What recompute counts on its way through the scale set's pods.
struct pod_census {
  int64_t placeholder_pods = 0;
  int64_t runners_going = 0;     // runner pods not finished and not being deleted
  int64_t ended_unreported = 0;  // finished runner pods whose job the service still counts
  int64_t runners_pending = 0, runners_running = 0, runners_failed = 0;  // ARC's controller series
  std::set<std::string> runner_pods, slots_seen;
};

void count_runner(const monitor_state& st, const k8s::pod& p, capacity_inputs& in, pod_census& c) {
  if (p.phase == "Running" && !p.node_name.empty() && p.meta.deletion_timestamp.empty())
    ++in.runners_placed;
  c.runners_pending += p.phase.empty() || p.phase == "Pending";
  c.runners_running += p.phase == "Running";
  c.runners_failed += p.phase == "Failed";
  if (p.phase != "Succeeded" && p.phase != "Failed" && p.meta.deletion_timestamp.empty())
    ++c.runners_going;
  else if (st.started.count(p.meta.name) > 0)
    ++c.ended_unreported;
  c.runner_pods.insert(p.meta.name);
}

// A placeholder outside every pair this monitor runs: an earlier process's (deleted; its owner's
// deletion would garbage-collect it too), one an ended pair left behind (deleted after a grace),
// or this process's own after a monitor restart (the pair adopted when both pods are still fine;
// otherwise the pair is over and the survivor goes).
void judge_placeholder(monitor_actor* self, const k8s::pod& p, role r, const std::string* slot) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  if (!owned_by(p, st.owner.uid)) {
    if (st.deleting.insert(p.meta.name).second) {
      runtime::log::info(actor_name, "deleting an earlier process's placeholder", {{"pod", p.meta.name}});
      delete_placeholder(self, p.meta.name);
    }
    return;
  }
  if (slot == nullptr || st.pairs.count(*slot) > 0 || st.handoffs.count(*slot) > 0)
    return;
  if (auto ended = st.retired.find(*slot); ended != st.retired.end()) {
    if (p.meta.deletion_timestamp.empty() && self->clock().now() - ended->second > retire_grace &&
        st.deleting.insert(p.meta.name).second) {
      runtime::log::info(actor_name, "deleting a placeholder its ended pair left behind",
                         {{"scale_set", spec.name}, {"slot", *slot}, {"pod", p.meta.name}});
      delete_placeholder(self, p.meta.name);
    }
    return;
  }
  const auto other = st.ctx->pods->get(
      spec.ns, placeholder_pod_name(spec, *slot, r == role::runner_placeholder ? role::workflow_placeholder : role::runner_placeholder));
  const auto mine = placeholder_state(&p), theirs = placeholder_state(other.get());
  retire(self, *slot);  // decided once
  if (mine != pod_state::gone && theirs != pod_state::gone && theirs != pod_state::absent) {
    runtime::log::info(actor_name, "adopting a placeholder pair", {{"scale_set", spec.name}, {"slot", *slot}});
    st.retired.erase(*slot);
    spawn_pair(self, *slot, true);
  } else if (mine != pod_state::gone && st.deleting.insert(p.meta.name).second) {
    delete_placeholder(self, p.meta.name);
  }
}

// Step 1: the scale set's pods, counted; loose placeholders judged.
pod_census count_pods(monitor_actor* self, capacity_inputs& in) {
  auto& st = self->state;
  pod_census c;
  for (const auto& p : st.ctx->pods->list()) {
    auto r = role_of(*p);
    if (!r || p->meta.ns != st.ctx->spec.ns)
      continue;
    if (*r == role::runner) {
      count_runner(st, *p, in, c);
      continue;
    }
    ++c.placeholder_pods;
    const auto* slot = p->meta.label(keys::slot);
    if (slot != nullptr)
      c.slots_seen.insert(*slot);
    judge_placeholder(self, *p, *r, slot);
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

// New pairs this recompute may make: all that are missing, or, while every NodePool that could
// make a node for them is at its limits, one waiting for a node at a time (it finds any room the
// existing nodes still have; more could only time out).
int64_t spawn_budget(monitor_actor* self) {
  auto& st = self->state;
  int64_t budget = INT64_MAX;
  const auto room = pool_room(self);
  if (room.limited()) {
    int64_t waiting = 0;
    for (const auto& [slot, e] : st.pairs)
      waiting += e.state != state_t::ready ? 1 : 0;
    budget = std::max<int64_t>(0, 1 - waiting);
  }
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

// Pairs beyond `keep` go, pending ones first. Jobs assigned recently that no runner has consumed
// a pair for yet (`owed`): a ready pair that would go is handed to such a job instead (its runner
// placeholder goes, its workflow placeholder holds the workflow's room until the workflow pod
// takes it), so a runner that found room elsewhere does not leave its workflow pod unprotected.
void scale_down(monitor_actor* self, capacity_inputs& in, int64_t count, int64_t keep) {
  auto& st = self->state;
  std::vector<std::string> victims;
  for (const auto& [slot, e] : st.pairs)  // pending first
    if (e.state != state_t::ready && e.predecessor.empty())
      victims.push_back(slot);
  for (const auto& [slot, e] : st.pairs)
    if (e.state == state_t::ready)
      victims.push_back(slot);
  const auto now = self->clock().now();
  while (!st.owed.empty() && now - st.owed.front() > st.ctx->spec.placeholder_ready_timeout)
    st.owed.pop_front();  // a job that long without its pair found room on its own
  for (size_t i = 0; count > keep && i < victims.size(); ++i, --count) {
    auto& e = st.pairs[victims[i]];
    if (e.state == state_t::ready) {
      --in.ready_pairs;
      if (!st.owed.empty()) {
        st.owed.pop_front();
        self->send(e.actor, msg::pair_report{state_t::consumed, victims[i], "handed to a newly assigned job"});
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
void renew_expired(monitor_actor* self, const std::set<std::string>& renewing, int64_t budget) {
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

// The advertised capacity and the series; a new capacity goes to the listener and the provisioner.
void publish(monitor_actor* self, const capacity_inputs& in, const pod_census& c, int64_t desired) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  const int64_t capacity = spec.capacity_aware ? advertised_capacity(in) : spec.max_runners;
  auto& m = st.ctx->metrics;
  m.set("headroom_capacity_advertised_max_runners", capacity);
  m.set("headroom_capacity_advertised_pairs", static_cast<int64_t>(st.pairs.size()));
  m.set("headroom_capacity_advertised_running_pairs", in.ready_pairs);
  m.set("headroom_capacity_advertised_placeholder_pods", c.placeholder_pods);
  m.set("headroom_capacity_advertised_queued_jobs", st.queued);
  m.set("gha_max_runners", spec.max_runners);
  m.set("gha_controller_pending_ephemeral_runners", c.runners_pending);
  m.set("gha_controller_running_ephemeral_runners", c.runners_running);
  m.set("gha_controller_failed_ephemeral_runners", c.runners_failed);
  if (capacity == st.last_published)
    return;
  runtime::log::info(actor_name, "capacity",
                     {{"scale_set", spec.name}, {"capacity", capacity}, {"assigned", in.assigned_jobs},
                      {"ready_pairs", in.ready_pairs}, {"runners_placed", in.runners_placed},
                      {"pairs", static_cast<int64_t>(st.pairs.size())}, {"desired_pairs", desired}});
  st.last_published = capacity;
  st.published_at = self->clock().now();
  st.published_polled = false;
  for (const auto& peer : {st.peers.listener, st.peers.provisioner})
    if (peer)
      self->send(peer, msg::set_max_capacity{capacity});
}

// The capacity loop: count, size the pairs (up to the desired count within the NodePools'
// budget; down to what assigned jobs still need), renew old pairs, publish.
void recompute(monitor_actor* self) {
  auto& st = self->state;
  if (!st.acting)
    return;
  const auto& spec = st.ctx->spec;
  capacity_inputs in;
  in.max_runners = spec.max_runners;
  in.proactive = spec.proactive_capacity;
  in.queued = st.queued;
  const auto census = count_pods(self, in);
  in.assigned_jobs = std::max<int64_t>(0, st.assigned - census.ended_unreported);
  std::erase_if(st.started, [&](const std::string& n) { return census.runner_pods.count(n) == 0; });  // its pod is gone
  end_finished_handoffs(self, std::max(in.assigned_jobs, census.runners_going));
  for (const auto& [slot, e] : st.pairs)
    if (e.state == state_t::ready)
      ++in.ready_pairs;

  const int64_t desired = spec.capacity_aware ? desired_pairs(in) : 0;
  const auto renewing = renewing_pairs(st);
  auto count = static_cast<int64_t>(st.pairs.size() - renewing.size());
  int64_t budget = spawn_budget(self);
  const int64_t missing = std::max<int64_t>(0, desired - count);
  st.ctx->metrics.set("headroom_capacity_nodepool_limited", st.pools_limited ? 1 : 0);
  st.ctx->metrics.set("headroom_capacity_pairs_withheld", std::max<int64_t>(0, missing - budget));
  if (count < desired && self->clock().now() >= st.spawn_blocked_until)
    for (; count < desired && budget > 0; ++count, --budget)
      spawn_pair(self, new_slot_id(), false);
  // A job whose runner pod is not placed yet is about to consume a pair (its runner preempts the
  // runner placeholder, and the workflow placeholder must then hold on): scale-down keeps that
  // many pairs beyond the desired ones.
  const int64_t keep = desired + std::max<int64_t>(0, in.assigned_jobs - in.runners_placed);
  if (count > keep)
    scale_down(self, in, count, keep);
  if (spec.capacity_aware && spec.placeholder_ttl.count() > 0 && !st.stopping)
    renew_expired(self, renewing, budget);
  publish(self, in, census, desired);
}

void finish_setup_step(monitor_actor* self) {
  auto& st = self->state;
  if (--st.setup_pending > 0)
    return;
  if (st.setup_failed) {
    const auto v = st.setup_outage.failed(ms_now(self));
    if (v.log != runtime::outage::note::none)
      runtime::log::warn(actor_name,
                         v.log == runtime::outage::note::went_down ? "cannot reach the API server to start; retrying with backoff"
                                                                   : "still cannot reach the API server to start",
                         {{"scale_set", st.ctx->spec.name}, {"error", st.setup_error}, {"retry_in_ms", v.retry_in.count()},
                          {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
    self->delayed_send(self, v.retry_in, msg::tick_atom_v, setup_retry_tick);
    return;
  }
  if (st.owner.empty())
    return;
  if (const auto v = st.setup_outage.succeeded(ms_now(self)); v.log == runtime::outage::note::came_back)
    runtime::log::info(actor_name, "reached the API server", {{"scale_set", st.ctx->spec.name}, {"down_for_ms", v.down_for_ms}});
  st.acting = true;
  runtime::log::info(actor_name, "acting", {{"scale_set", st.ctx->spec.name}, {"owner", st.owner.name}});
  // The ladder lets a workflow pod (20) preempt a runner pod (0) as readily as a workflow
  // placeholder (10), and the scheduler even prefers the lower-priority victim: a workflow pod
  // that found no room on its node killed another job's running runner (found by the chaos
  // suite) although a workflow placeholder held room for it elsewhere. The scheduler avoids
  // victims whose PodDisruptionBudget allows no disruption, picking a placeholder whenever one
  // makes the room; with none it may still preempt (PDBs are best effort there). Standalone only:
  // in arc mode ARC makes the runner pods.
  if (st.ctx->spec.standalone && st.ctx->spec.capacity_aware) {
    auto* kube = st.ctx->kube;
    start_call(self, {call_kind::runner_pdb, runner_pdb_name(st.owner), 0},
               [kube, ns = st.ctx->spec.ns, body = runner_pdb(st.ctx->spec, st.owner)](k8s::api_callback cb) {
                 kube->create(k8s::kinds::pod_disruption_budgets, ns, body, std::move(cb));
               });
  }
  recompute(self);
}

void ensure_owner(monitor_actor* self) {
  auto& st = self->state;
  auto* kube = st.ctx->kube;
  const auto& ns = st.ctx->spec.ns;
  std::string refs;
  const auto& parent = st.ctx->owner_parent;
  if (!parent.empty())
    refs = ",\"ownerReferences\":[{\"apiVersion\":" + runtime::json_escape(parent.api_version) + ",\"kind\":" +
           runtime::json_escape(parent.kind) + ",\"name\":" + runtime::json_escape(parent.name) + ",\"uid\":" +
           runtime::json_escape(parent.uid) + "}]";
  const std::string body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":" +
                           runtime::json_escape(st.ctx->owner_configmap) + ",\"namespace\":" + runtime::json_escape(ns) +
                           ",\"labels\":{" + runtime::json_escape(keys::owner) + ":\"true\"}" + refs +
                           "},\"data\":{\"purpose\":\"owns this headroom process's placeholder pods\"}}";
  start_call(self, {call_kind::owner_create, st.ctx->owner_configmap, 0}, [kube, ns, body](k8s::api_callback cb) {
    kube->create(k8s::kinds::configmaps, ns, body, std::move(cb));
  });
  k8s::list_options lo;
  lo.label_selector = std::string{keys::owner} + "=true";
  start_call(self, {call_kind::owner_list, "", 0}, [kube, ns, lo](k8s::api_callback cb) {
    kube->list(k8s::kinds::configmaps, ns, lo, std::move(cb));
  });
}

// Reads {metadata:{uid}} or a list's item names.
std::string read_uid(const std::string& body) {
  simdjson::dom::parser parser;
  auto doc = parser.parse(body);
  std::string_view uid;
  if (doc["metadata"]["uid"].get(uid) == simdjson::SUCCESS)
    return std::string{uid};
  return {};
}

// An answer that says nothing about the request (no answer, 5xx, 429 after the client's own
// retries): worth asking again later.
bool unanswered(const msg::api_reply& r) {
  const auto kind = static_cast<api_kind>(r.error_kind);
  return !r.ok && (kind == api_kind::transport || kind == api_kind::server || kind == api_kind::too_many_requests ||
                   kind == api_kind::unexpected);
}

// The seed's PriorityClasses: created (or read first, as the chart may have made them); an
// existing class must have our value.
void on_priority_class_reply(monitor_actor* self, const call_info& call, const msg::api_reply& r) {
  const auto kind = static_cast<api_kind>(r.error_kind);
  auto* kube = self->state.ctx->kube;
  switch (call.kind) {
    case call_kind::priority_class: {
      if (!r.ok && kind != api_kind::already_exists) {
        self->quit(caf::make_error(caf::sec::runtime_error, "PriorityClass " + call.name + ": " + r.error));
        return;
      }
      if (r.ok) {
        finish_setup_step(self);
        return;
      }
      start_call(self, {call_kind::priority_class_get, call.name, call.expected_value},
                 [kube, name = call.name](k8s::api_callback cb) { kube->get(priority_classes, "", name, std::move(cb)); });
      return;
    }
    case call_kind::priority_class_get: {
      // Missing: made now (the chart makes them when it may; then headroom needs no create right).
      if (!r.ok && kind == api_kind::not_found) {
        const auto* pc = std::find_if(std::begin(priority_ladder), std::end(priority_ladder),
                                      [&](const priority_class_spec& p) { return call.name == p.name; });
        start_call(self, {call_kind::priority_class, call.name, call.expected_value},
                   [kube, body = priority_class_object(*pc)](k8s::api_callback cb) { kube->create(priority_classes, "", body, std::move(cb)); });
        return;
      }
      // An existing class: its value must be ours.
      simdjson::dom::parser parser;
      int64_t value = 0;
      std::string problem;
      if (!r.ok)
        problem = "PriorityClass " + call.name + ": " + r.error;
      else if (parser.parse(r.body)["value"].get(value) != simdjson::SUCCESS || value != call.expected_value)
        problem = "PriorityClass " + call.name + " exists with value " + std::to_string(value) + ", headroom needs " +
                  std::to_string(call.expected_value) + " (delete it or give it that value)";
      if (!problem.empty()) {
        runtime::log::error(actor_name, problem);
        self->quit(caf::make_error(caf::sec::runtime_error, problem));
        return;
      }
      finish_setup_step(self);
      return;
    }
    default:
      return;
  }
}

// This process's owner ConfigMap (the placeholders' owner) and earlier processes' ones.
void on_owner_reply(monitor_actor* self, const call_info& call, const msg::api_reply& r) {
  auto& st = self->state;
  const auto kind = static_cast<api_kind>(r.error_kind);
  auto* kube = st.ctx->kube;
  const auto& ns = st.ctx->spec.ns;
  switch (call.kind) {
    case call_kind::owner_create:
      if (!r.ok && kind != api_kind::already_exists) {
        self->quit(caf::make_error(caf::sec::runtime_error, "owner ConfigMap " + ns + "/" + call.name + ": " + r.error));
        return;
      }
      if (r.ok) {
        st.owner = owner_ref{"v1", "ConfigMap", call.name, read_uid(r.body)};
        finish_setup_step(self);
        return;
      }
      start_call(self, {call_kind::owner_get, call.name, 0}, [kube, ns, name = call.name](k8s::api_callback cb) {
        kube->get(k8s::kinds::configmaps, ns, name, std::move(cb));
      });
      return;
    case call_kind::owner_get:
      if (!r.ok) {
        self->quit(caf::make_error(caf::sec::runtime_error, "owner ConfigMap " + ns + "/" + call.name + ": " + r.error));
        return;
      }
      st.owner = owner_ref{"v1", "ConfigMap", call.name, read_uid(r.body)};
      finish_setup_step(self);
      return;
    case call_kind::owner_list: {
      // Earlier processes' owners: deleting one garbage-collects its placeholders.
      if (r.ok) {
        simdjson::dom::parser parser;
        simdjson::dom::array items;
        if (parser.parse(r.body)["items"].get(items) == simdjson::SUCCESS)
          for (auto item : items) {
            std::string_view name;
            if (item["metadata"]["name"].get(name) != simdjson::SUCCESS || name == st.ctx->owner_configmap)
              continue;
            runtime::log::info(actor_name, "deleting an earlier process's owner ConfigMap", {{"configmap", std::string{name}}});
            start_call(self, {call_kind::owner_delete, std::string{name}, 0}, [kube, ns, n = std::string{name}](k8s::api_callback cb) {
              kube->remove(k8s::kinds::configmaps, ns, n, {}, std::move(cb));
            });
          }
      } else {
        runtime::log::warn(actor_name, "could not list earlier owner ConfigMaps", {{"error", r.error}});
      }
      finish_setup_step(self);
      return;
    }
    default:
      return;
  }
}

void on_setup_reply(monitor_actor* self, const call_info& call, msg::api_reply& r) {
  auto& st = self->state;
  const auto kind = static_cast<api_kind>(r.error_kind);
  const bool setup_call = call.kind == call_kind::priority_class || call.kind == call_kind::priority_class_get ||
                          call.kind == call_kind::owner_create || call.kind == call_kind::owner_get ||
                          call.kind == call_kind::owner_list;
  if (setup_call && unanswered(r)) {
    st.setup_failed = true;
    st.setup_error = r.error;
    finish_setup_step(self);
    return;
  }
  switch (call.kind) {
    case call_kind::priority_class:
    case call_kind::priority_class_get:
      return on_priority_class_reply(self, call, r);
    case call_kind::owner_create:
    case call_kind::owner_get:
    case call_kind::owner_list:
      return on_owner_reply(self, call, r);
    case call_kind::owner_release:
      if (!r.ok && kind != api_kind::not_found)
        runtime::log::warn(actor_name, "could not delete the owner ConfigMap on shutdown", {{"error", r.error}});
      else
        runtime::log::info(actor_name, "owner ConfigMap deleted: placeholders are garbage-collected", {{"configmap", call.name}});
      self->quit(st.stop_reason);
      return;
    case call_kind::runner_pdb:
      if (!r.ok && kind != api_kind::already_exists)
        runtime::log::warn(actor_name, "could not create the runner pods' PodDisruptionBudget: a workflow pod may preempt a running runner",
                           {{"name", call.name}, {"error", r.error}});
      else
        runtime::log::info(actor_name, "runner pods' PodDisruptionBudget in place", {{"name", call.name}});
      return;
    case call_kind::owner_delete:
    case call_kind::pod_delete:
      if (!r.ok && kind != api_kind::not_found)
        runtime::log::warn(actor_name, "delete failed", {{"name", call.name}, {"error", r.error}});
      if (call.kind == call_kind::pod_delete)
        st.deleting.erase(call.name);
      return;
  }
}

// Start-up: the four PriorityClasses (read; made when missing) and the owner (again after a round
// the API server could not answer).
void begin_setup(monitor_actor* self) {
  auto& st = self->state;
  st.setup_failed = false;
  st.setup_error.clear();
  auto* kube = st.ctx->kube;
  st.setup_pending = static_cast<int>(std::size(priority_ladder)) + 2;  // + owner create (or get) and the list of earlier owners
  for (const auto& pc : priority_ladder)
    start_call(self, {call_kind::priority_class_get, pc.name, pc.value},
               [kube, name = std::string{pc.name}](k8s::api_callback cb) { kube->get(priority_classes, "", name, std::move(cb)); });
  ensure_owner(self);
}

// An orderly stop (SIGTERM, losing the Lease, a parent stopping): delete the owner ConfigMap so
// the API server's garbage collector removes every placeholder even after this process is gone,
// and quit once that delete is answered (bounded by the supervisor's stop deadline).
void on_exit(monitor_actor* self, const caf::exit_msg& m) {
  auto& s = self->state;
  if (s.owner.empty() || (m.reason != caf::exit_reason::user_shutdown && m.reason != caf::exit_reason::normal)) {
    self->quit(m.reason);
    return;
  }
  for (auto& [slot, e] : s.pairs)
    self->send_exit(e.actor, caf::exit_reason::user_shutdown);
  for (auto& [slot, a] : s.handoffs)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  s.pairs.clear();
  s.handoffs.clear();
  s.handoff_order.clear();
  s.acting = false;
  s.stopping = true;
  s.stop_reason = m.reason;
  auto* kube = s.ctx->kube;
  k8s::delete_options o;
  o.propagation_policy = "Background";
  start_call(self, {call_kind::owner_release, s.owner.name, 0}, [kube, ns = s.ctx->spec.ns, name = s.owner.name, o](k8s::api_callback cb) {
    kube->remove(k8s::kinds::configmaps, ns, name, o, std::move(cb));
  });
  self->delayed_send(self, std::chrono::seconds(5), msg::tick_atom_v, uint64_t{2});
}

// A pair ended (it reported first, or crashed).
void on_pair_down(monitor_actor* self, const caf::down_msg& d) {
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
void on_wakeup(monitor_actor* self, msg::buffer_wakeup w) {
  auto& s = self->state;
  if (w.buffer == pools_buffer) {
    s.pool_feed->drain([self](const msg::object_event<k8s::unstructured>& e) { on_pool(self, e); });
    recompute(self);
    return;
  }
  s.feed->drain([self](const msg::pod_event& e) {
    auto& s = self->state;
    const auto* slot = e.object->meta.label(keys::slot);
    if (slot == nullptr)
      return;
    if (auto it = s.pairs.find(*slot); it != s.pairs.end())
      self->send(it->second.actor, e);
    else if (auto h = s.handoffs.find(*slot); h != s.handoffs.end())
      self->send(h->second, e);
  });
  recompute(self);
}

// 0: the recalculate interval; 1: a backoff or TTL ended; 2: the owner's delete unanswered; setup retry.
void on_tick(monitor_actor* self, uint64_t what) {
  if (what == 2) {  // stopping, and the owner's delete was not answered in time
    if (self->state.stopping)
      self->quit(self->state.stop_reason);
    return;
  }
  if (what == setup_retry_tick) {
    if (!self->state.stopping && !self->state.acting && self->state.setup_pending == 0)
      begin_setup(self);
    return;
  }
  recompute(self);
  if (what == 0 && !self->state.stopping)
    self->delayed_send(self, self->state.ctx->spec.recalculate_interval, msg::tick_atom_v, uint64_t{0});
}

// The service's statistics: assigned jobs, and each newly assigned one owed a pair.
void on_scale_set_update(monitor_actor* self, const msg::scale_set_update& u) {
  auto& s = self->state;
  s.assigned = u.stats.total_assigned_jobs;
  s.running_jobs = u.stats.total_running_jobs;
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

// The listener polled with a capacity: an old one gets the newest; the newest's first poll ends
// its propagation time.
void on_polled(monitor_actor* self, msg::capacity_polled p) {
  auto& s = self->state;
  if (s.last_published < 0)
    return;
  if (p.capacity != s.last_published) {
    // A listener that started before this monitor published (or whose question was lost
    // while this monitor restarted) polls with an old value: give it the newest.
    self->send(caf::actor_cast<caf::actor>(self->current_sender()), msg::set_max_capacity{s.last_published});
    return;
  }
  if (s.published_polled)
    return;
  s.published_polled = true;
  s.ctx->metrics.observe("headroom_capacity_propagation_seconds",
                         std::chrono::duration<double>(self->clock().now() - s.published_at).count());
}

// A pair's news: placed (ready), consumed by a job (a hand-off), lost or timed out (a backoff
// before the next create), or a renewal's successor placed (the old pair goes).
void on_pair_report(monitor_actor* self, const msg::pair_report& r) {
  auto& s = self->state;
  if (auto h = s.handoffs.find(r.slot); h != s.handoffs.end()) {
    if (r.what == state_t::lost || r.what == state_t::timed_out) {  // the hand-off ended
      s.handoffs.erase(h);
      retire(self, r.slot);
    }
    return;
  }
  auto it = s.pairs.find(r.slot);
  if (it == s.pairs.end())
    return;
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
    }
    // A pair that could not even be created, or never got a node: back off before the next,
    // so a cluster without room is not flooded with pending placeholders. A create the API
    // server could not take (no answer, 429, 5xx) says nothing about room: its backoff is
    // capped at 5 s, as the informers' reconnects are, or a 30 s outage left the warm pool
    // waiting up to 40 s after it ended (the chaos suite's 429/5xx scenario saw 35 s).
    if (r.what == state_t::timed_out || r.reason.find("create") != std::string::npos) {
      const bool unavailable = r.what == state_t::lost && r.unavailable;
      const milliseconds first{unavailable ? 1'000 : 5'000}, cap{unavailable ? 5'000 : 60'000};
      s.create_backoff = s.create_backoff.count() == 0 ? first : std::min(s.create_backoff * 2, cap);
      s.spawn_blocked_until = self->clock().now() + s.create_backoff;
      self->delayed_send(self, s.create_backoff, msg::tick_atom_v, uint64_t{1});
    }
  } else if (r.what == state_t::ready) {
    s.create_backoff = milliseconds{0};
    if (s.ctx->spec.placeholder_ttl.count() > 0)  // look again when its TTL is up
      self->delayed_send(self, s.ctx->spec.placeholder_ttl, msg::tick_atom_v, uint64_t{1});
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

caf::behavior monitor_behavior(monitor_actor* self, context_ptr ctx, scale_set_peers peers) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.peers = std::move(peers);
  st.feed = std::make_unique<informer_feed<k8s::pod>>("capacity_monitor/" + st.ctx->spec.name,
                                                      caf::actor_cast<caf::actor>(self), pods_buffer);
  st.feed->attach(st.ctx->pods);
  if (st.ctx->nodepools) {
    st.pool_feed = std::make_unique<informer_feed<k8s::unstructured>>("capacity_monitor/" + st.ctx->spec.name + "/nodepools",
                                                                      caf::actor_cast<caf::actor>(self), pools_buffer);
    st.pool_feed->attach(st.ctx->nodepools);
    for (const auto& p : st.ctx->nodepools->list())  // a restarted monitor: what is cached already
      on_pool(self, {msg::object_change::added, p});
  }
  if (st.peers.listener)  // a restarted monitor learns the assigned jobs now, not at the next message
    self->send(st.peers.listener, msg::update_atom_v);
  begin_setup(self);
  self->delayed_send(self, st.ctx->spec.recalculate_interval, msg::tick_atom_v, uint64_t{0});
  // An orderly stop (SIGTERM, losing the Lease, a parent stopping): delete the owner ConfigMap so
  // the API server's garbage collector removes every placeholder even after this process is gone,
  // and quit once that delete is answered (bounded by the supervisor's stop deadline).
  self->set_exit_handler([self](caf::exit_msg& m) { on_exit(self, m); });
  self->set_down_handler([self](caf::down_msg& d) { on_pair_down(self, d); });
  return {
      [self](msg::buffer_wakeup w) { on_wakeup(self, w); },
      [self](msg::tick_atom, uint64_t what) { on_tick(self, what); },
      [self](const msg::scale_set_update& u) { on_scale_set_update(self, u); },
      [self](msg::session_held& h) {  // the listener's session, kept for its successor
        self->state.listener_session = std::move(h);
      },
      [self](msg::session_atom) {  // a restarted listener: the session its predecessor left
        self->send(caf::actor_cast<caf::actor>(self->current_sender()), self->state.listener_session);
      },
      [self](msg::capacity_atom) {  // a (re)started peer asks for the newest capacity
        auto& s = self->state;
        if (s.last_published >= 0)
          self->send(caf::actor_cast<caf::actor>(self->current_sender()), msg::set_max_capacity{s.last_published});
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
  };
}

}  // namespace

caf::actor spawn_capacity_monitor(caf::actor_system& sys, context_ptr ctx, scale_set_peers peers) {
  return sys.spawn(monitor_behavior, std::move(ctx), std::move(peers));
}

}  // namespace headroom::actors::capacity
