// bigfleet_*: the BigFleet operator actors against the real control plane and a shard peer
// (tests/peers/bigfleet-shard: the Shard service from the same field list as the public API; the
// public shard module is not served by the Go module proxy here).

#include <caf/all.hpp>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <iostream>
#include <mutex>
#include <vector>

#include "actors/bigfleet/bigfleet.hpp"
#include "runtime/mailbox/buffer_stats.hpp"
#include "runtime/relay.hpp"
#include "runtime/supervisor.hpp"
#include "adapters/bigfleet/node_state.hpp"
#include "messages/type_ids.hpp"
#include "testenv/apiserver_proxy.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/shared_env.hpp"
#include "testenv/peer_process.hpp"

namespace headroom {
namespace {

using namespace std::chrono_literals;
using testenv::cluster;
using testenv::eventually;
namespace bf = actors::bigfleet;

struct shard_peer {
  std::unique_ptr<testpeer::peer_process> process;
  std::string grpc, control;
  testpeer::http_reply post(const std::string& path, const std::string& body, const std::string& cluster_id) const {
    return testpeer::http_call(control + path + "?cluster=" + cluster_id, body);
  }
  std::string state() const { return testpeer::http_call(control + "/state").body; }
};

std::unique_ptr<shard_peer> start_shard(bool tls, std::string& why) {
  std::vector<std::string> args = {"--cluster-id", "bigfleet-test"};
  if (tls)
    args.push_back("--tls");
  auto p = testpeer::peer_process::start("tests/peers/bigfleet-shard/build.sh", args, why);
  if (!p)
    return nullptr;
  auto s = std::make_unique<shard_peer>();
  s->grpc = p->ready("grpc");
  s->control = p->ready("control");
  s->process = std::move(p);
  return s;
}

// One control plane, client, informers and actor system for the whole binary.
struct env {
  cluster* c = nullptr;
  std::unique_ptr<k8s::transport> io;
  std::unique_ptr<k8s::client> client;
  bf::operator_deps deps;
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::string why;
};

// The operator's informers on `client` (CRs, UpcomingNodes, Pods with the "node" index), started.
bf::operator_deps informers_of(k8s::client& client) {
  bf::operator_deps deps;
  deps.client = &client;
  auto opts = [](const k8s::resource_kind& kind) {
    k8s::informer<k8s::unstructured>::options o;
    o.kind = kind;
    return o;
  };
  k8s::informer<k8s::pod>::options pod_opts;
  pod_opts.kind = k8s::kinds::pods;
  deps.capacity_requests = k8s::informer<k8s::unstructured>::make(client, opts(bf::kinds::capacity_requests));
  deps.upcoming_nodes = k8s::informer<k8s::unstructured>::make(client, opts(bf::kinds::upcoming_nodes));
  deps.pods = k8s::informer<k8s::pod>::make(client, pod_opts);
  deps.pods->add_index("node", [](const k8s::pod& p) {
    return p.node_name.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.node_name};
  });
  deps.capacity_requests->start();
  deps.upcoming_nodes->start();
  deps.pods->start();
  return deps;
}

env make_env() {
  env out;
  out.c = cluster::shared();
  if (!out.c) {
    out.why = cluster::unavailable_reason();
    return out;
  }
  auto applied = out.c->kubectl({"apply", "-f", std::string{HEADROOM_SOURCE_DIR} + "/deploy/crds/"});
  if (applied.exit_code != 0) {
    out.why = "installing the CRDs failed: " + applied.err;
    out.c = nullptr;
    return out;
  }
  out.c->kubectl({"wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"});
  k8s::transport::options topts;
  topts.clock = &headroom::runtime::real_clock();
  topts.qps = 500;
  topts.burst = 500;
  out.io = std::make_unique<k8s::transport>(topts);
  out.client = std::make_unique<k8s::client>(std::get<k8s::connection>(k8s::load_kubeconfig(out.c->kubeconfig())), *out.io);
  out.deps = informers_of(*out.client);
  eventually([&] { return out.deps.capacity_requests->synced() && out.deps.upcoming_nodes->synced() && out.deps.pods->synced(); }, 30s);
  out.cfg = std::make_unique<caf::actor_system_config>();
  out.sys = std::make_unique<caf::actor_system>(*out.cfg);
  return out;
}

// In order: actors, then informers, then the transport.
void stop_env(env& e) {
  e.sys.reset();
  for (auto* inf : {e.deps.capacity_requests.get(), e.deps.upcoming_nodes.get()})
    if (inf)
      inf->stop();
  if (e.deps.pods)
    e.deps.pods->stop();
  e.io.reset();  // joins the I/O thread: no callback runs after this
  e.deps = {};
  e.client.reset();
}

testenv::shared_env<env> the_env{make_env, stop_env};
env& shared() { return the_env.get(); }

#define REQUIRE_ENV(var) \
  auto& var = shared(); \
  HEADROOM_REQUIRE_READY(var.c, "the control plane", var.why)

std::string kubectl_get(const env& e, std::vector<std::string> args) {
  args.insert(args.begin(), "get");
  auto r = e.c->kubectl(args);
  return r.exit_code == 0 ? r.out : "";
}

void ensure_namespace(const env& e, const std::string& ns) { e.c->kubectl({"create", "namespace", ns}); }

std::string pod_yaml(const std::string& ns, const std::string& name, const std::string& extra_spec = "",
                     const std::string& cpu = "500m") {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         "\n  labels: {app: " + name + "}\nspec:\n" + extra_spec + "  containers:\n  - name: c\n    image: busybox\n    resources:\n      requests: {cpu: " +
         cpu + ", memory: 64Mi}\n";
}

// A kwok node `node` with the pod `pod` of namespace `ns` on it, which the PodDisruptionBudget
// `guard` (minAvailable 1) keeps from being evicted, once the budget counts it healthy.
void guarded_pod_on_a_node(const env& e, const std::string& ns, const std::string& node, const std::string& pod) {
  ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"},
                         "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + node +
                             "\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {type: kwok}\nstatus:\n  allocatable: {cpu: \"8\", memory: 16Gi, pods: \"50\"}\n  capacity: {cpu: \"8\", memory: 16Gi, pods: \"50\"}\n")
                .exit_code,
            0);
  ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"}, pod_yaml(ns, pod, "  nodeName: " + node + "\n  tolerations: [{operator: Exists}]\n")).exit_code, 0);
  ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"}, "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: guard, namespace: " + ns +
                                                   "}\nspec:\n  minAvailable: 1\n  selector: {matchLabels: {app: " + pod + "}}\n")
                .exit_code,
            0);
  ASSERT_TRUE(eventually([&] { return kubectl_get(e, {"pdb", "guard", "-n", ns, "-o", "jsonpath={.status.currentHealthy}"}) == "1"; }, 60s));
}

