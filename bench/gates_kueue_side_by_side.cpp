// Gate-controlled scheduling side by side with Kueue v0.19.1 (its plain-Pod integration, what a user
// would pick instead of headroom's gates mode), one after the other on one test control plane with
// the same workload: a quota of 20 CPUs, pods of 1 CPU.
//
// For each system, in a namespace of its own:
// 1. NodeClaims: a Karpenter NodePool (kwok provider, 2-CPU instances) and a second queue of 20 CPUs;
//    60 pods go into it at once. After every admitted pod runs and 30 s more (several of Karpenter's
//    batches), count the NodeClaims Karpenter bought for that pool.
// 2. Room freed → next pod ungated, at 500 and then at 5,000 pending: the queue holds 20 running
//    pods on a large kwok node and the rest wait behind its gate. One event: the bench deletes an
//    admitted pod (grace 0) and times from the delete request to the first new pod seen without
//    scheduling gates, in one watch of its own. (Kueue keeps a deleted pod until it has released
//    the pod's quota, through its finalizer; so the clock starts at the request for both.)
// 3. Pods admitted per second at 5,000 pending: the quota is raised to 20,000 CPUs at once; the
//    time from the change to the last pod ungated.
// Through all three, the controller's CPU seconds and RSS (peak and end) from /proc, and at the
// end its webhook's latency as the API server measures it
// (apiserver_admission_webhook_admission_duration_seconds, by webhook name; coarse buckets).
//
// Kueue is built from its Go module (tests/testenv/build-kueue.sh, cached) and run out of cluster:
// its CRDs and webhook configuration come from the same module (config/components), the webhooks'
// Services rewritten to its URL on 127.0.0.1 with a test CA, internal certificate management off.
// Kueue reads its metrics certificate from the fixed path /etc/kueue/metrics/certs when internal
// certificate management is off, so the bench writes the test certificate there (its metrics
// server, on loopback, serves with it).
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/gates_kueue_side_by_side
//       [--events 300] [--only headroom|kueue] [--prometheus] [--quick]
//
// --quick stops each system after the 500-pending phase (no 4,800-pod intake, no burst): enough for
// --prometheus's histograms in minutes where Kueue's whole run takes half an hour.
//
// With --shape baseline [--queues 30] [--scale 1] [--stretch 1], instead: Kueue's own "baseline" scalability
// shape translated to plain Pods (gates_shape.hpp), 15,000 pods over 30 queues.
//
// With --prometheus, the test Prometheus scrapes both controllers every second, as a user's would:
// headroom's /metrics, and Kueue's metrics server over HTTPS (the test certificate) with a bearer
// token its authorization lets read /metrics (as its ServiceMonitor does). At the end, each one's
// gate-removal histogram from Prometheus: kueue_pod_scheduling_gate_removal_seconds and
// headroom_queue_gate_removal_seconds: the same interval (the admission decision to the pod's patch
// acknowledged) in the same buckets (modes/gates/mode.cpp). Kueue takes its start from its
// Workload's Admitted lastTransitionTime, whole seconds, so its series reads 0-1 s high.
// The scrapes cost both controllers a little CPU: quote footprints from a run without it.
//
// Prints one JSON line per system and measure ({"system": …, "mode": …}), then a Markdown table.
#include <openssl/evp.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "adapters/http/transport.hpp"
#include "adapters/k8s/client.hpp"
#include "testenv/transport_options.hpp"
#include "adapters/k8s/connection.hpp"
#include "adapters/k8s/informer.hpp"
#include "gates_shape.hpp"
#include "histogram_text.hpp"
#include "soak_probe.hpp"
#include "testenv/child_process.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/peer_process.hpp"
#include "testenv/prometheus_server.hpp"
#include "testenv/test_certs.hpp"

using namespace std::chrono_literals;
using namespace headroom;
using steady = std::chrono::steady_clock;

namespace {

using bench::bucket_quantile;
using bench::buckets;
using bench::fraction_within;
using bench::percentile;

constexpr int quota_cpus = 20;

double ms(steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string b64(const std::string& pem) {
  std::string out(4 * ((pem.size() + 2) / 3) + 1, '\0');
  out.resize(static_cast<size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                                 reinterpret_cast<const unsigned char*>(pem.data()), static_cast<int>(pem.size()))));
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path{path}.parent_path());
  std::ofstream(path) << text;
}

// What the bench's watch saw in one namespace: when each pod was first seen without scheduling
// gates, and which are being deleted or gone.
struct seen {
  std::mutex m;
  std::condition_variable cv;
  std::map<std::string, steady::time_point> ungated;
  std::set<std::string> leaving;
  steady::time_point last_event = steady::now();
};

// How one system is driven: its pods, its queues, its process.
struct system_under_test {
  std::string name, ns;
  std::function<std::string(const std::string& pod, const std::string& queue, const std::string& placement)> pod_yaml;
  std::function<void(const std::string& queue, int cpus)> set_quota;  // creates or resizes a queue
  std::function<pid_t()> start;                                       // returns the controller's pid
  std::function<void()> stop;
  std::vector<std::string> webhook_names;  // as the API server labels them
  bench::shape::queue_membership membership;  // for --shape
  std::string gate_removal;                   // its gate-removal histogram, for --prometheus (job: name)
};

