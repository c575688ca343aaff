#pragma once

// Webhook-driven runner scheduling (seed 003), beside the scale-set path:
//
//   root ── scheduler_http          every replica: POST /webhook (intake) and the dashboards
//   acting (leader only) ── scheduler ── reconciler
//
// The intake records each workflow_job delivery durably (take_delivery) and answers 202 only once
// committed; the store wakes the reconciler (PostgreSQL NOTIFY, or in-process for SQLite). The
// reconciler owns the workers: each cycle, under the store's reconcile lock (one reconciler across
// processes), it runs the seed's three phases:
//
//   syncJobsState    active jobs against GitHub: 404 → failed; GitHub says completed → completed;
//                    queued past jobStuckQueued while its run is done → failed
//   syncWorkersState orphan sweep, pod phase sync, unreachable node (force delete), health checks
//                    (runner_never_registered, pod_stuck_pending, runner_idle: killed by patching
//                    activeDeadlineSeconds to 1), GitHub cleanup of runners whose worker is over,
//                    terminal pods deleted after the grace
//   (prune)          at most hourly: the history past the retention (store::prune)
//   demandMatch      pending jobs FIFO; demand vs supply per (entity, labels); the per-entity cap;
//                    free slots of the pool's extended resource; a unique runner name, the org's
//                    runner group, an org or repo JIT config, the runner pod and its Secret
//
// Store and GitHub calls block, so the reconciler is a detached actor: between cycles it waits on
// the store's wake-up in short slices and handles its mailbox (pod changes, exit) in between.

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/actor_system.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/k8s/event_recorder.hpp"
#include "actors/runners/health.hpp"
#include "actors/runners/pods.hpp"
#include "adapters/github/rest_client.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer.hpp"
#include "adapters/store/store.hpp"
#include "messages/type_ids.hpp"
#include "runtime/mailbox/buffer_stats.hpp"
#include "runtime/memo.hpp"

