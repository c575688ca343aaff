#pragma once

// The capacity loop of one runner scale set (seed 000): a cluster claims a GitHub job only when it
// can run it. Actors, one set per scale set under its own supervisor:
//
//   runner_provisioner  turns assigned jobs into runner pods (standalone: a pod with a JIT config per
//                       job; arc: EphemeralRunnerSet.spec.replicas), never above the advertised cap
//   capacity_monitor    desired pairs from demand; spawns and stops placeholder_pair actors;
//                       advertised capacity = min(assigned + ready pairs not yet claimed, maxRunners)
//   placeholder_pair    one per pair: a runner placeholder (−10) and a workflow placeholder (10);
//                       reports ready (both Running), lost, timed_out
//   listener_session    the Actions session and long poll with X-ScaleSetMaxCapacity
//   health_check        replaces runners that never registered or are stuck; force-deletes pods on
//                       unreachable nodes; deletes finished runner pods after a grace period
//
// and one hud_poller for all scale sets. They share nothing but messages. Each reads the scale
// set's context (the spec and the adapters, fixed at start-up) and sends to its peers' relays,
// the stable addresses the wiring hands out (a restarted child is a new actor; its relay is not):
//
//   capacity_monitor ──set_max_capacity──▶ listener_session ──X-ScaleSetMaxCapacity──▶ service
//          ▲   └──────set_max_capacity──▶ runner_provisioner
//          └────────capacity_polled────── listener_session ──scale_set_update──▶ monitor, provisioner
//
// A (re)started actor asks for what it missed: capacity_atom to the monitor, update_atom to the
// listener.

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/capacity/warm_pool.hpp"
#include "actors/k8s/event_recorder.hpp"
#include "runtime/memo.hpp"
#include "adapters/github/actions_client.hpp"
#include "adapters/hud/client.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer.hpp"
#include "adapters/k8s/informer_slice.hpp"
#include "adapters/k8s/nodepool.hpp"
#include "adapters/k8s/shared_reads.hpp"
#include "adapters/k8s/objects.hpp"
#include "actors/capacity/burst_budget.hpp"
#include "actors/listener/listener_session.hpp"
#include "actors/runners/pods.hpp"
#include "messages/capacity.hpp"
#include "messages/listener.hpp"

namespace headroom::runtime {
class metrics;
}

