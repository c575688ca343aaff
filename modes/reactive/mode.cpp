#include "modes/reactive/mode.hpp"

#include "adapters/k8s/informer_set.hpp"
#include "modes/reactive/declared.hpp"

#include <caf/all.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/http/transport.hpp"
#include "adapters/prometheus/client.hpp"
#include "modes/shared/series_table.hpp"
#include "modes/shared/start.hpp"
#include "runtime/config_reader.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/relay.hpp"

namespace headroom::modes::reactive {

using namespace actors::reactive;

namespace {

constexpr series gauges[] = {
    {"headroom_reactive_replicas", "Replicas on the target's /scale, as last read or written"},
    {"headroom_reactive_desired_replicas", "Replicas the last decision wanted"},
    {"headroom_reactive_min_replicas", "The target's minReplicas"},
    {"headroom_reactive_max_replicas", "The target's maxReplicas"},
    {"headroom_reactive_metric_value", "The metric's newest sample at the last evaluation"},
    {"headroom_reactive_metric_alert", "1 while the metric has been unavailable for 3 or more evaluations in a row"},
    {"headroom_reactive_oscillation_alert", "1 while more than 5 scale events in a row alternated direction"},
    {"headroom_reactive_paused", "1 while the target is annotated headroom.dev/reactive-paused: \"true\" (as seen when a step was due)"},
    {"headroom_reactive_unschedulable_replicas", "Replicas Pending and unschedulable when a step up was due (steps up wait while above 0)"},
};
constexpr series counters[] = {
    {"headroom_reactive_metric_query_failures_total", "Evaluations skipped because the metric was unavailable"},
    {"headroom_reactive_scale_ups_total", "Scale events that added replicas"},
    {"headroom_reactive_scale_downs_total", "Scale events that removed replicas"},
    {"headroom_reactive_scale_refused_total", "/scale writes refused (conflict, admission) and not applied"},
    {"headroom_reactive_oscillation_alerts_total", "Scale events that continued an oscillation past the alert"},
    {"headroom_reactive_errors_total", "Target reads and writes that failed, malformed annotations"},
    {"headroom_reactive_evaluations_skipped_total", "Evaluations due while the previous one was still in flight"},
};

scaler_metrics make_metrics(runtime::metrics& m, const std::string& target, const rules& r) {
  auto& reg = m.registry();
  auto table = std::make_shared<const series_set>(m, gauges, counters, std::map<std::string, std::string>{{"target", target}});
  table->set("headroom_reactive_min_replicas", r.min_replicas);
  table->set("headroom_reactive_max_replicas", r.max_replicas);
  auto& decisions = prometheus::BuildCounter()
                        .Name("headroom_reactive_decisions_total")
                        .Help("Evaluations by what was decided and why")
                        .Register(reg);
  auto& last = prometheus::BuildGauge()
                   .Name("headroom_reactive_last_decision")
                   .Help("1 for the last evaluation's action and reason, 0 for those seen before it, per target")
                   .Register(reg);
  auto& latency = prometheus::BuildHistogram()
                      .Name("headroom_reactive_scale_latency_seconds")
                      .Help("From an evaluation being due to its /scale write")
                      .Register(reg)
                      .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5});
  // Only this target's actor calls these: the last-decision series are its own.
  auto last_series = std::make_shared<prometheus::Gauge*>(nullptr);
  scaler_metrics out;
  out.set = [table](const char* name, double v) { table->set(name, v); };
  out.add = [table](const char* name, double v) { table->add(name, v); };
  // The series of each (action, reason) pair, made on first use: an evaluation only looks them up.
  struct decision_series {
    prometheus::Counter* count;
    prometheus::Gauge* last;
  };
  auto by_pair = std::make_shared<std::map<std::pair<const char*, const char*>, decision_series>>();
  out.decided = [&decisions, &last, last_series, by_pair, target](const char* action, const char* reason) {
    auto it = by_pair->find({action, reason});
    if (it == by_pair->end()) {
      const std::map<std::string, std::string> l{{"target", target}, {"action", action}, {"reason", reason}};
      it = by_pair->emplace(std::pair{action, reason}, decision_series{&decisions.Add(l), &last.Add(l)}).first;
    }
    it->second.count->Increment();
    if (*last_series != it->second.last) {
      if (*last_series != nullptr)
        (*last_series)->Set(0);
      it->second.last->Set(1);
      *last_series = it->second.last;
    }
  };
  out.scale_latency = [&latency](double s) { latency.Observe(s); };
  return out;
}

