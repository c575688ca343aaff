// Soak of the BigFleet mode (seed 004): the headroom binary as a BigFleet operator on the test
// control plane, against the shard peer (tests/peers/bigfleet-shard), as tests/integration/
// bigfleet_agent.sh runs it. `--pods` Pods (2,000) go through in batches of 50: each batch is
// created (one CapacityRequest per Pod, acknowledged by the roll-up's session), a node-state burst
// for the same 20 machines is sent (each machine's UpcomingNode rewritten and ending Ready), then
// the batch's Pods finish (Succeeded: each CR must go). Every second: headroom's RSS, open file
// descriptors, threads, CPU time and the summed depth of its policy buffers (bench/soak_probe.hpp
// says what flat means).
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/bigfleet_soak_bench [--pods 2000]
//
// Prints one JSON line; exits 1 when a CR was not acknowledged or not removed, or the footprint
// grew.

#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "soak_probe.hpp"
#include "testenv/child_process.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/peer_process.hpp"

using namespace headroom;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr int batch = 50, machines = 20;
const std::string ns = "bf-soak";

std::string pod_yaml(int i) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: p-" + std::to_string(i) + ", namespace: " + ns +
         "}\nspec:\n  containers: [{name: c, image: busybox, resources: {requests: {cpu: 500m, memory: 64Mi}}}]\n";
}

// How many of the namespace's CRs are in `phase` ("" counts them all).
int crs(testenv::cluster& c, const std::string& phase) {
  auto r = c.kubectl({"-n", ns, "get", "capacityrequests", "-o", "jsonpath={range .items[*]}{.status.phase} {end}"});
  if (r.exit_code != 0)
    return -1;
  int n = 0;
  for (size_t at = 0; at < r.out.size();) {
    const auto end = r.out.find(' ', at);
    if (end == std::string::npos)
      break;
    n += phase.empty() || r.out.compare(at, end - at, phase) == 0;
    at = end + 1;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  int pods = 2000;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::string{argv[i]} == "--pods")
      pods = std::stoi(argv[i + 1]);
  auto* c = testenv::cluster::shared();
  if (!c) {
    std::fprintf(stderr, "bigfleet_soak_bench: control plane unavailable: %s\n", testenv::cluster::unavailable_reason().c_str());
    return 77;
  }
  if (c->kubectl({"apply", "-f", std::string{HEADROOM_SOURCE_DIR} + "/deploy/crds/"}).exit_code != 0)
    return 1;
  c->kubectl({"wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"});
  c->kubectl({"create", "namespace", ns});
  std::string why;
  auto shard = testpeer::peer_process::start("tests/peers/bigfleet-shard/build.sh", {"--cluster-id", "soak"}, why);
  if (!shard) {
    std::fprintf(stderr, "bigfleet_soak_bench: %s\n", why.c_str());
    return 1;
  }
  const std::string dir = c->dir() + "/bigfleet-soak";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/headroom.yaml") << "kubernetes: {kubeconfig: " << c->kubeconfig() << "}\nleaderElection: {enabled: false}\n"
                                        << "bigfleet:\n  enabled: true\n  clusterId: soak\n  shard: \"" << shard->ready("grpc")
                                        << "\"\n  rollupInterval: 1s\n";
  const int metrics_port = testenv::free_port();
  testenv::child_process agent{{HEADROOM_BINARY, "--config", dir + "/headroom.yaml", "--metrics-addr",
                                "127.0.0.1:" + std::to_string(metrics_port), "--log-level", "warn"},
                               {"PATH=/usr/bin:/bin"}, dir + "/agent.log"};
  const std::string control = shard->ready("control");
  const std::string metrics_url = "http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics";

  std::atomic<int> done{0};
  bench::sampler sampling{agent.pid(), metrics_url, done};
  bool ok = true;
  for (int first = 0; first < pods && ok; first += batch) {
    const int n = std::min(batch, pods - first);
    std::string yaml;
    for (int i = first; i < first + n; ++i)
      yaml += pod_yaml(i) + "---\n";
    c->kubectl({"apply", "-f", "-"}, yaml);
    testpeer::http_call(control + "/burst?cluster=soak", "{\"machines\":" + std::to_string(machines) + ",\"updates\":" +
                                                             std::to_string(machines * 4) + ",\"prefix\":\"soak\"}");
    if (!testenv::eventually([&] { return crs(*c, "Acknowledged") == n; }, 60s)) {
      const auto listing = c->kubectl({"-n", ns, "get", "capacityrequests", "-o",
                                       "jsonpath={range .items[*]}{.metadata.name}={.status.phase} rv {.metadata.resourceVersion}\n{end}"});
      std::fprintf(stderr, "bigfleet_soak_bench: batch at %d: %d of %d CRs acknowledged\n%s\n%s\n", first, crs(*c, "Acknowledged"), n,
                   listing.out.c_str(), agent.log().c_str());
      ok = false;
      break;
    }
    std::string finish;
    for (int i = first; i < first + n; ++i)
      c->kubectl({"-n", ns, "patch", "pod", "p-" + std::to_string(i), "--subresource=status", "--type=merge", "-p",
                  R"({"status":{"phase":"Succeeded"}})"});
    if (!testenv::eventually([&] { return crs(*c, "") == 0; }, 60s)) {
      std::fprintf(stderr, "bigfleet_soak_bench: batch at %d: %d CRs of finished Pods left\n", first, crs(*c, ""));
      ok = false;
      break;
    }
    c->kubectl({"-n", ns, "delete", "pods", "--all", "--grace-period=0", "--force", "--wait=false"});
    done = first + n;
  }
  // Every machine's UpcomingNode ends Ready (the last burst's final state).
  int ready = 0;
  testenv::eventually([&] {
    auto r = c->kubectl({"get", "upcomingnodes", "-o", "jsonpath={range .items[*]}{.status.phase} {end}"});
    ready = 0;
    for (size_t at = r.out.find("Ready"); at != std::string::npos; at = r.out.find("Ready", at + 1))
      ++ready;
    return ready == machines;
  }, 60s);
  const auto samples = sampling.stop();
  agent.stop();
  int warm_index = 0;  // after the first tenth of the Pods
  while (warm_index < static_cast<int>(samples.size()) && samples[warm_index].completed < pods / 10)
    ++warm_index;
  bench::write_samples_csv(samples);
  const auto soak = bench::summarize(samples, warm_index);
  std::printf("{\"mode\":\"bigfleet_soak\",\"pods\":%d,\"upcoming_nodes_ready\":%d,%s}\n", done.load(), ready, soak.json().c_str());
  return ok && ready == machines && (pods < 1000 || soak.flat) ? 0 : 1;
}
