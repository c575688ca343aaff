// Gate-controlled scheduling's two latencies on the test control plane, with the headroom binary:
//
// 1. Queue room freed → next pod's gate removed. A Queue holds `--capacity` pods (its "pods"
//    resource) on a large kwok node; `--events` more wait gated behind them. One event: the bench
//    deletes an admitted pod (grace 0) and waits for the next gate to come off. Both times are
//    taken from one watch of its own, as any client would see them: from the DELETED event to the
//    MODIFIED event without the gate. Goal: p99 ≤ 100 ms.
// 2. The admission webhook as the API server sees it: its histogram
//    apiserver_admission_webhook_admission_duration_seconds over every pod the run creates
//    (coarse buckets: the fraction within 5 ms and 25 ms), beside headroom's own
//    headroom_admission_duration_seconds (fine buckets, p99 estimated). Goal: p99 ≤ 10 ms.
//
// 3. The soak (#19): the agent's RSS, descriptors, threads and policy-buffer depths sampled every
//    second through the events (bench/soak_probe.hpp says what flat means); `--events 2000` is
//    the gates mode's equivalent of the 2,000-job soak, and a run of ≥ 1,000 events fails unless
//    the footprint ends flat.
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/gates_bench [--events 500] [--capacity 20]
//
// Prints one JSON line per measure ({"mode": …}).
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "adapters/k8s/client.hpp"
#include "testenv/transport_options.hpp"
#include "adapters/k8s/connection.hpp"
#include "testenv/child_process.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/test_certs.hpp"
#include "histogram_text.hpp"
#include "soak_probe.hpp"

using namespace std::chrono_literals;
using namespace headroom;
using steady = std::chrono::steady_clock;

namespace {

using bench::bucket_quantile;
using bench::buckets;
using bench::fraction_within;
using bench::percentile;

const std::string gate = "headroom.dev/queue-allocation-gate";
const std::string ns = "gates-bench";

std::string pod_yaml(int i) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p-" + std::to_string(i) + "\n  namespace: " + ns +
         "\n  labels: {headroom.dev/queue: bench}\n  annotations: {" + gate + ": \"true\"}\nspec:\n"
         "  terminationGracePeriodSeconds: 0\n  nodeSelector: {headroom.test/pool: gates-bench}\n"
         "  tolerations: [{key: headroom.test/dedicated, operator: Exists, effect: NoSchedule}]\n"
         "  containers:\n  - name: main\n    image: registry.k8s.io/pause:3.10\n    resources: {requests: {cpu: 10m, memory: 8Mi}}\n";
}

// What the watch saw: when each pod went away, when each lost the gate.
struct seen {
  std::mutex m;
  std::condition_variable cv;
  std::map<std::string, steady::time_point> deleted, ungated;
};

}  // namespace

int main(int argc, char** argv) {
  int events = 500, capacity = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--events")
      events = std::stoi(argv[i + 1]);
    else if (a == "--capacity")
      capacity = std::stoi(argv[i + 1]);
  }
  auto* c = testenv::cluster::shared();
  if (c == nullptr) {
    std::fprintf(stderr, "gates_bench: no control plane: %s\n", testenv::cluster::unavailable_reason().c_str());
    return 1;
  }
  char tmpl[] = "/tmp/headroom-gates-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const auto ca = testenv::make_ca("bench-ca");
  const auto serving = testenv::issue_server_cert(ca, "webhook", {}, {"127.0.0.1"});
  std::ofstream(dir + "/tls.crt") << serving.cert;
  std::ofstream(dir + "/tls.key") << serving.key;
  const int port = testenv::free_port(), metrics_port = testenv::free_port();
  std::ofstream(dir + "/headroom.yaml") << "kubernetes:\n  kubeconfig: " << c->kubeconfig()
                                        << "\nleaderElection:\n  enabled: false\ngates:\n  enabled: true\n  webhook:\n    listen: 127.0.0.1:"
                                        << port << "\n    certFile: " << dir << "/tls.crt\n    keyFile: " << dir << "/tls.key\n";
  c->kubectl({"apply", "-f", std::string{HEADROOM_SOURCE_DIR} + "/deploy/crds/queues.yaml"});
  c->kubectl({"wait", "--for", "condition=Established", "--timeout", "30s", "crd/queues.headroom.dev"});
  c->kubectl({"apply", "-f", "-"}, testenv::gates_webhook_config(port, ca.cert));
  c->kubectl({"create", "namespace", ns});
  c->kubectl({"apply", "-f", "-"}, R"(apiVersion: v1
kind: Node
metadata:
  name: gates-bench
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: gates-bench, type: kwok, headroom.test/pool: gates-bench}
spec:
  taints: [{key: headroom.test/dedicated, value: gates-bench, effect: NoSchedule}]
