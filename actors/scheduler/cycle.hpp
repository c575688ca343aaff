#pragma once

// The reconciler's cycle (see scheduler.hpp), shared by its files: reconciler.cpp (the actor, the
// cycle's order and common steps), cycle_jobs.cpp (1. syncJobsState, history retention),
// cycle_workers.cpp (2. syncWorkersState: phases 1 to 5 per worker, health checks, GitHub cleanup,
// stray pods) and cycle_provision.cpp (3. demandMatch: pools, caps, runner groups, JIT configs,
// runner pods). Private to actors/scheduler.

#include <caf/all.hpp>

#include <future>
#include <optional>
#include <random>
#include <set>

#include "actors/k8s/event_recorder.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "actors/runners/health.hpp"
#include "actors/scheduler/runner_maker.hpp"
#include "actors/scheduler/scheduler.hpp"
#include "adapters/k8s/time.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"

namespace headroom::actors::scheduler::reconcile {

inline constexpr std::string_view actor_name = "reconciler";
inline constexpr uint32_t pods_buffer = 1;
// Quiet jobs syncJobsState gives the job_checker to look up at once (cycle_jobs.cpp).
inline constexpr size_t job_lookup_batch = 50;

struct reconciler_state {
  reconciler_context_ptr ctx;
  std::unique_ptr<informer_feed<k8s::pod>> pods;
  int64_t last_cycle = 0, last_health = 0;
  std::optional<int64_t> last_prune;  // when the history was last pruned (none yet: at the first cycle)
  bool dirty = true;   // a runner pod changed since the last cycle
  bool lock_held_warned = false;
  std::map<int64_t, int64_t> job_checked_at;                  // job id → when GitHub was last asked
  runners::health_memory health{{}};                         // the health checks' memory, per worker
  std::map<std::string, int64_t> killed_at, terminal_since;  // pod → ms
  std::set<std::string> busy_strays;                         // stray pods left to finish (logged once)
  std::map<std::string, int64_t> groups;                     // org → runner group id
  std::map<std::string, int64_t> entities;                   // entity → last seen with a worker (ms)
  scheduler_options with_declared;  // this cycle's options: the configured pools, then the declared ones
  // Runner pod creates the API server refused for load or absence (429, 5xx, no answer) in a
  // row, and until when provisioning waits: each attempt costs a JIT config at GitHub (and its
  // removal), so an API server outage must not turn into a loop of them.
  int create_failures = 0;
  int64_t provision_paused_until = 0;
  // Concurrent provisioning (runner_maker.hpp): the orders decided and not made yet, the makers
  // (spawned at the first order, provisioning_concurrency of them) and those free now.
  order_queue orders;
  std::vector<runner_maker_actor> makers;
  std::vector<runner_maker_actor> idle_makers;
  // syncJobsState's lookups: the batch the last cycle picked, not sent yet; whether one is being
  // looked at; the checker (spawned at the first batch).
  std::vector<store::job> check_batch;
  bool checking = false;
  job_checker_actor checker;
  // Per runner scope (orgs/x, repos/o/r, enterprises/e): GitHub refused its last runner (the App
  // is not installed there, the runner group or JIT config refused). Its jobs wait out a jittered
  // backoff (10 s doubling to 10 min) instead of costing a failed worker every cycle, and the
  // refusal is one warning, a reminder every 10 minutes, and a line when runners come again.
  struct refused_scope {
    runtime::outage state{{.initial = std::chrono::seconds{10}, .max = std::chrono::minutes{10}, .reminder = std::chrono::minutes{10}}};
    int64_t until = 0;
  };
  std::map<std::string, refused_scope> refused;
  std::mt19937_64 names{std::random_device{}()};
  // The job store's availability: while it is down the loop backs off (jittered, capped) instead of
  // asking again at once, and logs the outage once, a reminder a minute, and once when it ends.
  runtime::outage store{{.initial = std::chrono::milliseconds{250}, .max = std::chrono::milliseconds{10'000}}};
  int64_t store_down_since = 0;  // ms: the first failure of the store outage under way (0: none)
  static inline const char* name = "headroom.reconciler";
};

// redelivery.cpp: after a store outage, the webhook deliveries GitHub saw fail since `since_ms`
// (the outage's start, less a margin) are redelivered, at most max_redeliveries per outage.
inline constexpr size_t max_redeliveries = 500;
void redeliver_missed(reconciler_state& s, int64_t since_ms);

// Its own timer: the next cycle; and its makers' answers.
using reconciler_impl = reconciler_actor::extend<caf::reacts_to<msg::reconcile_atom>, caf::reacts_to<runner_made>,
                                                         caf::reacts_to<jobs_checked>>;
using reconciler_self = reconciler_impl::stateful_base<reconciler_state>;

template <class Start>
k8s::api_result await_call(Start&& start) {
  auto p = std::make_shared<std::promise<k8s::api_result>>();
  auto f = p->get_future();
  start([p](k8s::api_result r) { p->set_value(std::move(r)); });
  return f.get();
}

// The options a cycle runs with: the configured ones, and the pools RunnerPool objects declare now.
inline const scheduler_options& options_now(reconciler_state& st) {
  if (!st.ctx->declared_pools)
    return st.ctx->opts;
  st.with_declared = st.ctx->opts;
  for (auto& [name, entry] : st.ctx->declared_pools->get())
    st.with_declared.pools.push_back(std::move(entry.pool));
  return st.with_declared;
}

class cycle {
 public:
  explicit cycle(reconciler_self* self) : st_(self->state), ctx_(*self->state.ctx), o_(options_now(self->state)), now_(ctx_.now_ms()) {}

  void run();

 private:
  template <class F>
  void timed(const char* phase, F&& f) {
    const int64_t start = ctx_.now_ms();
    f();
    ctx_.metrics.cycle(phase, static_cast<double>(ctx_.now_ms() - start) / 1000.0);
  }

  void store_error(const char* what, const store::error& e);

  // Logs and counts a failed GitHub call; true when it was GitHub's rate limit (stop calling).
  bool github_error(const github::rest_error& e);

  bool load_active();

  // ---- 1. syncJobsState, history retention (cycle_jobs.cpp) -----------------------------------
  void sync_jobs();

  // Under the reconcile lock, so two processes do not prune at once. At most 20 batches of 1,000
  // rows per cycle, so a first prune of a long history does not hold the loop up for long: what is
  // left goes at the next cycles. A failure is tried again at the next cycle; once nothing is left,
  // the next prune waits for the interval.
  void prune();

  // ---- 2. syncWorkersState (cycle_workers.cpp) ------------------------------------------------------
  using runner_lists = std::map<std::string, std::vector<github::rest_runner>>;  // scope → GitHub's runners

  void sync_workers();

  std::set<std::string> unreachable_nodes() const;

  // GitHub's runners of each entity with a worker in the last hour (health checks, Phase 4): those of
  // headroom's runner group (org, enterprise), or a repository's all; stops at a GitHub error.
  runner_lists list_runners();

  // headroom's runner group id (cached; found or made once after a restart); 0: GitHub did not answer.
  int64_t group_of(const std::string& org);

  // Phases 1 to 3 for one worker; `runners` is null when health checks are not due.
  void sync_worker(store::worker& w, const std::set<std::string>& unreachable, runner_lists* runners);

  // A killed pod that its kubelet did not end (or no kubelet: kwok) is deleted after the grace.
  void delete_killed_past_grace();

  // Phase 4, GitHub cleanup: our runners whose worker is over (or was never recorded).
  void remove_finished_runners(const runner_lists& runners, const std::set<std::string>& active_names);

  // Phase 5, terminal pods past the grace, and stray runner pods: a live pod of ours that no
  // active worker owns, older than the orphan grace. The API server can make a pod and lose the
  // answer (a 504 after the write, a connection cut), and a failed worker's pod delete can be
  // refused: the worker is over, and its pod would hold a runner slot for good. A stray whose
  // runner GitHub lists as busy is running a job (a store wiped or replaced under running
  // workers): it is left to finish, and its runner, ephemeral, ends its pod.
  void sweep_pods(const std::set<std::string>& active_names, runner_lists& runners);

  // Whether a stray pod's runner is running a job, by GitHub's runner list for the scope on the
  // pod (listed now when this cycle has no list of it). Unknown (the list failed, or GitHub's rate
  // limit) counts as busy: the pod is judged again next cycle, never deleted on a guess. A pod
  // without the scope (made before it was written) is judged by the grace alone.
  bool stray_busy(const k8s::pod& p, std::map<std::string, std::vector<github::rest_runner>>& runners);

  bool stray_past_grace(const k8s::pod& p) const;

  void delete_stray(const std::string& name);

  // The worker's job, once GitHub's in_progress (or completed) webhook named this runner. Both
  // may land between two cycles, so a job already over is looked up in the store too.
  void note_job(store::worker& w);

  // Whether the worker ran a job that is over (not among the active ones).
  bool job_done(const store::worker& w) const;

  void advance_worker(store::worker& w, store::worker_status to, const std::string& why);

  void finish_worker(const store::worker& w, store::worker_status to, const std::string& why);

  void check_health(const store::worker& w, const k8s::pod& pod, const std::map<std::string, std::vector<github::rest_runner>>& listed);

  // ---- 3. demandMatch (cycle_provision.cpp) ---------------------------------------------------------
  // Pool by pool (match_pools): its jobs, its workers, its caps, its nodes' free slots.
  void demand_match();

  void serve(const pool_options& pool, const match_result& plan);

  // The organisation's runner group (ensured once, then cached); 0 for a repository. nullopt
  // when GitHub refused: the worker is over.
  std::optional<int64_t> runner_group(const std::string& scope, const store::worker& w);

  // GitHub refused a runner for `scope`: its jobs stay pending and wait out the scope's backoff.
  // A rate limit has its own pause (rate_limited) and is no fault of the scope's.
  void scope_refused(const std::string& scope, const github::rest_error& e);

  void scope_served(const std::string& scope);

  // The API server refused a runner pod for load or absence: provisioning pauses (1 s doubling
  // to 10 s), so an outage does not turn into a loop of JIT configs and their removals.
  void api_refused(const k8s::api_error& e);

  // The job's worker row, its runner group, and its order for a maker (runner_maker.hpp).
  void provision(const store::job& j, const std::shared_ptr<const pool_options>& pool);

 public:
  // A maker's answer: the worker's end or its runner provisioned, the scope's standing.
  void made(const runner_made& m);
  // Orders of a scope GitHub refused since they were decided: their workers are over; the jobs
  // get new ones once the scope's backoff has passed.
  void not_made(const std::vector<runner_order>& dropped);

 private:

  reconciler_state& st_;
  const reconciler_context& ctx_;
  const scheduler_options& o_;
  const int64_t now_;
  // The active jobs and workers, loaded once per cycle (at 10,000 jobs a load is ~30 ms, most of a
  // cycle): syncJobsState writes neither, syncWorkersState writes a worker's job and its start
  // (advance_worker) in the loaded rows too, and a worker's end (finish_worker) has them loaded
  // again for demandMatch. Jobs the intake records meanwhile wait for the next cycle, as they would
  // arriving a moment after the load.
  std::vector<store::job> jobs_;
  std::vector<store::worker> workers_;
  bool loaded_ = false;
};

}  // namespace headroom::actors::scheduler::reconcile
