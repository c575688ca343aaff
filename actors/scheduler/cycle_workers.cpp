// The reconciler's 2. syncWorkersState: each worker's pod and runner, health checks, GitHub cleanup
// and stray pods (see cycle.hpp).

#include "actors/scheduler/cycle.hpp"

namespace headroom::actors::scheduler::reconcile {

// ---- 2. syncWorkersState ---------------------------------------------------------------------

void cycle::sync_workers() {
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
    if (st_.orders.making(w.name))
      continue;  // its maker has it (runner_maker.hpp): no pod yet, by design
    sync_worker(w, unreachable, health_due ? &runners : nullptr);
  }
  delete_killed_past_grace();
  if (health_due)
    remove_finished_runners(runners, active_names);
  sweep_pods(active_names, runners);
  st_.health.keep_only(active_names);
}

std::set<std::string> cycle::unreachable_nodes() const {
  std::set<std::string> out;
  for (const auto& n : ctx_.nodes->list())
    for (const auto& t : n->taints)
      if (t.key == "node.kubernetes.io/unreachable")
        out.insert(n->meta.name);
  return out;
}

// GitHub's runners of each entity with a worker in the last hour (health checks, Phase 4): those of
// headroom's runner group (org, enterprise), or a repository's all; stops at a GitHub error.
cycle::runner_lists cycle::list_runners() {
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
int64_t cycle::group_of(const std::string& org) {
  auto& cached = st_.groups[org];
  if (cached == 0)
    if (auto g = ctx_.github->ensure_runner_group(org, ctx_.opts.runner_group, ctx_.opts.runner_group_repositories); std::holds_alternative<int64_t>(g))
      cached = std::get<int64_t>(g);
  return cached;
}

// Phases 1 to 3 for one worker; `runners` is null when health checks are not due.
void cycle::sync_worker(store::worker& w, const std::set<std::string>& unreachable, runner_lists* runners) {
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
    // The runner exited after its job. GitHub's webhook naming it may still be on its way (a
    // delivery can trail a short job): a worker with no job yet waits for it up to the orphan
    // grace, so the job is recorded on the worker that ran it. (An e2e whose jobs run 2 s in the
    // runner container saw a pod end first, and its job then recorded on no worker.)
    const auto since = st_.terminal_since.emplace(w.name, now_).first->second;
    if (w.job_id == 0 && now_ - since < o_.orphan_grace.count())
      return;
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
void cycle::delete_killed_past_grace() {
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
void cycle::remove_finished_runners(const runner_lists& runners, const std::set<std::string>& active_names) {
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
void cycle::sweep_pods(const std::set<std::string>& active_names, runner_lists& runners) {
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
bool cycle::stray_busy(const k8s::pod& p, std::map<std::string, std::vector<github::rest_runner>>& runners) {
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

bool cycle::stray_past_grace(const k8s::pod& p) const {
  const auto& created = p.meta.created;
  return created && now_ - static_cast<int64_t>(*created * 1000.0) >= o_.orphan_grace.count();
}

void cycle::delete_stray(const std::string& name) {
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
void cycle::note_job(store::worker& w) {
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
bool cycle::job_done(const store::worker& w) const {
  return w.job_id != 0 && std::none_of(jobs_.begin(), jobs_.end(), [&](const store::job& j) { return j.id == w.job_id; });
}

void cycle::advance_worker(store::worker& w, store::worker_status to, const std::string& why) {
  auto r = ctx_.jobs->advance_worker(w.name, to, why, now_);
  if (auto* e = std::get_if<store::error>(&r))
    return store_error("advance worker", *e);
  if (std::get<bool>(r))
    w.status = to;  // in the loaded rows too, for demandMatch
}

void cycle::finish_worker(const store::worker& w, store::worker_status to, const std::string& why) {
  loaded_ = false;  // demandMatch loads the workers again
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

void cycle::check_health(const store::worker& w, const k8s::pod& pod, const std::map<std::string, std::vector<github::rest_runner>>& listed) {
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

}  // namespace headroom::actors::scheduler::reconcile
