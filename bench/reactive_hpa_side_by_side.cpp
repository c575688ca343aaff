// Side by side: headroom's reactive scaling and the Kubernetes HorizontalPodAutoscaler (the
// test control plane's kube-controller-manager) scaling two identical Deployments on one load
// trace: a noisy step up, a plateau, a step down.
//
// The load is closed-loop, like CPU utilization: a total load L(t) is spread over each
// Deployment's replicas, and each one's metric is L(t) / replicas (units per replica), target 100.
// A test exporter serves both series; the real Prometheus scrapes it every second. headroom reads
// its series from Prometheus; the HPA reads its own through the aggregation layer from an
// external-metrics adapter (tests/peers/external-metrics, built on
// sigs.k8s.io/custom-metrics-apiserver) that queries the same Prometheus.
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/reactive_hpa_side_by_side [--peer hpa|keda]
//
// With `--peer keda` the other side is KEDA v2.21.0 (tests/testenv/build-keda.sh builds its
// operator and metrics server from its Go module): a ScaledObject with KEDA's Prometheus scaler on
// the same series (metricType Value, threshold 100, the same 30 s scale-down window), KEDA's
// metrics server behind the aggregation layer, KEDA's HPA in the same kube-controller-manager. The
// load trace is the same (same seed), so the rows of the two runs compare.
//
// Both: minReplicas 1, maxReplicas 10. headroom: 15 s up-window, 30 s down-window, 15 s cooldown
// (the seed's 2 m / 5 m / 3 m shrunk for a run of minutes), threshold 0.5. HPA (autoscaling/v2,
// external metric, target Value 100): the controller's default 15 s sync, its default scale-up
// policy, a 30 s scale-down stabilization window to match headroom's down-window.
//
// `--trace activation` (#60): to and from zero instead. Both Deployments start at 0 replicas, both
// sides have minReplicas 0 and an activation threshold of 50 (target 100); the load is 0 for 30 s,
// 80 (above the activation threshold, below the target: one replica is enough) until 120 s, then 0
// until 600 s. Measured: activation (load up → the Deployment's replicas ≥ 1) and deactivation (load
// down → replicas 0), and the Prometheus queries each side made, counted by a forwarding proxy in
// front of Prometheus per side. KEDA at its defaults (pollingInterval 30 s, cooldownPeriod 300 s)
// beside headroom at its own (evaluationInterval 1 m, scaleDownWindow 5 m, cooldown 3 m), or faster:
// `--keda-polling 5` (the fastest KEDA users run) and `--headroom-interval 5`.
//
// Prints the replicas of both every 10 s, then one JSON line per autoscaler: scale events,
// max replicas, overshoot above what the peak load needs, seconds from the step up to enough
// replicas, and from the step down until each stopped changing; and each side's CPU seconds and
// peak RSS (headroom's process; the peer's own processes: the adapter, or KEDA's operator and
// metrics server; the HPA controller inside kube-controller-manager is not separable).

#include <ifaddrs.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <prometheus/gauge.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <iostream>
#include <random>
#include <thread>

#include <httplib.h>

#include <atomic>
#include <map>
#include <mutex>

#include "runtime/health_routes.hpp"
#include "runtime/web_server.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"
#include "testenv/child_process.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/prometheus_server.hpp"
#include "testenv/test_certs.hpp"
#include "soak_probe.hpp"

using namespace std::chrono_literals;
using namespace headroom;

namespace {

const std::string ns = "sbs";

std::string host_ip() {
  ifaddrs* list = nullptr;
  std::string out;
  if (getifaddrs(&list) != 0)
    return out;
  for (auto* a = list; a != nullptr && out.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET)
      continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
    if (std::strncmp(buf, "127.", 4) != 0)
      out = buf;
  }
  freeifaddrs(list);
  return out;
}

int replicas_of(testenv::cluster* c, const std::string& name) {
  auto r = c->kubectl({"get", "deployment", name, "-n", ns, "-o", "jsonpath={.spec.replicas}"});
  return r.exit_code == 0 && !r.out.empty() ? std::atoi(r.out.c_str()) : -1;
}

std::string deployment(const std::string& name, int replicas = 1) {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", namespace: " + ns +
         "}\nspec:\n  replicas: " + std::to_string(replicas) + "\n  selector: {matchLabels: {app: " + name + "}}\n  template:\n    metadata: {labels: {app: " +
         name + "}}\n    spec:\n      nodeSelector: {type: kwok}\n      tolerations: [{operator: Exists}]\n"
         "      terminationGracePeriodSeconds: 0\n      containers: [{name: c, image: busybox}]\n";
}

