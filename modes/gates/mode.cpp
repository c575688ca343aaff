#include "modes/gates/mode.hpp"

#include <caf/all.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include "adapters/k8s/admission.hpp"
#include "adapters/k8s/client.hpp"
#include "runtime/log.hpp"
#include "runtime/relay.hpp"
#include "runtime/metrics.hpp"
#include "runtime/clock.hpp"

namespace headroom::modes::gates {

using namespace actors::gates;

namespace {

const prometheus::Histogram::BucketBoundaries latency_buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                              0.1,    0.25,  0.5,    1,     2.5};
// Kueue's gate-removal histogram sets no buckets, so it has client_golang's DefBuckets: the same
// ones here, so histogram_quantile interpolates both alike.
const prometheus::Histogram::BucketBoundaries kueue_buckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

controller_metrics make_controller_metrics(runtime::metrics& m) {
  auto& reg = m.registry();
  auto& capacity = prometheus::BuildGauge().Name("headroom_queue_capacity").Help("A Queue's capacity per resource (cpu in cores)").Register(reg);
  auto& allocated = prometheus::BuildGauge().Name("headroom_queue_allocated").Help("Requests of the queue's bound, unfinished pods").Register(reg);
  auto& reserved = prometheus::BuildGauge().Name("headroom_queue_reserved").Help("Requests of the queue's ungated pods not yet bound (unexpired)").Register(reg);
  auto& waiting = prometheus::BuildGauge().Name("headroom_queue_waiting").Help("Requests of the queue's pods still gated").Register(reg);
  auto& pods = prometheus::BuildGauge().Name("headroom_queue_pods").Help("The queue's pods by state: admitted (bound), reserved, gated").Register(reg);
  auto& ungated = prometheus::BuildCounter().Name("headroom_queue_ungated_total").Help("Pods whose queue gate headroom removed").Register(reg);
  auto& expired = prometheus::BuildCounter().Name("headroom_queue_reservations_expired_total")
                      .Help("Ungated pods unbound past the reservation timeout (their room released)").Register(reg);
  auto& errors = prometheus::BuildCounter().Name("headroom_gates_errors_total").Help("Gate controller writes that failed, unreadable Queues").Register(reg);
  auto& latency = prometheus::BuildHistogram().Name("headroom_queue_ungate_latency_seconds")
                      .Help("From the change that made room to the gate's removal acknowledged").Register(reg);
  // Read beside Kueue v0.19's kueue_pod_scheduling_gate_removal_seconds{name,cluster_queue,is_group}
  // on one Prometheus: the same interval (the admission decision to the pod's patch acknowledged),
  // Kueue's buckets, its labels (`queue` for `cluster_queue`, as in every headroom_queue_ family).
  // Timed to the microsecond here; Kueue's start is its Workload's Admitted lastTransitionTime read
  // back from the API server, whole seconds, so its series reads 0-1 s above its interval.
  auto& removal = prometheus::BuildHistogram().Name("headroom_queue_gate_removal_seconds")
                      .Help("From the decision to admit a pod to its gate's removal acknowledged (Kueue's "
                            "kueue_pod_scheduling_gate_removal_seconds, its buckets and labels)").Register(reg);
  auto scale = [](const std::string& resource, int64_t amount) { return resource == "cpu" ? amount / 1000.0 : static_cast<double>(amount); };
  for (const char* what : {"queue_invalid", "ungate", "condition", "status"})
    errors.Add({{"what", what}});
  controller_metrics out;
  out.report = [&, scale](const std::string& queue, const k8s::queue_status& s, const k8s::resource_amounts& cap) {
    for (const auto& [resource, amount] : cap)
      capacity.Add({{"queue", queue}, {"resource", resource}}).Set(scale(resource, amount));
    for (const auto& [resource, amount] : s.allocated)
      allocated.Add({{"queue", queue}, {"resource", resource}}).Set(scale(resource, amount));
    for (const auto& [resource, amount] : s.reserved)
      reserved.Add({{"queue", queue}, {"resource", resource}}).Set(scale(resource, amount));
    for (const auto& [resource, amount] : s.waiting)
      waiting.Add({{"queue", queue}, {"resource", resource}}).Set(scale(resource, amount));
    pods.Add({{"queue", queue}, {"state", "admitted"}}).Set(static_cast<double>(s.admitted_pods));
    pods.Add({{"queue", queue}, {"state", "reserved"}}).Set(static_cast<double>(s.reserved_pods));
    pods.Add({{"queue", queue}, {"state", "gated"}}).Set(static_cast<double>(s.gated_pods));
    // The queue's counters exist from its first report (at 0), so rate() and alerts see them
    // before the first ungate or expiry, and again after a restart.
    ungated.Add({{"queue", queue}});
    expired.Add({{"queue", queue}});
    latency.Add({{"queue", queue}}, latency_buckets);
  };
  out.forget = [&](const std::string& queue) {
    for (const char* state : {"admitted", "reserved", "gated"})
      pods.Remove(&pods.Add({{"queue", queue}, {"state", state}}));
  };
  out.ungated = [&](const std::string& queue, double since_change, double since_decision, bool group) {
    ungated.Add({{"queue", queue}}).Increment();
    latency.Add({{"queue", queue}}, latency_buckets).Observe(since_change);
    removal.Add({{"queue", queue}, {"name", std::string{k8s::admission::queue_gate}}, {"is_group", group ? "true" : "false"}}, kueue_buckets)
        .Observe(since_decision);
  };
  out.expired = [&](const std::string& queue) { expired.Add({{"queue", queue}}).Increment(); };
  out.error = [&](const char* what) { errors.Add({{"what", what}}).Increment(); };
  return out;
}

webhook_metrics make_webhook_metrics(runtime::metrics& m) {
  auto& reg = m.registry();
  auto& reviews = prometheus::BuildCounter().Name("headroom_admission_reviews_total")
                      .Help("AdmissionReviews answered, by outcome (malformed ones are allowed unchanged)").Register(reg);
  auto& duration = prometheus::BuildHistogram().Name("headroom_admission_duration_seconds")
                       .Help("From a review read to its answer").Register(reg).Add({}, latency_buckets);
  auto& expiry = prometheus::BuildGauge().Name("headroom_admission_certificate_expiry_timestamp_seconds")
                     .Help("notAfter of the webhook's serving certificate").Register(reg).Add({});
  auto& loads = prometheus::BuildCounter().Name("headroom_admission_certificate_loads_total")
                    .Help("Serving certificate (re)loads by result").Register(reg);
  // Made up front: the outcome counters exist (at 0) before the first review.
  std::map<std::string, prometheus::Counter*> by_outcome;
  for (const char* o : {"gated", "already_gated", "not_opted_in", "no_queue", "not_pod_create", "malformed", "enforced", "namespace_unknown"})
    by_outcome[o] = &reviews.Add({{"outcome", o}});
  webhook_metrics out;
  out.reviewed = [by_outcome](const char* outcome) {
    if (auto it = by_outcome.find(outcome); it != by_outcome.end())
      it->second->Increment();
  };
  out.latency = [&duration](double s) { duration.Observe(s); };
  out.certificate = [&expiry, &loads](bool ok, int64_t not_after) {
    loads.Add({{"result", ok ? "ok" : "error"}}).Increment();
    expiry.Set(static_cast<double>(not_after));
  };
  return out;
}

}  // namespace

