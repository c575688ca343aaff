// Reactive scaling at scale: one headroom evaluating N targets (default 1,000) every second against
// the real Prometheus (Debian's package, 1 s scrapes of a test exporter with one series per
// target), on the test control plane. The targets are custom resources with a /scale subresource
// (no pods: the apiserver, not a fleet of kwok pods, is what the writes meet). A fraction of them
// (default 10 %) is held above target, so they step up once per cooldown; the rest stay in band.
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/reactive_scaling_bench
//       [--targets 1000] [--seconds 60] [--high 0.1]
//
// A second line ({"mode":"reactive_soak"}) judges the footprint sampled every second over the
// same period (bench/soak_probe.hpp); with `--seconds 1200` this is the reactive mode's soak, and a
// run of ≥ 600 s exits 1 unless it ended flat.
//
// Prints one JSON line: headroom's CPU (% of one core) and RSS over the measured period, the
// scale writes and their decision latency (evaluation due → /scale written) p50/p99/max, and how
// many evaluations were skipped because the previous one was still in flight, all counted over the
// measured period only (after every target was read and 5 s of evaluations), and the exporter's
// scrapes in that period.

#include <prometheus/gauge.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "runtime/health_routes.hpp"
#include "runtime/web_server.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"
#include "soak_probe.hpp"
#include "testenv/child_process.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/peer_process.hpp"
#include "testenv/prometheus_server.hpp"