struct result {
  int node_claims = -1, karpenter_admitted = 0;
  std::vector<double> latency_500, latency_5000, first_after_intake_ms;
  double settle_500_s = 0, settle_5000_s = 0;
  double admit_rate = 0, admit_seconds = 0;
  int admitted_in_burst = 0;
  double cpu_s = 0, rss_peak = 0, rss_end = 0, seconds = 0;
  std::map<std::string, std::map<double, double>> hooks;
};

std::string placement_yaml(const std::string& placement) {
  return "  nodeSelector: {headroom.test/pool: " + placement + "}\n  tolerations: [{key: headroom.test/pool, operator: Exists, effect: NoSchedule}]\n";
}

std::string node_pool(const std::string& name) {
  return "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: " + name +
         "}\nspec:\n  limits: {cpu: \"100\"}\n  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: Never}\n"
         "  template:\n    metadata: {labels: {headroom.test/pool: " + name + "}}\n    spec:\n"
         "      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}\n      expireAfter: Never\n"
         "      taints: [{key: headroom.test/pool, value: " + name + ", effect: NoSchedule}]\n      requirements:\n"
         "      - {key: node.kubernetes.io/instance-type, operator: In, values: [m-2x-amd64-linux]}\n"
         "      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n";
}

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

class bench_run {
 public:
  bench_run(testenv::cluster* c, const system_under_test& sut) : c_{c}, sut_{sut} {}

  // `quick`: the 500-pending phase only (no 4,800-pod intake, no burst).
  result run(int events, bool quick) {
    result r;
    c_->kubectl({"create", "namespace", sut_.ns});
    const pid_t pid = sut_.start();
    if (pid <= 0)
      return r;
    // The controller's footprint every second, from its start to its stop.
    std::atomic<bool> sampling{true};
    std::vector<bench::sample> samples;
    std::thread sampler{[&] {
      const auto t0 = steady::now();
      while (sampling) {
        auto s = bench::probe(pid);
        s.t = std::chrono::duration<double>(steady::now() - t0).count();
        samples.push_back(s);
        std::this_thread::sleep_for(1s);
      }
    }};
    watch();
    karpenter_phase(r);
    sut_.set_quota("bench", quota_cpus);
    create_pods("bench", "sbs", 0, quota_cpus + 500);
    const bool first_round = wait_ungated_count(quota_cpus, 120s);
    if (first_round) {
      r.settle_500_s = wait_quiet();
      r.latency_500 = events_phase(events, 60s);
    } else {
      std::fprintf(stderr, "[%s] the first %d pods were never ungated\n", sut_.name.c_str(), quota_cpus);
    }
    if (first_round && !quick) {
      create_pods("bench", "sbs", quota_cpus + 500, quota_cpus + 500 + (5000 - (500 - events)));
      // One event at once, while the controller still works through the 4,800 new pods; then the
      // rest once it has gone quiet.
      r.first_after_intake_ms = events_phase(1, 900s);
      r.settle_5000_s = wait_quiet();
      r.latency_5000 = events_phase(events, 60s);
      burst_phase(r);
    }
    sampling = false;
    sampler.join();
    if (!samples.empty()) {
      r.cpu_s = samples.back().cpu_s - samples.front().cpu_s;
      r.seconds = samples.back().t;
      r.rss_end = samples.back().rss_mib;
      for (const auto& s : samples)
        r.rss_peak = std::max(r.rss_peak, s.rss_mib);
    }
    const auto apiserver = c_->kubectl({"get", "--raw", "/metrics"}).out;
    for (const auto& hook : sut_.webhook_names)
      r.hooks[hook] = buckets(apiserver, "apiserver_admission_webhook_admission_duration_seconds", "name=\"" + hook + "\"");
    pods_->stop();
    sut_.stop();
    return r;
  }

 private:
  void watch() {
    auto conn = std::get<k8s::connection>(k8s::load_kubeconfig(c_->kubeconfig(), ""));
    io_ = std::make_unique<k8s::transport>(headroom::testenv::real_time_transport());
    api_ = std::make_unique<k8s::client>(conn, *io_);
    // An informer, not a bare watch: the server ends each watch after a few minutes, and the run
    // is longer than that.
    k8s::informer<k8s::pod>::options o;
    o.kind = k8s::kinds::pods;
    o.ns = sut_.ns;
    pods_ = k8s::informer<k8s::pod>::make(*api_, o);
    pods_->subscribe([this](const k8s::informer<k8s::pod>::event& e) {
      const auto at = steady::now();
      using type = k8s::informer<k8s::pod>::event_type;
      if (e.type == type::resync)
        return;
      const bool gated = !e.object->spec->scheduling_gates.empty();
      const bool leaving = e.type == type::deleted || !e.object->meta.deletion_timestamp.empty();
      std::lock_guard lock{s_.m};
      s_.last_event = at;
      if (!gated && e.type != type::deleted)
        s_.ungated.emplace(e.object->meta.name, at);
      if (leaving)
        s_.leaving.emplace(e.object->meta.name);
      s_.cv.notify_all();
    });
    pods_->start();
  }