void gates_services::stop() {
  if (pods)
    pods->stop();
  if (queues)
    queues->stop();
  if (namespaces)
    namespaces->stop();
}

std::optional<std::string> prepare_gates(const gates_section& g, k8s::client& kube, k8s::informer_set& informers,
                                         runtime::metrics& m, gates_services& out) {
  k8s::informer<k8s::pod>::options pod_opts;
  pod_opts.kind = k8s::kinds::pods;
  pod_opts.label_selector = std::string{k8s::admission::queue_label};  // only pods that name a queue
  out.pods = informers.get<k8s::pod>(pod_opts);
  out.pods->add_index(std::string{queue_index}, [](const k8s::pod& p) {
    const auto* q = p.meta.label(k8s::admission::queue_label);
    return q ? std::vector<std::string>{*q} : std::vector<std::string>{};
  });
  k8s::informer<k8s::unstructured>::options queue_opts;
  queue_opts.kind = kinds::queues;
  out.queues = informers.get<k8s::unstructured>(queue_opts);
  // Namespace enforcement: only the namespaces labelled headroom.dev/queue are cached.
  k8s::informer<k8s::unstructured>::options ns_opts;
  ns_opts.kind = k8s::resource_kind{"", "v1", "namespaces", false};
  ns_opts.label_selector = std::string{k8s::admission::queue_label};
  out.namespaces = informers.get<k8s::unstructured>(ns_opts);

  auto ctx = std::make_shared<controller_context>();
  ctx->kube = &kube;
  ctx->pods = out.pods;
  ctx->queues = out.queues;
  ctx->default_reservation_timeout = g.reservation_timeout;
  ctx->resync_interval = g.resync_interval;
  ctx->wall_clock = [&c = kube.clock()] { return c.wall(); };
  ctx->track_buffer = [&m](const runtime::buffer_stats_ptr& s) { m.buffers().track(s); };
  ctx->metrics = make_controller_metrics(m);
  ctx->events = out.events;
  out.controller = ctx;
  if (g.webhook.enabled) {
    auto w = std::make_shared<webhook_options>();
    w->listen = g.webhook.listen;
    w->cert_file = g.webhook.cert_file;
    w->key_file = g.webhook.key_file;
    w->reload_interval = g.webhook.cert_reload_interval;
    w->threads = static_cast<int>(g.webhook.threads);
    w->metrics = make_webhook_metrics(m);
    w->namespace_queue = [ns = out.namespaces](const std::string& name) -> std::optional<std::string> {
      auto n = ns->get("", name);
      const auto* q = n ? n->meta.label(k8s::admission::queue_label) : nullptr;
      if (q == nullptr || q->empty())
        return std::nullopt;
      return *q;
    };
    w->namespaces_ready = [ns = out.namespaces] { return ns->synced(); };
    out.webhook = w;
    out.namespaces->start();
  }
  out.queues->start();
  out.pods->start();
  runtime::log::info("gates", "gate-controlled scheduling",
                     {{"webhook", g.webhook.enabled ? g.webhook.listen : std::string{"off"}},
                      {"reservation_timeout_s", static_cast<int64_t>(g.reservation_timeout.count() / 1000)}});
  return std::nullopt;
}