std::optional<std::string> read_text(const std::string& path, std::string& out) {
  std::ifstream in{path};
  if (!in)
    return path + ": cannot open";
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return std::nullopt;
}

quota_caps to_caps(const std::vector<std::pair<std::string, uint32_t>>& q) {
  quota_caps caps;
  for (const auto& [tenant, cap] : q)
    caps[tenant] = static_cast<int32_t>(cap);
  return caps;
}

}  // namespace

reactive_services::~reactive_services() = default;

scaler_context_ptr make_context(const reactive_target_section& t, k8s::client& kube, actors::event_sink events, runtime::metrics& m) {
  auto ctx = std::make_shared<scaler_context>();
  ctx->spec.target = target_ref{t.api_version, t.kind, t.ns, t.name};
  ctx->spec.tenant = t.tenant;
  for (const auto& x : t.metrics)
    ctx->spec.metrics.push_back({x.query, x.target, x.activation, x.absent_zero});
  ctx->spec.rules = make_rules(t);
  ctx->spec.subresource_writes = t.rules.subresource_writes;
  ctx->kube = &kube;
  ctx->events = std::move(events);
  ctx->metrics = make_metrics(m, ctx->spec.target.id(), ctx->spec.rules);
  return ctx;
}

rules make_rules(const reactive_target_section& t) {
  rules r;
  r.min_replicas = static_cast<int32_t>(t.min_replicas);
  r.max_replicas = static_cast<int32_t>(t.max_replicas);
  r.target = t.metrics.empty() ? 0 : t.metrics.front().target;
  r.scale_down_threshold = t.rules.scale_down_threshold;
  r.evaluation_interval = t.rules.evaluation_interval;
  r.scale_up_window = t.rules.scale_up_window;
  r.scale_down_window = t.rules.scale_down_window;
  r.cooldown = t.rules.cooldown;
  r.resolution = t.rules.resolution;
  return r;
}

namespace {

// The caps re-read from the configuration file, which a ConfigMap update rewrites in a Pod; only
// when it changed (time or size), so a large file is not parsed again every interval.
std::function<std::optional<quota_caps>(std::string&)> quota_reloader(const std::string& source) {
  auto seen = std::make_shared<std::pair<std::filesystem::file_time_type, std::uintmax_t>>();
  std::error_code ec;
  seen->first = std::filesystem::last_write_time(source, ec);
  seen->second = std::filesystem::file_size(source, ec);
  return [path = source, seen](std::string& error) -> std::optional<quota_caps> {
    std::error_code ec;
    const auto when = std::filesystem::last_write_time(path, ec);
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) {
      error = path + ": " + ec.message();
      return std::nullopt;
    }
    if (when == seen->first && size == seen->second)
      return std::nullopt;  // unchanged (no error)
    std::string text;
    if (auto e = read_text(path, text)) {
      error = *e;
      return std::nullopt;
    }
    try {
      const auto root = YAML::Load(text);
      *seen = {when, size};
      if (!root.IsMap() || !root["reactive"])
        return quota_caps{};
      return to_caps(read_quotas(root["reactive"]));
    } catch (const runtime::config_failure& f) {
      error = f.error.message();
    } catch (const YAML::Exception& e) {
      error = path + ": " + e.what();
    }
    return std::nullopt;
  };
}

