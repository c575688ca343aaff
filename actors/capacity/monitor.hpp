#pragma once

// The capacity monitor's state, and what its three files share: capacity_monitor.cpp (the
// behaviour, its handlers and the pairs), monitor_recompute.cpp (the capacity loop) and
// monitor_setup.cpp (start-up: the PriorityClasses and the owner ConfigMap). Internal to
// actors/capacity/.

#include <caf/all.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "actors/capacity/capacity.hpp"
#include "actors/capacity/pod_census.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "messages/type_ids.hpp"
#include "runtime/outage.hpp"

namespace headroom::actors::capacity::monitor {

// The monitor's timers: messages it sends only itself, one type each.
struct recalculate_timer {};  // the periodic recalculation: the census rebuilt from the cache, then a recompute
struct recompute_timer {};    // a create backoff, a placeholderTTL or a re-give wait has passed: compute again
struct setup_retry_timer {};  // try the start-up (PriorityClasses, owner ConfigMap) again

}  // namespace headroom::actors::capacity::monitor

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::monitor::recalculate_timer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::monitor::recompute_timer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::monitor::setup_retry_timer)

namespace headroom::actors::capacity::monitor {

constexpr std::string_view actor_name = "capacity_monitor";
constexpr uint32_t pods_buffer = 1;
constexpr uint32_t pools_buffer = 2;
constexpr uint32_t nodes_buffer = 4;
using state_t = msg::pair_report::state;
using api_kind = k8s::api_error::kind;

struct pair_entry {
  pair_actor actor;
  state_t state = state_t::pending;
  caf::actor_clock::time_point born{};
  // placeholderTTL, make before break: this pair replaces `predecessor`, a ready pair past its TTL
  // that is stopped once this one is ready. Not counted as capacity or demand until then; stale
  // (treated as a plain pair) once the predecessor has gone another way.
  std::string predecessor;
};

enum class call_kind { priority_class, priority_class_get, owner_find, owner_create, owner_get, owner_list, owner_delete, pod_delete, runner_pdb,
                       hook_template, hook_template_patch, workflow_nominate, workflow_pin };
struct call_info {
  call_kind kind;
  std::string name;
  int32_t expected_value = 0;
};

struct monitor_state {
  context_ptr ctx;
  scale_set_peers peers;
  std::unique_ptr<informer_feed<k8s::pod>> feed;
  // The scale set's pods, counted as the feed brings their changes (rebuilt from the informer's
  // cache at the first decision, on every recalculation tick, and after the feed dropped a change).
  pod_census census;
  std::unique_ptr<informer_feed<k8s::unstructured>> pool_feed;
  // Karpenter NodePools by name: whether each can make this scale set's nodes, and has room for a
  // pair under its limits (decided once per change of the pool, not per recompute).
  struct pool_verdict {
    bool matches = false, room = false;
  };
  std::map<std::string, pool_verdict> pools;
  // The nodes that stopped taking pods (cordoned, tainted, deleted): only those are offered, and
  // each wakes the pairs with a placeholder on it, which then end and are replaced (#61).
  std::unique_ptr<informer_feed<k8s::node>> node_feed;
  bool pools_limited = false;  // as last logged
  std::map<std::string, pair_entry> pairs;  // slot → pair (capacity, placed or not yet)
  std::map<std::string, pair_actor> handoffs;  // slot → consumed pair still holding the workflow's room
  std::deque<std::string> handoff_order;       // their slots, oldest first (ended ones skipped)
  // Workflow pods a held room was given to (monitor_workflow_rooms.cpp), until placed or gone: the
  // last room's slot, how many were given, and since when that room is freed and the pod still not
  // placed (another is given after regive_after, up to max_rooms); and whether some wait with none
  // to give (as last logged).
  struct room_given {
    std::string slot;
    int rooms = 1;
    std::optional<caf::actor_clock::time_point> freed;
  };
  std::map<std::string, room_given> rooms_given;
  // Workflow pods being nominated to a held room's node (their status.nominatedNodeName) before
  // that room is freed for them: pod → the room's slot and what held it.
  struct nomination {
    std::string slot, from;
  };
  std::map<std::string, nomination> nominating;
  // kubernetes-novolume: gated workflow pods being pinned to a held room's node and ungated (their
  // room's slot, "" none: ungated to wait for room as any pod), before their nomination.
  std::map<std::string, nomination> pinning;
  // Those ungated: not patched again while the cache still shows the gate (until gone).
  std::set<std::string> ungated;
  bool workflows_waiting = false;
  bool nominate_refused = false;  // as last logged
  bool pin_refused = false;       // as last logged
  std::set<std::string> deleting;           // foreign placeholders being deleted
  // placeholder_spec_hash of the runner and workflow placeholders this configuration makes: an
  // earlier process's pair is adopted only when both of its pods carry them.
  std::string runner_spec_hash, workflow_spec_hash;
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
  bool awaiting_pod_sync = false;  // a recompute_timer is due to look again whether the pods are listed
  caf::actor_clock::time_point began{};  // when this monitor started (the node cache's wait, node_sync_wait)
  bool node_wait_over = false;           // the node cache synced, or node_sync_wait passed without it
  demand_history demand;                 // the queue per minute (capacityAware.warmPool.followDemand)
  int64_t warm_pool = -1;                // the warm pool as last decided (logged when it changes)
  owner_ref owner;
  int64_t assigned = 0, running_jobs = 0, queued = 0;
  // Jobs queued for the scale set's labels as the Actions Service counts them (totalAvailableJobs):
  // demand without a HUD. The decision takes the larger of the two, which count the same jobs.
  int64_t available = 0;
  caf::actor_clock::time_point available_since{};  // when `available` last rose from 0 (hud.share's takeAllAfter)
  // Runners whose job started and whose completion has not come yet. The service's statistics are
  // as of the last message: when the Actions Service is out, jobs finish without the statistics
  // saying so, and the first poll after it would advertise their room again (found by the chaos
  // suite: 4 advertised with 2 jobs held and no pair placed). A runner pod that has ended while
  // its job is in this set is a job done whose completion is on its way, and is not counted.
  std::set<std::string> started;
  // Newly assigned jobs that no pair has been consumed by or handed to yet (when each was seen).
  std::deque<caf::actor_clock::time_point> owed;
  int64_t assigned_seen = 0;
  bool assigned_known = false;
  int64_t last_published = -1;
  caf::actor_clock::time_point published_at{};  // when it last changed
  bool published_polled = true;  // a poll has carried it (propagation observed)
  // The watch event the decision under way answers (set by whoever calls recompute for one: a pod
  // change the monitor judged, a pair's report), and the one behind the capacity last published
  // with when it was published: its hops are observed when the first poll carries it.
  msg::hop_trace cause{};
  msg::hop_trace published_trace{};
  msg::hop_trace::time_point published_steady{};
  milliseconds create_backoff{0};
  caf::actor_clock::time_point spawn_blocked_until{};
  // Since when runner pods are nominated to rooms they preempted and not bound yet (see
  // handoff_hold); the epoch while none is.
  caf::actor_clock::time_point nominated_since{};
  // What holds pairs back, as last logged and told in an Event: "" (nothing), "scale set"
  // (maxBurstCapacity) or "cluster" (its share of burstBudget.maxPendingPairs).
  std::string burst_waiting;
  // The cluster's burst budget (peers.budget): the most pending pairs this scale set may hold, the
  // share's sequence number, and the need last sent (sent again only when it changes).
  int64_t burst_cap = 0;
  uint64_t burst_applied = 0;
  std::optional<msg::burst_need> burst_told;
  uint64_t pair_creates = 0, pair_deletes = 0, pair_timeouts = 0;
  std::string unplaced;  // the last timed-out pair's reason until a pair is ready (capacity_view)
  static inline const char* name = "headroom.capacity_monitor";
  msg::capacity_view last_view{-1};  // the last sent to peers.status
};

// The monitor's own messages: its informer feeds' wake-ups, its timers and the API server's answers
// to its calls.
using monitor_impl =
    monitor_actor::extend<caf::reacts_to<msg::buffer_wakeup>, caf::reacts_to<recalculate_timer>, caf::reacts_to<recompute_timer>,
                          caf::reacts_to<setup_retry_timer>, caf::reacts_to<msg::api_reply>>;
using monitor_self = monitor_impl::stateful_base<monitor_state>;

// Where Events about the ScaleSet object go: scale_set_status, which knows the object's uid, or
// straight to the recorder without one (tests).
inline event_sink scale_set_events(const monitor_state& st) {
  return st.peers.status ? event_sink{st.peers.status} : st.ctx->events;
}

inline const k8s::resource_kind priority_classes{"scheduling.k8s.io", "v1", "priorityclasses", false};
constexpr auto retire_grace = std::chrono::seconds(2);
constexpr auto retire_memory = std::chrono::seconds(60);
// How long the first decision waits for the node cache after the pods are listed. An adopted pair
// counts as placed only on a node known to take pods; judged before the nodes are listed, each
// pair counted only once its own verdict came, one by one, and a new process advertised its
// adopted pool over several polls. Bounded: a cluster that denies listing nodes still gets capacity.
constexpr auto node_sync_wait = std::chrono::seconds(10);

// capacity_monitor.cpp
void start_call(monitor_self* self, call_info info, const std::function<void(k8s::api_callback)>& start);
int64_t ms_now(monitor_self* self);
bool owned_by(const k8s::pod& p, const std::string& uid);
std::optional<role> role_of(const k8s::pod& p);
void retire(monitor_self* self, const std::string& slot);
void stop_pair(monitor_self* self, const std::string& slot);
void spawn_pair(monitor_self* self, std::string slot, bool adopt);
nodepool_room pool_room(monitor_self* self);
void end_finished_handoffs(monitor_self* self, int64_t jobs_in_flight);
void delete_placeholder(monitor_self* self, const std::string& name);

// Every runner pod is pinned to one pair's node, its slot named on it (runners_pinned_to_pairs).
inline bool rooms_pinned(const monitor_state& st) { return runners_pinned_to_pairs(st.ctx->spec); }
// A runner still going was pinned to the slot's room.
inline bool room_claimed(const monitor_state& st, const std::string& slot) { return st.census.claimed_rooms().count(slot) > 0; }

// monitor_recompute.cpp: count, size the pairs, renew, publish.
void recompute(monitor_self* self);
// monitor_propagation.cpp: a poll started carrying a capacity (propagation and hops observed).
void on_polled(monitor_self* self, const msg::capacity_polled& p);
// monitor_workflow_rooms.cpp: each workflow pod the scheduler found no room for is given a held one.
void give_workflow_rooms(monitor_self* self);

// monitor_setup.cpp
void begin_setup(monitor_self* self);
void on_setup_reply(monitor_self* self, const call_info& call, msg::api_reply& r);
// The nomination's reply (monitor_workflow_rooms.cpp): the room is freed for the pod now.
void on_workflow_nominated(monitor_self* self, const call_info& call, msg::api_reply& r);
void on_workflow_pinned(monitor_self* self, const call_info& call, msg::api_reply& r);

}  // namespace headroom::actors::capacity::monitor