runtime::child_spec gates_webhook_child(std::shared_ptr<gates_services> svc) {
  runtime::child_spec out;
  out.name = "admission_webhook";
  out.start = [svc](caf::actor_system& sys) { return runtime::untyped(spawn_admission_webhook(sys, svc->webhook)); };
  return out;
}

runtime::child_spec gates_subtree(const runtime::config& cfg, std::shared_ptr<gates_services> svc, runtime::metrics& m,
                                  runtime::readiness& ready) {
  runtime::child_spec controller;
  controller.name = "gate_controller";
  controller.start = [svc](caf::actor_system& sys) { return runtime::untyped(spawn_gate_controller(sys, svc->controller)); };
  std::vector<runtime::child_spec> children;
  children.push_back(std::move(controller));
  auto out = runtime::supervisor_child(runtime::supervisor_options_from(cfg, "gates", &m, &ready), std::move(children));
  return out;
}

void gates_mode::read(const std::string&, const YAML::Node& node) { read_section(node, config); }

std::optional<start_problem> gates_mode::prepare(const services& s) {
  svc_ = std::make_shared<gates_services>();
  svc_->events = s.events;
  if (auto problem = prepare_gates(config, *s.api, *s.informers, s.metrics, *svc_))
    return start_problem{*problem};
  return std::nullopt;
}

// Every replica serves the webhook: the API server calls whichever one the Service picks.
std::vector<runtime::child_spec> gates_mode::every_replica() {
  if (!svc_->webhook)
    return {};
  return {gates_webhook_child(svc_)};
}

std::optional<runtime::child_spec> gates_mode::leader_only(const runtime::config& cfg, runtime::metrics& m,
                                                           runtime::readiness& ready) {
  return gates_subtree(cfg, svc_, m, ready);
}

void gates_mode::stop() {
  if (svc_)
    svc_->stop();
}

std::vector<tree_line> gates_mode::every_replica_tree() const { return {{0, "admission_webhook"}}; }
std::vector<tree_line> gates_mode::leader_only_tree() const { return {{0, "gates (supervisor)"}, {1, "gate_controller"}}; }

std::unique_ptr<mode> make() { return std::make_unique<gates_mode>(); }

}  // namespace headroom::modes::gates