// The reader's requests to Prometheus and their queries, counted and timed.
void count_prometheus_requests(runtime::metrics& m, actors::reactive::reader_options& reader) {
  auto& requests = prometheus::BuildCounter()
                       .Name("headroom_reactive_prometheus_requests_total")
                       .Help("Requests to Prometheus: remote reads (many targets each) and subqueries (one expression each)")
                       .Register(m.registry());
  auto& queries = prometheus::BuildCounter()
                      .Name("headroom_reactive_prometheus_queries_total")
                      .Help("Target evaluations' metric queries sent to Prometheus, by how they went")
                      .Register(m.registry());
  auto* reads = &requests.Add({{"kind", "read"}});
  auto* subqueries = &requests.Add({{"kind", "query"}});
  auto* read_queries = &queries.Add({{"kind", "read"}});
  auto* query_queries = &queries.Add({{"kind", "query"}});
  auto* request_seconds = &prometheus::BuildHistogram()
                               .Name("headroom_reactive_prometheus_request_seconds")
                               .Help("Requests to Prometheus (remote reads and subqueries), sent to answered")
                               .Register(m.registry())
                               .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1});
  reader.request_seconds = [request_seconds](double s) { request_seconds->Observe(s); };
  reader.count = [reads, subqueries, read_queries, query_queries](const char* kind, double n) {
    const bool read = std::string_view{kind} == "read";
    (read ? reads : subqueries)->Increment();
    (read ? read_queries : query_queries)->Increment(n);
  };
}

}  // namespace

std::optional<std::string> prepare_reactive(const runtime::config& cfg, const reactive_section& r,
                                            const std::map<std::string, std::string>& env, k8s::client& kube,
                                            const runtime::clock& clock, runtime::metrics& m, reactive_services& out) {
  auto get = [&env](const char* name) { return env_value(env, name); };
  prom::client_options po;
  po.url = r.prometheus.url;
  po.timeout = r.prometheus.timeout;
  po.username = r.prometheus.username;
  po.password = get("HEADROOM_PROMETHEUS_PASSWORD");
  po.bearer_token = get("HEADROOM_PROMETHEUS_TOKEN");
  if (!po.username.empty() && po.password.empty())
    return std::string{"reactive.prometheus.username: set HEADROOM_PROMETHEUS_PASSWORD too (basic auth)"};
  if (!r.prometheus.ca_file.empty())
    if (auto e = read_text(r.prometheus.ca_file, po.ca_pem))
      return "reactive.prometheus.caFile " + *e;
  http::transport::options topts;
  topts.clock = &clock;
  topts.qps = 10'000;  // Prometheus is ours to pace: one query per target per evaluation
  topts.burst = 10'000;
  out.io = std::make_unique<http::transport>(topts);
  out.prom = std::make_shared<prom::client>(*out.io, po);
  out.reader.prom = out.prom;
  count_prometheus_requests(m, out.reader);

  out.kube = &kube;
  out.declared.defaults = r.defaults;
  out.declared.max_replicas = r.objects.max_replicas;
  for (const auto& t : r.targets) {
    auto ctx = make_context(t, kube, out.events, m);
    if (!t.tenant.empty())
      out.quota.members[t.tenant].push_back(ctx->spec.target.id());
    out.targets.push_back(std::move(ctx));
  }
  out.quota.caps = to_caps(r.quotas);
  out.quota.reload_interval = r.quota_reload_interval;
  if (!cfg.source.empty() && !out.quota.members.empty()) {
    out.quota.reload = quota_reloader(cfg.source);
  }
  auto& used = prometheus::BuildGauge().Name("headroom_reactive_quota_used_replicas")
                   .Help("Replicas of a tenant's targets, summed").Register(m.registry());
  auto& caps = prometheus::BuildGauge().Name("headroom_reactive_quota_replicas")
                   .Help("A tenant's hard cap on replicas over its targets").Register(m.registry());
  out.quota.report = [&used, &caps](const std::string& tenant, int32_t in_use, int32_t cap) {
    used.Add({{"tenant", tenant}}).Set(in_use);
    caps.Add({{"tenant", tenant}}).Set(cap);
  };
  runtime::log::info("reactive", "reactive scaling", {{"targets", static_cast<int64_t>(out.targets.size())},
                                                      {"object_namespaces", static_cast<int64_t>(r.objects.namespaces.size())},
                                                      {"prometheus", r.prometheus.url}});
  return std::nullopt;
}

