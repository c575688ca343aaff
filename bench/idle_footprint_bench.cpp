// Idle footprint of the modes other than scale sets (whose footprint with 10,000 cached pods is
// capacity_soak_bench's): the headroom binary started fresh in one mode on the test control
// plane, with its dependencies there and nothing to do - gates (the webhook serving, the Queue
// and pod informers synced, one Queue), scheduler (SQLite store, the webhook server, no job),
// BigFleet (a session open at the shard peer, roll-ups every 10 s), reactive (one target on the
// real Prometheus, evaluated every 15 s). After `--settle` seconds (20), RSS and CPU are sampled
// every second for `--seconds` (60). Goal, as for a scale set: RSS ≤ 30 MiB, CPU ≤ 1 % of a core.
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/idle_footprint_bench [--seconds 60] [--settle 20] [MODE…]
//
// Prints one JSON line per mode; exits 1 when a mode did not start or missed the goal.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "soak_probe.hpp"
#include "testenv/child_process.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/peer_process.hpp"
#include "testenv/prometheus_server.hpp"
#include "testenv/test_certs.hpp"

using namespace headroom;
using namespace std::chrono_literals;

namespace {

struct mode_run {
  std::string config;                  // the headroom.yaml
  std::vector<std::string> env;        // beside PATH
  std::unique_ptr<testpeer::peer_process> peer;
  std::unique_ptr<testenv::prometheus_server> prom;
  std::string why;
};

mode_run prepare(testenv::cluster& c, const std::string& mode, const std::string& dir) {
  mode_run m;
  const std::string kube = "kubernetes: {kubeconfig: " + c.kubeconfig() + "}\nleaderElection: {enabled: false}\n";
  if (mode == "gates") {
    c.kubectl({"apply", "-f", std::string{HEADROOM_SOURCE_DIR} + "/deploy/crds/queues.yaml"});
    c.kubectl({"wait", "--for", "condition=Established", "--timeout", "30s", "crd/queues.headroom.dev"});
    c.kubectl({"apply", "-f", "-"}, "apiVersion: headroom.dev/v1alpha1\nkind: Queue\nmetadata: {name: idle}\nspec:\n  capacity: {cpu: \"4\"}\n");
    const auto ca = testenv::make_ca("headroom-idle-ca");
    const auto serving = testenv::issue_server_cert(ca, "headroom-webhook", {"localhost"}, {"127.0.0.1"});
    std::ofstream(dir + "/tls.crt") << serving.cert;
    std::ofstream(dir + "/tls.key") << serving.key;
    m.config = kube + "gates:\n  enabled: true\n  webhook: {listen: 127.0.0.1:" + std::to_string(testenv::free_port()) + ", certFile: " + dir +
               "/tls.crt, keyFile: " + dir + "/tls.key}\n";
  } else if (mode == "scheduler") {
    c.kubectl({"create", "namespace", "idle-sched"});
    m.config = kube + "scheduler:\n  enabled: true\n  listen: 127.0.0.1:" + std::to_string(testenv::free_port()) +
               "\n  githubUrl: http://127.0.0.1:9\n  namespace: idle-sched\n  store: {sqlitePath: " + dir +
               "/jobs.db}\n  runner: {image: runner:idle, resources: {cpu: 100m, memory: 128Mi}}\n";
    m.env.push_back("HEADROOM_WEBHOOK_SECRET=whsec_idle_footprint_0123456789");
    m.env.push_back("HEADROOM_GITHUB_TOKEN=ghp_idle_footprint_never_used");  // no job: GitHub is never called
  } else if (mode == "bigfleet") {
    c.kubectl({"apply", "-f", std::string{HEADROOM_SOURCE_DIR} + "/deploy/crds/"});
    c.kubectl({"wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"});
    m.peer = testpeer::peer_process::start("tests/peers/bigfleet-shard/build.sh", {"--cluster-id", "idle"}, m.why);
    if (!m.peer)
      return m;
    m.config = kube + "bigfleet:\n  enabled: true\n  clusterId: idle\n  shard: \"" + m.peer->ready("grpc") + "\"\n";
  } else if (mode == "reactive") {
    c.kubectl({"create", "namespace", "idle-reactive"});
    c.kubectl({"apply", "-f", "-"},
              "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: idle, namespace: idle-reactive}\nspec:\n  replicas: 1\n"
              "  selector: {matchLabels: {app: idle}}\n  template:\n    metadata: {labels: {app: idle}}\n"
              "    spec: {containers: [{name: c, image: busybox}]}\n");
    m.prom = testenv::prometheus_server::start({}, m.why);
    if (!m.prom)
      return m;
    m.config = kube + "reactive:\n  prometheus: {url: \"" + m.prom->url() +
               "\"}\n  targets:\n    - scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, namespace: idle-reactive, name: idle}\n"
               "      minReplicas: 1\n      maxReplicas: 3\n      metric: 'vector(75)'\n      target: 100\n";
  } else {
    m.why = "no such mode: " + mode;
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 60, settle = 20;
  std::vector<std::string> modes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc)
      seconds = std::stoi(argv[++i]);
    else if (a == "--settle" && i + 1 < argc)
      settle = std::stoi(argv[++i]);
    else
      modes.push_back(a);
  }
  if (modes.empty())
    modes = {"gates", "scheduler", "bigfleet", "reactive"};
  auto* c = testenv::cluster::shared();
  if (!c) {
    std::fprintf(stderr, "idle_footprint_bench: control plane unavailable: %s\n", testenv::cluster::unavailable_reason().c_str());
    return 77;
  }
  bool all_ok = true;
  for (const auto& mode : modes) {
    const std::string dir = c->dir() + "/idle-" + mode;
    std::filesystem::create_directories(dir);
    auto m = prepare(*c, mode, dir);
    if (m.config.empty()) {
      std::fprintf(stderr, "idle_footprint_bench: %s: %s\n", mode.c_str(), m.why.c_str());
      all_ok = false;
      continue;
    }
    std::ofstream(dir + "/headroom.yaml") << m.config;
    const int metrics_port = testenv::free_port();
    std::vector<std::string> env = m.env;
    env.push_back("PATH=/usr/bin:/bin");
    testenv::child_process agent{{HEADROOM_BINARY, "--config", dir + "/headroom.yaml", "--metrics-addr",
                                  "127.0.0.1:" + std::to_string(metrics_port), "--log-level", "warn"},
                                 env, dir + "/agent.log"};
    const bool ready = testenv::eventually([&] {
      return testpeer::http_call("http://127.0.0.1:" + std::to_string(metrics_port) + "/readyz").status == 200;
    }, 30s);
    std::this_thread::sleep_for(std::chrono::seconds(settle));
    if (!ready || !agent.alive()) {
      std::fprintf(stderr, "idle_footprint_bench: %s never became ready\n%s\n", mode.c_str(), agent.log().c_str());
      all_ok = false;
      continue;
    }
    std::vector<bench::sample> samples;
    for (int t = 0; t <= seconds; ++t) {
      samples.push_back(bench::probe(agent.pid()));
      if (t < seconds)
        std::this_thread::sleep_for(1s);
    }
    double rss = 0, rss_max = 0;
    for (const auto& x : samples) {
      rss += x.rss_mib;
      rss_max = std::max(rss_max, x.rss_mib);
    }
    rss /= static_cast<double>(samples.size());
    const double cpu_pct = 100 * (samples.back().cpu_s - samples.front().cpu_s) / seconds;
    const bool ok = agent.alive() && rss_max <= 30.0 && cpu_pct <= 1.0;
    all_ok = all_ok && ok;
    std::printf("{\"mode\":\"%s\",\"rss_mib\":%.2f,\"rss_mib_max\":%.2f,\"idle_cpu_core_pct\":%.2f,\"fds\":%d,\"threads\":%d,"
                "\"seconds\":%d,\"within_goal\":%s}\n",
                mode.c_str(), rss, rss_max, cpu_pct, samples.back().fds, samples.back().threads, seconds, ok ? "true" : "false");
    std::fflush(stdout);
    agent.stop();
  }
  return all_ok ? 0 : 1;
}