// A running set of operator actors (stopped at the end of the test).
struct operator_run {
  bf::rollup_actor rollup;
  bf::shard_session_actor session;
  bf::capacity_requests_actor upc;
  bf::operator_deps deps;  // the shared informers, and a send queue of this run's own
  explicit operator_run(const env& e) : deps(e.deps) { deps.queue = std::make_shared<headroom::bigfleet::send_queue>(); }
  caf::actor session_relay;  // the rollup's and the drains' way to the session, as the mode wires it
  // The rollup, then the session, wired as modes/bigfleet does: the session is the send queue's one
  // writer, reached through its relay.
  void start(caf::actor_system& sys, const bf::operator_options& o) {
    session_relay = headroom::runtime::spawn_relay(sys, "bigfleet/shard_session");
    deps.outbox = headroom::runtime::relay_as<bf::shard_outbox>(session_relay);
    rollup = bf::spawn_rollup(sys, deps, o);
    session = bf::spawn_shard_session(sys, deps, o, rollup);
    caf::anon_send(session_relay, headroom::msg::relay_target{headroom::runtime::untyped(session)});
  }
  ~operator_run() {
    for (const auto& a : {headroom::runtime::untyped(rollup), headroom::runtime::untyped(session), headroom::runtime::untyped(upc),
                          session_relay})
      if (a)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    std::this_thread::sleep_for(300ms);
  }
};

bf::operator_options options_for(const shard_peer& peer) {
  bf::operator_options o;
  o.endpoint.target = peer.grpc;
  o.endpoint.cluster_id = "bigfleet-test";
  o.rollup_interval = 1s;
  o.reconnect_initial = 100ms;
  o.reconnect_max = 1s;
  return o;
}