// The total load at second t: 150 until 60 s, then 600 with ±10 % noise until 240 s, then 150.
double load_at(int t, std::mt19937& rng) {
  std::uniform_real_distribution<double> noise(-0.1, 0.1);
  if (t < 60)
    return 150;
  if (t < 240)
    return 600 * (1 + noise(rng));
  return 150;
}

// The activation trace's total load at second t: 0, 80 from 30 s to 120 s, 0 again.
constexpr int rise_at = 30, fall_at = 120, activation_seconds = 600;
double activation_load_at(int t) { return t >= rise_at && t < fall_at ? 80 : 0; }

// Prometheus behind a forwarding proxy that counts the reads one side makes.
class counting_proxy {
 public:
  explicit counting_proxy(const std::string& prometheus_url) : upstream_(prometheus_url) {
    auto forward = [this](const httplib::Request& req, httplib::Response& res) {
      // Instant and range queries (KEDA), remote reads (headroom: one per evaluation, the window's samples).
      if (req.path.rfind("/api/v1/query", 0) == 0 || req.path == "/api/v1/read")
        ++queries_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++paths_[req.method + " " + req.path];
      }
      httplib::Client cli(upstream_);
      cli.set_read_timeout(30, 0);
      httplib::Params params = req.params;
      auto r = req.method == "POST" ? cli.Post(req.path, req.headers, req.body, req.get_header_value("Content-Type"))
                                    : cli.Get(req.path, params, req.headers);
      if (!r) {
        res.status = 502;
        return;
      }
      res.status = r->status;
      res.set_content(r->body, r->get_header_value("Content-Type"));
    };
    server_.Get(".*", forward);
    server_.Post(".*", forward);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~counting_proxy() {
    server_.stop();
    if (thread_.joinable())
      thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int queries() const { return queries_.load(); }
  // Every request by method and path (what a side asked of Prometheus besides queries).
  std::string paths() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& [p, n] : paths_)
      out += (out.empty() ? "" : ", ") + p + " ×" + std::to_string(n);
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int> paths_;
  std::string upstream_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> queries_{0};
};

struct timeline {
  std::vector<int> replicas;  // per second
};

// CPU seconds and peak RSS of a set of processes over the run.
struct footprint {
  std::vector<pid_t> pids;
  double cpu_start = 0, rss_peak = 0;
  double cpu() const {
    double sum = 0;
    for (auto p : pids)
      sum += bench::probe(p).cpu_s;
    return sum;
  }
  void sample() {
    double rss = 0;
    for (auto p : pids)
      rss += bench::probe(p).rss_mib;
    rss_peak = std::max(rss_peak, rss);
  }
};

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

// KEDA's ScaledObject on the peer Deployment: the same series, the same target and window as the HPA's.
// The activation trace: minReplicaCount 0, activationThreshold 50, KEDA's own pollingInterval and
// cooldownPeriod unless `polling` is set.
std::string scaled_object(const std::string& prometheus_url, bool activation = false, int polling = 0) {
  const std::string head = "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: keda, namespace: " + ns +
                           "}\nspec:\n  scaleTargetRef: {name: keda}\n";
  const std::string trigger = "  triggers:\n  - type: prometheus\n    metricType: Value\n    metadata:\n      serverAddress: " +
                              prometheus_url + "\n      query: 'sbs_load_per_replica{autoscaler=\"keda\"}'\n      threshold: \"100\"\n";
  if (activation)
    return head + "  minReplicaCount: 0\n  maxReplicaCount: 10\n" +
           (polling > 0 ? "  pollingInterval: " + std::to_string(polling) + "\n" : std::string{}) + trigger +
           "      activationThreshold: \"50\"\n";
  return head + "  minReplicaCount: 1\n  maxReplicaCount: 10\n"
                "  advanced:\n    horizontalPodAutoscalerConfig:\n      behavior:\n        scaleDown: {stabilizationWindowSeconds: 30}\n" +
         trigger;
}

}  // namespace