  void create_pods(const std::string& queue, const std::string& placement, int from, int to) {
    if (queue == "bench")
      created_ += static_cast<size_t>(to - from);
    std::string batch;
    for (int i = from; i < to; ++i) {
      batch += sut_.pod_yaml(queue + "-" + std::to_string(i), queue, placement) + "---\n";
      if ((i + 1 - from) % 200 == 0 || i + 1 == to) {
        auto out = c_->kubectl({"create", "-f", "-"}, batch);
        if (out.exit_code != 0)
          std::fprintf(stderr, "[%s] creating pods: %s\n", sut_.name.c_str(), out.err.substr(0, 400).c_str());
        batch.clear();
      }
    }
  }

  // Until the watch has seen no change to any pod of the namespace for 5 s (the controller has
  // written every condition and object it wanted to); returns the seconds it took (at most 900).
  double wait_quiet() {
    const auto t0 = steady::now();
    while (steady::now() - t0 < 900s) {
      {
        std::lock_guard lock{s_.m};
        if (steady::now() - s_.last_event >= 5s)
          break;
      }
      std::this_thread::sleep_for(200ms);
    }
    std::lock_guard lock{s_.m};
    return std::chrono::duration<double>(s_.last_event - t0).count();
  }

  size_t ungated_count(const std::string& prefix) {
    size_t n = 0;
    for (const auto& [name, t] : s_.ungated)
      n += name.rfind(prefix, 0) == 0;
    return n;
  }

  bool wait_ungated_count(size_t n, std::chrono::seconds limit) {
    std::unique_lock lock{s_.m};
    return s_.cv.wait_for(lock, limit, [&] { return ungated_count("bench-") >= n; });
  }

  // NodeClaims Karpenter bought for 60 pods behind a queue of 20 CPUs.
  void karpenter_phase(result& r) {
    if (!c_->karpenter())
      return;
    const std::string pool = "sbs-" + sut_.name;
    c_->kubectl({"apply", "-f", "-"}, node_pool(pool));
    sut_.set_quota("pool", quota_cpus);
    create_pods("pool", pool, 0, 60);
    testenv::eventually([&] {
      auto out = c_->kubectl({"-n", sut_.ns, "get", "pods", "-l", "headroom.test/phase=pool", "--field-selector=status.phase=Running", "-o", "name"});
      return count_lines(out.out) >= quota_cpus;
    }, 180s);
    std::this_thread::sleep_for(30s);
    r.karpenter_admitted = count_lines(c_->kubectl({"-n", sut_.ns, "get", "pods", "-l", "headroom.test/phase=pool",
                                                    "--field-selector=status.phase=Running", "-o", "name"}).out);
    r.node_claims = count_lines(c_->kubectl({"get", "nodeclaims", "-l", "karpenter.sh/nodepool=" + pool, "-o", "name"}).out);
    // The pool's pods go (their room would otherwise count); the NodePool and its nodes stay idle.
    c_->kubectl({"-n", sut_.ns, "delete", "pods", "-l", "headroom.test/phase=pool", "--grace-period=0", "--wait=false"});
  }

  // `events` times: an admitted pod goes, the time until another is ungated.
  std::vector<double> events_phase(int events, std::chrono::seconds limit) {
    std::vector<double> out;
    for (int ev = 0; ev < events; ++ev) {
      std::string victim;
      size_t before;
      {
        std::lock_guard lock{s_.m};
        for (const auto& [name, t] : s_.ungated)
          if (name.rfind("bench-", 0) == 0 && s_.leaving.count(name) == 0 && (victim.empty() || t < s_.ungated[victim]))
            victim = name;
        before = ungated_count("bench-");
      }
      if (victim.empty())
        break;
      const auto t0 = steady::now();
      k8s::delete_options del;
      del.grace_period_seconds = 0;
      api_->remove(k8s::kinds::pods, sut_.ns, victim, del, [](k8s::api_result) {});
      std::unique_lock lock{s_.m};
      if (!s_.cv.wait_for(lock, limit, [&] { return ungated_count("bench-") > before; })) {
        std::fprintf(stderr, "[%s] event %d: nothing ungated after %s went\n", sut_.name.c_str(), ev, victim.c_str());
        break;
      }
      steady::time_point first = steady::time_point::max();
      for (const auto& [name, t] : s_.ungated)
        if (t >= t0 && name.rfind("bench-", 0) == 0)
          first = std::min(first, t);
      out.push_back(ms(first - t0));
    }
    return out;
  }