TEST(bigfleet, upc_creates_crs_per_pod_and_deletes_terminal_ones) {
  REQUIRE_ENV(e);
  ensure_namespace(e, "upc");
  operator_run run(e);
  bf::operator_options o;
  o.penalties.by_priority_class[""] = {"3", ""};
  run.upc = bf::spawn_capacity_requests(*e.sys, run.deps, o);
  for (const char* name : {"upc-a", "upc-b", "upc-c"})
    ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"}, pod_yaml("upc", name)).exit_code, 0);
  ASSERT_TRUE(eventually([&] {
    return kubectl_get(e, {"capacityrequests", "-n", "upc", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}"}) ==
           "upc-a=Pending upc-b=Pending upc-c=Pending ";
  }, 30s)) << kubectl_get(e, {"capacityrequests", "-n", "upc", "-o", "yaml"});
  const auto owner = kubectl_get(e, {"capacityrequest", "upc-a", "-n", "upc", "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.spec.resources.cpu} {.spec.interruptionPenalty} {.spec.requirements[0].key}"});
  EXPECT_EQ(owner, "Pod/upc-a 500m 3 node.kubernetes.io/instance-type");
  const auto pod_uid = kubectl_get(e, {"pod", "upc-a", "-n", "upc", "-o", "jsonpath={.metadata.uid}"});
  EXPECT_EQ(kubectl_get(e, {"capacityrequest", "upc-a", "-n", "upc", "-o", "jsonpath={.metadata.labels.bigfleet\\.lucy\\.sh/pod-uid}"}), pod_uid);

  // A terminal Pod's CR goes at once.
  auto done = e.c->kubectl({"patch", "pod", "upc-b", "-n", "upc", "--subresource=status", "--type=merge", "-p",
                            R"({"status":{"phase":"Succeeded"}})"});
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_TRUE(eventually([&] { return kubectl_get(e, {"capacityrequest", "upc-b", "-n", "upc", "--ignore-not-found", "-o", "name"}).empty(); }, 20s));
  // A deleted Pod's CR goes too (our delete, or garbage collection through the owner reference).
  ASSERT_EQ(e.c->kubectl({"delete", "pod", "upc-c", "-n", "upc", "--wait=false"}).exit_code, 0);
  EXPECT_TRUE(eventually([&] { return kubectl_get(e, {"capacityrequest", "upc-c", "-n", "upc", "--ignore-not-found", "-o", "name"}).empty(); }, 30s));
  // The terminal Pod never gets one back.
  std::this_thread::sleep_for(1s);
  EXPECT_TRUE(kubectl_get(e, {"capacityrequest", "upc-b", "-n", "upc", "--ignore-not-found", "-o", "name"}).empty());
  // Pending pods would land on the next tests' nodes.
  e.c->kubectl({"delete", "pods", "--all", "-n", "upc", "--grace-period=0", "--force", "--wait=false"});
}

// Whether the informer shows exactly these pods on `node`.
bool pods_on(const env& e, const std::string& node, std::vector<std::string> want) {
  std::vector<std::string> have;
  for (const auto& p : e.deps.pods->by_index("node", node))
    have.push_back(p->meta.name);
  std::sort(have.begin(), have.end());
  std::sort(want.begin(), want.end());
  return have == want;
}

TEST(bigfleet, session_rollups_acks_and_node_state_through_the_shard) {
  REQUIRE_ENV(e);
  std::string why;
  auto peer = start_shard(false, why);
  ASSERT_TRUE(peer) << why;
  ensure_namespace(e, "rollup");
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"},
                           "apiVersion: bigfleet.lucy.sh/v1alpha1\nkind: CapacityRequest\nmetadata:\n  name: cr-" + std::to_string(i) +
                               "\n  namespace: rollup\nspec:\n  resources: {cpu: \"2\", memory: 1Gi}\n  priority: 7\n  reclamationPenalty: 500m\n")
                  .exit_code,
              0);
  operator_run run(e);
  auto o = options_for(*peer);
  run.start(*e.sys, o);

  // Hello, then a roll-up at once on connect with the four CRs summed into one need.
  simdjson::dom::parser parser;
  ASSERT_TRUE(eventually([&] {
    auto st = parser.parse(peer->state());
    if (int64_t(st["rollups"]) < 1)
      return false;
    auto last = st["lastRollup"];
    for (auto need : last["needs"].get_array()) {
      auto cpu = need["aggregateResources"]["cpu"];
      if (!cpu.error() && std::string_view(cpu.value()) == "8" && int64_t(need["priority"]) == 7)
        return true;
    }
    return false;
  }, 30s)) << peer->state();
  auto st = parser.parse(peer->state());
  auto session = st["sessions"].at(0);
  EXPECT_EQ(std::string_view(session["clusterId"]), "bigfleet-test");
  EXPECT_EQ(std::string_view(session["protocolVersion"]), "v1alpha1");
  EXPECT_NE(std::string{peer->state()}.find("PENALTY_BUCKET_HALF_DOLLAR"), std::string::npos) << "500m is $0.50";
  // Every CR that was Pending is acknowledged.
  EXPECT_TRUE(eventually([&] {
    return kubectl_get(e, {"capacityrequests", "-n", "rollup", "-o", "jsonpath={range .items[*]}{.status.phase} {end}"}) ==
           "Acknowledged Acknowledged Acknowledged Acknowledged ";
  }, 30s)) << kubectl_get(e, {"capacityrequests", "-n", "rollup", "-o", "yaml"});

  // Node state: Creating → Provisioning, Configured → Ready (with nodeRef), Draining, Idle → Drained → deleted.
  auto node_state = [&](const std::string& state, const std::string& node_name) {
    const std::string body = R"({"supersedesKey":"node:m-100","machineId":"m-100","clusterId":"bigfleet-test","state":")" + state +
                             R"(","nodeName":")" + node_name + R"(","labels":{"pool":"gpu"},"resources":{"resources":{"cpu":"16"}},)" +
                             R"("taints":[{"key":"bigfleet.lucy.sh/upcoming","effect":"NoSchedule"}]})";
    auto r = peer->post("/node-state", body, "bigfleet-test");
    ASSERT_EQ(r.status, 200) << r.body;
  };
  auto phase = [&] { return kubectl_get(e, {"upcomingnode", "m-100", "--ignore-not-found", "-o", "jsonpath={.status.phase}"}); };
  node_state("MACHINE_STATE_CREATING", "");
  ASSERT_TRUE(eventually([&] { return phase() == "Provisioning"; }, 20s)) << phase();
  EXPECT_EQ(kubectl_get(e, {"upcomingnode", "m-100", "-o", "jsonpath={.spec.labels.pool} {.spec.resources.cpu} {.spec.taints[0].key}"}),
            "gpu 16 bigfleet.lucy.sh/upcoming");
  EXPECT_FALSE(kubectl_get(e, {"upcomingnode", "m-100", "-o", "jsonpath={.status.provisioningStartTime}"}).empty());
  node_state("MACHINE_STATE_CONFIGURED", "node-m-100");
  ASSERT_TRUE(eventually([&] { return phase() == "Ready"; }, 20s)) << phase();
  EXPECT_EQ(kubectl_get(e, {"upcomingnode", "m-100", "-o", "jsonpath={.status.nodeRef.name}"}), "node-m-100");
  node_state("MACHINE_STATE_DRAINING", "node-m-100");
  ASSERT_TRUE(eventually([&] { return phase() == "Draining"; }, 20s)) << phase();
  node_state("MACHINE_STATE_IDLE", "node-m-100");
  EXPECT_TRUE(eventually([&] { return phase().empty() && kubectl_get(e, {"upcomingnode", "m-100", "--ignore-not-found", "-o", "name"}).empty(); }, 20s))
      << "Idle after Draining is Drained, and the UpcomingNode is deleted";

  // Available capacity: ac- + sha256 of the fingerprint.
  auto r = peer->post("/available", R"({"supersedesKey":"available:gpu|a100","availableCount":3,"confidence":"CONFIDENCE_HIGH","costPerHour":2.5,
      "resources":{"resources":{"nvidia.com/gpu":"8"}},"requirements":[{"key":"gpu","operator":"OPERATOR_IN","values":["a100"]}]})",
                      "bigfleet-test");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string ac = headroom::bigfleet::available_capacity_name("available:gpu|a100");
  EXPECT_TRUE(eventually([&] {
    return kubectl_get(e, {"availablecapacity", ac, "--ignore-not-found", "-o", "jsonpath={.spec.availability} {.spec.availableCount} {.spec.cost}"}) ==
           "High 3 2.5";
  }, 20s));

  // The shard drops the stream: the session reconnects with Hello, sends a roll-up at once, and
  // the shard's replay of the machines' state makes no write (nothing changed).
  const int64_t rollups_before = int64_t(parser.parse(peer->state())["rollups"]);
  ASSERT_EQ(peer->post("/drop", "", "bigfleet-test").status, 200);
  EXPECT_TRUE(eventually([&] {
    auto s = parser.parse(peer->state());
    return s["sessions"].get_array().size() == 2 && bool(s["sessions"].at(1)["open"]) && int64_t(s["rollups"]) > rollups_before;
  }, 20s)) << peer->state();

  // Bootstrap: the response echoes the request id (no template: a minimal cloud-config).
  r = peer->post("/bootstrap", R"({"requestId":"boot-1","clusterId":"bigfleet-test"})", "bigfleet-test");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(eventually([&] { return peer->state().find("boot-1") != std::string::npos; }, 20s)) << peer->state();

}

