// The reconciler's 3. demandMatch: pools, caps and free slots, runner groups, JIT configs and
// runner pods (see cycle.hpp).

#include "actors/scheduler/cycle.hpp"
#include "adapters/k8s/fields.hpp"

namespace headroom::actors::scheduler::reconcile {

// ---- 3. demandMatch --------------------------------------------------------------------------

// Pool by pool (match_pools): its jobs, its workers, its caps, its nodes' free slots.
void cycle::demand_match() {
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

void cycle::serve(const pool_options& pool, const match_result& plan) {
  for (int64_t i = 0; i < plan.capped; ++i)
    ctx_.metrics.skipped("capped");
  for (int64_t i = 0; i < plan.pool_full; ++i)
    ctx_.metrics.skipped("pool_full");
  for (int64_t i = 0; i < plan.no_capacity; ++i)
    ctx_.metrics.skipped("no_capacity");
  const auto shared_pool = std::make_shared<const pool_options>(pool);
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
    if (auto r = st_.refused.find(runner_scope(o_.enterprise, j.entity)); r != st_.refused.end() && now_ < r->second.until) {
      ctx_.metrics.skipped("github_backoff");
      continue;
    }
    provision(j, shared_pool);
  }
}

// The organisation's runner group (ensured once, then cached); 0 for a repository. nullopt
// when GitHub refused: the worker is over.
std::optional<int64_t> cycle::runner_group(const std::string& scope, const store::worker& w) {
  if (scope.rfind("repos/", 0) == 0)
    return 0;
  auto& cached = st_.groups[group_owner(scope)];
  if (cached == 0) {
    auto g = ctx_.github->ensure_runner_group(group_owner(scope), ctx_.opts.runner_group, ctx_.opts.runner_group_repositories);
    if (auto* e = std::get_if<github::rest_error>(&g)) {
      scope_refused(scope, *e);
      finish_worker(w, store::worker_status::failed, "runner group: " + e->describe());
      return std::nullopt;
    }
    cached = std::get<int64_t>(g);
  }
  return cached;
}

// GitHub refused a runner for `scope`: its jobs stay pending and wait out the scope's backoff.
// A rate limit has its own pause (rate_limited) and is no fault of the scope's.
void cycle::scope_refused(const std::string& scope, const github::rest_error& e) {
  ctx_.metrics.error("github");
  if (e.rate_limited)
    return;
  auto& r = st_.refused[scope];
  const auto v = r.state.failed(now_);
  r.until = now_ + v.retry_in.count();
  runtime::outage::log(actor_name, v, "GitHub refuses runners for this scope: its jobs wait", "GitHub still refuses runners for this scope",
                       {{"scope", scope}, {"retry_in_ms", static_cast<int64_t>(v.retry_in.count())},
                        {"failures", static_cast<int64_t>(v.failures)}, {"error", e.describe()}});
}

void cycle::scope_served(const std::string& scope) {
  auto r = st_.refused.find(scope);
  if (r == st_.refused.end())
    return;
  const auto v = r->second.state.succeeded(now_);
  runtime::log::info(actor_name, "GitHub gives runners for this scope again", {{"scope", scope}, {"down_for_ms", v.down_for_ms}});
  st_.refused.erase(r);
}

void cycle::api_refused(const k8s::api_error& e) {
  using kind = k8s::api_error::kind;
  if (e.what != kind::server && e.what != kind::too_many_requests && e.what != kind::transport)
    return;
  // 1 s, doubling to 10 s while the API server keeps refusing (at most 10 s late once it is back).
  ++st_.create_failures;
  const int64_t pause = std::min<int64_t>(10'000, int64_t{1'000} << std::min(st_.create_failures - 1, 4));
  st_.provision_paused_until = std::max(st_.provision_paused_until, now_ + pause);
  runtime::log::warn(actor_name, "the API server refused a runner pod: provisioning paused", {{"pause_ms", pause}, {"error", e.describe()}});
}

void cycle::provision(const store::job& j, const std::shared_ptr<const pool_options>& pool) {
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
  st_.orders.add({w, j, pool, scope, *group});
}

void cycle::made(const runner_made& m) {
  const auto& o = m.order;
  const auto& w = o.worker;
  if (!m.store_error.empty())
    store_error("set worker runner", store::error{m.store_error});
  if (m.what != runner_made::outcome::jit_refused)
    scope_served(o.scope);  // GitHub gave the runner; what failed after was the API server's
  switch (m.what) {
    case runner_made::outcome::jit_refused:
      scope_refused(o.scope, m.github);
      if (m.github.status == 404)
        st_.groups.erase(group_owner(o.scope));  // the group may have been deleted: ensure it again
      return finish_worker(w, store::worker_status::failed, "jit config: " + m.github.describe());
    case runner_made::outcome::pod_refused:
      // The job stays pending and gets a new worker next cycle.
      ctx_.metrics.error("kubernetes");
      api_refused(m.kube);
      return finish_worker(w, store::worker_status::failed, "runner pod: " + m.kube.describe());
    case runner_made::outcome::secret_refused:
      // Without its Secret the pod never starts a runner: over at once, not at the registration
      // timeout, so the job is provisioned again next cycle.
      ctx_.metrics.error("kubernetes");
      if (m.pod_left)
        ctx_.metrics.error("kubernetes");
      return finish_worker(w, store::worker_status::failed, "runner secret: " + m.kube.describe());
    case runner_made::outcome::made:
      break;
  }
  st_.create_failures = 0;
  const int64_t latency = m.finished_at - o.job.updated_at;
  ctx_.metrics.action("provisioned");
  ctx_.metrics.provision_latency(static_cast<double>(latency) / 1000.0);
  runtime::log::info(actor_name, "runner provisioned",
                     {{"worker", w.name}, {"pool", o.pool->name}, {"entity", o.job.entity}, {"labels", o.job.labels}, {"job", o.job.id},
                      {"runner_id", m.runner_id}, {"since_webhook_ms", latency}, {"since_created_ms", m.finished_at - o.job.created_at}});
}

void cycle::not_made(const std::vector<runner_order>& dropped) {
  for (const auto& o : dropped) {
    ctx_.metrics.skipped("github_backoff");
    finish_worker(o.worker, store::worker_status::failed, "not made: GitHub refuses runners for " + o.scope + " (its backoff)");
  }
}

}  // namespace headroom::actors::scheduler::reconcile