  // The quota opens to 20,000 CPUs: how fast do the ~5,000 pending pods come through?
  void burst_phase(result& r) {
    size_t before;
    {
      std::lock_guard lock{s_.m};
      before = ungated_count("bench-");
    }
    const auto t0 = steady::now();
    sut_.set_quota("bench", 20000);
    std::unique_lock lock{s_.m};
    // Every pod created ever is ungated in the end (the deleted ones were, before they went).
    if (!s_.cv.wait_for(lock, 600s, [&] { return ungated_count("bench-") >= created_; }))
      std::fprintf(stderr, "[%s] burst: %zu of %zu ungated after 600 s\n", sut_.name.c_str(), ungated_count("bench-"), created_);
    steady::time_point last = t0;
    for (const auto& [name, t] : s_.ungated)
      if (t >= t0 && name.rfind("bench-", 0) == 0)
        last = std::max(last, t);
    r.admitted_in_burst = static_cast<int>(ungated_count("bench-") - before);
    r.admit_seconds = std::chrono::duration<double>(last - t0).count();
    r.admit_rate = r.admit_seconds > 0 ? r.admitted_in_burst / r.admit_seconds : 0;
  }

  testenv::cluster* c_;
  const system_under_test& sut_;
  seen s_;
  size_t created_ = 0;
  std::unique_ptr<k8s::transport> io_;
  std::unique_ptr<k8s::client> api_;
  std::shared_ptr<k8s::informer<k8s::pod>> pods_;
};

std::string pod_common(const std::string& pod, const std::string& ns, const std::string& labels, const std::string& annotations,
                       const std::string& placement, const std::string& phase) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + pod + "\n  namespace: " + ns + "\n  labels: {headroom.test/phase: " + phase +
         ", " + labels + "}\n" + annotations + "spec:\n  terminationGracePeriodSeconds: 0\n" + placement_yaml(placement) +
         "  containers:\n  - name: main\n    image: registry.k8s.io/pause:3.10\n    resources: {requests: {cpu: \"1\", memory: 8Mi}}\n";
}

// The Kueue module's directory (CRDs and webhook manifests), downloaded into Go's module cache.
std::string kueue_module_dir() {
  auto r = testenv::run_command({"bash", "-c",
                                 "export PATH=$PATH:/usr/local/go/bin GOTOOLCHAIN=local GOFLAGS=-mod=mod; "
                                 "go mod download -json sigs.k8s.io/kueue@${HEADROOM_KUEUE_VERSION:-v0.19.1} | "
                                 "sed -n 's/^[[:space:]]*\"Dir\": \"\\(.*\\)\",$/\\1/p'"});
  auto dir = r.out;
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == ' '))
    dir.pop_back();
  return dir;
}

// Kueue's webhook configurations from its module: only the pod and Kueue-object webhooks, each
// Service replaced by Kueue's URL on 127.0.0.1 and the test CA, the pod webhooks limited to `ns`.
std::string kueue_webhooks(const std::string& module_dir, int port, const std::string& ca_pem, const std::string& ns) {
  const std::set<std::string> keep{"mpod.kb.io",         "vpod.kb.io",          "mclusterqueue.kb.io", "vclusterqueue.kb.io",
                                   "mresourceflavor.kb.io", "vresourceflavor.kb.io", "mworkload.kb.io", "vworkload.kb.io",
                                   "vlocalqueue.kb.io",  "vcohort.kb.io"};
  std::string out;
  for (auto doc : YAML::LoadAllFromFile(module_dir + "/config/components/webhook/manifests.yaml")) {
    if (!doc.IsMap())
      continue;
    doc["metadata"]["name"] = "kueue-" + doc["metadata"]["name"].as<std::string>();
    YAML::Node hooks{YAML::NodeType::Sequence};
    for (auto w : doc["webhooks"]) {
      const auto name = w["name"].as<std::string>();
      if (keep.count(name) == 0)
        continue;
      const auto path = w["clientConfig"]["service"]["path"].as<std::string>();
      YAML::Node cc;
      cc["url"] = "https://127.0.0.1:" + std::to_string(port) + path;
      cc["caBundle"] = b64(ca_pem);
      w["clientConfig"] = cc;
      if (name == "mpod.kb.io" || name == "vpod.kb.io")
        w["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] = ns;
      hooks.push_back(w);
    }
    doc["webhooks"] = hooks;
    YAML::Emitter e;
    e << doc;
    out += std::string{e.c_str()} + "\n---\n";
  }
  return out;
}

void print_result(const system_under_test& s, const result& r) {
  auto lat = [](const std::vector<double>& v) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "\"events\":%zu,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"max_ms\":%.1f", v.size(), percentile(v, 0.5),
                  percentile(v, 0.99), v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
    return std::string{buf};
  };
  std::printf("{\"system\":\"%s\",\"mode\":\"ungate_latency\",\"pending\":500,%s}\n", s.name.c_str(), lat(r.latency_500).c_str());
  std::printf("{\"system\":\"%s\",\"mode\":\"ungate_latency\",\"pending\":5000,%s}\n", s.name.c_str(), lat(r.latency_5000).c_str());
  std::printf("{\"system\":\"%s\",\"mode\":\"intake\",\"quiet_after_520_creates_s\":%.1f,\"quiet_after_4800_more_s\":%.1f,"
              "\"first_event_during_intake_ms\":%.0f}\n",
              s.name.c_str(), r.settle_500_s, r.settle_5000_s, r.first_after_intake_ms.empty() ? -1.0 : r.first_after_intake_ms[0]);
  std::printf("{\"system\":\"%s\",\"mode\":\"admission_burst\",\"admitted\":%d,\"seconds\":%.2f,\"pods_per_s\":%.0f}\n", s.name.c_str(),
              r.admitted_in_burst, r.admit_seconds, r.admit_rate);
  std::printf("{\"system\":\"%s\",\"mode\":\"karpenter\",\"node_claims\":%d,\"running\":%d}\n", s.name.c_str(), r.node_claims,
              r.karpenter_admitted);
  std::printf("{\"system\":\"%s\",\"mode\":\"footprint\",\"seconds\":%.0f,\"cpu_s\":%.1f,\"rss_mib_peak\":%.1f,\"rss_mib_end\":%.1f}\n",
              s.name.c_str(), r.seconds, r.cpu_s, r.rss_peak, r.rss_end);
  for (const auto& [hook, b] : r.hooks)
    std::printf("{\"system\":\"%s\",\"mode\":\"webhook\",\"name\":\"%s\",\"calls\":%.0f,\"within_5ms\":%.3f,\"within_25ms\":%.3f,"
                "\"p50_bucket_s\":%g,\"p99_bucket_s\":%g}\n",
                s.name.c_str(), hook.c_str(), b.empty() ? 0.0 : b.rbegin()->second, fraction_within(b, 0.005), fraction_within(b, 0.025),
                bucket_quantile(b, 0.5), bucket_quantile(b, 0.99));
  std::fflush(stdout);
}

