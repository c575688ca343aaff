#include "modes/scheduler/mode.hpp"

#include "modes/scheduler/declared.hpp"

#include <caf/all.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include "adapters/k8s/client.hpp"
#include "modes/shared/start.hpp"
#include "runtime/log.hpp"
#include "runtime/relay.hpp"
#include "runtime/metrics.hpp"
#include "runtime/secrets.hpp"
#include "runtime/clock.hpp"

namespace headroom::modes::scheduler {

using namespace actors::scheduler;

namespace {

const prometheus::Histogram::BucketBoundaries fast_buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                           0.1,    0.2,   0.25,   0.5,   1,     2.5, 5, 10};
const prometheus::Histogram::BucketBoundaries slow_buckets{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

scheduler_metrics make_reconciler_metrics(runtime::metrics& m) {
  auto& reg = m.registry();
  auto& cycle = prometheus::BuildHistogram().Name("headroom_scheduler_phase_duration_seconds")
                    .Help("One reconcile phase: sync_jobs, sync_workers, demand_match, prune (the history past the retention); cycle: a whole cycle, its phases together").Register(reg);
  auto& actions = prometheus::BuildCounter().Name("headroom_scheduler_actions_total")
                      .Help("What the reconciler did: provisioned, job_failed, worker_failed, worker_completed, killed, force_deleted, runner_removed, stray_deleted, webhook_redelivered (a delivery refused during a store outage, redelivered through the App's webhook-deliveries API)")
                      .Register(reg);
  auto& skipped = prometheus::BuildCounter().Name("headroom_scheduler_skipped_total")
                      .Help("Pending jobs not served this cycle (capped: the entity's cap, pool_full: the pool's maxWorkers, no_pool: no pool serves its labels any more, no_capacity, rate_limited: GitHub's rate limit, api_unavailable: the API server refused a runner pod, github_backoff: GitHub refused the entity's last runner (App not installed, runner group refused) and it waits out its backoff), cycles skipped (lock_held) and stray runner pods left because their runner is busy (stray_busy)").Register(reg);
  auto& errors = prometheus::BuildCounter().Name("headroom_scheduler_errors_total").Help("Calls that failed, by dependency").Register(reg);
  auto& latency = prometheus::BuildHistogram().Name("headroom_scheduler_provision_latency_seconds")
                      .Help("From a job's first webhook to its runner pod created").Register(reg).Add({}, slow_buckets);
  std::map<std::string, prometheus::Histogram*> phases;
  for (const char* p : {"sync_jobs", "sync_workers", "demand_match", "prune", "cycle"})
    phases[p] = &cycle.Add({{"phase", p}}, fast_buckets);
  auto& pruned = prometheus::BuildCounter().Name("headroom_scheduler_pruned_total")
                     .Help("Rows of the job store deleted by the history retention (scheduler.store.retention), by table")
                     .Register(reg);
  auto& available = prometheus::BuildGauge().Name("headroom_scheduler_store_available")
                        .Help("1 while the job store answers the reconciler, 0 while it is unavailable (it retries with backoff)")
                        .Register(reg).Add({});
  available.Set(1);
  std::map<std::string, prometheus::Counter*> by_action, by_skip, by_error, by_table;
  for (const char* t : {"jobs", "workers", "deliveries"})
    by_table[t] = &pruned.Add({{"table", t}});
  for (const char* a : {"provisioned", "job_failed", "worker_failed", "worker_completed", "killed", "force_deleted", "runner_removed", "stray_deleted",
                        "webhook_redelivered"})
    by_action[a] = &actions.Add({{"action", a}});
  for (const char* s : {"capped", "pool_full", "no_pool", "no_capacity", "lock_held", "rate_limited", "api_unavailable", "github_backoff", "stray_busy"})
    by_skip[s] = &skipped.Add({{"reason", s}});
  for (const char* e : {"store", "github", "kubernetes"})
    by_error[e] = &errors.Add({{"dependency", e}});
  auto bump = [](const std::map<std::string, prometheus::Counter*>& by) {
    return [by](const char* what) {
      if (auto it = by.find(what); it != by.end())
        it->second->Increment();
    };
  };
  scheduler_metrics out;
  out.cycle = [phases](const char* phase, double s) {
    if (auto it = phases.find(phase); it != phases.end())
      it->second->Observe(s);
  };
  out.action = bump(by_action);
  out.skipped = bump(by_skip);
  out.error = bump(by_error);
  out.provision_latency = [&latency](double s) { latency.Observe(s); };
  out.store_available = [&available](bool up) { available.Set(up ? 1 : 0); };
  out.pruned = [by_table](const char* table, int64_t rows) {
    if (auto it = by_table.find(table); it != by_table.end())
      it->second->Increment(static_cast<double>(rows));
  };
  return out;
}

void add_http_metrics(runtime::metrics& m, http_context& ctx) {
  auto& reg = m.registry();
  auto& webhooks = prometheus::BuildCounter().Name("headroom_scheduler_webhooks_total")
                       .Help("workflow_job deliveries by outcome: recorded, duplicate, unchanged, ignored, unmatched (a job for runners that are not the scheduler's: GitHub-hosted, another system's), too_large, bad_signature, malformed, store_error")
                       .Register(reg);
  auto& intake = prometheus::BuildHistogram().Name("headroom_scheduler_webhook_duration_seconds")
                     .Help("From a delivery read to its answer (the commit included)").Register(reg).Add({}, fast_buckets);
  auto& pages = prometheus::BuildCounter().Name("headroom_scheduler_http_requests_total")
                    .Help("Requests to the scheduler's HTTP server by route and status class").Register(reg);
  std::map<std::string, prometheus::Counter*> by_outcome;
  for (const char* o : {"recorded", "duplicate", "unchanged", "ignored", "unmatched", "too_large", "bad_signature", "malformed", "store_error"})
    by_outcome[o] = &webhooks.Add({{"outcome", o}});
  ctx.delivered = [by_outcome, &intake](const char* outcome, double s) {
    if (auto it = by_outcome.find(outcome); it != by_outcome.end())
      it->second->Increment();
    intake.Observe(s);
  };
  ctx.served = [&pages](const std::string& path, int status, double) {
    pages.Add({{"route", path}, {"code", std::to_string(status / 100) + "xx"}}).Increment();
  };
}

}  // namespace

pool_options pool_of(const pool_section& cp, const actors::runners::runner_spec& base) {
  pool_options p;
  p.name = cp.name;
  p.labels = cp.labels;
  p.spec = base;  // a pool without a template makes the runner section's pod
  p.spec.node_selector = cp.node_selector;
  p.spec.slot_resource = cp.slot_resource;
  p.spec.active_deadline_seconds = cp.active_deadline_seconds;
  p.pod_template = cp.pod_template;
  p.max_workers = cp.max_workers == 0 ? -1 : static_cast<int64_t>(cp.max_workers);
  if (cp.own_entity_caps) {
    p.default_max_workers = cp.default_max_workers;
    for (const auto& [entity, cap] : cp.entity_caps)
      p.entity_caps[entity] = cap;
  }
  return p;
}

namespace {

// The pools the reconciler matches: the configured ones, or one from `runner` and `runnerLabels`.
std::vector<pool_options> make_pools(const scheduler_section& c, const actors::runners::runner_spec& base) {
  std::vector<pool_options> out;
  if (c.pools.empty()) {
    pool_options p;
    p.labels = c.runner_labels;
    p.spec = base;
    out.push_back(std::move(p));
    return out;
  }
  for (const auto& cp : c.pools)
    out.push_back(pool_of(cp, base));
  return out;
}

// The store: migrated forward at open; a newer schema stops headroom (exit 2).
std::optional<std::string> open_store(const scheduler_section& c, const std::map<std::string, std::string>& env,
                                      scheduler_services& out, bool& store_unavailable) {
  auto get = [&env](const char* name) { return env_value(env, name); };
  store::result<std::unique_ptr<store::store>> opened = store::error{"no store"};
  if (c.store.postgres) {
    const std::string dsn = get("HEADROOM_POSTGRES_DSN");
    if (dsn.empty())
      return "HEADROOM_POSTGRES_DSN: required with scheduler.store.postgres (a libpq connection string)";
    runtime::secret_registry::global().add(dsn);
    opened = store::open_postgres(dsn, c.store.pool);
  } else {
    opened = store::open_sqlite(c.store.sqlite_path);
  }
  if (auto* e = std::get_if<store::error>(&opened)) {
    store_unavailable = !e->schema_too_new;
    return "scheduler.store: " + e->message;
  }
  out.jobs = std::move(std::get<std::unique_ptr<store::store>>(opened));
  return std::nullopt;
}

// The reconciler's options: the runner pod (its pools and limits) and the timings.
std::optional<std::string> options_of(const scheduler_section& c, scheduler_options& o) {
  o.pool.name = c.name_prefix;
  o.pool.ns = c.ns;
  k8s::resource_list requests;  // one runner's: the capacity check counts slots, not these
  if (auto e = apply_runner(c.runner, "scheduler.runner", o.pool, requests))
    return e;
  o.pool.slot_resource = c.runner.slot_resource;
  o.pool.runner_priority_class.clear();  // no ladder here: runner pods only
  o.pool.active_deadline_seconds = c.runner.active_deadline_seconds;
  o.runner_group = c.runner_group;
  o.runner_group_repositories = c.runner_group_repositories;
  o.enterprise = c.enterprise;
  o.pools = make_pools(c, o.pool);
  o.default_max_workers = c.default_max_workers;
  for (const auto& [account, cap] : c.max_workers)
    o.max_workers[account] = cap;
  o.poll_interval = c.poll_interval;
  o.provisioning_concurrency = c.provisioning_concurrency;
  o.job_sync_interval = c.job_sync_interval;
  o.job_stuck_queued = c.job_stuck_queued;
  o.registration_timeout = c.registration_timeout;
  o.pending_timeout = c.pending_timeout;
  o.idle_timeout = c.idle_timeout;
  o.pod_delete_grace = c.pod_delete_grace;
  o.kill_grace = c.kill_grace;
  o.retention = c.store.retention;
  return std::nullopt;
}

// RunnerPool objects: watched, their pools in a registry the reconciler reads and their labels
// in the intake's view.
void declare_pools(const scheduler_section& c, const scheduler_options& o, k8s::client& kube, k8s::informer_set& informers,
                   scheduler_services& out) {
  out.kube = &kube;
  out.declared.registry = std::make_shared<actors::scheduler::pool_registry>();
  out.declared.runner = c.runner;
  out.declared.max_workers = c.pool_objects.max_workers;
  for (const auto& p : o.pools)
    out.declared.file.insert(p.name);
  out.reconciler->declared_pools = out.declared.registry;
  out.http->declared_pools = watch_pools(informers, c.ns, out);
}

}  // namespace

void scheduler_services::stop() {
  if (declared.objects)
    declared.objects->stop();
  if (pods)
    pods->stop();
  if (nodes)
    nodes->stop();
}

std::optional<std::string> prepare_scheduler(const scheduler_section& c, const github_section& gh,
                                             const std::map<std::string, std::string>& env,
                                             k8s::client& kube, k8s::informer_set& informers, http::transport& io,
                                             runtime::metrics& m, scheduler_services& out, bool& store_unavailable) {
  auto get = [&env](const char* name) { return env_value(env, name); };
  const std::string secret = get("HEADROOM_WEBHOOK_SECRET");
  if (secret.size() < runtime::secret_registry::min_length)
    return "HEADROOM_WEBHOOK_SECRET: required for scheduler.enabled (the key of X-Hub-Signature-256), at least " +
           std::to_string(runtime::secret_registry::min_length) + " characters";
  runtime::secret_registry::global().add(secret);
  auto creds = github_credentials(env, true);  // an App installed in several organizations: each one's found
  if (auto* e = std::get_if<std::string>(&creds))
    return *e;
  if (auto e = github_user_app(env, std::get<github::credentials>(creds)); !e.empty())
    return e;
  if (!c.enterprise.empty() && std::get<github::credentials>(creds).personal_access_token.empty())
    return "scheduler.enterprise: enterprise runners need a personal access token with manage_runners:enterprise "
           "(HEADROOM_GITHUB_TOKEN); GitHub lets no App manage them";

  if (auto problem = open_store(c, env, out, store_unavailable))
    return problem;

  github::rest_options ro;
  if (!gh.ca_file.empty()) {
    std::string error;
    ro.ca_pem = read_text(gh.ca_file, error, "github.caFile");
    if (!error.empty())
      return error;
  }
  ro.tokens = out.github_tokens;
  out.github = std::make_unique<github::rest_client>(github::api_base_of(c.github_url), std::get<github::credentials>(creds), io, ro);

  scheduler_options o;
  if (auto problem = options_of(c, o))
    return problem;
  k8s::informer<k8s::pod>::options pod_opts;
  pod_opts.kind = k8s::kinds::pods;
  pod_opts.ns = c.ns;
  pod_opts.label_selector = std::string{actors::runners::keys::scale_set} + "=" + c.name_prefix;
  out.pods = informers.get<k8s::pod>(pod_opts);
  k8s::informer<k8s::node>::options node_opts;
  node_opts.kind = k8s::kinds::nodes;
  out.nodes = informers.get<k8s::node>(node_opts);

  auto rc = std::make_shared<reconciler_context>();
  rc->jobs = out.jobs.get();
  rc->github = out.github.get();
  rc->kube = &kube;
  rc->pods = out.pods;
  rc->nodes = out.nodes;
  rc->events = out.events;
  rc->opts = o;
  rc->metrics = make_reconciler_metrics(m);
  const auto wall_ms = [&clock = kube.clock()] { return clock.wall_ms(); };
  rc->now_ms = wall_ms;
  rc->track_buffer = [&m](const runtime::buffer_stats_ptr& s) { m.buffers().track(s); };
  out.reconciler = rc;

  auto hc = std::make_shared<http_context>();
  hc->jobs = out.jobs.get();
  hc->secret = secret;
  hc->listen = c.listen;
  hc->dashboard_listen = c.dashboard_listen;
  hc->threads = static_cast<int>(c.threads);
  hc->max_body = c.max_body;
  for (const auto& p : o.pools)
    hc->pools.push_back(p.labels);
  hc->caps = o.max_workers;
  hc->default_cap = o.default_max_workers;
  hc->repositories = c.runner_group_repositories;
  hc->now_ms = wall_ms;
  add_http_metrics(m, *hc);
  out.http = hc;

  if (c.pool_objects.enabled)
    declare_pools(c, o, kube, informers, out);
  out.nodes->start();
  out.pods->start();
  runtime::log::info("scheduler", "webhook-driven runner scheduling",
                     {{"store", std::string{out.jobs->backend()}}, {"schema", out.jobs->schema_version()},
                      {"listen", c.listen}, {"namespace", c.ns}, {"pools", static_cast<int64_t>(o.pools.size())},
                      {"max_workers", static_cast<int64_t>(c.default_max_workers)}});
  return std::nullopt;
}

runtime::child_spec scheduler_http_child(std::shared_ptr<scheduler_services> svc) {
  runtime::child_spec out;
  out.name = "scheduler_http";
  out.start = [svc](caf::actor_system& sys) { return runtime::untyped(spawn_scheduler_http(sys, svc->http)); };
  return out;
}

runtime::child_spec scheduler_subtree(const runtime::config& cfg, std::shared_ptr<scheduler_services> svc, runtime::metrics& m,
                                      runtime::readiness& ready) {
  runtime::child_spec reconciler;
  reconciler.name = "reconciler";
  reconciler.start = [svc](caf::actor_system& sys) { return runtime::untyped(spawn_reconciler(sys, svc->reconciler)); };
  runtime::child_spec out;
  out.name = "scheduler";
  out.start = [svc, reconciler, opts = runtime::supervisor_options_from(cfg, "scheduler", &m, &ready), mp = &m](caf::actor_system& sys) {
    std::vector<runtime::child_spec> children{reconciler};
    // The supervisor's own address, for the catalog that adds and removes declared pools.
    const caf::actor parent = svc->declared.objects ? runtime::spawn_relay(sys, "scheduler") : caf::actor{};
    if (parent)
      children.push_back(pool_catalog_child(svc, parent, *mp));
    auto sup = runtime::untyped(runtime::spawn_supervisor(sys, opts, std::move(children)));
    if (parent) {
      caf::anon_send(parent, msg::relay_target{sup});
      runtime::own_relay(parent, sup);
    }
    return sup;
  };
  return out;
}

void scheduler_mode::read(const std::string&, const YAML::Node& node) { read_section(node, config); }

std::vector<runner_claim> scheduler_mode::runner_pods() const {
  if (!config.enabled)
    return {};
  return {{config.ns, config.name_prefix, "scheduler.namePrefix"}};
}

std::optional<start_problem> scheduler_mode::prepare(const services& s) {
  svc_ = std::make_shared<scheduler_services>();
  svc_->events = s.events;
  svc_->github_tokens = s.github_tokens;
  bool store_unavailable = false;
  if (auto problem = prepare_scheduler(config, s.shared.github, s.env, *s.api, *s.informers, *s.github_io, s.metrics, *svc_, store_unavailable))
    return start_problem{*problem, store_unavailable ? 1 : 2};
  return std::nullopt;
}

// Every replica takes webhooks and serves the dashboards; only the leader reconciles.
std::vector<runtime::child_spec> scheduler_mode::every_replica() { return {scheduler_http_child(svc_)}; }

std::optional<runtime::child_spec> scheduler_mode::leader_only(const runtime::config& cfg, runtime::metrics& m,
                                                               runtime::readiness& ready) {
  return scheduler_subtree(cfg, svc_, m, ready);
}

void scheduler_mode::stop() {
  if (svc_)
    svc_->stop();
}

std::vector<tree_line> scheduler_mode::every_replica_tree() const { return {{0, "scheduler_http"}}; }
std::vector<tree_line> scheduler_mode::leader_only_tree() const {
  return {{0, "scheduler (supervisor)"},
          {1, "reconciler"},
          {1, "runner_pool_catalog (when scheduler.poolObjects.enabled: adds, replaces and stops declared pools)"},
          {1, "runner_pool/<name> × one per RunnerPool object (holds its pool for the reconciler)"}};
}

std::unique_ptr<mode> make() { return std::make_unique<scheduler_mode>(); }

}  // namespace headroom::modes::scheduler