namespace headroom::actors::capacity {

using std::chrono::milliseconds;

// The labels, roles and runner pods shared with the webhook scheduler.
namespace keys = runners::keys;
using runners::owner_ref;
using runners::role;
using runners::role_label;
using runners::runner_pod;
using runners::runner_secret;

// The PriorityClasses of the ladder. Runner pods (0) preempt runner placeholders (−10);
// placeholders and workflow pods (20) preempt nothing: a workflow pod is given the room its
// workflow placeholder (10) held by headroom (monitor_workflow_rooms.cpp), for on this ladder it
// could preempt a running runner. Their names are the
// deployment's (`priorityClasses` in the configuration; the chart names them after its release, so
// two releases never share one); `default_name` is the seed's.
enum class rung : uint8_t { placeholder_runner, runner, placeholder_workflow, workflow };
struct priority_class_spec {
  rung of;
  int32_t value;
  bool preempts;
  const char* default_name;
  const char* description;
};
inline constexpr priority_class_spec priority_ladder[] = {
    {rung::placeholder_runner, -10, false, "placeholder-runner", "headroom runner placeholders: hold a runner's room until a runner pod takes it"},
    {rung::runner, 0, true, "arc-runner", "GitHub Actions runner pods"},
    {rung::placeholder_workflow, 10, false, "placeholder-workflow", "headroom workflow placeholders: hold a workflow pod's room"},
    {rung::workflow, 20, false, "arc-workflow", "GitHub Actions workflow (job container) pods: given a held room by headroom, never preempting"},
};

// The ladder's class names, by rung.
struct ladder_names {
  std::array<std::string, 4> names{priority_ladder[0].default_name, priority_ladder[1].default_name,
                                   priority_ladder[2].default_name, priority_ladder[3].default_name};
  const std::string& of(rung r) const { return names[static_cast<size_t>(r)]; }
};

// One scale set, fixed at start-up (quantities already parsed).
struct scale_set_spec : runners::runner_spec {
  // Declared by a ScaleSet object (its spec), not by the configuration file: the object is the
  // user's (never created or removed by headroom), and its status says which generation runs.
  bool declared = false;
  int64_t generation = 0;  // metadata.generation of the declaring object's spec
  std::string object_uid;  // the declaring object's uid (its owner ConfigMap's owner)
  std::string runner_group;
  std::vector<std::string> labels;
  int64_t max_runners = 10;
  bool standalone = true;              // false: arc mode
  std::string ephemeral_runner_set;    // arc mode
  bool capacity_aware = true;
  bool repoll_on_change = true;
  milliseconds queue_check_interval{10'000};  // listener_options::queue_check_interval
  int64_t proactive_capacity = 0;
  warm_pool_policy warm_pool;  // above proactive_capacity over time (warm_pool.hpp)
  // Several clusters on one queue (hud.share): this cluster's share of the queued jobs, the HUD's
  // and the service's own count (its remainder from cluster 0 on); the whole count once it has
  // stayed above zero for take_all_after.
  hud::queue_share queue_share;
  int64_t max_burst_capacity = 0;  // pairs pending at once (made, not yet placed); 0 = no limit
  milliseconds recalculate_interval{30'000};
  milliseconds placeholder_ready_timeout{300'000};
  // A ready pair older than this is replaced, make before break (0: never). Bounds how long a
  // leaked placeholder can hold a node.
  milliseconds placeholder_ttl{900'000};
  // What one runner pod and one workflow pod request (extended resources included): a pair holds
  // the two, and a NodePool must have that much left under its limits to make room for a pair.
  k8s::resource_list runner_requests, workflow_requests;
  std::string workflow_cpu, workflow_memory;  // as configured, for the workflow placeholders
  // The workflow's extended resources, requested = limited on workflow placeholders.
  k8s::string_pairs workflow_extended;
  std::string placeholder_image;
  std::vector<std::string> placeholder_command;
  ladder_names priority_classes;  // runner_priority_class is priority_classes.of(rung::runner)
  struct health {
    milliseconds interval{30'000}, registration_timeout{120'000}, pending_timeout{600'000}, idle_timeout{600'000},
        terminal_grace{60'000};
  } health_check;
};

// ---- the model (pure) ----------------------------------------------------------------------------

struct capacity_inputs {
  int64_t max_runners = 0;
  int64_t proactive = 0;
  int64_t queued = 0;           // jobs queued for this scale set: max(HUD's count, the service's totalAvailableJobs)
  int64_t assigned_jobs = 0;    // the service's totalAssignedJobs: jobs this scale set holds
  int64_t runners_placed = 0;   // runner pods Running on a node
  int64_t ready_pairs = 0;      // pairs whose two placeholders are Running
  int64_t runners_stuck = 0;    // runner pods the scheduler found no room for, none to preempt
};

// max(0, min(proactive + queued, maxRunners − assigned)).
int64_t desired_pairs(const capacity_inputs& in);
// min(assigned − stuck + max(0, ready − unplaced), maxRunners), where unplaced = assigned jobs whose
// runner pod is not Running yet: each will take a ready pair (its runner preempts the pair's runner
// placeholder), so counting both would advertise one job's room twice. A stuck runner's job (its
// pod has no room and nothing to preempt: the pair it was claimed on went with a cordoned or
// removed node) holds no room: counted, the service would hand the job back to this scale set
// each time it re-queues it (after its runner timeout), and never to a cluster with room. ≥ 0.
int64_t advertised_capacity(const capacity_inputs& in);

// Karpenter NodePools (seed 000: "watch NodePools: limits and current usage"). A pool can make a
// node for the scale set when its template satisfies the runner template's nodeSelector and its
// taints are tolerated; it has room for a pair while every limited resource's usage plus one
// pair's requests (runner + workflow, two pods) stays within the limit. That is necessary, not
// sufficient (a node adds a whole instance's capacity), so a pool said to have room may still make
// nothing, never the other way round.
bool nodepool_matches(const k8s::nodepool& pool, const scale_set_spec& s);
k8s::resource_list pair_requests(const scale_set_spec& s);
bool nodepool_has_room(const k8s::nodepool& pool, const k8s::resource_list& pair);

// How many more pairs may be made now under maxBurstCapacity (pairs pending at once): INT64_MAX
// without one. A spike of demand then becomes a paced stream of node provisions, not hundreds at
// once that saturate registries and caches behind them.
int64_t burst_room(int64_t max_burst, int64_t pending);

// The pools for one scale set, summed. `limited`: at least one pool matches and none has room, so
// a new pair can only land on room existing nodes have; the monitor then keeps at most one pair
// waiting for a node instead of a pool's worth that can only time out. No matching pool (no
// Karpenter, or static nodes): not limited, as without NodePool awareness.
struct nodepool_room {
  int matching = 0, with_room = 0;
  std::vector<std::string> full;  // matching pools at their limits, for logs
  bool limited() const { return matching > 0 && with_room == 0; }
};

// Why a node takes no new pod from this scale set ("" when it does): deleted (null), being deleted,
// cordoned (spec.unschedulable), or a NoSchedule/NoExecute taint the runner template does not
// tolerate (Karpenter's karpenter.sh/disrupted, the node lifecycle's node.kubernetes.io/*). A pair
// on such a node is no room: the runner that would take it could not be placed there (#61).
std::string node_refuses_pods(const k8s::node* n, const std::vector<k8s::toleration>& tolerations);

// What a placeholder pod says about its pair.
enum class pod_state { absent, pending, running, gone };
pod_state placeholder_state(const k8s::pod* p);
// Not bound, not being deleted, and the scheduler has said it found no node for it (PodScheduled
// False, Unschedulable).
bool scheduler_found_no_room(const k8s::pod& p);

// kubernetes mode with pairs (capacityAware): a runner pod goes only into a pair's room, pinned to
// its node (runner_provisioner.cpp), and that pair is its job's until the runner ends.
inline bool runners_pinned_to_pairs(const scale_set_spec& s) {
  return s.mode == runners::runner_spec::container_mode::kubernetes && s.capacity_aware;
}

// A pod's JSON for create. Placeholders: the role's PriorityClass, preemptionPolicy Never, zero
// grace, the runner template's nodeSelector, tolerations and required node affinity, owner reference.
std::string placeholder_pod_name(const scale_set_spec& s, const std::string& slot, role r);
// `owner`: the scale set's owner ConfigMap (in the pods' namespace; an owner reference cannot
// cross namespaces). The labels carry placeholder_spec_hash, so a later process adopts only what
// it would make itself.
// `pinned_node`: a runner placeholder (and in kubernetes and dind modes the workflow placeholder),
// required on the node their pair's probe was placed on. role::pair_probe: that probe, on the
// workflow placeholder's rung (no runner pod can take it), holding the runner's room, or where the
// pair shares a node (runners::same_node_pairs) the whole pair's.
std::string placeholder_pod(const scale_set_spec& s, const std::string& slot, role r, const owner_ref& owner,
                            const std::string& pinned_node = {});
// 8 hex digits of the placeholder's pod spec as `s` makes it (no node pinned): its label
// keys::spec_hash.
std::string placeholder_spec_hash(const scale_set_spec& s, role r);
// A standalone runner pod: RUNNER_JITCONFIG from the Secret `<name>` (made after the pod, owned
// by it), PriorityClass arc-runner, restartPolicy Never. `scope`: keys::runner_scope, when given.
std::string priority_class_object(const priority_class_spec& p, const std::string& name);
// The PodDisruptionBudget that keeps a workflow pod from preempting a running runner pod when a
// placeholder could make the room instead (see capacity_monitor.cpp): minAvailable maxRunners (an
// integer: runner pods have no controller) over the scale set's runner pods, owned by the
// scale set's owner ConfigMap. Named `<owner>-runners`.
std::string runner_pdb_name(const owner_ref& owner);
std::string runner_pdb(const scale_set_spec& s, const owner_ref& owner);
// The runner placeholders' PodDisruptionBudget (minAvailable 2 × maxRunners: never met, so no
// disruption is allowed): see pod_objects.cpp.
std::string runner_placeholder_pdb_name(const owner_ref& owner);
std::string runner_placeholder_pdb(const scale_set_spec& s, const owner_ref& owner);

// A random slot id (8 hex characters): unique across processes, so an adopted pair never clashes.
std::string new_slot_id();

// ---- the context ---------------------------------------------------------------------------------

// Prometheus series of one scale set, labelled as ARC's listener labels its own (name, namespace,
// enterprise, organization, repository), so ARC's dashboards and alerts read them unchanged.
struct scale_set_metrics {
  std::function<void(const char* gauge, int64_t)> set;       // gha_* and headroom_capacity_* gauges
  std::function<void(const char* counter, int64_t)> add;     // *_total counters
  std::function<void(const char* histogram, double)> observe;
  // One hop of a watch event's way to the poll (headroom_capacity_hop_seconds{hop}, process-wide).
  std::function<void(const char* hop, double seconds)> hop;
  std::function<void(std::string_view kind)> actions_error;  // headroom_actions_errors_total{kind}
  // A job started or completed: gha_started_jobs_total, gha_completed_jobs_total and the startup and
  // execution histograms, with the job's own labels (job_name, event_name, job_result, …) as ARC's.
  std::function<void(const msg::job_transition&)> job;
};

// What every actor of one scale set reads: the spec and the adapters (each safe to use from any
// thread on its own), built once by the wiring and never changed after. No actor state lives here.
struct scale_set_context {
  scale_set_spec spec;
  k8s::client* kube = nullptr;
  // The ScaleSet status writes: `kube`'s server and budget behind every other write (null: `kube`).
  k8s::client* status_kube = nullptr;
  std::shared_ptr<k8s::informer_slice<k8s::pod>> pods;  // this scale set's pods (its share of one informer per namespace)
  std::shared_ptr<k8s::informer<k8s::node>> nodes;  // may be null (no unreachable-node check)
  // Karpenter's NodePools (unstructured; see nodepool.hpp); null or never started when the cluster
  // does not serve karpenter.sh/v1, and then pairs are not limited by pools.
  std::shared_ptr<k8s::informer<k8s::unstructured>> nodepools;
  std::shared_ptr<github::actions_client> github;
  scale_set_metrics metrics;
  actors::event_sink events;  // the event_recorder's relay (actors/k8s/event_recorder.hpp); may be null
  // Placeholders are owned by the ConfigMap `owner_configmap` in spec.ns, made (or found) at
  // start-up: one per scale set and install, `headroom-owner-<install tag>-<scale set>`, the same
  // name in every process, so a later process (a rollout, an upgrade, a new leader) adopts the
  // placed pairs of the one before it instead of placing them again. Nothing owns the ConfigMap:
  // owned by headroom's Pod, a rollout's garbage collection took every placeholder with the old
  // Pod. `owners_kept`: the owner ConfigMaps of every scale set configured in spec.ns; the others
  // this install made (a scale set no longer configured, or an earlier version's per-process
  // name) are deleted, and their placeholders with them. `owner_process` names this process (the
  // session's owner in the Actions Service).
  std::string owner_configmap;
  std::shared_ptr<const std::set<std::string>> owners_kept;
  // Start-up reads every scale set makes alike (the PriorityClasses, the owner list), shared by
  // all the process's scale sets (may be null: each reads for itself). `sweeps_owners`: this scale
  // set's monitor deletes the owners no configured scale set has (one scale set per namespace).
  std::shared_ptr<k8s::shared_reads> reads;
  bool sweeps_owners = true;
  std::string owner_process;
  std::string instance;  // instance_label(): on the ScaleSet object, so a later start knows it made it
};
using context_ptr = std::shared_ptr<const scale_set_context>;

// ---- the contracts --------------------------------------------------------------------------------
// What each actor of a scale set takes from its peers. Answers to the atoms go to the asker by a
// plain message (an asker is of the contract named), so a restarted asker's new incarnation gets
// them through its relay like any other message.

// capacity_monitor.
using monitor_actor = caf::typed_actor<
    caf::reacts_to<msg::scale_set_update>,  // listener_session: statistics and assigned jobs
    caf::reacts_to<msg::capacity_atom>,     // → msg::set_max_capacity (a capacity_sink asks)
    caf::reacts_to<msg::capacity_polled>,   // listener_session: a poll started carrying a value
    caf::reacts_to<msg::view_atom>,         // → msg::capacity_view (a restarted scale_set_status asks)
    caf::reacts_to<msg::burst_atom>,        // → msg::burst_need (a restarted burst_budget asks)
    caf::reacts_to<msg::burst_share>,       // burst_budget: this scale set's share
    caf::reacts_to<msg::queued_jobs>,       // hud_poller: HUD demand
    caf::reacts_to<msg::pair_report>,       // placeholder_pair: what its pods say
    caf::reacts_to<msg::k8s_event>>;        // placeholder_pair: an Event about the ScaleSet object
// runner_provisioner: the capacity to stay under, and the jobs to run.
using provisioner_actor = caf::typed_actor<caf::reacts_to<msg::set_max_capacity>, caf::reacts_to<msg::scale_set_update>>;
// scale_set_status: the views it writes to the ScaleSet object, and Events about that object.
using status_actor = caf::typed_actor<caf::reacts_to<msg::capacity_view>, caf::reacts_to<msg::session_view>,
                                      caf::reacts_to<msg::scale_set_update>, caf::reacts_to<msg::k8s_event>>;
// placeholder_pair: its pods' changes (the monitor routes each by slot, and judges them no
// further), and the hand-off to a newly assigned job.
using pair_actor = caf::typed_actor<caf::reacts_to<msg::pod_event>, caf::reacts_to<msg::pair_handoff>>;
// What a pair needs of its monitor: its state, each time it changes (the decision is recomputed
// then), and Events about the ScaleSet object.
using pair_owner = caf::typed_actor<caf::reacts_to<msg::pair_report>, caf::reacts_to<msg::k8s_event>>;
// health_check, scale_set_sweeper and hud_poller take no message from a peer: they act on their
// own timers and on the answers to their own calls. CAF has no empty contract, so each contract
// is its one timer; the answers are added beside each actor.
using health_check_actor = caf::typed_actor<caf::reacts_to<msg::check_atom>>;
using sweeper_actor = caf::typed_actor<caf::reacts_to<msg::sweep_atom>>;
using hud_poller_actor = caf::typed_actor<caf::reacts_to<msg::fetch_atom>>;

// The stable addresses (relays) of a scale set's actors, handed out by the wiring.
struct scale_set_peers {
  monitor_actor monitor;
  listener_actor listener;
  provisioner_actor provisioner;
  status_actor status{};          // may be null (tests)
  burst_budget_actor budget{};    // burstBudget.maxPendingPairs; null: no cluster budget
};

monitor_actor spawn_capacity_monitor(caf::actor_system& sys, context_ptr ctx, scale_set_peers peers);
provisioner_actor spawn_runner_provisioner(caf::actor_system& sys, context_ptr ctx, scale_set_peers peers);
health_check_actor spawn_health_check(caf::actor_system& sys, context_ptr ctx);
// The ScaleSet object (deploy/crds/scalesets.yaml) named after the scale set: created, and its
// status written from msg::capacity_view, msg::session_view and msg::scale_set_update, at most once
// every `interval`.
// `peers`: the monitor and the listener it asks, at start, for their current views (either may be null).
status_actor spawn_scale_set_status(caf::actor_system& sys, context_ptr ctx, std::chrono::milliseconds interval,
                                    scale_set_peers peers = {});
// Deletes the ScaleSet objects labelled headroom.dev/instance=`instance` whose (namespace, name) is
// not in `keep` (scale sets no longer configured), then exits; retries an unanswered list with backoff.
sweeper_actor spawn_scale_set_sweeper(caf::actor_system& sys, k8s::client* kube, std::string instance,
                                      std::set<std::pair<std::string, std::string>> keep);
// The headroom.dev/instance label of the objects one headroom deployment owns beyond its pods: its
// Lease's namespace and name ("headroom-system.headroom"), hashed to fit 63 characters.
std::string instance_label(const std::string& lease_namespace, const std::string& lease_name);
// What one install owns, scoped by its Lease: instance_label with leader election, "" (nothing is
// labelled, nothing swept) without it, where another install may run under the same Lease name
// (#61: two such installs removed each other's ScaleSet objects).
std::string owned_instance(bool leader_election, const std::string& lease_namespace, const std::string& lease_name);
// The exit reason a stopping monitor gives a placed pair: quit, leaving both pods (and their owner)
// for the next process to adopt.
inline caf::error keep_pods() { return caf::make_error(caf::sec::runtime_error, "placeholders kept for the next process"); }
// One pair. `adopt`: its pods may exist already (found by label); otherwise it creates them.
// It deletes its pods when it exits for an orderly reason (none, normal, user_shutdown) or its
// monitor does; any other reason (a crash, or keep_pods) leaves them for the next to adopt.
pair_actor spawn_placeholder_pair(caf::actor_system& sys, context_ptr ctx, std::string slot, bool adopt, pair_owner monitor,
                                  owner_ref owner);

// hud_poller: every `interval`, the HUD's queued jobs per label set → each scale set's monitor.
struct hud_target {
  std::vector<std::string> labels;  // a job counts for the scale set when its labels are a subset
  monitor_actor monitor;            // the scale set's capacity_monitor (its relay)
  hud::queue_share share;           // this cluster's share of the queue (hud.share)
};
// What each HUD fetch took and whether it worked (the design's "HUD API latency" metric); may be empty.
struct hud_metrics {
  std::function<void(double seconds, bool ok)> fetched;
};
// The targets of scale sets started while the poller runs (declared by ScaleSet objects), by
// name: read at every fetch, written by whoever starts and stops them.
using hud_target_registry = runtime::memo<std::map<std::string, hud_target>>;
hud_poller_actor spawn_hud_poller(caf::actor_system& sys, std::shared_ptr<hud::client> hud, std::vector<hud_target> targets,
                            milliseconds interval, hud_metrics metrics = {},
                            std::shared_ptr<const hud_target_registry> more = nullptr);

}  // namespace headroom::actors::capacity