// One instant query to Prometheus's HTTP API: the first result's value; -1 when there is none or
// it is NaN (a histogram with no observations).
double prometheus_value(const std::string& url, const std::string& query) {
  const auto r = testpeer::http_call(url + "/api/v1/query?query=" + http::url_encode(query));
  const auto value = r.body.find("\"value\":[");
  const auto at = value == std::string::npos ? value : r.body.find(",\"", value);
  const double v = at == std::string::npos ? -1.0 : std::atof(r.body.c_str() + at + 2);
  return std::isnan(v) ? -1.0 : v;
}

// --prometheus: each system's gate-removal histogram as Prometheus stored it, quantiles as a
// dashboard reads them. Each controller ran once from zero, so its last scrape holds the whole run
// (last_over_time passes over the staleness marker its stop left).
void print_gate_removal(const std::string& url, const std::vector<const system_under_test*>& systems, std::chrono::seconds window) {
  std::vector<std::array<double, 3>> rows;
  for (const auto* s : systems) {
    const std::string selector = "{job=\"" + s->name + "\"}[" + std::to_string(window.count()) + "s]";
    auto last = [&](const std::string& series) { return "last_over_time(" + s->gate_removal + series + selector + ")"; };
    const std::string buckets = "sum by (le) (" + last("_bucket") + ")";
    const double count = prometheus_value(url, "sum(" + last("_count") + ")");
    const double p50 = prometheus_value(url, "histogram_quantile(0.5, " + buckets + ")");
    const double p99 = prometheus_value(url, "histogram_quantile(0.99, " + buckets + ")");
    std::printf("{\"system\":\"%s\",\"mode\":\"gate_removal\",\"metric\":\"%s\",\"removals\":%.0f,\"p50_s\":%.3f,\"p99_s\":%.3f}\n",
                s->name.c_str(), s->gate_removal.c_str(), count, p50, p99);
    rows.push_back({count, p50, p99});
  }
  std::printf("\n| | gate removals | p50 | p99 | histogram |\n|---|---|---|---|---|\n");
  for (size_t i = 0; i < systems.size(); ++i)
    std::printf("| %s | %.0f | %.3f s | %.3f s | `%s` |\n", systems[i]->name.c_str(), rows[i][0], rows[i][1], rows[i][2],
                systems[i]->gate_removal.c_str());
  std::fflush(stdout);
}

}  // namespace

