// The scale sets' Prometheus series: ARC's listener metrics under their names and labels, so ARC's
// published dashboard and alerts read headroom's (docs/metrics.md), one series set per scale set.

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <optional>

#include "modes/scale_sets/mode.hpp"
#include "modes/shared/series_table.hpp"
#include "runtime/metrics.hpp"
#include "runtime/rfc3339.hpp"

namespace headroom::modes::scale_sets {

using namespace actors::capacity;

namespace {

// ARC's listener metrics (cmd/ghalistener/metrics in actions-runner-controller: the same names,
// labels and buckets) plus headroom's own, per scale set.
constexpr series gauges[] = {
    {"gha_assigned_jobs", "Number of jobs assigned to this scale set."},
    {"gha_running_jobs", "Number of jobs running (or about to be run)."},
    {"gha_registered_runners", "Number of runners registered by the scale set."},
    {"gha_busy_runners", "Number of registered runners running a job."},
    {"gha_idle_runners", "Number of registered runners not running a job."},
    {"gha_min_runners", "Minimum number of runners (headroom keeps no idle runners: always 0; warm capacity is "
                        "placeholder pairs, headroom_capacity_advertised_pairs)."},
    {"gha_max_runners", "Maximum number of runners."},
    {"gha_desired_runners", "Number of runners desired by the scale set: min(assigned, advertised capacity, maxRunners)."},
    // ARC's controller series (headroom makes the runner pods itself): its runner pods by phase.
    {"gha_controller_pending_ephemeral_runners", "Number of ephemeral runners in a pending state."},
    {"gha_controller_running_ephemeral_runners", "Number of ephemeral runners in a running state."},
    {"gha_controller_failed_ephemeral_runners", "Number of ephemeral runners in a failed state."},
    {"gha_controller_running_listeners", "Number of listeners in a running state (1 while the scale set's Actions session is open)."},
    {"headroom_capacity_advertised_max_runners", "X-ScaleSetMaxCapacity: the capacity advertised on the next poll"},
    {"headroom_capacity_advertised_pairs", "Placeholder pairs the monitor holds"},
    {"headroom_capacity_advertised_running_pairs", "Pairs whose two placeholders are Running"},
    {"headroom_capacity_advertised_placeholder_pods", "Placeholder pods of this scale set"},
    {"headroom_capacity_advertised_queued_jobs", "Jobs queued for this scale set's labels: the larger of the HUD's count and the Actions Service's (totalAvailableJobs)"},
    {"headroom_capacity_nodepool_limited", "1 while every Karpenter NodePool that can make this scale set's nodes is at its limits"},
    {"headroom_capacity_warm_pool_pairs", "The warm pool now (pairs wanted with no job queued): proactiveCapacity, or above it in a capacityAware.warmPool schedule window or following the queue (only with warmPool)"},
    {"headroom_capacity_pairs_withheld", "Pairs wanted but not made: the NodePools are at their limits, or maxBurstCapacity pairs are pending, or the scale set's share of burstBudget.maxPendingPairs, or a runner pod is preempting its way into a room (up to 10 s)"},
    {"headroom_capacity_burst_share", "The pending pairs this scale set may hold: its fair share of the cluster's burstBudget.maxPendingPairs (only when that is set)"},
    {"headroom_capacity_workflow_pods_waiting", "Workflow pods the scheduler found no room for and no workflow placeholder holds any for (they wait for a node)"},
    {"headroom_runners_awaiting_workflow_room", "kubernetes mode: registered runners whose pod waits to be made until a pair of the scale set is placed and free (a runner goes only into a pair's room)"},
    {"headroom_arc_runner_set_unavailable", "arc mode: 1 while ARC's EphemeralRunnerSet cannot be found or patched (retried with backoff)"},
};
constexpr series counters[] = {
    {"headroom_capacity_advertised_pair_creates_total", "Placeholder pairs created"},
    {"headroom_capacity_advertised_pair_deletes_total", "Placeholder pairs stopped on scale-down"},
    {"headroom_capacity_advertised_pair_timeouts_total", "Placeholder pairs not Running within placeholderReadyTimeout"},
    {"headroom_capacity_placeholder_renewals_total", "Ready pairs past placeholderTTL replaced by a successor placed first"},
    {"headroom_capacity_pairs_adopted_total", "Placed pairs an earlier process (or a restarted monitor) left, adopted as they are instead of placed again"},
    {"headroom_capacity_workflow_rooms_given_total", "Workflow pods given a held room: the workflow placeholder of a hand-off (or a ready pair) deleted for them"},
    {"headroom_capacity_workflow_pods_ungated_total", "kubernetes-novolume: workflow pods ungated by headroom (the hook template gates them), pinned to the node of the room held for them where one was"},
    {"headroom_runner_health_actions_total", "Runner pods replaced or removed by the health check"},
    {"headroom_orphan_runners_removed_total", "GitHub runners of the scale set with no pod, removed by the provisioner's sweep"},
    {"headroom_idle_runners_removed_total", "Idle runners beyond the desired count, removed from GitHub and their pods deleted (scale-down)"},
};

// ARC's runtimeBuckets, for the job startup and execution histograms.
const prometheus::Histogram::BucketBoundaries arc_job_buckets{
    0.01, 0.05, 0.1, 0.5, 1,   2,   3,   4,   5,   6,   7,   8,   9,   10,   12,   15,   18,   20,   25,   30,   40,  50,  60,
    70,   80,   90,  100, 110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900, 1200, 1800, 2400, 3000, 3600};

// Seconds since the epoch of an RFC 3339 time ("2026-11-22T09:00:00.123Z"); nullopt when unreadable.
std::optional<double> parse_time(const std::string& t) { return runtime::parse_rfc3339(t); }

// The job series: ARC labels them by the job (its repository and owner, its name and event, the
// result once completed) and the enterprise; one headroom serves many scale sets, so the scale
// set's name and namespace are there too.
struct job_series {
  prometheus::Family<prometheus::Counter>& started;
  prometheus::Family<prometheus::Counter>& completed;
  prometheus::Family<prometheus::Histogram>& startup;
  prometheus::Family<prometheus::Histogram>& execution;
  std::map<std::string, std::string> scale_set;  // name, namespace, enterprise and the dashboard's two