using namespace std::chrono_literals;
using namespace headroom;

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string name_of(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "a-%04d", i);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int targets = 1000, seconds = 60;
  double high = 0.1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--targets"))
      targets = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seconds"))
      seconds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--high"))
      high = std::atof(argv[i + 1]);
  }
  auto* c = testenv::cluster::shared();
  if (c == nullptr) {
    std::cerr << "bench: no control plane: " << testenv::cluster::unavailable_reason() << "\n";
    return 1;
  }
  auto ok = [](const testenv::command_result& r, const char* what) {
    if (r.exit_code != 0) {
      std::cerr << "bench: " << what << ": " << r.err << "\n";
      std::exit(1);
    }
  };
  ok(c->kubectl({"apply", "-f", "-"}, R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: allocations.bench.headroom.dev}
spec:
  group: bench.headroom.dev
  scope: Namespaced
  names: {plural: allocations, singular: allocation, kind: Allocation}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {replicas: {type: integer}}}
            status: {type: object, properties: {replicas: {type: integer}}}
      subresources:
        scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
)"), "CRD");
  ok(c->kubectl({"wait", "--for", "condition=Established", "--timeout", "60s", "crd/allocations.bench.headroom.dev"}), "CRD established");
  c->kubectl({"create", "namespace", "bench"});
  std::string objects;
  for (int i = 0; i < targets; ++i)
    objects += "apiVersion: bench.headroom.dev/v1\nkind: Allocation\nmetadata: {name: " + name_of(i) +
               ", namespace: bench}\nspec: {replicas: 1}\n---\n";
  const auto created_at = std::chrono::steady_clock::now();
  ok(c->kubectl({"create", "-f", "-"}, objects), "allocations");
  std::cerr << "bench: " << targets << " allocations in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - created_at).count() << " s\n";

  runtime::metrics exporter_metrics;
  runtime::readiness exporter_ready;
  auto& load = prometheus::BuildGauge().Name("bench_load").Help("the bench's metric").Register(exporter_metrics.registry());
  std::vector<prometheus::Gauge*> gauges;
  for (int i = 0; i < targets; ++i) {
    gauges.push_back(&load.Add({{"target", name_of(i)}}));
    gauges.back()->Set(75);
  }
  runtime::web_server exporter{runtime::health_server("127.0.0.1:0", exporter_metrics, exporter_ready)};
  std::string why;
  auto prom = testenv::prometheus_server::start({"127.0.0.1:" + std::to_string(exporter.port())}, why);
  if (!prom) {
    std::cerr << "bench: " << why << "\n";
    return 1;
  }
  char tmpl[] = "/tmp/headroom-reactive-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::string y = "kubernetes:\n  kubeconfig: " + c->kubeconfig() + "\n  qps: 1000\n  burst: 2000\n" +
                  "leaderElection:\n  enabled: false\nreactive:\n  prometheus: {url: \"" + prom->url() + "\"}\n" +
                  "  defaults: {evaluationInterval: 1s, resolution: 1s, scaleUpWindow: 2s, scaleDownWindow: 2s, cooldown: 4s}\n"
                  "  targets:\n";
  for (int i = 0; i < targets; ++i)
    y += "    - scaleTargetRef: {apiVersion: bench.headroom.dev/v1, kind: Allocation, namespace: bench, name: " + name_of(i) +
         "}\n      minReplicas: 1\n      maxReplicas: 1000\n      metric: 'bench_load{target=\"" + name_of(i) +
         "\"}'\n      target: 100\n";
  std::ofstream(dir + "/headroom.yaml") << y;
  const int metrics_port = testenv::free_port();
  testenv::child_process agent{{HEADROOM_BINARY, "--config", dir + "/headroom.yaml", "--metrics-addr",
                                "127.0.0.1:" + std::to_string(metrics_port)},
                               {"PATH=/usr/bin:/bin"},
                               dir + "/agent.log"};
  // Warm-up: every target read (its "watching" line), and 5 s of evaluations.
  auto watching = [&] {
    std::ifstream in{dir + "/agent.log"};
    std::string line;
    int n = 0;
    while (std::getline(in, line))
      n += line.find("\"msg\":\"watching\"") != std::string::npos;
    return n;
  };
  if (!testenv::eventually([&] { return watching() >= targets || !agent.alive(); }, 120s) || !agent.alive()) {
    std::cerr << "bench: headroom did not read every target (" << watching() << "/" << targets << "): " << agent.log() << "\n";
    return 1;
  }
  std::this_thread::sleep_for(5s);

  const int n_high = static_cast<int>(high * targets);
  for (int i = 0; i < n_high; ++i)
    gauges[i]->Set(300);
  const auto log_start = [&] {
    std::ifstream in{dir + "/agent.log", std::ios::ate};
    return static_cast<long>(in.tellg());
  }();
  auto sum_in = [](const std::string& metrics, const std::string& name) {
    double total = 0;
    std::istringstream in{metrics};
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(name + "{", 0) == 0)
        total += std::stod(line.substr(line.rfind(' ') + 1));
    return total;
  };
  auto scrape = [&] { return testpeer::http_call("http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics").body; };
  const auto metrics_before = scrape();
  const auto before = bench::probe(agent.pid());
  double max_rss = before.rss_mib;
  int max_threads = before.threads;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<bench::sample> samples{before};  // the footprint every second (a soak with a long --seconds)
  for (int s = 0; s < seconds; ++s) {
    std::this_thread::sleep_for(1s);
    auto now = bench::probe(agent.pid());
    now.t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    max_rss = std::max(max_rss, now.rss_mib);
    max_threads = std::max(max_threads, now.threads);
    samples.push_back(now);
  }
  const auto after = bench::probe(agent.pid());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<double> latencies;
  {
    std::ifstream in{dir + "/agent.log"};
    in.seekg(log_start);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("\"msg\":\"scaled\"") == std::string::npos)
        continue;
      const auto at = line.find("\"latency_ms\":");
      if (at != std::string::npos)
        latencies.push_back(std::stod(line.substr(at + 13)));
    }
  }
  const auto metrics_after = scrape();
  auto delta = [&](const std::string& name) { return sum_in(metrics_after, name) - sum_in(metrics_before, name); };
  // The exporter's scrapes over the measured period: a failed one (the machine overloaded) leaves
  // the series stale for a moment, which headroom rightly counts as "no metric".
  auto instant = [&](const std::string& q) {
    auto r = testpeer::http_call(prom->url() + "/api/v1/query?query=" + q);
    const auto value = r.body.find("\"value\":[");
    const auto at = value == std::string::npos ? value : r.body.find(",\"", value);
    return at == std::string::npos ? -1.0 : std::atof(r.body.c_str() + at + 2);
  };
  const std::string range = "%5B" + std::to_string(seconds) + "s%5D";
  const double scrapes = instant("count_over_time(up%7Bjob%3D%22test%22%7D" + range + ")");
  const double scrapes_ok = instant("sum_over_time(up%7Bjob%3D%22test%22%7D" + range + ")");
  const double scrape_max = instant("max_over_time(scrape_duration_seconds%7Bjob%3D%22test%22%7D" + range + ")");
  // The metric reader's requests to Prometheus: how many, how many targets' queries each carried,
  // and their mean time from sent to answered.
  auto plain = [](const std::string& metrics, const std::string& name) {
    const auto at = ("\n" + metrics).find("\n" + name + " ");
    return at == std::string::npos ? 0.0 : std::stod(metrics.substr(at + name.size() + 1));
  };
  const double requests = delta("headroom_reactive_prometheus_requests_total");
  const double queries = delta("headroom_reactive_prometheus_queries_total");
  const double request_s = plain(metrics_after, "headroom_reactive_prometheus_request_seconds_sum") -
                           plain(metrics_before, "headroom_reactive_prometheus_request_seconds_sum");
  const double request_n = plain(metrics_after, "headroom_reactive_prometheus_request_seconds_count") -
                           plain(metrics_before, "headroom_reactive_prometheus_request_seconds_count");
  std::printf(
      "{\"mode\":\"reactive\",\"targets\":%d,\"high\":%d,\"seconds\":%.1f,\"cpu_percent\":%.2f,\"rss_mib\":%.1f,"
      "\"max_rss_mib\":%.1f,\"threads\":%d,\"scales\":%zu,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,"
      "\"skipped_evaluations\":%.0f,\"metric_failures\":%.0f,\"refused\":%.0f,\"scrapes\":%.0f,\"scrapes_failed\":%.0f,"
      "\"scrape_max_s\":%.3f,\"prometheus_requests_per_s\":%.1f,\"queries_per_request\":%.1f,\"request_mean_ms\":%.2f}\n",
      targets, n_high, wall, 100.0 * (after.cpu_s - before.cpu_s) / wall, after.rss_mib,
      max_rss, max_threads, latencies.size(), percentile(latencies, 0.5), percentile(latencies, 0.99),
      latencies.empty() ? 0.0 : *std::max_element(latencies.begin(), latencies.end()),
      delta("headroom_reactive_evaluations_skipped_total"), delta("headroom_reactive_metric_query_failures_total"),
      delta("headroom_reactive_scale_refused_total"), scrapes, scrapes - scrapes_ok, scrape_max, requests / wall,
      requests > 0 ? queries / requests : 0.0, request_n > 0 ? 1000.0 * request_s / request_n : 0.0);
  // The soak's verdict over the same samples (warm-up: the first tenth); meaningful for a long
  // --seconds (bench/soak_probe.hpp: what flat means).
  bench::write_samples_csv(samples);
  const auto soak = bench::summarize(samples, static_cast<int>(samples.size() / 10));
  std::printf("{\"mode\":\"reactive_soak\",\"targets\":%d,\"scales\":%zu,%s}\n", targets, latencies.size(), soak.json().c_str());
  agent.stop();
  prom->stop();
  return seconds >= 600 && !soak.flat ? 1 : 0;
}
