#pragma once

// The runner provisioner's state and steps, shared by its two files:
//   runner_provisioner.cpp   the behaviour: runners for assigned jobs, creation, replies
//   provisioner_sweep.cpp    the sweep (podless runners, scale-down) and runner pods that must go
//   provisioner_arc.cpp      arc mode: ARC's EphemeralRunnerSet scaled instead
// Nothing here is used outside actors/capacity/.

#include <caf/all.hpp>

#include <ctime>
#include <map>
#include <set>

#include "actors/capacity/capacity.hpp"
#include "actors/capacity/pod_census.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"

namespace headroom::actors::capacity::provisioner {

inline constexpr std::string_view actor_name = "runner_provisioner";
inline constexpr uint32_t pods_buffer = 1;
inline const k8s::resource_kind ephemeral_runner_sets{"actions.github.com", "v1alpha1", "ephemeralrunnersets", true};

// The pool's runners, from the I/O thread (the sweep's answer).
struct runner_list {
  bool ok = false;
  std::vector<github::runner_ref> runners;
};

// An idle runner's removal from GitHub, answered (the scale-down's second step: its pod).
struct idle_runner_removed {
  std::string name;
  bool ok = false;
};

// A runner pod's delete, answered: done (deleted, or not there) or failed (tried again).
// A runner's JIT configuration came back (its own call's answer). `jit` is a secret: registered
// with the secret registry by the decoder, never logged.
struct jit_reply {
  std::string name;
  int64_t runner_id = 0;
  std::string jit;
  std::string error;  // "" = ok
};

struct runner_pod_deleted {
  std::string name;
  bool done = false;
  std::string error;
};

}  // namespace headroom::actors::capacity::provisioner

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::provisioner::runner_list)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::provisioner::idle_runner_removed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::provisioner::runner_pod_deleted)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::provisioner::jit_reply)