// --shape: each system in turn runs the shape in its namespace; one JSON line per class and one
// for the run, then a Markdown table.
void run_shape(testenv::cluster* c, const std::vector<const system_under_test*>& systems, int queues, double scale, double stretch) {
  auto conn = std::get<k8s::connection>(k8s::load_kubeconfig(c->kubeconfig(), ""));
  http::transport::options fast;
  fast.qps = 2000;  // the bench's own 30,000 writes must not be what bounds the run
  fast.burst = 2000;
  k8s::transport io{headroom::testenv::real_time_transport(fast)};
  k8s::client api{conn, io};
  const auto classes = bench::shape::baseline();
  c->kubectl({"apply", "-f", "-"}, bench::shape::shape_run::priority_classes_yaml(classes));
  std::vector<std::pair<std::string, bench::shape::result>> results;
  for (const auto* s : systems) {
    std::fprintf(stderr, "[shape] %s: %d queues …\n", s->name.c_str(), queues);
    c->kubectl({"create", "namespace", s->ns});
    const pid_t pid = s->start();
    if (pid <= 0)
      continue;
    for (int q = 0; q < queues; ++q)
      s->set_quota(bench::shape::shape_run::queue_name(q), quota_cpus);
    std::this_thread::sleep_for(3s);  // the queues in the controller's cache
    bench::shape::shape_run run{api, s->ns, s->membership, classes, queues, scale, stretch};
    auto r = run.run(pid, 3600s);
    s->stop();
    for (const auto& [name, cr] : r.classes) {
      const auto& v = cr.admission_ms;
      double sum = 0;
      for (double x : v)
        sum += x;
      std::printf("{\"system\":\"%s\",\"mode\":\"shape_baseline\",\"class\":\"%s\",\"admitted\":%zu,\"avg_ms\":%.0f,\"p50_ms\":%.0f,"
                  "\"p99_ms\":%.0f,\"max_ms\":%.0f}\n",
                  s->name.c_str(), name.c_str(), v.size(), v.empty() ? 0.0 : sum / static_cast<double>(v.size()), percentile(v, 0.5),
                  percentile(v, 0.99), v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
    }
    std::printf("{\"system\":\"%s\",\"mode\":\"shape_baseline\",\"queues\":%d,\"created\":%d,\"admitted\":%d,\"finished\":%d,"
                "\"never_gated\":%d,\"stretch\":%.1f,\"complete\":%s,\"wall_s\":%.1f,\"pods_per_s\":%.1f,\"cpu_s\":%.1f,\"cpu_ms_per_pod\":%.2f,\"rss_mib_peak\":%.1f}\n",
                s->name.c_str(), queues, r.created, r.admitted, r.finished, r.never_gated, stretch, r.complete ? "true" : "false", r.wall_s,
                r.wall_s > 0 ? r.admitted / r.wall_s : 0.0, r.cpu_s, r.admitted > 0 ? 1000 * r.cpu_s / r.admitted : 0.0, r.rss_peak);
    std::fflush(stdout);
    results.emplace_back(s->name, std::move(r));
  }
  std::printf("\n| | small avg / p99 | medium avg / p99 | large avg / p99 | admitted | wall | pods/s | CPU s | CPU per pod | RSS peak |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& [name, r] : results) {
    auto cls = [&r](const std::string& k) {
      auto it = r.classes.find(k);
      if (it == r.classes.end() || it->second.admission_ms.empty())
        return std::string{"-"};
      const auto& v = it->second.admission_ms;
      double sum = 0;
      for (double x : v)
        sum += x;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f / %.1f s", sum / static_cast<double>(v.size()) / 1000, percentile(v, 0.99) / 1000);
      return std::string{buf};
    };
    std::printf("| %s | %s | %s | %s | %d of %d | %.0f s | %.1f | %.0f | %.1f ms | %.0f MiB |\n", name.c_str(), cls("small").c_str(),
                cls("medium").c_str(), cls("large").c_str(), r.admitted, r.created, r.wall_s, r.wall_s > 0 ? r.admitted / r.wall_s : 0.0,
                r.cpu_s, r.admitted > 0 ? 1000 * r.cpu_s / r.admitted : 0.0, r.rss_peak);
  }
}

int main(int argc, char** argv) {
  int events = 300, queues = 30;
  double scale = 1, stretch = 1;
  bool with_prometheus = false, quick = false;
  std::string only, shape;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--prometheus" || a == "--quick") {
      (a == "--prometheus" ? with_prometheus : quick) = true;
      continue;
    }
    if (i + 1 == argc)
      break;
    const std::string v = argv[++i];
    if (a == "--events")
      events = std::stoi(v);
    else if (a == "--only")
      only = v;
    else if (a == "--shape")
      shape = v;
    else if (a == "--queues")
      queues = std::stoi(v);
    else if (a == "--scale")
      scale = std::stod(v);
    else if (a == "--stretch")
      stretch = std::stod(v);
  }
  if (!shape.empty() && shape != "baseline") {
    std::fprintf(stderr, "gates_kueue_side_by_side: --shape baseline is the one shape\n");
    return 2;
  }
  events = std::min(events, 500);
  auto* c = testenv::cluster::shared(testenv::cluster_options{.karpenter = true});
  if (c == nullptr) {
    std::fprintf(stderr, "gates_kueue_side_by_side: no control plane: %s\n", testenv::cluster::unavailable_reason().c_str());
    return 1;
  }
  char tmpl[] = "/tmp/headroom-kueue-sbs-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const auto ca = testenv::make_ca("sbs-ca");
  const auto serving = testenv::issue_server_cert(ca, "webhook", {}, {"127.0.0.1"});
  write_file(dir + "/certs/tls.crt", serving.cert);
  write_file(dir + "/certs/tls.key", serving.key);
  // The large static node both systems' admitted pods run on.
  c->kubectl({"apply", "-f", "-"}, R"(apiVersion: v1
kind: Node
metadata:
  name: sbs
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: sbs, type: kwok, headroom.test/pool: sbs}
spec:
  taints: [{key: headroom.test/pool, value: sbs, effect: NoSchedule}]
