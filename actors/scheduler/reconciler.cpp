// reconciler: the scheduler's loop (see scheduler.hpp). A detached actor: store, GitHub and the
// API server's answers are awaited in place, one cycle at a time, and never by another actor.

#include <caf/all.hpp>
#include <simdjson.h>

#include <future>
#include <optional>
#include <random>
#include <set>

#include "actors/k8s/event_recorder.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "actors/runners/health.hpp"
#include "actors/scheduler/scheduler.hpp"
#include "adapters/k8s/time.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"

namespace headroom::actors::scheduler {

namespace {

constexpr std::string_view actor_name = "reconciler";
constexpr uint32_t pods_buffer = 1;

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
  // Runner pod creates the API server refused for load or absence (429, 5xx, no answer) in a
  // row, and until when provisioning waits: each attempt costs a JIT config at GitHub (and its
  // removal), so an API server outage must not turn into a loop of them.
  int create_failures = 0;
  int64_t provision_paused_until = 0;
  std::mt19937_64 names{std::random_device{}()};
  // The job store's availability: while it is down the loop backs off (jittered, capped) instead of
  // asking again at once, and logs the outage once, a reminder a minute, and once when it ends.
  runtime::outage store{{.initial = std::chrono::milliseconds{250}, .max = std::chrono::milliseconds{10'000}}};
  static inline const char* name = "headroom.reconciler";
};

using reconciler_actor = caf::stateful_actor<reconciler_state>;

template <class Start>
k8s::api_result await_call(Start&& start) {
  auto p = std::make_shared<std::promise<k8s::api_result>>();
  auto f = p->get_future();
  start([p](k8s::api_result r) { p->set_value(std::move(r)); });
  return f.get();
}


class cycle {
 public:
  explicit cycle(reconciler_actor* self) : st_(self->state), ctx_(*self->state.ctx), o_(ctx_.opts), now_(ctx_.now_ms()) {}

  void run() {
    auto lock = ctx_.jobs->try_reconcile_lock();
    if (auto* e = std::get_if<store::error>(&lock))
      return store_error("reconcile lock", *e);
    if (!std::get<std::unique_ptr<store::store::lock>>(lock)) {
      if (!st_.lock_held_warned)
        runtime::log::info(actor_name, "another headroom holds the reconcile lock: waiting for it");
      st_.lock_held_warned = true;
      ctx_.metrics.skipped("lock_held");
      return;
    }
    st_.lock_held_warned = false;
    timed("sync_jobs", [&] { sync_jobs(); });
    timed("sync_workers", [&] { sync_workers(); });
    timed("demand_match", [&] { demand_match(); });
    if (o_.retention.count() > 0 && (!st_.last_prune || now_ - *st_.last_prune >= o_.prune_interval.count()))
      timed("prune", [&] { prune(); });
  }

 private:
  template <class F>
  void timed(const char* phase, F&& f) {
    const int64_t start = ctx_.now_ms();
    f();
    ctx_.metrics.cycle(phase, static_cast<double>(ctx_.now_ms() - start) / 1000.0);
  }

  void store_error(const char* what, const store::error& e) {
    // During a store outage the tick loop has said so already (and reminds): one line per state
    // change, not one per call.
    if (!st_.store.down())
      runtime::log::warn(actor_name, "store call failed; the next cycle retries", {{"call", what}, {"error", e.message}});
    ctx_.metrics.error("store");
  }

  // Logs and counts a failed GitHub call; true when it was GitHub's rate limit (stop calling).
  bool github_error(const github::rest_error& e) {
    runtime::log::warn(actor_name, "GitHub call failed; the next cycle retries", {{"error", e.describe()}});
    ctx_.metrics.error("github");
    return e.rate_limited;
  }

  bool load_active() {
    auto jobs = ctx_.jobs->active_jobs();
    if (auto* e = std::get_if<store::error>(&jobs)) {
      store_error("active jobs", *e);
      return false;
    }
    auto workers = ctx_.jobs->active_workers();
    if (auto* e = std::get_if<store::error>(&workers)) {
      store_error("active workers", *e);
      return false;
    }
    jobs_ = std::move(std::get<std::vector<store::job>>(jobs));
    workers_ = std::move(std::get<std::vector<store::worker>>(workers));
    return true;
  }

  // ---- 1. syncJobsState ------------------------------------------------------------------------

  void sync_jobs() {
    if (!load_active())
      return;
    std::set<int64_t> live;
    for (const auto& j : jobs_) {
      live.insert(j.id);
      auto& checked = st_.job_checked_at[j.id];
      // A webhook about the job (updated_at) is news from GitHub too: ask only about jobs that
      // have been quiet for a jobSyncInterval, which keeps the REST calls within rate limits.
      if (now_ - std::max(checked, j.updated_at) < o_.job_sync_interval.count())
        continue;
      checked = now_;
      auto info = ctx_.github->get_job(j.repository, j.id);
      if (auto* e = std::get_if<github::rest_error>(&info)) {
        if (github_error(*e))
          break;
        continue;
      }
      const auto& found = std::get<std::optional<github::rest_job>>(info);
      if (!found) {
        fail_job(j, "GitHub answers 404 for the job");
        continue;
      }
      if (found->status == "completed") {
        advance_job(j, store::job_status::completed, "GitHub says the job completed");
      } else if (found->status == "in_progress" && j.status == store::job_status::pending) {
        advance_job(j, store::job_status::running, "GitHub says the job is in progress");
      } else if (j.status == store::job_status::pending && now_ - j.created_at >= o_.job_stuck_queued.count()) {
        auto run = ctx_.github->run_status(j.repository, j.run_id);
        if (auto* e = std::get_if<github::rest_error>(&run)) {
          if (github_error(*e))
            break;
        } else if (const auto& s = std::get<std::optional<std::string>>(run); !s || *s == "completed")
          fail_job(j, "queued past jobStuckQueued while its run is over");
      }
    }
    std::erase_if(st_.job_checked_at, [&](const auto& kv) { return live.count(kv.first) == 0; });
  }

  void advance_job(const store::job& j, store::job_status to, const char* why) {
    auto r = ctx_.jobs->advance_job(j.id, to, now_);
    if (auto* e = std::get_if<store::error>(&r))
      return store_error("advance job", *e);
    if (std::get<bool>(r))
      runtime::log::info(actor_name, "job moved", {{"job", j.id}, {"to", store::to_string(to)}, {"why", why}});
  }

  void fail_job(const store::job& j, const char* why) {
    auto r = ctx_.jobs->advance_job(j.id, store::job_status::failed, now_);
    if (auto* e = std::get_if<store::error>(&r))
      return store_error("fail job", *e);
    if (std::get<bool>(r)) {
      runtime::log::warn(actor_name, "job failed", {{"job", j.id}, {"repository", j.repository}, {"why", why}});
      ctx_.metrics.action("job_failed");
    }
  }

  // ---- history retention -----------------------------------------------------------------------

  // Under the reconcile lock, so two processes do not prune at once. At most 20 batches of 1,000
  // rows per cycle, so a first prune of a long history does not hold the loop up for long: what is
  // left goes at the next cycles. A failure is tried again at the next cycle; once nothing is left,
  // the next prune waits for the interval.
  void prune() {
    auto r = ctx_.jobs->prune(now_ - o_.retention.count(), 1000, 20);
    if (auto* e = std::get_if<store::error>(&r))
      return store_error("prune history", *e);
    const auto& p = std::get<store::pruned>(r);
    if (!p.more)
      st_.last_prune = now_;
    if (ctx_.metrics.pruned) {
      ctx_.metrics.pruned("jobs", p.jobs);
      ctx_.metrics.pruned("workers", p.workers);
      ctx_.metrics.pruned("deliveries", p.deliveries);
    }
    if (p.jobs + p.workers + p.deliveries > 0)
      runtime::log::info(actor_name, "history pruned",
                         {{"jobs", p.jobs}, {"workers", p.workers}, {"deliveries", p.deliveries}, {"retention_ms", o_.retention.count()}});
  }

  // ---- 2. syncWorkersState ---------------------------------------------------------------------

  using runner_lists = std::map<std::string, std::vector<github::rest_runner>>;  // scope → GitHub's runners

  void sync_workers() {
    if (!load_active())
      return;
    const auto unreachable = unreachable_nodes();
    const bool health_due = now_ - st_.last_health >= o_.poll_interval.count();
    runner_lists runners;
    if (health_due)
      runners = list_runners();
    std::set<std::string> active_names;
    for (auto& w : workers_) {
      active_names.insert(w.name);
      sync_worker(w, unreachable, health_due ? &runners : nullptr);
    }
    delete_killed_past_grace();
    if (health_due)
      remove_finished_runners(runners, active_names);
    sweep_pods(active_names, runners);
    st_.health.keep_only(active_names);
  }

  std::set<std::string> unreachable_nodes() const {
    std::set<std::string> out;
    for (const auto& n : ctx_.nodes->list())
      for (const auto& t : n->taints)
        if (t.key == "node.kubernetes.io/unreachable")
          out.insert(n->meta.name);
    return out;
  }

  // GitHub's runners of each entity with a worker in the last hour (health checks, Phase 4): those of
  // headroom's runner group (org, enterprise), or a repository's all; stops at a GitHub error.
  runner_lists list_runners() {
    runner_lists runners;
    st_.last_health = now_;
    for (const auto& w : workers_)
      st_.entities[w.entity] = now_;
    std::erase_if(st_.entities, [&](const auto& kv) { return now_ - kv.second > 3'600'000; });
    for (const auto& [entity, seen] : st_.entities) {
      const auto scope = runner_scope(o_.enterprise, entity);
      const int64_t group = runners.count(scope) ? -1 : scope.rfind("repos/", 0) != 0 ? group_of(group_owner(scope)) : 0;
      if (group < 0)
        continue;  // an enterprise's runners: listed once for all its organizations
      auto list = group > 0 ? ctx_.github->list_group_runners(group_owner(scope), group) : ctx_.github->list_runners(scope);
      if (auto* e = std::get_if<github::rest_error>(&list)) {
        if (github_error(*e))
          break;
      } else {
        runners[scope] = std::move(std::get<std::vector<github::rest_runner>>(list));
      }
    }
    return runners;
  }

  // headroom's runner group id (cached; found or made once after a restart); 0: GitHub did not answer.
  int64_t group_of(const std::string& org) {
    auto& cached = st_.groups[org];
    if (cached == 0)
      if (auto g = ctx_.github->ensure_runner_group(org, ctx_.opts.runner_group, ctx_.opts.runner_group_repositories); std::holds_alternative<int64_t>(g))
        cached = std::get<int64_t>(g);
    return cached;
  }

  // Phases 1 to 3 for one worker; `runners` is null when health checks are not due.
  void sync_worker(store::worker& w, const std::set<std::string>& unreachable, runner_lists* runners) {
    auto pod = ctx_.pods->get(o_.pool.ns, w.name);
    note_job(w);
    // Phase 1, orphan sweep: a worker whose pod is gone is over.
    if (!pod) {
      if (ctx_.pods->synced() && now_ - w.created_at >= o_.orphan_grace.count())
        finish_worker(w, job_done(w) ? store::worker_status::completed : store::worker_status::failed, "pod_missing: its pod is gone");
      return;
    }
    // Phase 2, pod phase sync.
    if (pod->phase == "Running" && !pod->node_name.empty()) {
      if (w.status == store::worker_status::creating)
        advance_worker(w, store::worker_status::running, "");
    } else if (pod->phase == "Succeeded") {
      return finish_worker(w, store::worker_status::completed, "");
    } else if (pod->phase == "Failed") {
      return finish_worker(w, store::worker_status::failed, pod_failure(*pod));
    }
    // Phase 2.5, unreachable node: the kubelet is gone, so force-delete.
    if (!pod->node_name.empty() && unreachable.count(pod->node_name) > 0) {
      finish_worker(w, store::worker_status::failed, "node_unreachable: node " + pod->node_name + " is unreachable");
      k8s::delete_options force;
      force.grace_period_seconds = 0;
      auto r = await_call([&](k8s::api_callback cb) { ctx_.kube->remove(k8s::kinds::pods, o_.pool.ns, w.name, force, std::move(cb)); });
      if (!ok_or_gone(r))
        ctx_.metrics.error("kubernetes");
      ctx_.metrics.action("force_deleted");
      return;
    }
    // Phase 3, health checks.
    if (runners != nullptr && pod->meta.deletion_timestamp.empty())
      check_health(w, *pod, *runners);
  }

  // A killed pod that its kubelet did not end (or no kubelet: kwok) is deleted after the grace.
  void delete_killed_past_grace() {
    for (auto it = st_.killed_at.begin(); it != st_.killed_at.end();) {
      auto pod = ctx_.pods->get(o_.pool.ns, it->first);
      if (!pod) {
        it = st_.killed_at.erase(it);
        continue;
      }
      if (now_ - it->second >= o_.kill_grace.count() && pod->phase != "Succeeded" && pod->phase != "Failed") {
        auto r = await_call([&](k8s::api_callback cb) { ctx_.kube->remove(k8s::kinds::pods, o_.pool.ns, it->first, {}, std::move(cb)); });
        if (!ok_or_gone(r))
          ctx_.metrics.error("kubernetes");
      }
      ++it;
    }
  }

  // Phase 4, GitHub cleanup: our runners whose worker is over (or was never recorded).
  void remove_finished_runners(const runner_lists& runners, const std::set<std::string>& active_names) {
    for (const auto& [scope, list] : runners)
      for (const auto& rn : list) {
        if (rn.name.rfind(o_.pool.name + "-", 0) != 0 || active_names.count(rn.name) > 0 || rn.busy)
          continue;
        if (ctx_.github->rate_limited())
          return;
        auto r = ctx_.github->remove_runner(scope, rn.id);
        if (auto* e = std::get_if<github::rest_error>(&r))
          github_error(*e);
        else if (std::get<github::runner_removal>(r) == github::runner_removal::removed)
          ctx_.metrics.action("runner_removed");
      }
  }

  // Phase 5, terminal pods past the grace, and stray runner pods: a live pod of ours that no
  // active worker owns, older than the orphan grace. The API server can make a pod and lose the
  // answer (a 504 after the write, a connection cut), and a failed worker's pod delete can be
  // refused: the worker is over, and its pod would hold a runner slot for good. A stray whose
  // runner GitHub lists as busy is running a job (a store wiped or replaced under running
  // workers): it is left to finish, and its runner, ephemeral, ends its pod.
  void sweep_pods(const std::set<std::string>& active_names, runner_lists& runners) {
    std::set<std::string> present;
    for (const auto& p : ctx_.pods->list()) {
      if (p->meta.ns != o_.pool.ns)
        continue;
      present.insert(p->meta.name);
      if (p->phase != "Succeeded" && p->phase != "Failed") {
        if (active_names.count(p->meta.name) == 0 && p->meta.deletion_timestamp.empty() && stray_past_grace(*p)) {
          if (stray_busy(*p, runners))
            ctx_.metrics.skipped("stray_busy");
          else
            delete_stray(p->meta.name);
        }
        continue;
      }
      auto [it, fresh] = st_.terminal_since.emplace(p->meta.name, now_);
      if (now_ - it->second >= o_.pod_delete_grace.count() && p->meta.deletion_timestamp.empty()) {
        auto r = await_call([&](k8s::api_callback cb) { ctx_.kube->remove(k8s::kinds::pods, o_.pool.ns, p->meta.name, {}, std::move(cb)); });
        if (!ok_or_gone(r))
          ctx_.metrics.error("kubernetes");
      }
    }
    std::erase_if(st_.terminal_since, [&](const auto& kv) { return present.count(kv.first) == 0; });
    std::erase_if(st_.busy_strays, [&](const auto& name) { return present.count(name) == 0; });
  }

  // Whether a stray pod's runner is running a job, by GitHub's runner list for the scope on the
  // pod (listed now when this cycle has no list of it). Unknown (the list failed, or GitHub's rate
  // limit) counts as busy: the pod is judged again next cycle, never deleted on a guess. A pod
  // without the scope (made before it was written) is judged by the grace alone.
  bool stray_busy(const k8s::pod& p, std::map<std::string, std::vector<github::rest_runner>>& runners) {
    const std::string* scope = p.meta.annotation(runners::keys::runner_scope);
    if (scope == nullptr || scope->empty())
      return false;
    auto it = runners.find(*scope);
    if (it == runners.end()) {
      if (ctx_.github->rate_limited())
        return true;
      auto list = ctx_.github->list_runners(*scope);
      if (auto* e = std::get_if<github::rest_error>(&list)) {
        github_error(*e);
        return true;
      }
      it = runners.emplace(*scope, std::move(std::get<std::vector<github::rest_runner>>(list))).first;
    }
    for (const auto& rn : it->second)
      if (rn.name == p.meta.name && rn.busy) {
        if (st_.busy_strays.insert(p.meta.name).second)
          runtime::log::info(actor_name, "stray runner pod left to finish: no active worker owns it, but its runner is running a job",
                             {{"pod", p.meta.name}, {"runner_id", rn.id}});
        return true;
      }
    return false;
  }

  bool stray_past_grace(const k8s::pod& p) const {
    const auto created = k8s::parse_rfc3339(p.meta.creation_timestamp);
    return created && now_ - static_cast<int64_t>(*created * 1000.0) >= o_.orphan_grace.count();
  }

  void delete_stray(const std::string& name) {
    auto r = await_call([&](k8s::api_callback cb) { ctx_.kube->remove(k8s::kinds::pods, o_.pool.ns, name, {}, std::move(cb)); });
    if (!ok_or_gone(r)) {
      ctx_.metrics.error("kubernetes");
      return;  // the next cycle tries again
    }
    runtime::log::warn(actor_name, "stray runner pod deleted: no active worker owns it", {{"pod", name}});
    ctx_.metrics.action("stray_deleted");
  }

  // The worker's job, once GitHub's in_progress (or completed) webhook named this runner. Both
  // may land between two cycles, so a job already over is looked up in the store too.
  void note_job(store::worker& w) {
    if (w.job_id != 0)
      return;
    int64_t id = 0;
    for (const auto& j : jobs_)
      if (j.runner_name == w.name)
        id = j.id;
    if (id == 0) {
      auto found = ctx_.jobs->job_for_runner(w.name);
      if (auto* e = std::get_if<store::error>(&found))
        return store_error("job for runner", *e);
      if (const auto& j = std::get<std::optional<store::job>>(found))
        id = j->id;
    }
    if (id == 0)
      return;
    auto r = ctx_.jobs->set_worker_job(w.name, id, now_);
    if (auto* e = std::get_if<store::error>(&r))
      return store_error("set worker job", *e);
    w.job_id = id;
  }

  // Whether the worker ran a job that is over (not among the active ones).
  bool job_done(const store::worker& w) const {
    return w.job_id != 0 && std::none_of(jobs_.begin(), jobs_.end(), [&](const store::job& j) { return j.id == w.job_id; });
  }

  void advance_worker(const store::worker& w, store::worker_status to, const std::string& why) {
    auto r = ctx_.jobs->advance_worker(w.name, to, why, now_);
    if (auto* e = std::get_if<store::error>(&r))
      store_error("advance worker", *e);
  }

  void finish_worker(const store::worker& w, store::worker_status to, const std::string& why) {
    auto r = ctx_.jobs->advance_worker(w.name, to, why, now_);
    if (auto* e = std::get_if<store::error>(&r))
      return store_error("finish worker", *e);
    if (!std::get<bool>(r))
      return;
    if (to == store::worker_status::failed) {
      runtime::log::warn(actor_name, "worker failed", {{"worker", w.name}, {"entity", w.entity}, {"why", why}});
      ctx_.metrics.action("worker_failed");
    } else {
      ctx_.metrics.action("worker_completed");
    }
  }

  void check_health(const store::worker& w, const k8s::pod& pod, const std::map<std::string, std::vector<github::rest_runner>>& listed) {
    const auto scope = runner_scope(o_.enterprise, w.entity);
    auto seen = runners::runner_seen::unknown;  // this entity's runners were not listed this cycle
    if (auto list = listed.find(scope); list != listed.end()) {
      seen = runners::runner_seen::absent;
      for (const auto& rn : list->second)
        if (rn.name == w.name)
          seen = rn.status != "online" ? runners::runner_seen::offline : rn.busy ? runners::runner_seen::busy : runners::runner_seen::idle;
    }
    const auto v = observe_health(st_.health, *ctx_.jobs, w, pod, now_, seen);
    if (v == runners::verdict::healthy || st_.killed_at.count(w.name) > 0)
      return;
    // GitHub first: a runner it says is busy is left alone until the next cycle.
    if (w.runner_id != 0 && seen != runners::runner_seen::absent) {
      auto r = ctx_.github->remove_runner(scope, w.runner_id);
      if (auto* e = std::get_if<github::rest_error>(&r)) {
        github_error(*e);
        return;
      }
      if (std::get<github::runner_removal>(r) == github::runner_removal::busy) {
        runtime::log::info(actor_name, "GitHub says the runner is busy: leaving it until the next cycle",
                           {{"worker", w.name}, {"check", runners::to_string(v)}});
        return;
      }
    }
    const std::string why = std::string{runners::to_string(v)} + ": pod " + pod.phase + (seen == runners::runner_seen::absent ? ", runner never seen by GitHub" : "");
    // Killed, not deleted: the kubelet fails it (DeadlineExceeded), so its logs and events stay.
    auto r = await_call([&](k8s::api_callback cb) {
      ctx_.kube->strategic_merge_patch(k8s::kinds::pods, o_.pool.ns, w.name, "{\"spec\":{\"activeDeadlineSeconds\":1}}", std::move(cb));
    });
    if (!ok_or_gone(r)) {
      ctx_.metrics.error("kubernetes");
      return;
    }
    st_.killed_at[w.name] = now_;
    finish_worker(w, store::worker_status::failed, why);
    ctx_.metrics.action("killed");
    tell_event(ctx_.events, {"v1", "Pod", pod.meta.ns, pod.meta.name, pod.meta.uid, "Warning", "RunnerKilled", "HealthCheck",
                             "failed the " + std::string{runners::to_string(v)} + " health check: activeDeadlineSeconds set to 1"});
  }

  // ---- 3. demandMatch --------------------------------------------------------------------------

  // Pool by pool (match_pools): its jobs, its workers, its caps, its nodes' free slots.
  void demand_match() {
    if (!load_active())
      return;
    const auto split = split_by_pool(o_.pools, jobs_, workers_);
    for (int64_t i = 0; i < split.unpooled; ++i)
      ctx_.metrics.skipped("no_pool");
    const auto plans = match_pools(o_, split, [&](const pool_options& pool) -> int64_t {
      return pool.spec.slot_resource.empty()
                 ? -1
                 : free_slots(ctx_.nodes->list(), ctx_.pods->list(), pool.spec.node_selector, pool.spec.slot_resource, pool.name);
    });
    for (size_t p = 0; p < plans.size(); ++p)
      serve(o_.pools[p], plans[p]);
  }

  void serve(const pool_options& pool, const match_result& plan) {
    for (int64_t i = 0; i < plan.capped; ++i)
      ctx_.metrics.skipped("capped");
    for (int64_t i = 0; i < plan.pool_full; ++i)
      ctx_.metrics.skipped("pool_full");
    for (int64_t i = 0; i < plan.no_capacity; ++i)
      ctx_.metrics.skipped("no_capacity");
    for (const auto& j : plan.provision) {
      // While GitHub's rate limit lasts, a JIT config cannot be had: make no worker that could
      // only fail; the jobs stay pending for the next cycle.
      if (ctx_.github->rate_limited()) {
        ctx_.metrics.skipped("rate_limited");
        continue;
      }
      if (now_ < st_.provision_paused_until) {
        ctx_.metrics.skipped("api_unavailable");
        continue;
      }
      provision(j, pool);
    }
  }

  // The organisation's runner group (ensured once, then cached); 0 for a repository. nullopt
  // when GitHub refused: the worker is over.
  std::optional<int64_t> runner_group(const std::string& scope, const store::worker& w) {
    if (scope.rfind("repos/", 0) == 0)
      return 0;
    auto& cached = st_.groups[group_owner(scope)];
    if (cached == 0) {
      auto g = ctx_.github->ensure_runner_group(group_owner(scope), ctx_.opts.runner_group, ctx_.opts.runner_group_repositories);
      if (auto* e = std::get_if<github::rest_error>(&g)) {
        github_error(*e);
        finish_worker(w, store::worker_status::failed, "runner group: " + e->describe());
        return std::nullopt;
      }
      cached = std::get<int64_t>(g);
    }
    return cached;
  }

  // The job stays pending and gets a new worker next cycle. Had the API server made the pod after
  // all (a 504 after the write), the stray sweep deletes it past the orphan grace.
  void runner_pod_refused(const store::worker& w, const std::string& scope, int64_t runner_id, const k8s::api_error& e) {
    ctx_.metrics.error("kubernetes");
    (void)ctx_.github->remove_runner(scope, runner_id);
    using kind = k8s::api_error::kind;
    if (e.what == kind::server || e.what == kind::too_many_requests || e.what == kind::transport) {
      // Pause provisioning: 1 s, doubling to 10 s while the API server keeps refusing (at most
      // 10 s late once it is back).
      ++st_.create_failures;
      const int64_t pause = std::min<int64_t>(10'000, int64_t{1'000} << std::min(st_.create_failures - 1, 4));
      st_.provision_paused_until = now_ + pause;
      runtime::log::warn(actor_name, "the API server refused a runner pod: provisioning paused",
                         {{"pause_ms", pause}, {"error", e.describe()}});
    }
    finish_worker(w, store::worker_status::failed, "runner pod: " + e.describe());
  }

  void provision(const store::job& j, const pool_options& pool) {
    store::worker w;
    w.entity = j.entity;
    w.labels = j.labels;
    w.created_at = now_;
    bool added = false;
    for (int attempt = 0; attempt < 3 && !added; ++attempt) {  // names are unique forever
      w.name = runner_name(o_.pool.name, st_.names());
      auto r = ctx_.jobs->add_worker(w);
      if (auto* e = std::get_if<store::error>(&r))
        return store_error("add worker", *e);
      added = std::get<bool>(r);
    }
    if (!added)
      return;
    const auto scope = runner_scope(o_.enterprise, j.entity);
    const auto group = runner_group(scope, w);
    if (!group)
      return;
    // The pool's labels (the runner then takes any job they cover, as GitHub matches).
    auto jit = ctx_.github->generate_jit_config(scope, w.name, *group, registered_labels(pool, j.labels));
    if (auto* e = std::get_if<github::rest_error>(&jit)) {
      github_error(*e);
      if (e->status == 404)
        st_.groups.erase(group_owner(scope));  // the group may have been deleted: ensure it again
      return finish_worker(w, store::worker_status::failed, "jit config: " + e->describe());
    }
    const auto& config = std::get<github::rest_jit>(jit);
    if (auto r = ctx_.jobs->set_worker_runner(w.name, config.runner_id, now_); std::holds_alternative<store::error>(r))
      store_error("set worker runner", std::get<store::error>(r));
    auto created = await_call([&](k8s::api_callback cb) {
      ctx_.kube->create(k8s::kinds::pods, o_.pool.ns, pool_runner_pod(pool, w.name, config.runner_id, scope), std::move(cb));
    });
    if (auto* e = std::get_if<k8s::api_error>(&created))
      return runner_pod_refused(w, scope, config.runner_id, *e);
    st_.create_failures = 0;
    simdjson::dom::parser parser;
    std::string_view uid;
    if (parser.parse(std::get<std::string>(created))["metadata"]["uid"].get(uid) != simdjson::SUCCESS)
      runtime::log::warn(actor_name, "runner pod create answered without a uid", {{"pod", w.name}});
    auto secret = await_call([&](k8s::api_callback cb) {
      ctx_.kube->create(k8s::kinds::secrets, o_.pool.ns, runners::runner_secret(o_.pool, w.name, std::string{uid}, config.encoded_jit_config),
                        std::move(cb));
    });
    if (auto* e = std::get_if<k8s::api_error>(&secret); e && e->what != k8s::api_error::kind::already_exists) {
      // Without its secret the pod never starts a runner: over at once, not at the registration
      // timeout, so the job is provisioned again next cycle. Its pod goes now, or by the stray
      // sweep if this delete is refused too.
      ctx_.metrics.error("kubernetes");
      (void)ctx_.github->remove_runner(scope, config.runner_id);
      finish_worker(w, store::worker_status::failed, "runner secret: " + e->describe());
      auto gone = await_call([&](k8s::api_callback cb) { ctx_.kube->remove(k8s::kinds::pods, o_.pool.ns, w.name, {}, std::move(cb)); });
      if (!ok_or_gone(gone))
        ctx_.metrics.error("kubernetes");
      return;
    }
    const int64_t now = ctx_.now_ms(), latency = now - j.updated_at;
    ctx_.metrics.action("provisioned");
    ctx_.metrics.provision_latency(static_cast<double>(latency) / 1000.0);
    runtime::log::info(actor_name, "runner provisioned",
                       {{"worker", w.name}, {"pool", pool.name}, {"entity", j.entity}, {"labels", j.labels}, {"job", j.id}, {"runner_id", config.runner_id},
                        {"since_webhook_ms", latency}, {"since_created_ms", now - j.created_at}});
  }

  reconciler_state& st_;
  const reconciler_context& ctx_;
  const scheduler_options& o_;
  const int64_t now_;
  std::vector<store::job> jobs_;
  std::vector<store::worker> workers_;
};

// The store did not answer the wait for job events: back off before the next tick (a down
// PostgreSQL refuses at once, so without it the loop would spin), and log the state change.
std::chrono::milliseconds store_unavailable(reconciler_state& s, const std::string& error) {
  const auto v = s.store.failed(s.ctx->now_ms());
  s.ctx->metrics.error("store");
  if (v.log == runtime::outage::note::went_down) {
    runtime::log::warn(actor_name, "the job store is unavailable; retrying with backoff",
                       {{"error", error}, {"retry_in_ms", v.retry_in.count()}});
    if (s.ctx->metrics.store_available)
      s.ctx->metrics.store_available(false);
  } else if (v.log == runtime::outage::note::still_down) {
    runtime::log::warn(actor_name, "the job store is still unavailable",
                       {{"error", error}, {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
  }
  return v.retry_in;
}

void store_answered(reconciler_state& s) {
  const auto v = s.store.succeeded(s.ctx->now_ms());
  if (v.log != runtime::outage::note::came_back)
    return;
  runtime::log::info(actor_name, "the job store is available again", {{"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
  if (s.ctx->metrics.store_available)
    s.ctx->metrics.store_available(true);
}

caf::behavior reconciler_behavior(reconciler_actor* self, reconciler_context_ptr ctx) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  const auto& o = st.ctx->opts;
  st.health = runners::health_memory{{o.registration_timeout, o.pending_timeout, o.idle_timeout}};
  st.pods = std::make_unique<informer_feed<k8s::pod>>("scheduler_pods", caf::actor_cast<caf::actor>(self), pods_buffer);
  st.pods->attach(st.ctx->pods);
  if (st.ctx->track_buffer)
    st.ctx->track_buffer(st.pods->stats());
  self->send(self, msg::tick_atom_v, uint64_t{0});
  return {
      [self](msg::tick_atom, uint64_t) {
        auto& s = self->state;
        auto woken = s.ctx->jobs->wait_for_jobs(s.ctx->opts.wait_slice);
        bool due = s.dirty || s.ctx->now_ms() - s.last_cycle >= s.ctx->opts.poll_interval.count();
        std::chrono::milliseconds next{0};
        if (auto* e = std::get_if<store::error>(&woken)) {
          next = store_unavailable(s, e->message);
        } else {
          store_answered(s);
          due = due || std::get<bool>(woken);
        }
        if (due) {
          s.dirty = false;
          s.last_cycle = s.ctx->now_ms();
          cycle{self}.run();
        }
        if (next.count() > 0)
          self->delayed_send(self, next, msg::tick_atom_v, uint64_t{0});
        else
          self->send(self, msg::tick_atom_v, uint64_t{0});
      },
      [self](msg::buffer_wakeup) {
        // A runner pod changed (phase, node, deletion): reflect it at the next tick.
        self->state.pods->drain([&](const msg::pod_event&) { self->state.dirty = true; });
      },
  };
}

}  // namespace

caf::actor spawn_reconciler(caf::actor_system& sys, reconciler_context_ptr ctx) {
  return sys.spawn<caf::detached>(reconciler_behavior, std::move(ctx));
}

}  // namespace headroom::actors::scheduler