namespace headroom::actors::scheduler {

using std::chrono::milliseconds;

// One runner pool: the jobs it serves, the pods it makes, its caps.
struct pool_options {
  std::string name = "default";  // headroom.dev/pool on its pods (template pools)
  // Its runners' labels, registered with each JIT config; a job is the pool's when it asks for no
  // label the pool lacks (intake.hpp, serves()). Empty (the default pool without runnerLabels):
  // every job asking for self-hosted, each runner registered with its job's labels.
  std::vector<std::string> labels;
  // Its runner pods: from `pod_template` (a checked PodTemplateSpec, runners::runner_pod_from_template)
  // or, when that is empty, from `spec` alone (runners::runner_pod). `spec` also gives the
  // namespace, the name prefix, the capacity check's node selector and slot resource, the deadline.
  runners::runner_spec spec;
  std::string pod_template;
  int64_t max_workers = -1;  // live runners of the pool, every entity; -1 none
  // The pool's own cap per account, beside the scheduler's (across pools); -1: none.
  int64_t default_max_workers = -1;
  std::map<std::string, int64_t> entity_caps;
};

struct scheduler_options {
  // The name prefix (`name`, also the headroom.dev/scale-set label of every runner pod) and the
  // namespace of the runner pods.
  runners::runner_spec pool;
  std::string runner_group = "headroom";  // ensured in each organization
  std::vector<std::string> runner_group_repositories;  // when given, the group is for these only
  // An enterprise's slug: organizations' runners are the enterprise's (its runner group, every
  // organization), registered with a token that may manage enterprise runners. "" none.
  std::string enterprise;
  // First match wins; at least one.
  std::vector<pool_options> pools;
  // Live runners per account (an organization, or a personal account: all its repositories),
  // across every pool (the seed's DefaultMaxWorkers and EntityConfigs).
  int64_t default_max_workers = 20;
  std::map<std::string, int64_t> max_workers;
  milliseconds poll_interval{15'000}, job_sync_interval{15'000}, job_stuck_queued{600'000};
  // Runners being made at once (runner_maker.hpp): their JIT configs, pods and Secrets.
  int64_t provisioning_concurrency = 8;
  milliseconds registration_timeout{120'000}, pending_timeout{600'000}, idle_timeout{600'000};
  milliseconds pod_delete_grace{21'600'000}, kill_grace{30'000};
  milliseconds orphan_grace{30'000};  // a new worker's pod may not be in the cache yet
  milliseconds wait_slice{200};       // how long one wait on the store blocks the mailbox
  // History retention: final jobs and workers created longer ago than this, and deliveries
  // received then, are deleted (store::prune) at the first cycle and every prune_interval after.
  // 0 keeps everything.
  milliseconds retention{0}, prune_interval{3'600'000};
};

// The pools RunnerPool objects declare, by name: each written by its pool_holder while it runs
// (with the holder's id: a replaced pool's old holder, ending after its successor started, removes
// only its own), read by the reconciler at every cycle (after the configuration's pools, which win
// a tie).
struct declared_pool_entry {
  caf::actor_id holder = 0;
  pool_options pool;
};
using pool_registry = runtime::memo<std::map<std::string, declared_pool_entry>>;

// One declared pool's actor: the pool is in `registry` for as long as it lives. `get_atom` answers
// the pool's name.
using pool_holder_actor = caf::typed_actor<caf::replies_to<caf::get_atom>::with<std::string>>;
pool_holder_actor spawn_pool_holder(caf::actor_system& sys, std::shared_ptr<pool_registry> registry, pool_options pool);

struct scheduler_metrics {
  std::function<void(const char* phase, double seconds)> cycle;
  std::function<void(const char* what)> action;        // provisioned, job_failed, worker_failed, killed, …
  std::function<void(const char* what)> skipped;       // capped, no_capacity, lock_held
  std::function<void(const char* what)> error;         // store, github, kubernetes
  std::function<void(double seconds)> provision_latency;  // from the job's webhook to its pod created
  std::function<void(const char* table, int64_t rows)> pruned;  // jobs, workers, deliveries
  std::function<void(bool up)> store_available;                 // the job store answers (or not)
};

struct reconciler_context {
  store::store* jobs = nullptr;
  github::rest_client* github = nullptr;
  k8s::client* kube = nullptr;
  std::shared_ptr<k8s::informer<k8s::pod>> pods;   // the pool's runner pods
  std::shared_ptr<k8s::informer<k8s::node>> nodes;
  actors::event_sink events;
  scheduler_options opts;
  std::shared_ptr<pool_registry> declared_pools;  // null without RunnerPool objects
  scheduler_metrics metrics;
  std::function<int64_t()> now_ms;  // wall clock, ms since the epoch (the store's clock)
  std::function<void(const runtime::buffer_stats_ptr&)> track_buffer;
};
using reconciler_context_ptr = std::shared_ptr<const reconciler_context>;

// reconciler: its pod feed's wake-ups (it runs detached: a cycle waits on the job store).
using reconciler_actor = caf::typed_actor<caf::reacts_to<msg::buffer_wakeup>>;

reconciler_actor spawn_reconciler(caf::actor_system& sys, reconciler_context_ptr ctx);

// ---- the pure parts (unit-tested) ---------------------------------------------------------------

// The deliveries to ask GitHub to redeliver after a store outage (redelivery.cpp): per event (guid)
// of workflow_job with no delivery answered "OK", its newest attempt's id; oldest event first, at
// most `max`.
std::vector<int64_t> deliveries_to_redeliver(const std::vector<github::hook_delivery>& deliveries, size_t max);

struct demand_key {
  std::string entity, labels;
  auto operator<=>(const demand_key&) const = default;
};

// Which pending jobs get a runner now, FIFO: a job of key k is served while supply(k) < demand(k),
// its entity is under its cap, and a slot is free (free_slots < 0: unlimited).
// Where an entity's runners are registered: "orgs/<org>", or "enterprises/<slug>" for an
// organization when `enterprise` is set (enterprise runners serve every organization); a personal
// account's repository: "repos/<owner>/<repo>".
std::string runner_scope(const std::string& enterprise, const std::string& entity);
// Whose runner group a scope's runners are in: "orgs/acme" → "acme"; "enterprises/e" stays whole.
std::string group_owner(const std::string& scope);

// "<prefix>-<10 hex digits>": a runner's (and its pod's) name from 40 random bits.
std::string runner_name(const std::string& prefix, uint64_t bits);

// One health look at a worker's pod, its memory kept in the store: given back before the worker's
// first look in this process, written whenever a look changes it (rarely: Running, online, idle,
// busy), so a restart or a new leader keeps the timers.
runners::verdict observe_health(runners::health_memory& memory, store::store& jobs, const store::worker& w, const k8s::pod& pod,
                                int64_t now_ms, runners::runner_seen seen);

// An API answer that leaves the object gone: success, or 404.
bool ok_or_gone(const k8s::api_result& r);
// "pod Failed; container runner terminated: OOMKilled": why a runner pod ended, for failure_info.
std::string pod_failure(const k8s::pod& p);

// An entity's account: the organization, or the owner of a personal account's repository.
std::string account_of(const std::string& entity);

// One pool's: its jobs and workers only.
struct match_input {
  std::vector<store::job> active_jobs;        // pending and running, oldest first
  std::vector<store::worker> active_workers;  // creating and running
  std::map<std::string, int64_t> caps;        // account → cap, across every pool
  int64_t default_cap = 20;
  std::map<std::string, int64_t> live_elsewhere;  // account → live workers in the other pools
  std::map<std::string, int64_t> pool_caps;       // account → the pool's own cap
  int64_t pool_default_cap = -1;                  // -1: the pool has none of its own
  int64_t free_slots = -1;
  int64_t pool_cap = -1;  // live workers of the pool, every entity; -1 none
};
struct match_result {
  std::vector<store::job> provision;  // one runner each, in this order
  int64_t capped = 0, no_capacity = 0, pool_full = 0;
};
match_result match_demand(const match_input& in);

// "a,b,c" → {a, b, c}
std::vector<std::string> split_labels(const std::string& key);

// The pool a job (or worker) asking for `labels` (labels_key's form) goes to: the first that serves
// it; nullopt when none does (a pool removed from the configuration since it was recorded).
std::optional<size_t> pool_for(const std::vector<pool_options>& pools, const std::string& labels);

// The labels a runner of `pool` registers with (its JIT config): the pool's, with self-hosted (a
// JIT-registered runner need not get GitHub's default labels, and jobs ask for self-hosted);
// without pool labels, the job's own.
std::vector<std::string> registered_labels(const pool_options& pool, const std::string& job_labels);

// Runner pod `name` of `pool`: from its template, or from its spec alone.
std::string pool_runner_pod(const pool_options& pool, const std::string& name, int64_t runner_id, std::string_view scope);

// Jobs and workers split by pool (pool_for); those of no pool are `unpooled`.
struct pooled {
  std::vector<std::vector<store::job>> jobs;
  std::vector<std::vector<store::worker>> workers;
  int64_t unpooled = 0;
};
pooled split_by_pool(const std::vector<pool_options>& pools, const std::vector<store::job>& jobs,
                     const std::vector<store::worker>& workers);

// Every pool matched in turn, each seeing the runners the others have (and have just been given)
// against the scheduler's per-account caps; one result per pool.
std::vector<match_result> match_pools(const scheduler_options& o, const pooled& split,
                                      const std::function<int64_t(const pool_options&)>& free_slots_of);

// A worker counts as supply until it is final, or its job (known from GitHub's runner_name) is.
bool is_supply(const store::worker& w, const std::vector<store::job>& active_jobs);

// Free slots of `resource` on the nodes matching `selector` that take pods (schedulable, not
// unreachable): allocatable minus what non-terminal pods on them request, and minus what pods not
// yet bound request (of `pool` only, when given: another pool's unbound pod goes to its own nodes).
int64_t free_slots(const std::vector<std::shared_ptr<const k8s::node>>& nodes,
                   const std::vector<std::shared_ptr<const k8s::pod>>& pods, const k8s::string_pairs& selector,
                   const std::string& resource, const std::string& pool = {});

}  // namespace headroom::actors::scheduler

// ---- the HTTP side: webhook intake and dashboards ---------------------------------------------

namespace headroom::actors::scheduler {

struct http_context {
  store::store* jobs = nullptr;
  std::string secret;  // X-Hub-Signature-256's key (registered as a secret)
  std::string listen = ":8080";  // POST /webhook, GET /health
  std::string dashboard_listen;  // the dashboards and GET /health; "" none
  int threads = 8;
  size_t max_body = 1 << 20;
  std::vector<std::vector<std::string>> pools;  // each pool's labels: whose jobs are the scheduler's (intake.hpp)
  // The labels of the pools RunnerPool objects declare, as every replica's cache has them now.
  std::function<std::vector<std::vector<std::string>>()> declared_pools;
  std::vector<std::string> repositories;        // runnerGroupRepositories (intake.hpp)
  std::map<std::string, int64_t> caps;
  int64_t default_cap = 20;
  std::function<int64_t()> now_ms;
  std::function<void(const char* outcome, double seconds)> delivered;    // per webhook
  std::function<void(const std::string& path, int status, double seconds)> served;  // per request
  std::function<void(uint16_t port)> bound;  // once listening (tests, the log)
  std::function<void(uint16_t port)> dashboards_bound;  // once the dashboards listen
};

// Owns the two HTTP servers: the webhook's (POST /webhook, GET /health), public, and the
// dashboards' (GET /health, /usage, /jobs = /history, /workers and their .json twins), internal.
// A bind failure exits it abnormally: its supervisor retries.
// `get_atom` answers the webhook's port.
using scheduler_http_actor = caf::typed_actor<caf::replies_to<caf::get_atom>::with<uint16_t>>;

scheduler_http_actor spawn_scheduler_http(caf::actor_system& sys, std::shared_ptr<const http_context> ctx);

}  // namespace headroom::actors::scheduler