status:
  allocatable: {cpu: "30000", memory: 40000Gi, pods: "30000"}
  capacity: {cpu: "30000", memory: 40000Gi, pods: "30000"}
)");
  const int hr_metrics_port = testenv::free_port(), kq_metrics_port = testenv::free_port();
  std::unique_ptr<testenv::prometheus_server> prom;
  if (with_prometheus) {
    write_file(dir + "/certs/ca.crt", ca.cert);
    write_file(dir + "/scrape-token", c->user_token());
    // Kueue's metrics server asks the API server to review each scrape's token and whether its
    // user may get /metrics: the plain test user gets what Kueue's metrics-reader ClusterRole
    // grants (its config/components/rbac/metrics_reader_role.yaml).
    c->kubectl({"create", "clusterrole", "sbs-metrics-reader", "--verb=get", "--non-resource-url=/metrics"});
    c->kubectl({"create", "clusterrolebinding", "sbs-metrics-reader", "--clusterrole=sbs-metrics-reader", "--user=headroom-user"});
    std::string why;
    prom = testenv::prometheus_server::start_jobs({{"headroom", {"127.0.0.1:" + std::to_string(hr_metrics_port)}},
                                                   {"kueue", {"127.0.0.1:" + std::to_string(kq_metrics_port)}, dir + "/certs/ca.crt",
                                                    dir + "/scrape-token"}},
                                                  why);
    if (!prom) {
      std::fprintf(stderr, "gates_kueue_side_by_side: --prometheus: %s\n", why.c_str());
      return 1;
    }
  }
  const auto prom_started = steady::now();

  // headroom: the gates mode of the headroom binary.
  std::unique_ptr<testenv::child_process> agent;
  const int hr_port = testenv::free_port();
  system_under_test hr;
  hr.name = "headroom";
  hr.ns = "sbs-headroom";
  hr.webhook_names = {"queue-gate.headroom.dev"};
  hr.membership = {"headroom.dev/queue", R"({"headroom.dev/queue-allocation-gate":"true"})"};
  hr.gate_removal = "headroom_queue_gate_removal_seconds";
  hr.pod_yaml = [&](const std::string& pod, const std::string& queue, const std::string& placement) {
    return pod_common(pod, hr.ns, "headroom.dev/queue: " + queue, "  annotations: {headroom.dev/queue-allocation-gate: \"true\"}\n", placement,
                      queue);
  };
  hr.set_quota = [&](const std::string& queue, int cpus) {
    c->kubectl({"apply", "-f", "-"}, "apiVersion: headroom.dev/v1alpha1\nkind: Queue\nmetadata: {name: " + queue +
                                         "}\nspec:\n  capacity: {cpu: \"" + std::to_string(cpus) + "\"}\n");
  };
  hr.start = [&]() -> pid_t {
    std::ofstream(dir + "/headroom.yaml") << "kubernetes:\n  kubeconfig: " << c->kubeconfig()
                                          << "\nleaderElection:\n  enabled: false\ngates:\n  enabled: true\n  webhook:\n    listen: 127.0.0.1:"
                                          << hr_port << "\n    certFile: " << dir << "/certs/tls.crt\n    keyFile: " << dir << "/certs/tls.key\n";
    c->kubectl({"apply", "-f", std::string{HEADROOM_SOURCE_DIR} + "/deploy/crds/queues.yaml"});
    c->kubectl({"wait", "--for", "condition=Established", "--timeout", "30s", "crd/queues.headroom.dev"});
    c->kubectl({"apply", "-f", "-"}, testenv::gates_webhook_config(hr_port, ca.cert));
    agent = std::make_unique<testenv::child_process>(
        std::vector<std::string>{HEADROOM_BINARY, "--config", dir + "/headroom.yaml", "--metrics-addr",
                                 "127.0.0.1:" + std::to_string(hr_metrics_port), "--log-level", "warn"},
        std::vector<std::string>{"PATH=/usr/bin:/bin"}, dir + "/headroom.log");
    std::this_thread::sleep_for(2s);
    return agent->pid();
  };
  hr.stop = [&] {
    agent->stop();
    // Its webhooks go with it, so the next system's pods do not call a closed port.
    c->kubectl({"delete", "mutatingwebhookconfiguration", "headroom-queue-gate", "--ignore-not-found"});
    c->kubectl({"delete", "namespace", hr.ns, "--wait=false"});
  };

  // Kueue: its manager, CRDs and webhooks from its Go module.
  std::unique_ptr<testenv::child_process> kueue;
  const int kq_port = testenv::free_port();
  system_under_test kq;
  kq.name = "kueue";
  kq.ns = "sbs-kueue";
  kq.webhook_names = {"mpod.kb.io", "vpod.kb.io"};
  kq.membership = {"kueue.x-k8s.io/queue-name", "{}"};
  kq.gate_removal = "kueue_pod_scheduling_gate_removal_seconds";
  kq.pod_yaml = [&](const std::string& pod, const std::string& queue, const std::string& placement) {
    return pod_common(pod, kq.ns, "kueue.x-k8s.io/queue-name: " + queue, "", placement, queue);
  };
  kq.set_quota = [&](const std::string& queue, int cpus) {
    const auto q = std::to_string(cpus);
    const auto r = c->kubectl({"apply", "-f", "-"}, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: sbs-" + queue +
                                                         "}\nspec:\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, memory]\n"
                                                         "    flavors:\n    - name: sbs-flavor\n      resources:\n      - {name: cpu, nominalQuota: \"" +
                                                         q + "\"}\n      - {name: memory, nominalQuota: 40000Gi}\n---\n"
                                                         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {namespace: " + kq.ns +
                                                         ", name: " + queue + "}\nspec: {clusterQueue: sbs-" + queue + "}\n");
    if (r.exit_code != 0)
      std::fprintf(stderr, "[kueue] quota: %s\n", r.err.c_str());
  };
  kq.start = [&]() -> pid_t {
    auto built = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/build-kueue.sh"});
    std::string binary = built.out;
    while (!binary.empty() && binary.back() == '\n')
      binary.pop_back();
    const auto module = kueue_module_dir();
    if (built.exit_code != 0 || module.empty()) {
      std::fprintf(stderr, "[kueue] not built: %s\n", built.err.c_str());
      return -1;
    }
    for (const auto& f : std::filesystem::directory_iterator{module + "/config/components/crd/bases"})
      c->kubectl({"apply", "--server-side", "-f", f.path().string()});
    c->kubectl({"wait", "--for", "condition=Established", "--timeout", "60s", "crd/clusterqueues.kueue.x-k8s.io",
                "crd/localqueues.kueue.x-k8s.io", "crd/workloads.kueue.x-k8s.io", "crd/resourceflavors.kueue.x-k8s.io"});
    c->kubectl({"create", "namespace", "kueue-system"});
    c->kubectl({"apply", "-f", "-"}, kueue_webhooks(module, kq_port, ca.cert, kq.ns));
    write_file("/etc/kueue/metrics/certs/tls.crt", serving.cert);
    write_file("/etc/kueue/metrics/certs/tls.key", serving.key);
    std::ofstream(dir + "/kueue.yaml") << "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: kueue-system\n"
                                       << "health: {healthProbeBindAddress: \"127.0.0.1:" << testenv::free_port() << "\"}\n"
                                       << "metrics: {bindAddress: \"127.0.0.1:" << kq_metrics_port << "\"}\n"
                                       << "webhook: {port: " << kq_port << ", host: 127.0.0.1, certDir: " << dir << "/certs}\n"
                                       << "leaderElection: {leaderElect: false}\ninternalCertManagement: {enable: false}\n"
                                       << "integrations: {frameworks: [pod]}\nmanagedJobsNamespaceSelector: {matchLabels: "
                                       << "{kubernetes.io/metadata.name: " << kq.ns << "}}\nclientConnection: {qps: 50, burst: 100}\n";
    kueue = std::make_unique<testenv::child_process>(
        std::vector<std::string>{binary, "--config", dir + "/kueue.yaml", "--feature-gates=VisibilityOnDemand=false"},
        std::vector<std::string>{"KUBECONFIG=" + c->kubeconfig(), "HOME=" + dir}, dir + "/kueue.log");
    // Ready when its webhook answers: the ResourceFlavor goes through it.
    if (!testenv::eventually([&] {
          return c->kubectl({"apply", "-f", "-"}, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: sbs-flavor}\n")
                     .exit_code == 0;
        }, 60s)) {
      std::fprintf(stderr, "[kueue] never ready:\n%s\n", kueue->log().c_str());
      return -1;
    }
    return kueue->pid();
  };
  kq.stop = [&] { kueue->stop(); };

  // Two more of Prometheus's 1 s scrapes before a controller stops: its last observations stored.
  if (prom)
    for (auto* s : {&hr, &kq})
      s->stop = [stop = s->stop] {
        std::this_thread::sleep_for(2500ms);
        stop();
      };

  std::vector<const system_under_test*> systems;
  for (const auto* s : {&hr, &kq})
    if (only.empty() || only == s->name)
      systems.push_back(s);
  auto report_gate_removal = [&] {
    if (prom)
      print_gate_removal(prom->url(), systems,
                         std::chrono::duration_cast<std::chrono::seconds>(steady::now() - prom_started) + 60s);
  };
  if (!shape.empty()) {
    run_shape(c, systems, queues, scale, stretch);
    report_gate_removal();
    return 0;
  }
  std::vector<std::pair<const system_under_test*, result>> results;
  for (const auto* s : systems) {
    std::fprintf(stderr, "[sbs] %s …\n", s->name.c_str());
    bench_run b{c, *s};
    results.emplace_back(s, b.run(events, quick));
    print_result(*s, results.back().second);
  }
  std::printf("\n| | p50 / p99 / max at 500 pending | at 5,000 pending | first, during the 4,800 creates | quiet after them | "
              "pods/s at 5,000 pending | CPU s | RSS peak | NodeClaims |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& [s, r] : results) {
    auto trio = [](const std::vector<double>& v) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.0f / %.0f / %.0f ms", percentile(v, 0.5), percentile(v, 0.99),
                    v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
      return std::string{buf};
    };
    std::printf("| %s | %s | %s | %.0f ms | %.0f s | %.0f | %.1f | %.0f MiB | %d |\n", s->name.c_str(), trio(r.latency_500).c_str(),
                trio(r.latency_5000).c_str(), r.first_after_intake_ms.empty() ? -1.0 : r.first_after_intake_ms[0], r.settle_5000_s,
                r.admit_rate, r.cpu_s, r.rss_peak, r.node_claims);
  }
  report_gate_removal();
  return 0;
}