// Fault campaign (#19): the shard cuts the stream again and again in the middle of a burst - 40
// CapacityRequests being created, node-state bursts over 20 machines in flight - and each time the
// session reconnects (Hello, a roll-up at once). Nothing is lost: every CR is acknowledged, the
// last roll-up carries all 40, and every machine's UpcomingNode ends in the shard's last state for
// it (the shard replays bound machines on reconnect; updates cut in flight are superseded by it).
TEST(bigfleet, shard_stream_cut_repeatedly_mid_burst_loses_nothing) {
  REQUIRE_ENV(e);
  std::string why;
  auto peer = start_shard(false, why);
  ASSERT_TRUE(peer) << why;
  ensure_namespace(e, "stream-cuts");
  operator_run run(e);
  auto o = options_for(*peer);
  run.start(*e.sys, o);
  simdjson::dom::parser parser;
  ASSERT_TRUE(eventually([&] { return int64_t(parser.parse(peer->state())["rollups"]) >= 1; }, 30s)) << peer->state();

  constexpr int crs = 40, cuts = 8, machines = 20;
  auto creator = std::async(std::launch::async, [&] {
    int made = 0;
    for (int i = 0; i < crs; ++i)
      made += e.c->kubectl({"apply", "-f", "-"},
                           "apiVersion: bigfleet.lucy.sh/v1alpha1\nkind: CapacityRequest\nmetadata:\n  name: cut-" + std::to_string(i) +
                               "\n  namespace: stream-cuts\nspec:\n  resources: {cpu: \"2\", memory: 1Gi}\n  priority: 9\n")
                  .exit_code == 0;
    return made;
  });
  auto open_sessions = [&] {
    size_t total = 0, open = 0;
    auto doc = parser.parse(peer->state());
    for (auto sess : doc["sessions"].get_array()) {
      ++total;
      open += bool(sess["open"]);
    }
    return std::pair{total, open};
  };
  int dropped = 0;
  double slowest_reconnect_s = 0;
  for (int i = 0; i < cuts; ++i) {
    // A burst in flight (the last one ends every machine CONFIGURED), then the cut in its middle.
    peer->post("/burst", "{\"machines\":" + std::to_string(machines) + ",\"updates\":" + std::to_string(machines * 8) + "}",
               "bigfleet-test");
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 60 * i));
    auto r = peer->post("/drop", "", "bigfleet-test");
    ASSERT_EQ(r.status, 200) << r.body;
    int64_t n = 0;
    if (parser.parse(r.body)["dropped"].get(n) == simdjson::SUCCESS)
      dropped += static_cast<int>(n);
    // The session reconnects (a new one open at the shard) within its backoff (100 ms, at most 1 s).
    const auto cut = std::chrono::steady_clock::now();
    const size_t sessions_at_cut = open_sessions().first;
    while (!(open_sessions().first > sessions_at_cut && open_sessions().second == 1) &&
           std::chrono::steady_clock::now() - cut < 5s)
      std::this_thread::sleep_for(10ms);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
    slowest_reconnect_s = std::max(slowest_reconnect_s, took);
    EXPECT_LT(took, 2.0) << "cut " << i << ": no new session within 2 s\n" << peer->state();
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(creator.get(), crs) << "the CRs themselves were created";
  EXPECT_EQ(dropped, cuts) << "each cut ended the one open session";
  EXPECT_EQ(open_sessions(), std::pair(static_cast<size_t>(cuts + 1), size_t{1})) << peer->state();
  // Every CR acknowledged, and the last roll-up carries all of them (40 × 2 CPU at priority 9).
  EXPECT_TRUE(eventually([&] {
    const auto phases = kubectl_get(e, {"capacityrequests", "-n", "stream-cuts", "-o", "jsonpath={range .items[*]}{.status.phase} {end}"});
    size_t acked = 0;
    for (size_t at = 0; (at = phases.find("Acknowledged", at)) != std::string::npos; at += 12)
      ++acked;
    return acked == crs;
  }, 30s)) << kubectl_get(e, {"capacityrequests", "-n", "stream-cuts", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}"});
  EXPECT_TRUE(eventually([&] {
    auto last = parser.parse(peer->state())["lastRollup"];
    for (auto need : last["needs"].get_array()) {
      auto cpu = need["aggregateResources"]["cpu"];
      if (!cpu.error() && std::string_view(cpu.value()) == "80" && int64_t(need["priority"]) == 9)
        return true;
    }
    return false;
  }, 30s)) << peer->state();
  // Every machine's UpcomingNode in the shard's last state for it: Ready.
  std::string phases;
  EXPECT_TRUE(eventually([&] {
    phases.clear();
    int ready = 0;
    for (int m = 0; m < machines; ++m) {
      char id[32];
      std::snprintf(id, sizeof id, "burst-%03d", m);
      const auto p = kubectl_get(e, {"upcomingnode", id, "--ignore-not-found", "-o", "jsonpath={.status.phase}"});
      phases += std::string{id} + "=" + p + " ";
      ready += p == "Ready";
    }
    return ready == machines;
  }, 60s)) << phases;
  EXPECT_TRUE(parser.parse(peer->state())["refused"].is_null() || parser.parse(peer->state())["refused"].get_array().size() == 0)
      << peer->state();
  std::printf("[faults] shard stream cut %d times mid-burst (%d CRs, %d machines): each reconnected within %.2f s; "
              "nothing lost\n", dropped, crs, machines, slowest_reconnect_s);
  e.c->kubectl({"delete", "capacityrequests", "--all", "-n", "stream-cuts", "--wait=false"});
  for (int m = 0; m < machines; ++m) {
    char id[32];
    std::snprintf(id, sizeof id, "burst-%03d", m);
    e.c->kubectl({"delete", "upcomingnode", id, "--ignore-not-found", "--wait=false"});
  }
}