namespace headroom::actors::capacity::provisioner {

struct creation {
  // arc_find: the EphemeralRunnerSet (name: the pinned one, "" listed by label); arc_patch: its
  // replicas (name: the set, runner_id: the patchID sent)
  enum step { pod, secret, arc_find, arc_patch } at = pod;
  std::string name;
  int64_t runner_id = 0;
  std::string jit;
};

struct provisioner_state {
  context_ptr ctx;
  scale_set_peers peers;
  std::unique_ptr<informer_feed<k8s::pod>> feed;
  // The scale set's runner pods, counted as the feed brings their changes (see pod_census); rebuilt
  // from the cache on every sweep and after the feed dropped a change.
  pod_census census;
  int64_t cap = 0;  // the advertised capacity
  bool cap_known = false;
  int64_t scale_set_id = 0;
  msg::scale_set_statistics stats;
  int creating = 0;                     // JIT requested, pod not yet made
  // Pods made, not yet seen by the informer (when made): counted until seen, or for a minute at
  // most (a pod deleted before the watch showed it must not hold a runner's place forever).
  std::map<std::string, caf::actor_clock::time_point> made;
  std::set<std::string> seen_before_made;  // pods the watch showed before their create was answered
  // Runners whose job started and has not completed yet. Such a runner's pod counts until the
  // completion arrives even once it has ended: the service still counts its job as assigned, and
  // a pod that ends a moment before the completion message would otherwise be replaced by a runner
  // no job is left for (found by the chaos suite: 9 runners for 6 jobs after an API server
  // restart, 3 of them idle for good).
  std::set<std::string> busy;
  api_calls<creation> calls;
  // arc mode (provisioner_arc.cpp): the EphemeralRunnerSet scaled and what was last patched.
  struct arc_scaling {
    std::string set;  // "" = not found yet (or gone: found again)
    int64_t replicas = -1, patch_seq = 0, last_patch_id = -1;
    bool dirty = false;      // job events since the last patch
    bool in_flight = false;  // a lookup or a patch not answered yet
    caf::actor_clock::time_point patched_at{};
    runtime::outage outage{{std::chrono::seconds(5), std::chrono::seconds(60), std::chrono::minutes(5), 0.5}};
  } arc;
  std::set<std::string> jit_pending;  // runners registered (JIT asked for), pod create not answered
  // kubernetes mode: the pairs' slots whose workflow room a runner pod was just pinned to (see
  // free_workflow_room), until the cache shows that pod's annotation; forgotten after a minute.
  std::map<std::string, caf::actor_clock::time_point> rooms_claimed;
  // kubernetes mode: runners registered while no workflow room was free, waiting for one (see
  // on_jit), oldest first; the last reminder that some wait.
  std::vector<std::pair<jit_reply, caf::actor_clock::time_point>> awaiting_room;
  caf::actor_clock::time_point room_reminded{};
  std::set<int64_t> podless;          // runner ids the last sweep found without a pod
  std::set<int64_t> idle_excess;      // runner ids the last sweep found idle while runners were in excess
  std::set<std::string> removing;     // idle runners being removed from GitHub (their pods still count)
  // Runner pods that must go (their job is done, their runner removed, their create failed):
  // deleted by name until the API server says deleted or not there (see delete_runner_pod).
  struct doomed_pod {
    caf::actor_clock::time_point since, last_try;
    bool in_flight = false;
  };
  std::map<std::string, doomed_pod> doomed;
  // Runners whose job completed and whose pod has not ended yet: an ephemeral runner exits after
  // its one job (after telling the service, so the completion usually comes a moment before the
  // exit) and its pod ends Succeeded; the health check deletes it after terminalGrace. Deleting it
  // at the completion killed runners still finishing (CI's real-node run: the runner's own log and
  // its exit gone). One still running job_end_grace after its completion is deleted.
  std::map<std::string, caf::actor_clock::time_point> finishing;
  static inline const char* name = "headroom.runner_provisioner";
};

// The provisioner's own messages: its informer feed's wake-up, JIT configurations, the API server's
// answers, its timers (reconcile, sweep) and what its GitHub calls found.
using provisioner_impl =
    provisioner_actor::extend<caf::reacts_to<msg::buffer_wakeup>, caf::reacts_to<jit_reply>, caf::reacts_to<msg::api_reply>,
                              caf::reacts_to<msg::reconcile_atom>, caf::reacts_to<msg::sweep_atom>, caf::reacts_to<runner_list>,
                              caf::reacts_to<idle_runner_removed>, caf::reacts_to<runner_pod_deleted>>;
using provisioner_self = provisioner_impl::stateful_base<provisioner_state>;

inline bool terminal(const k8s::pod& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }
// How long a runner may run on after its job completed before its pod is deleted (see finishing).
inline constexpr std::chrono::seconds job_end_grace{30};

// ---- the steps, by file
void remove_runner(provisioner_self* self, int64_t runner_id, const std::string& why);
int64_t live_runner_pods(provisioner_self* self);
int64_t desired_runners(const provisioner_state& st);
void retry_doomed(provisioner_self* self);
void end_finishing(provisioner_self* self);
void reconcile(provisioner_self* self);
void start_call(provisioner_self* self, creation c, const std::function<void(k8s::api_callback)>& start);
void delete_runner_pod(provisioner_self* self, const std::string& name);
std::chrono::milliseconds sweep_every(provisioner_self* self);
void sweep(provisioner_self* self);
void scale_down(provisioner_self* self, const std::vector<github::runner_ref>& runners);
void on_runner_list(provisioner_self* self, const runner_list& l);
void on_scale_set_update(provisioner_self* self, const msg::scale_set_update& u);
void on_jit(provisioner_self* self, jit_reply& r);
void on_reply(provisioner_self* self, const msg::api_reply& r);
void on_pod_deleted(provisioner_self* self, const runner_pod_deleted& d);
void reconcile_arc(provisioner_self* self, int64_t desired);
void on_arc_reply(provisioner_self* self, const creation& c, const msg::api_reply& r);

}  // namespace headroom::actors::capacity::provisioner