  void operator()(const msg::job_transition& j) const {
    auto labels = scale_set;
    labels["repository"] = j.repository;
    labels["organization"] = j.owner;
    labels["job_name"] = j.job_name;
    labels["event_name"] = j.event_name;
    auto assigned = parse_time(j.scale_set_assign_time), started_at = parse_time(j.runner_assign_time);
    if (j.type == msg::job_transition::started) {
      started.Add(labels).Increment();
      if (assigned && started_at && *started_at >= *assigned)
        startup.Add(labels, arc_job_buckets).Observe(*started_at - *assigned);
      return;
    }
    labels["job_result"] = j.result;
    completed.Add(labels).Increment();
    auto finished = parse_time(j.finish_time);
    if (started_at && finished && *finished >= *started_at)
      execution.Add(labels, arc_job_buckets).Observe(*finished - *started_at);
  }
};

}  // namespace

scale_set_metrics make_metrics(runtime::metrics& m, const scale_set_spec& spec, const github::config_url& where) {
  auto& reg = m.registry();
  // ARC's published dashboard selects by the listener pod's labels, which Prometheus copies onto
  // the series (actions_github_com_scale_set_{name,namespace}); one headroom pod serves every
  // scale set, so it writes them itself.
  const std::map<std::string, std::string> scale_set{{"name", spec.name},
                                                     {"namespace", spec.ns},
                                                     {"enterprise", where.enterprise},
                                                     {"actions_github_com_scale_set_name", spec.name},
                                                     {"actions_github_com_scale_set_namespace", spec.ns}};
  auto labels = scale_set;
  labels["organization"] = where.organization;
  labels["repository"] = where.repository;
  auto table = std::make_shared<const series_set>(m, gauges, counters, labels);
  const prometheus::Histogram::BucketBoundaries propagation{0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 60};
  auto& propagation_seconds = prometheus::BuildHistogram()
                                  .Name("headroom_capacity_propagation_seconds")
                                  .Help("From a capacity change to the first poll that carries it")
                                  .Register(reg)
                                  .Add(labels, propagation);
  // The capacity decision (one recompute: count the scale set's pods, size its pairs, publish):
  // microseconds per change are the goal, so the buckets start at 10 µs.
  const prometheus::Histogram::BucketBoundaries decision{1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 0.1};
  auto& decision_seconds = prometheus::BuildHistogram()
                               .Name("headroom_capacity_decision_seconds")
                               .Help("Time of one capacity decision (count the scale set's pods, size its pairs, publish)")
                               .Register(reg)
                               .Add(labels, decision);
  // The hops of a watch event's way to the poll that carries its capacity, for every scale set
  // together (one series per hop: a question about the process, not one scale set).
  const prometheus::Histogram::BucketBoundaries hops{1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025,
                                                     0.05, 0.1,    0.25,   0.5,  1,    2.5,    5};
  auto& hop_family = prometheus::BuildHistogram()
                         .Name("headroom_capacity_hop_seconds")
                         .Help("One hop of a pod watch event's way to the poll that carries the capacity it changed: "
                               "event_to_monitor, monitor_to_judged, judged_to_published, published_to_poll, and the "
                               "whole event_to_poll")
                         .Register(reg);
  std::map<std::string, prometheus::Histogram*, std::less<>> by_hop;
  for (const char* h : {"event_to_monitor", "monitor_to_judged", "judged_to_published", "published_to_poll", "event_to_poll"})
    by_hop[h] = &hop_family.Add({{"hop", h}}, hops);
  scale_set_metrics out;
  out.hop = [by_hop = std::move(by_hop)](const char* hop, double v) {
    if (auto it = by_hop.find(std::string_view{hop}); it != by_hop.end())
      it->second->Observe(v);
  };
  out.set = [table](const char* name, int64_t v) { table->set(name, static_cast<double>(v)); };
  out.add = [table](const char* name, int64_t v) { table->add(name, static_cast<double>(v)); };
  out.observe = [&propagation_seconds, &decision_seconds](const char* name, double v) {
    if (std::string_view{name} == "headroom_capacity_propagation_seconds")
      propagation_seconds.Observe(v);
    else if (std::string_view{name} == "headroom_capacity_decision_seconds")
      decision_seconds.Observe(v);
  };
  auto& errors = prometheus::BuildCounter()
                     .Name("headroom_actions_errors_total")
                     .Help("Actions Service calls of the listener that failed after the client's retries, by error kind")
                     .Register(reg);
  out.actions_error = [&errors, labels](std::string_view kind) {
    auto l = labels;
    l["kind"] = std::string{kind};
    errors.Add(l).Increment();
  };
  out.job = job_series{
      prometheus::BuildCounter().Name("gha_started_jobs_total").Help("Total number of jobs started.").Register(reg),
      prometheus::BuildCounter().Name("gha_completed_jobs_total").Help("Total number of jobs completed.").Register(reg),
      prometheus::BuildHistogram()
          .Name("gha_job_startup_duration_seconds")
          .Help("Time spent waiting for workflow job to get started on the runner owned by the scale set (in seconds).")
          .Register(reg),
      prometheus::BuildHistogram()
          .Name("gha_job_execution_duration_seconds")
          .Help("Time spent executing workflow jobs by the scale set (in seconds).")
          .Register(reg),
      scale_set};
  return out;
}

// The cluster's burst budget: its limit, and what is pending, committed and waiting under it.
actors::capacity::burst_budget_metrics burst_budget_metrics(runtime::metrics& m, int64_t limit) {
  auto& family = prometheus::BuildGauge()
                     .Name("headroom_burst_budget_pairs")
                     .Help("The cluster's budget of pending placeholder pairs (burstBudget.maxPendingPairs), by state: "
                           "limit, pending (made, not placed), committed (pending or granted to a scale set) and "
                           "waiting (wanted beyond the shares)")
                     .Register(m.registry());
  auto* pending = &family.Add({{"state", "pending"}});
  auto* committed = &family.Add({{"state", "committed"}});
  auto* waiting = &family.Add({{"state", "waiting"}});
  family.Add({{"state", "limit"}}).Set(static_cast<double>(limit));
  return {[pending, committed, waiting](int64_t p, int64_t c, int64_t w) {
    pending->Set(static_cast<double>(p));
    committed->Set(static_cast<double>(c));
    waiting->Set(static_cast<double>(w));
  }};
}

// The HUD's fetches: how long each took, by outcome (the design's "HUD API latency" metric).
actors::capacity::hud_metrics hud_fetch_metrics(runtime::metrics& m) {
  auto& family = prometheus::BuildHistogram()
                     .Name("headroom_hud_fetch_duration_seconds")
                     .Help("How long each fetch of the HUD's queued-jobs aggregate took, by outcome (ok, error)")
                     .Register(m.registry());
  const prometheus::Histogram::BucketBoundaries buckets{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  auto* ok = &family.Add({{"outcome", "ok"}}, buckets);
  auto* error = &family.Add({{"outcome", "error"}}, buckets);
  return {[ok, error](double seconds, bool fine) { (fine ? ok : error)->Observe(seconds); }};
}

}  // namespace headroom::modes::scale_sets