TEST(bigfleet, reclaim_cordons_acks_and_drains_past_a_pdb_skipping_daemonsets) {
  REQUIRE_ENV(e);
  std::string why;
  auto peer = start_shard(false, why);
  ASSERT_TRUE(peer) << why;
  ensure_namespace(e, "reclaim");
  const std::string node = "reclaim-node-1";
  ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"},
                         "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + node +
                             "\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {type: kwok}\nstatus:\n  allocatable: {cpu: \"8\", memory: 16Gi, pods: \"50\"}\n  capacity: {cpu: \"8\", memory: 16Gi, pods: \"50\"}\n")
                .exit_code,
            0);
  // A DaemonSet (matching no node) to own one pod, so that garbage collection keeps that pod.
  ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"},
                         "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: reclaim}\nspec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    spec:\n      nodeSelector: {nowhere: \"true\"}\n      containers: [{name: c, image: busybox}]\n")
                .exit_code,
            0);
  const auto ds_uid = kubectl_get(e, {"daemonset", "agent", "-n", "reclaim", "-o", "jsonpath={.metadata.uid}"});
  const std::string on_node = "  nodeName: " + node + "\n  tolerations: [{operator: Exists}]\n";
  ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"}, pod_yaml("reclaim", "free", on_node)).exit_code, 0);
  ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"}, pod_yaml("reclaim", "guarded", on_node)).exit_code, 0);
  std::string ds_pod = pod_yaml("reclaim", "agent-pod", on_node);
  ds_pod.replace(ds_pod.find("  labels:"), 0,
                 "  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: " + ds_uid + "}]\n");
  ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"}, ds_pod).exit_code, 0);
  ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"},
                         "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: guard, namespace: reclaim}\nspec:\n  minAvailable: 1\n  selector: {matchLabels: {app: guarded}}\n")
                .exit_code,
            0);
  // The PDB controller (in KCM) must have computed the budget before evictions meet it.
  ASSERT_TRUE(eventually([&] {
    return kubectl_get(e, {"pods", "-n", "reclaim", "-o", "jsonpath={range .items[*]}{.status.phase} {end}"}) == "Running Running Running " &&
           kubectl_get(e, {"pdb", "guard", "-n", "reclaim", "-o", "jsonpath={.status.currentHealthy}"}) == "1";
  }, 60s)) << kubectl_get(e, {"pods,pdb", "-n", "reclaim", "-o", "wide"});
  ASSERT_TRUE(eventually([&] { return pods_on(e, node, {"free", "guarded", "agent-pod"}); }, 20s))
      << kubectl_get(e, {"pods", "-A", "-o", "wide"});

  operator_run run(e);
  auto o = options_for(*peer);
  run.start(*e.sys, o);
  ASSERT_TRUE(eventually([&] { return peer->state().find("\"open\":true") != std::string::npos; }, 20s));
  // The machine behind the node, Ready, so the drain has an UpcomingNode to walk.
  ASSERT_EQ(peer->post("/node-state", R"({"machineId":"m-reclaim","state":"MACHINE_STATE_CONFIGURED","nodeName":")" + node +
                                          R"(","resources":{"resources":{"cpu":"8"}}})",
                       "bigfleet-test").status,
            200);
  ASSERT_TRUE(eventually([&] { return kubectl_get(e, {"upcomingnode", "m-reclaim", "-o", "jsonpath={.status.phase}"}) == "Ready"; }, 20s));
  ASSERT_TRUE(eventually([&] { return !e.deps.upcoming_nodes->list().empty(); }, 10s));

  auto r = peer->post("/reclaim", R"({"instructionId":"rc-1","nodes":[")" + node + R"(","no-such-node"],"gracePeriodSeconds":20,"preemptorPriority":1000})",
                      "bigfleet-test");
  ASSERT_EQ(r.status, 200) << r.body;
  // Cordon, then the ack with the nodes whose cordon landed.
  ASSERT_TRUE(eventually([&] { return peer->state().find("rc-1") != std::string::npos; }, 20s)) << peer->state();
  simdjson::dom::parser parser;
  auto ack = parser.parse(peer->state())["reclaimAcks"].at(0);
  EXPECT_EQ(std::string_view(ack["instructionId"]), "rc-1");
  ASSERT_EQ(ack["nodesStarted"].get_array().size(), 1u) << "the unknown node is not started";
  EXPECT_EQ(std::string_view(ack["nodesStarted"].at(0)), node);
  EXPECT_EQ(kubectl_get(e, {"node", node, "-o", "jsonpath={.spec.unschedulable}"}), "true");
  EXPECT_TRUE(eventually([&] { return kubectl_get(e, {"upcomingnode", "m-reclaim", "-o", "jsonpath={.status.phase}"}) == "Draining"; }, 10s));
  // The free pod is evicted; the guarded one is refused (429) and retried every 2 s.
  EXPECT_TRUE(eventually([&] { return kubectl_get(e, {"pod", "free", "-n", "reclaim", "--ignore-not-found", "-o", "name"}).empty(); }, 20s));
  std::this_thread::sleep_for(4s);
  EXPECT_FALSE(kubectl_get(e, {"pod", "guarded", "-n", "reclaim", "--ignore-not-found", "-o", "name"}).empty())
      << "the PDB holds the guarded pod";
  // Lifting the PDB lets a retry through before the deadline: the node is drained and its
  // UpcomingNode deleted; the DaemonSet pod was never touched.
  ASSERT_EQ(e.c->kubectl({"delete", "pdb", "guard", "-n", "reclaim"}).exit_code, 0);
  EXPECT_TRUE(eventually([&] { return kubectl_get(e, {"pod", "guarded", "-n", "reclaim", "--ignore-not-found", "-o", "name"}).empty(); }, 20s));
  EXPECT_TRUE(eventually([&] { return kubectl_get(e, {"upcomingnode", "m-reclaim", "--ignore-not-found", "-o", "name"}).empty(); }, 20s))
      << kubectl_get(e, {"upcomingnode", "m-reclaim", "-o", "yaml"});
  EXPECT_EQ(kubectl_get(e, {"pod", "agent-pod", "-n", "reclaim", "-o", "jsonpath={.metadata.deletionTimestamp}"}), "")
      << "DaemonSet pods are not evicted";
  EXPECT_FALSE(kubectl_get(e, {"pod", "agent-pod", "-n", "reclaim", "--ignore-not-found", "-o", "name"}).empty());
}

