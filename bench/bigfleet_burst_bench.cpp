// apiserver writes during a burst of NodeStateUpdates (10k updates for 100 machines, each machine
// ending Ready), with the per-machine coalescer and without it, on the real control plane against
// the shard peer. Prints one JSON object per mode: {"mode", "updates", "writes", "seconds"}.
//
//   bigfleet_burst_bench [--updates N] [--machines M]
//
// Needs the test control plane (tests/testenv/build.sh) and Go for the shard peer.

#include <caf/all.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "actors/bigfleet/bigfleet.hpp"
#include "messages/type_ids.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/peer_process.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace bf = actors::bigfleet;

int main(int argc, char** argv) {
  int updates = 10'000, machines = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--updates")
      updates = std::stoi(argv[i + 1]);
    else if (flag == "--machines")
      machines = std::stoi(argv[i + 1]);
  }
  auto* c = testenv::cluster::shared();
  if (!c) {
    std::fprintf(stderr, "bigfleet_burst_bench: control plane unavailable: %s\n", testenv::cluster::unavailable_reason().c_str());
    return 77;
  }
  if (c->kubectl({"apply", "-f", std::string{HEADROOM_SOURCE_DIR} + "/deploy/crds/"}).exit_code != 0)
    return 1;
  c->kubectl({"wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"});

  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  for (bool coalesce : {true, false}) {
    std::string why;
    auto shard = testpeer::peer_process::start("tests/peers/bigfleet-shard/build.sh", {"--cluster-id", "burst"}, why);
    if (!shard) {
      std::fprintf(stderr, "bigfleet_burst_bench: %s\n", why.c_str());
      return 1;
    }
    // A high client rate limit, so that the mode without coalescing finishes in minutes: the
    // figure compared is the number of writes, not their pace.
    k8s::transport::options topts;
    topts.clock = &headroom::runtime::real_clock();
    topts.qps = 1000;
    topts.burst = 1000;
    k8s::transport io{topts};
    k8s::client client{std::get<k8s::connection>(k8s::load_kubeconfig(c->kubeconfig())), io};
    bf::operator_deps deps;
    deps.client = &client;
    deps.queue = std::make_shared<headroom::bigfleet::send_queue>();
    k8s::informer<k8s::unstructured>::options o;
    o.kind = bf::kinds::upcoming_nodes;
    deps.upcoming_nodes = k8s::informer<k8s::unstructured>::make(client, o);
    deps.upcoming_nodes->start();
    testenv::eventually([&] { return deps.upcoming_nodes->synced(); }, 30s);
    bf::operator_options opts;
    opts.endpoint.target = shard->ready("grpc");
    opts.endpoint.cluster_id = "burst";
    opts.coalesce_node_state = coalesce;
    auto session = bf::spawn_shard_session(sys, deps, opts, bf::rollup_actor{});
    const std::string control = shard->ready("control");
    testenv::eventually([&] { return testpeer::http_call(control + "/state").body.find("\"open\":true") != std::string::npos; }, 20s);
    const uint64_t before = io.started();
    const auto t0 = std::chrono::steady_clock::now();
    testpeer::http_call(control + "/burst?cluster=burst",
                        "{\"machines\":" + std::to_string(machines) + ",\"updates\":" + std::to_string(updates) + "}");
    auto all_ready = [&] {
      auto r = c->kubectl({"get", "upcomingnodes", "-o", "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}"});
      int ready = 0;
      for (size_t at = 0; (at = r.out.find("Ready", at)) != std::string::npos; at += 5)
        ++ready;
      return ready == machines;
    };
    // Done when the writes have stopped (every machine Ready, or not: without coalescing,
    // concurrent writes per machine can land out of order).
    bool done = false;
    uint64_t last = io.started();
    auto quiet_since = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < 300s) {
      std::this_thread::sleep_for(500ms);
      const uint64_t now_writes = io.started();
      if (now_writes != last) {
        last = now_writes;
        quiet_since = std::chrono::steady_clock::now();
        continue;
      }
      if (std::chrono::steady_clock::now() - quiet_since >= 3s) {
        done = all_ready();
        break;
      }
    }
    const double seconds = std::chrono::duration<double>(quiet_since - t0).count();
    const uint64_t writes = io.started() - before;
    std::printf("{\"mode\":\"%s\",\"updates\":%d,\"machines\":%d,\"writes\":%llu,\"seconds\":%.1f,\"all_ready\":%s}\n",
                coalesce ? "coalescing" : "every update", updates, machines, static_cast<unsigned long long>(writes),
                seconds, done ? "true" : "false");
    std::fflush(stdout);
    caf::anon_send_exit(session, caf::exit_reason::user_shutdown);
    std::this_thread::sleep_for(500ms);
    deps.upcoming_nodes->stop();
    c->kubectl({"delete", "upcomingnodes", "--all", "--wait=false"});
    testenv::eventually([&] { return c->kubectl({"get", "upcomingnodes", "-o", "name"}).out.empty(); }, 60s);
  }
  return 0;
}