runtime::child_spec reactive_subtree(const runtime::config& cfg, std::shared_ptr<reactive_services> svc, runtime::metrics& m,
                                     runtime::readiness& ready) {
  runtime::child_spec out;
  out.name = "reactive";
  // The quota's relay lives as long as this subtree: every scaler reaches every quota incarnation.
  out.start = [opts = runtime::supervisor_options_from(cfg, "reactive", &m, &ready), svc, mp = &m](caf::actor_system& sys) {
    auto quota_relay = runtime::spawn_relay(sys, "reactive/quota");
    auto reader_relay = runtime::spawn_relay(sys, "reactive/metric_reader");
    std::vector<runtime::child_spec> children;
    runtime::child_spec quota;
    quota.name = "reactive_quota";
    quota.relay = quota_relay;
    quota.start = [svc](caf::actor_system& s) { return runtime::untyped(spawn_reactive_quota(s, svc->quota)); };
    children.push_back(std::move(quota));
    runtime::child_spec reader;
    reader.name = "metric_reader";
    reader.relay = reader_relay;
    reader.start = [svc](caf::actor_system& s) { return runtime::untyped(spawn_metric_reader(s, svc->reader)); };
    children.push_back(std::move(reader));
    for (const auto& ctx : svc->targets)
      children.push_back(scaler_child(ctx, quota_relay, reader_relay));
    // The supervisor's own address, for the catalog that adds and removes declared targets' scalers.
    const caf::actor parent = svc->declared.objects.empty() ? caf::actor{} : runtime::spawn_relay(sys, "reactive");
    if (parent)
      children.push_back(target_catalog_child(svc, parent, quota_relay, reader_relay, *mp));
    auto sup = runtime::untyped(runtime::spawn_supervisor(sys, opts, std::move(children)));
    runtime::own_relay(quota_relay, sup);
    runtime::own_relay(reader_relay, sup);
    if (parent) {
      caf::anon_send(parent, msg::relay_target{sup});
      runtime::own_relay(parent, sup);
    }
    return sup;
  };
  return out;
}

void reactive_mode::read(const std::string&, const YAML::Node& node) { read_section(node, config); }

std::optional<start_problem> reactive_mode::prepare(const services& s) {
  svc_ = std::make_shared<reactive_services>();
  svc_->events = s.events;
  if (auto problem = prepare_reactive(s.cfg, config, s.env, *s.api, s.clock, s.metrics, *svc_))
    return start_problem{*problem};
  if (!config.objects.namespaces.empty()) {
    if (s.informers == nullptr)
      return start_problem{"reactive.objects.namespaces: ReactiveTarget objects need a cluster"};
    watch_targets(*s.informers, config.objects.namespaces, *svc_);
  }
  return std::nullopt;
}

std::optional<runtime::child_spec> reactive_mode::leader_only(const runtime::config& cfg, runtime::metrics& m,
                                                              runtime::readiness& ready) {
  return reactive_subtree(cfg, svc_, m, ready);
}

std::vector<tree_line> reactive_mode::leader_only_tree() const {
  return {{0, "reactive (supervisor)"},
          {1, "reactive_quota"},
          {1, "metric_reader"},
          {1, "reactive_scaler/<namespace>/<kind>/<name> × one per target"},
          {1, "reactive_target_catalog (when reactive.objects.namespaces are set: adds, replaces and stops declared targets' scalers)"}};
}

std::unique_ptr<mode> make() { return std::make_unique<reactive_mode>(); }

}  // namespace headroom::modes::reactive