TEST(bigfleet, reclaim_past_the_deadline_fails_the_node_with_last_error) {
  REQUIRE_ENV(e);
  std::string why;
  auto peer = start_shard(false, why);
  ASSERT_TRUE(peer) << why;
  ensure_namespace(e, "reclaim2");
  const std::string node = "reclaim-node-2";
  ASSERT_NO_FATAL_FAILURE(guarded_pod_on_a_node(e, "reclaim2", node, "stuck"));
  ASSERT_TRUE(eventually([&] { return pods_on(e, node, {"stuck"}); }, 20s))
      << kubectl_get(e, {"pods,nodes", "-A", "-o", "wide"});
  operator_run run(e);
  auto o = options_for(*peer);
  run.start(*e.sys, o);
  ASSERT_TRUE(eventually([&] { return peer->state().find("\"open\":true") != std::string::npos; }, 20s));
  ASSERT_EQ(peer->post("/node-state", R"({"machineId":"m-stuck","state":"MACHINE_STATE_CONFIGURED","nodeName":")" + node + R"(","resources":{"resources":{"cpu":"8"}}})",
                       "bigfleet-test").status,
            200);
  ASSERT_TRUE(eventually([&] { return kubectl_get(e, {"upcomingnode", "m-stuck", "-o", "jsonpath={.status.phase}"}) == "Ready"; }, 20s));
  ASSERT_TRUE(eventually([&] {
    for (const auto& u : e.deps.upcoming_nodes->list())
      if (bf::status_node_name(u->raw) == node)
        return true;
    return false;
  }, 10s));
  ASSERT_EQ(peer->post("/reclaim", R"({"instructionId":"rc-2","nodes":[")" + node + R"("],"gracePeriodSeconds":5})", "bigfleet-test").status, 200);
  EXPECT_TRUE(eventually([&] { return kubectl_get(e, {"upcomingnode", "m-stuck", "-o", "jsonpath={.status.phase}"}) == "Failed"; }, 20s));
  const auto last_error = kubectl_get(e, {"upcomingnode", "m-stuck", "-o", "jsonpath={.status.lastError}"});
  EXPECT_NE(last_error.find("PodDisruptionBudget"), std::string::npos) << last_error;
  EXPECT_NE(last_error.find("grace period"), std::string::npos) << last_error;
}

// #58: a reclaim holds its dispatch slot only until its ack (after the cordon), as the design's
// handler returns there; the drain goes on on its own clock. 64 reclaims whose drains last (a
// PodDisruptionBudget refuses the eviction, 120 s grace) are each acked at once, and an
// AvailableCapacity sent after them is written within seconds; nothing is dropped. (Before, each
// drain held its slot to the end: 32 of 64 acked, and the AvailableCapacity waited for a slot.)
TEST(bigfleet, long_reclaim_drains_hold_no_dispatch_slot_past_their_ack) {
  REQUIRE_ENV(e);
  std::string why;
  auto peer = start_shard(false, why);
  ASSERT_TRUE(peer) << why;
  ensure_namespace(e, "reclaim3");
  const std::string node = "reclaim-node-3";
  ASSERT_NO_FATAL_FAILURE(guarded_pod_on_a_node(e, "reclaim3", node, "held"));
  operator_run run(e);
  std::vector<headroom::runtime::buffer_stats_ptr> buffers;
  std::mutex buffers_lock;
  run.deps.track_buffer = [&](const headroom::runtime::buffer_stats_ptr& b) {
    std::lock_guard lock{buffers_lock};
    buffers.push_back(b);
  };
  auto o = options_for(*peer);
  run.start(*e.sys, o);
  ASSERT_TRUE(eventually([&] { return peer->state().find("\"open\":true") != std::string::npos; }, 20s));

  constexpr int reclaims = 64;  // twice the dispatch limit (32)
  for (int i = 0; i < reclaims; ++i)
    ASSERT_EQ(peer->post("/reclaim", R"({"instructionId":"rc-long-)" + std::to_string(i) + R"(","nodes":[")" + node +
                                         R"("],"gracePeriodSeconds":120})",
                         "bigfleet-test")
                  .status,
              200);
  simdjson::dom::parser parser;
  auto acks = [&] {
    simdjson::dom::array a;
    return parser.parse(peer->state())["reclaimAcks"].get(a) == simdjson::SUCCESS ? a.size() : size_t{0};
  };
  EXPECT_TRUE(eventually([&] { return acks() >= size_t(reclaims); }, 30s))
      << acks() << " of " << reclaims << " reclaims acked while their drains last";
  EXPECT_FALSE(kubectl_get(e, {"pod", "held", "-n", "reclaim3", "--ignore-not-found", "-o", "name"}).empty()) << "still draining";

  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(peer->post("/available", R"({"supersedesKey":"available:long-drains","availableCount":2,"confidence":"CONFIDENCE_HIGH","costPerHour":1.5,
      "resources":{"resources":{"cpu":"8"}},"requirements":[{"key":"pool","operator":"OPERATOR_IN","values":["a"]}]})",
                       "bigfleet-test")
                .status,
            200);
  const std::string ac = headroom::bigfleet::available_capacity_name("available:long-drains");
  EXPECT_TRUE(eventually([&] {
    return kubectl_get(e, {"availablecapacity", ac, "--ignore-not-found", "-o", "jsonpath={.spec.availableCount} {.spec.fingerprint}"}) ==
           "2 long-drains";
  }, 10s)) << "an AvailableCapacity behind 64 draining reclaims, carrying the fingerprint it is named by";
  std::cout << "[bigfleet] " << acks() << " reclaims acked; AvailableCapacity written "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count() << " s after it was sent\n";
  {
    std::lock_guard lock{buffers_lock};
    ASSERT_FALSE(buffers.empty());
    for (const auto& b : buffers)
      EXPECT_EQ(b->dropped.load(), 0u) << b->name << ": nothing dropped";
  }
  // The drains end once the budget allows the eviction.
  ASSERT_EQ(e.c->kubectl({"delete", "pdb", "guard", "-n", "reclaim3"}).exit_code, 0);
  EXPECT_TRUE(eventually([&] { return kubectl_get(e, {"pod", "held", "-n", "reclaim3", "--ignore-not-found", "-o", "name"}).empty(); }, 30s));
}