int main(int argc, char** argv) {
  std::string peer = "hpa", trace = "step";
  int keda_polling = 0, headroom_interval = 0;  // 0: each side's default
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--peer")
      peer = argv[i + 1];
    else if (a == "--trace")
      trace = argv[i + 1];
    else if (a == "--keda-polling")
      keda_polling = std::atoi(argv[i + 1]);
    else if (a == "--headroom-interval")
      headroom_interval = std::atoi(argv[i + 1]);
  }
  if (peer != "hpa" && peer != "keda") {
    std::cerr << "side-by-side: --peer is hpa or keda\n";
    return 2;
  }
  const bool activation = trace == "activation";
  if ((trace != "step" && !activation) || (activation && peer != "keda")) {
    std::cerr << "side-by-side: --trace is step or activation (activation with --peer keda: the HPA alone does not go to 0)\n";
    return 2;
  }
  auto* c = testenv::cluster::shared();
  if (c == nullptr) {
    std::cerr << "side-by-side: no control plane: " << testenv::cluster::unavailable_reason() << "\n";
    return 1;
  }
  const std::string ip = host_ip();
  if (ip.empty()) {
    std::cerr << "side-by-side: the aggregation layer needs a non-loopback address for the adapter's endpoint\n";
    return 1;
  }
  char tmpl[] = "/tmp/headroom-sbs-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::string keda_dir;
  if (peer == "hpa") {
    auto built = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/peers/external-metrics/build.sh", dir + "/adapter"});
    if (built.exit_code != 0) {
      std::cerr << "side-by-side: building the adapter failed: " << built.err << "\n";
      return 1;
    }
  } else {
    auto built = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/build-keda.sh"});
    keda_dir = trimmed(built.out);
    if (built.exit_code != 0 || keda_dir.empty()) {
      std::cerr << "side-by-side: building KEDA failed: " << built.err << "\n";
      return 1;
    }
  }

  runtime::metrics exporter_metrics;
  runtime::readiness exporter_ready;
  auto& family = prometheus::BuildGauge().Name("sbs_load_per_replica").Help("load per replica").Register(exporter_metrics.registry());
  auto& headroom_series = family.Add({{"autoscaler", "headroom"}});
  auto& hpa_series = family.Add({{"autoscaler", peer}});
  headroom_series.Set(activation ? 0 : 150);
  hpa_series.Set(activation ? 0 : 150);
  runtime::web_server exporter{runtime::health_server("127.0.0.1:0", exporter_metrics, exporter_ready)};
  std::string why;
  auto prom = testenv::prometheus_server::start({"127.0.0.1:" + std::to_string(exporter.port())}, why);
  if (!prom) {
    std::cerr << "side-by-side: " << why << "\n";
    return 1;
  }

  // The activation trace counts each side's queries: its own forwarding proxy in front of Prometheus.
  std::unique_ptr<counting_proxy> headroom_proxy, peer_proxy;
  if (activation) {
    headroom_proxy = std::make_unique<counting_proxy>(prom->url());
    peer_proxy = std::make_unique<counting_proxy>(prom->url());
  }
  const std::string headroom_prometheus = activation ? headroom_proxy->url() : prom->url();
  const std::string peer_prometheus = activation ? peer_proxy->url() : prom->url();
  const int adapter_port = testenv::free_port();
  std::vector<std::unique_ptr<testenv::child_process>> peers;
  if (peer == "hpa") {
    peers.push_back(std::make_unique<testenv::child_process>(
        std::vector<std::string>{dir + "/adapter", "--secure-port=" + std::to_string(adapter_port), "--bind-address=" + ip,
                                 "--cert-dir=" + dir + "/certs", "--lister-kubeconfig=" + c->kubeconfig(),
                                 "--authentication-kubeconfig=" + c->kubeconfig(), "--authorization-kubeconfig=" + c->kubeconfig(),
                                 "--prometheus-url=" + prom->url(), "--metrics=sbs_load_per_replica", "--v=1"},
        std::vector<std::string>{"PATH=/usr/bin:/bin", "HOME=" + dir}, dir + "/adapter.log"));
  } else {
    // KEDA's CRDs from its module; its operator (the Prometheus scaler, the HPA it owns, the gRPC
    // metrics service) and its metrics server, which reach each other by mutual TLS with the test CA.
    // All of them: the operator waits for every kind it watches (CloudEventSources too) and exits
    // when one is missing.
    for (const auto& f : std::filesystem::directory_iterator{keda_dir + "/module/config/crd/bases"})
      c->kubectl({"apply", "--server-side", "-f", f.path().string()});
    c->kubectl({"wait", "--for", "condition=Established", "--timeout", "60s", "crd/scaledobjects.keda.sh",
                "crd/cloudeventsources.eventing.keda.sh", "crd/clustercloudeventsources.eventing.keda.sh"});
    c->kubectl({"create", "namespace", "keda"});
    std::filesystem::create_directories(dir + "/keda-certs");
    const auto ca = testenv::make_ca("keda-ca");
    const auto pair = testenv::issue_server_cert(ca, "keda", {"localhost"}, {"127.0.0.1", ip}, 86'400, true);
    write_file(dir + "/keda-certs/ca.crt", ca.cert);
    write_file(dir + "/keda-certs/tls.crt", pair.cert);
    write_file(dir + "/keda-certs/tls.key", pair.key);
    const std::string grpc = "127.0.0.1:" + std::to_string(testenv::free_port());
    const std::vector<std::string> env{"KUBECONFIG=" + c->kubeconfig(), "HOME=" + dir, "POD_NAMESPACE=keda",
                                       "KEDA_CLUSTER_OBJECT_NAMESPACE=keda", "WATCH_NAMESPACE="};
    peers.push_back(std::make_unique<testenv::child_process>(
        std::vector<std::string>{keda_dir + "/keda-operator", "--leader-elect=false", "--enable-cert-rotation=false",
                                 "--enable-webhook-patching=false", "--cert-dir=" + dir + "/keda-certs",
                                 "--metrics-bind-address=127.0.0.1:" + std::to_string(testenv::free_port()),
                                 "--health-probe-bind-address=127.0.0.1:" + std::to_string(testenv::free_port()),
                                 "--metrics-service-bind-address=" + grpc, "--zap-log-level=info"},
        env, dir + "/keda-operator.log"));
    peers.push_back(std::make_unique<testenv::child_process>(
        std::vector<std::string>{keda_dir + "/keda-adapter", "--secure-port=" + std::to_string(adapter_port), "--bind-address=" + ip,
                                 "--cert-dir=" + dir + "/keda-certs", "--tls-cert-file=" + dir + "/keda-certs/tls.crt",
                                 "--tls-private-key-file=" + dir + "/keda-certs/tls.key", "--lister-kubeconfig=" + c->kubeconfig(),
                                 "--authentication-kubeconfig=" + c->kubeconfig(), "--authorization-kubeconfig=" + c->kubeconfig(),
                                 "--metrics-service-address=" + grpc, "--port=" + std::to_string(testenv::free_port()), "--v=1"},
        env, dir + "/keda-adapter.log"));
  }
  c->kubectl({"create", "namespace", ns});
  c->kubectl({"apply", "-f", "-"},
             "apiVersion: v1\nkind: Node\nmetadata:\n  name: sbs-node\n  annotations: {kwok.x-k8s.io/node: fake}\n"
             "  labels: {type: kwok}\nstatus:\n  allocatable: {cpu: \"64\", memory: 128Gi, pods: \"110\"}\n"
             "  capacity: {cpu: \"64\", memory: 128Gi, pods: \"110\"}\n");
  const std::string port = std::to_string(adapter_port);
  auto applied = c->kubectl({"apply", "-f", "-"},
                            "apiVersion: v1\nkind: Service\nmetadata: {name: external-metrics, namespace: " + ns +
                                "}\nspec:\n  ports: [{name: https, port: " + port + ", targetPort: " + port +
                                "}]\n---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: external-metrics, namespace: " + ns +
                                "}\nsubsets: [{addresses: [{ip: \"" + ip + "\"}], ports: [{name: https, port: " + port +
                                "}]}]\n---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: "
                                "v1beta1.external.metrics.k8s.io}\nspec:\n  group: external.metrics.k8s.io\n  version: v1beta1\n"
                                "  groupPriorityMinimum: 100\n  versionPriority: 100\n  insecureSkipTLSVerify: true\n"
                                "  service: {namespace: " + ns + ", name: external-metrics, port: " + port + "}\n" +
                                "---\n" + deployment("headroom", activation ? 0 : 1) + "---\n" + deployment(peer, activation ? 0 : 1) +
                                (peer == "keda" ? "---\n" + scaled_object(peer_prometheus, activation, keda_polling) : "---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: hpa, namespace: " +
                                ns + "}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: hpa}\n"
                                "  minReplicas: 1\n  maxReplicas: 10\n  metrics:\n    - type: External\n      external:\n"
                                "        metric: {name: sbs_load_per_replica, selector: {matchLabels: {autoscaler: hpa}}}\n"
                                "        target: {type: Value, value: \"100\"}\n"
                                "  behavior:\n    scaleDown: {stabilizationWindowSeconds: 30}\n"));
  if (applied.exit_code != 0) {
    std::cerr << "side-by-side: " << applied.err << "\n";
    return 1;
  }
  // The aggregated API answers through the apiserver once the adapter is up and the APIService
  // available (for KEDA: once its operator made the ScaledObject's HPA and serves its metric).
  const bool available = testenv::eventually(
      [&] {
        if (peer == "keda") {
          auto hpa = c->kubectl({"-n", ns, "get", "hpa", "keda-hpa-keda", "-o", "jsonpath={.spec.metrics[0].external.metric.name}"});
          if (hpa.exit_code != 0 || hpa.out.empty())
            return false;
          auto r = c->kubectl({"get", "--raw", "/apis/external.metrics.k8s.io/v1beta1/namespaces/" + ns + "/" + hpa.out +
                                                   "?labelSelector=scaledobject.keda.sh%2Fname%3Dkeda"});
          return r.exit_code == 0 && r.out.find("\"value\"") != std::string::npos;
        }
        auto r = c->kubectl({"get", "--raw", "/apis/external.metrics.k8s.io/v1beta1/namespaces/" + ns +
                                                 "/sbs_load_per_replica?labelSelector=autoscaler%3Dhpa"});
        return r.exit_code == 0 && r.out.find("\"value\"") != std::string::npos;
      },
      180s);
  if (!available) {
    std::cerr << "side-by-side: external.metrics.k8s.io did not answer: "
              << c->kubectl({"get", "apiservice", "v1beta1.external.metrics.k8s.io", "-o", "yaml"}).out << "\n";
    for (const auto& p : peers)
      std::cerr << p->log(3000) << "\n";
    return 1;
  }

  // The step trace: the seed's windows shrunk for a run of minutes. The activation trace: headroom's
  // shipped defaults (but the evaluation interval when given), as KEDA runs at its own.
  const std::string rules = activation ? "      minReplicas: 0\n      activationThreshold: 50\n" +
                                             (headroom_interval > 0 ? "      evaluationInterval: " + std::to_string(headroom_interval) + "s\n"
                                                                    : std::string{})
                                       : std::string{"      minReplicas: 1\n      evaluationInterval: 1s\n      resolution: 1s\n"
                                                     "      scaleUpWindow: 15s\n      scaleDownWindow: 30s\n      cooldown: 15s\n"};
  const std::string config = "kubernetes:\n  kubeconfig: " + c->kubeconfig() +
                             "\nleaderElection:\n  enabled: false\nreactive:\n  prometheus: {url: \"" + headroom_prometheus +
                             "\"}\n  targets:\n    - scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, namespace: " + ns +
                             ", name: headroom}\n      maxReplicas: 10\n"
                             "      metric: 'sbs_load_per_replica{autoscaler=\"headroom\"}'\n      target: 100\n" + rules;
  std::ofstream(dir + "/headroom.yaml") << config;
  testenv::child_process agent{{HEADROOM_BINARY, "--config", dir + "/headroom.yaml", "--metrics-addr", "127.0.0.1:0"},
                               {"PATH=/usr/bin:/bin"},
                               dir + "/agent.log"};

  footprint ours{{agent.pid()}}, theirs;
  for (const auto& p : peers)
    theirs.pids.push_back(p->pid());
  ours.cpu_start = ours.cpu();
  theirs.cpu_start = theirs.cpu();
  std::mt19937 rng{42};
  timeline h, k;
  std::vector<double> loads;
  const int seconds = activation ? activation_seconds : 360;
  const int queries_at_start[2] = {activation ? headroom_proxy->queries() : 0, activation ? peer_proxy->queries() : 0};
  for (int t = 0; t < seconds; ++t) {
    const auto tick = std::chrono::steady_clock::now();
    const double l = activation ? activation_load_at(t) : load_at(t, rng);
    const int rh = replicas_of(c, "headroom"), rk = replicas_of(c, peer);
    headroom_series.Set(l / std::max(1, rh));
    hpa_series.Set(l / std::max(1, rk));
    loads.push_back(l);
    h.replicas.push_back(rh);
    k.replicas.push_back(rk);
    ours.sample();
    theirs.sample();
    if (t % 10 == 0)
      std::cerr << "t=" << t << "s load=" << static_cast<int>(l) << " headroom=" << rh << " " << peer << "=" << rk << "\n";
    std::this_thread::sleep_until(tick + 1s);
  }

  for (const auto& p : peers)
    if (!p->alive()) {
      std::cerr << "side-by-side: a peer process exited during the run:\n" << p->log(3000) << "\n";
      return 1;
    }
  // Both traces end alike: the replicas every 5 s as CSV, then every process stopped.
  auto timeline_and_stop = [&] {
    std::cout << "t_s,load,headroom," << peer << "\n";
    for (int t = 0; t < seconds; t += 5)
      std::cout << t << "," << static_cast<int>(loads[t]) << "," << h.replicas[t] << "," << k.replicas[t] << "\n";
    agent.stop();
    for (auto& p : peers)
      p->stop();
    prom->stop();
    return 0;
  };
  if (activation) {
    // Load up at rise_at → replicas ≥ 1; load down at fall_at → replicas 0; queries over the run.
    auto report = [&](const std::string& name, const timeline& tl, const footprint& f, int queries, const std::string& settings) {
      int on = -1, off = -1, events = 0;
      for (size_t i = 1; i < tl.replicas.size(); ++i)
        events += tl.replicas[i] != tl.replicas[i - 1] ? 1 : 0;
      for (int i = rise_at; i < seconds && on < 0; ++i)
        if (tl.replicas[i] >= 1)
          on = i - rise_at;
      for (int i = fall_at; i < seconds && off < 0; ++i)
        if (tl.replicas[i] == 0)
          off = i - fall_at;
      std::printf("{\"autoscaler\":\"%s\",\"trace\":\"activation\",\"settings\":\"%s\",\"activation_s\":%d,\"deactivation_s\":%d,"
                  "\"scale_events\":%d,\"prometheus_queries\":%d,\"queries_per_min\":%.1f,\"cpu_s\":%.1f,\"rss_mib_peak\":%.1f}\n",
                  name.c_str(), settings.c_str(), on, off, events, queries, queries * 60.0 / seconds, f.cpu() - f.cpu_start, f.rss_peak);
    };
    report("headroom", h, ours, headroom_proxy->queries() - queries_at_start[0],
           headroom_interval > 0 ? "evaluationInterval " + std::to_string(headroom_interval) + " s, other defaults" : "defaults");
    report("keda (operator + metrics server)", k, theirs, peer_proxy->queries() - queries_at_start[1],
           keda_polling > 0 ? "pollingInterval " + std::to_string(keda_polling) + " s, other defaults" : "defaults");
    std::cerr << "headroom's requests to Prometheus: " << headroom_proxy->paths() << "\nKEDA's: " << peer_proxy->paths() << "\n";
    return timeline_and_stop();
  }
  const int needed_peak = static_cast<int>(std::ceil(600 * 1.1 / 100));  // 7 for the noisiest peak sample
  auto report = [&](const std::string& name, const timeline& tl, const footprint& f) {
    int events = 0, max_r = 0, up_ready = -1, settled = -1;
    for (size_t i = 1; i < tl.replicas.size(); ++i) {
      if (tl.replicas[i] != tl.replicas[i - 1]) {
        ++events;
        if (i >= 240)
          settled = static_cast<int>(i) - 240;
      }
    }
    for (size_t i = 0; i < tl.replicas.size(); ++i) {
      max_r = std::max(max_r, tl.replicas[i]);
      if (up_ready < 0 && i >= 60 && tl.replicas[i] >= 6)
        up_ready = static_cast<int>(i) - 60;
    }
    std::printf("{\"autoscaler\":\"%s\",\"scale_events\":%d,\"max_replicas\":%d,\"overshoot\":%d,\"step_up_to_6_s\":%d,"
                "\"after_step_down_last_change_s\":%d,\"final_replicas\":%d,\"cpu_s\":%.1f,\"rss_mib_peak\":%.1f}\n",
                name.c_str(), events, max_r, std::max(0, max_r - needed_peak), up_ready, settled, tl.replicas.back(),
                f.cpu() - f.cpu_start, f.rss_peak);
  };
  report("headroom", h, ours);
  report(peer == "hpa" ? "hpa (adapter only)" : "keda (operator + metrics server)", k, theirs);
  return timeline_and_stop();
}