status:
  allocatable: {cpu: "1000", memory: 4000Gi, pods: "5000"}
  capacity: {cpu: "1000", memory: 4000Gi, pods: "5000"}
)");
  c->kubectl({"apply", "-f", "-"}, "apiVersion: headroom.dev/v1alpha1\nkind: Queue\nmetadata: {name: bench}\nspec:\n  capacity: {pods: \"" +
                                       std::to_string(capacity) + "\"}\n");
  testenv::child_process agent{{HEADROOM_BINARY, "--config", dir + "/headroom.yaml", "--metrics-addr",
                                "127.0.0.1:" + std::to_string(metrics_port), "--log-level", "warn"},
                               {"PATH=/usr/bin:/bin"}, dir + "/agent.log"};
  std::this_thread::sleep_for(2s);

  // Our own watch, through headroom's client.
  auto conn = std::get<k8s::connection>(k8s::load_kubeconfig(c->kubeconfig(), ""));
  k8s::transport io{headroom::testenv::real_time_transport()};
  k8s::client api{conn, io};
  seen s;
  k8s::watch_options wo;
  wo.label_selector = "headroom.dev/queue=bench";
  api.watch(k8s::kinds::pods, ns, wo,
            [&s](std::string_view line) {
              const auto at = steady::now();
              simdjson::dom::parser p;
              simdjson::dom::element e;
              if (p.parse(line.data(), line.size()).get(e) != simdjson::SUCCESS)
                return;
              std::string_view type, name;
              if (e["type"].get(type) || e["object"]["metadata"]["name"].get(name))
                return;
              bool gated = false;
              simdjson::dom::array gates;
              if (e["object"]["spec"]["schedulingGates"].get(gates) == simdjson::SUCCESS)
                for (auto g : gates) {
                  std::string_view n;
                  if (g["name"].get(n) == simdjson::SUCCESS && n == gate)
                    gated = true;
                }
              std::lock_guard lock{s.m};
              if (type == "DELETED")
                s.deleted.emplace(std::string{name}, at);
              else if (!gated)
                s.ungated.emplace(std::string{name}, at);
              s.cv.notify_all();
            },
            [](std::optional<k8s::api_error>) {});

  const int total = capacity + events;
  std::string all;
  for (int i = 0; i < total; ++i) {
    all += pod_yaml(i) + "---\n";
    if ((i + 1) % 100 == 0 || i + 1 == total) {
      c->kubectl({"apply", "-f", "-"}, all);
      all.clear();
      std::this_thread::sleep_for(1100ms);  // creation seconds distinct per batch: the order is the age
    }
  }
  auto wait_ungated = [&s](const std::string& name, std::chrono::seconds limit) {
    std::unique_lock lock{s.m};
    return s.cv.wait_for(lock, limit, [&] { return s.ungated.count(name) > 0; });
  };
  for (int i = 0; i < capacity; ++i)
    if (!wait_ungated("p-" + std::to_string(i), 60s)) {
      std::fprintf(stderr, "gates_bench: p-%d never admitted\n%s\n", i, agent.log().c_str());
      return 1;
    }
  // The footprint, every second from here to the last event (a thread of its own).
  std::atomic<int> done_events{0};
  bench::sampler sampling{agent.pid(), "http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics", done_events};
  std::vector<double> latencies;
  std::vector<std::string> admitted;
  for (int i = 0; i < capacity; ++i)
    admitted.push_back("p-" + std::to_string(i));
  int next = capacity;
  for (int ev = 0; ev < events; ++ev) {
    // The oldest admitted pod goes; the oldest gated one comes in (the same creation batch ties on
    // time: by name then, which is not numeric — so wait for *any* new ungating).
    const std::string victim = admitted.front();
    admitted.erase(admitted.begin());
    size_t before;
    {
      std::lock_guard lock{s.m};
      before = s.ungated.size();
    }
    k8s::delete_options del;
    del.grace_period_seconds = 0;
    api.remove(k8s::kinds::pods, ns, victim, del, [](k8s::api_result) {});
    std::unique_lock lock{s.m};
    if (!s.cv.wait_for(lock, 30s, [&] { return s.ungated.size() > before && s.deleted.count(victim) > 0; })) {
      std::fprintf(stderr, "gates_bench: event %d: nothing ungated after %s went\n", ev, victim.c_str());
      break;
    }
    // The newly ungated pod: the one with the latest ungating time.
    std::string newest;
    steady::time_point when{};
    for (const auto& [name, t] : s.ungated)
      if (t >= when && std::find(admitted.begin(), admitted.end(), name) == admitted.end() && s.deleted.count(name) == 0) {
        when = t;
        newest = name;
      }
    admitted.push_back(newest);
    latencies.push_back(std::chrono::duration<double, std::milli>(when - s.deleted[victim]).count());
    ++next;
    done_events = ev + 1;
  }
  const auto samples = sampling.stop();
  int warm_index = 0;  // after the first tenth of the events
  while (warm_index < static_cast<int>(samples.size()) && samples[warm_index].completed < events / 10)
    ++warm_index;
  bench::write_samples_csv(samples);
  const auto soak = bench::summarize(samples, warm_index);
  const auto apiserver = c->kubectl({"get", "--raw", "/metrics"}).out;
  std::string ours;
  {
    auto r = testenv::run_command({"curl", "-fsS", "http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics"});
    ours = r.out;
  }
  agent.stop();
  const auto hook_buckets = buckets(apiserver, "apiserver_admission_webhook_admission_duration_seconds");
  const auto own_buckets = buckets(ours, "headroom_admission_duration_seconds");
  std::printf("{\"mode\":\"ungate_latency\",\"events\":%zu,\"capacity\":%d,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"max_ms\":%.1f}\n",
              latencies.size(), capacity, percentile(latencies, 0.5), percentile(latencies, 0.99),
              latencies.empty() ? 0.0 : *std::max_element(latencies.begin(), latencies.end()));
  std::printf("{\"mode\":\"webhook_latency\",\"calls\":%.0f,\"apiserver_within_5ms\":%.3f,\"apiserver_within_25ms\":%.3f,"
              "\"apiserver_p99_bucket_s\":%g,\"headroom_p99_bucket_s\":%g,\"headroom_within_1ms\":%.3f}\n",
              hook_buckets.empty() ? 0.0 : hook_buckets.rbegin()->second, fraction_within(hook_buckets, 0.005),
              fraction_within(hook_buckets, 0.025), bucket_quantile(hook_buckets, 0.99), bucket_quantile(own_buckets, 0.99),
              fraction_within(own_buckets, 0.001));
  std::printf("{\"mode\":\"gates_soak\",\"events\":%zu,%s}\n", latencies.size(), soak.json().c_str());
  return latencies.size() == static_cast<size_t>(events) && (events < 1000 || soak.flat) ? 0 : 1;
}