TEST(bigfleet, mtls_session_and_a_wrong_uri_san_is_refused) {
  REQUIRE_ENV(e);
  std::string why;
  auto peer = start_shard(true, why);
  ASSERT_TRUE(peer) << why;
  auto o = options_for(*peer);
  o.endpoint.tls = true;
  o.endpoint.ca_pem = peer->process->read("ca.pem");
  o.endpoint.cert_pem = peer->process->read("client.pem");
  o.endpoint.key_pem = peer->process->read("client.key");
  {
    operator_run run(e);
    run.start(*e.sys, o);
    simdjson::dom::parser parser;
    ASSERT_TRUE(eventually([&] { return int64_t(parser.parse(peer->state())["rollups"]) >= 1; }, 30s)) << peer->state();
    auto session = parser.parse(peer->state())["sessions"].at(0);
    EXPECT_EQ(std::string_view(session["tlsVersion"]), "TLS 1.3");
    EXPECT_EQ(std::string_view(session["clusterId"]), "bigfleet-test");
  }
  // A certificate naming another cluster: PermissionDenied, and no session ever opens.
  o.endpoint.cert_pem = peer->process->read("client-wrong-san.pem");
  o.endpoint.key_pem = peer->process->read("client-wrong-san.key");
  operator_run run(e);
  run.start(*e.sys, o);
  ASSERT_TRUE(eventually([&] { return peer->state().find("want exactly bigfleet://cluster/bigfleet-test") != std::string::npos; }, 20s))
      << peer->state();
  simdjson::dom::parser parser;
  EXPECT_EQ(parser.parse(peer->state())["sessions"].get_array().size(), 1u) << "only the good certificate's session";
}

// The sum of the last roll-up's CPU over every need ("" quantities as the roll-up writes them:
// whole cores or millicores), in millicores; -1 when there is none yet. A roll-up with no need at
// all has no "needs" field (an empty repeated field): 0.
int64_t rollup_millicpu(const shard_peer& peer) {
  simdjson::dom::parser parser;
  auto last = parser.parse(peer.state())["lastRollup"];
  if (last.error())
    return -1;
  int64_t sum = 0;
  simdjson::dom::array needs;
  if (last["needs"].get(needs) != simdjson::SUCCESS)
    return 0;
  for (auto need : needs) {
    std::string_view cpu;
    if (need["aggregateResources"]["cpu"].get(cpu) != simdjson::SUCCESS || cpu.empty())
      continue;
    sum += cpu.back() == 'm' ? std::stoll(std::string{cpu.substr(0, cpu.size() - 1)}) : std::stoll(std::string{cpu}) * 1000;
  }
  return sum;
}

// Fault campaign (#19): the API server broken under the operator, its traffic through the fault
// proxy (testenv/apiserver_proxy.hpp: a client and informers of its own; kubectl and the shard
// peer are direct), in turn, each in the middle of its own burst - 4 new Pods (each wants one
// CapacityRequest), one earlier Pod finished (its CR must go), node-state updates for 5 new
// machines:
//   1. every request answered 429/503/500/504 for 30 s (a 504 to a write only after the write
//      was made);
//   2. every watch stream silenced: dropped after watchStallTimeout (15 s here) and resumed;
//   3. every watch stream ended and met a 410 Expired: the informers relist;
//   4. kube-apiserver stopped and started again with the same flags.
// After each: exactly one CR per live Pod and none for a finished one, every CR acknowledged,
// the last roll-up carries all of them, every machine's UpcomingNode Ready.
TEST(bigfleet, apiserver_faults_mid_burst_lose_no_capacity_request_or_node_state) {
  REQUIRE_ENV(e);
  testenv::apiserver_proxy proxy{*e.c};
  HEADROOM_REQUIRE_READY(proxy.p != nullptr, "the API-server fault proxy", proxy.why);
  std::string why;
  auto peer = start_shard(false, why);
  ASSERT_TRUE(peer) << why;
  const std::string ns = "bf-apifault";
  ensure_namespace(e, ns);

  // The operator's side of the API server, through the proxy. Torn down in order at the end:
  // actors, informers, then the transport.
  k8s::transport::options topts;
  topts.clock = &headroom::runtime::real_clock();
  topts.qps = 500;
  topts.burst = 500;
  k8s::transport io{topts};
  auto conn = k8s::load_kubeconfig(proxy.kubeconfig(e.c->dir() + "/kubeconfig.bigfleet-proxy", e.c->admin_token()));
  ASSERT_TRUE(std::holds_alternative<k8s::connection>(conn));
  k8s::client client{std::get<k8s::connection>(conn), io};
  client.set_watch_stall_timeout(15s);
  bf::operator_deps deps = informers_of(client);
  deps.queue = std::make_shared<headroom::bigfleet::send_queue>();
  struct teardown {
    bf::operator_deps& d;
    ~teardown() {
      d.capacity_requests->stop();
      d.upcoming_nodes->stop();
      d.pods->stop();
    }
  } stop_informers{deps};
  ASSERT_TRUE(eventually([&] { return deps.capacity_requests->synced() && deps.upcoming_nodes->synced() && deps.pods->synced(); }, 30s));
  operator_run run(e);
  run.deps = deps;
  auto o = options_for(*peer);
  run.upc = bf::spawn_capacity_requests(*e.sys, run.deps, o);
  run.start(*e.sys, o);
  simdjson::dom::parser parser;
  ASSERT_TRUE(eventually([&] { return int64_t(parser.parse(peer->state())["rollups"]) >= 1; }, 30s)) << peer->state();

  // The roll-up is cluster-wide: what earlier scenarios left stays in it. Their Pods get CRs from
  // this operator's start-up reconcile, which may land a roll-up or two after the first (seen:
  // two reclaim scenarios' Pods, 1,000 millicores, counted against every phase below): the
  // baseline is the roll-up once it has held still for three roll-ups.
  int64_t baseline = -1;
  ASSERT_TRUE(eventually([&] {
    const auto before = rollup_millicpu(*peer);
    std::this_thread::sleep_for(3 * o.rollup_interval);
    baseline = rollup_millicpu(*peer);
    return before >= 0 && before == baseline;
  }, 30s)) << peer->state();
  std::vector<std::string> live, finished;
  int made = 0, phase = 0;
  auto burst = [&] {
    ++phase;
    std::string pods;
    for (int i = 0; i < 4; ++i) {
      const auto name = "p" + std::to_string(phase) + "-" + std::to_string(made++);
      pods += pod_yaml(ns, name) + "---\n";
      live.push_back(name);
    }
    ASSERT_EQ(e.c->kubectl({"apply", "-f", "-"}, pods).exit_code, 0);
    if (live.size() > 4) {  // one of an earlier burst finishes
      const auto done = live.front();
      live.erase(live.begin());
      finished.push_back(done);
      ASSERT_EQ(e.c->kubectl({"patch", "pod", done, "-n", ns, "--subresource=status", "--type=merge", "-p",
                              R"({"status":{"phase":"Succeeded"}})"}).exit_code, 0);
    }
    ASSERT_EQ(peer->post("/burst", "{\"machines\":5,\"updates\":20,\"prefix\":\"f" + std::to_string(phase) + "\"}", "bigfleet-test").status, 200);
  };
  auto recovered = [&](const std::string& fault, std::chrono::steady_clock::time_point ended) {
    std::string crs;
    const bool converged = eventually([&] {
      crs = kubectl_get(e, {"capacityrequests", "-n", ns, "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}"});
      std::string want;
      auto sorted = live;
      std::sort(sorted.begin(), sorted.end());
      for (const auto& p : sorted)
        want += p + "=Acknowledged ";
      return crs == want;
    }, 60s);
    const double crs_after = std::chrono::duration<double>(std::chrono::steady_clock::now() - ended).count();
    EXPECT_TRUE(converged) << fault << ": one acknowledged CR per live Pod (" << live.size() << "), none for a finished one; have "
                           << crs;
    EXPECT_TRUE(eventually([&] { return rollup_millicpu(*peer) == baseline + 500 * static_cast<int64_t>(live.size()); }, 30s))
        << fault << ": the last roll-up carries every CR (" << rollup_millicpu(*peer) << " millicores, " << baseline
        << " before)\n" << peer->state();
    std::string phases;
    EXPECT_TRUE(eventually([&] {
      phases.clear();
      int ready = 0;
      for (int m = 0; m < 5; ++m) {
        char id[32];
        std::snprintf(id, sizeof id, "f%d-%03d", phase, m);
        const auto p = kubectl_get(e, {"upcomingnode", id, "--ignore-not-found", "-o", "jsonpath={.status.phase}"});
        phases += std::string{id} + "=" + p + " ";
        ready += p == "Ready";
      }
      return ready == 5;
    }, 60s)) << fault << ": every machine's UpcomingNode Ready: " << phases;
    std::printf("[chaos] bigfleet, %s: %zu CRs, one per live Pod, acknowledged and rolled up %.1f s after the fault ended; "
                "5 UpcomingNodes Ready; lost 0\n", fault.c_str(), live.size(), crs_after);
  };

  // 1. 429 and 5xx for 30 s, the burst inside it.
  std::thread during([&] {
    std::this_thread::sleep_for(2s);
    burst();
  });
  const auto faulted = proxy.error_storm(30s);
  during.join();
  EXPECT_GT(faulted, 0) << "the operator called the API server during the 30 s";
  std::printf("[chaos] bigfleet, apiserver 429/503/500/504 for 30 s: %lld requests answered with an error\n", static_cast<long long>(faulted));
  recovered("apiserver 429/503/500/504 for 30 s", std::chrono::steady_clock::now());

  // 2. Every watch falls silent (CRs, UpcomingNodes, Pods), then the burst.
  ASSERT_TRUE(eventually([&] { return proxy.watches_flowing(3); }, 30s)) << proxy.p->log();
  const auto stalled = proxy.stall_watches();
  const auto stall_at = std::chrono::steady_clock::now();
  burst();
  EXPECT_GE(stalled, 3);
  EXPECT_TRUE(eventually([&] { return proxy.watches_flowing(stalled); }, 15s + 15s))
      << "each silent watch is dropped after watchStallTimeout (15 s) and resumed\n" << proxy.p->log();
  std::printf("[chaos] bigfleet, %lld watch streams silenced: dropped and resumed %.1f s after\n", static_cast<long long>(stalled),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - stall_at).count());
  recovered("every watch stream silenced", stall_at);

  // 3. Every watch ends and comes back to a 410, then the burst.
  ASSERT_TRUE(eventually([&] { return proxy.watches_flowing(3); }, 30s)) << proxy.p->log();
  const auto expired = proxy.expire_watches();
  const auto expired_at = std::chrono::steady_clock::now();
  burst();
  EXPECT_GE(expired, 3);
  EXPECT_TRUE(eventually([&] { return proxy.state("expired") >= expired; }, 10s)) << "every watch met the 410\n" << proxy.p->log();
  recovered("every watch expired (410)", expired_at);

  // 4. kube-apiserver restarted mid-burst.
  burst();
  ASSERT_TRUE(e.c->restart_apiserver()) << e.c->logs();
  recovered("kube-apiserver restarted", std::chrono::steady_clock::now());

  e.c->kubectl({"delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force", "--wait=false"});
  for (int p = 1; p <= phase; ++p)
    for (int m = 0; m < 5; ++m) {
      char id[32];
      std::snprintf(id, sizeof id, "f%d-%03d", p, m);
      e.c->kubectl({"delete", "upcomingnode", id, "--ignore-not-found", "--wait=false"});
    }
}

}  // namespace
}  // namespace headroom
