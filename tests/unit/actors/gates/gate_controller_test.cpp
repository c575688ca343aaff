// gate_controller (actors/gates/gate_controller.cpp) under CAF's deterministic test_coordinator,
// with the API server answered by hand (tests/unit/support/scripted_exchange.hpp) and the Queue and
// its gated pods on real informers: the pods that fit the Queue's room are ungated oldest first
// with a patch that tests the pod's version and that the gate is headroom's, the rest wait, and a
// reservation that passes its timeout on the injected clock frees its room for the next pod.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/gates/gates.hpp"
#include "adapters/k8s/admission.hpp"
#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/rfc3339.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace gates = actors::gates;

namespace {

struct gates_fixture : test_support::actor_fixture {
  ~gates_fixture() override {
    caf::anon_send_exit(controller, caf::exit_reason::kill);
    sched.run();
    pods->stop();
    queues->stop();
  }

  // A pod of queue ci asking for 2 CPUs, made `age_s` seconds before the test's start, opted in (as
  // the webhook marks the pods it gates); gated unless `gated` is false (then `ungated_at`, RFC 3339,
  // is when headroom ungated it).
  std::string pod(const std::string& name, int age_s, bool gated, const std::string& ungated_at = "", const std::string& rv = "") {
    const double now = runtime::actor_system_clock{sys.clock()}.wall_seconds();
    return R"({"metadata":{"name":")" + name + R"(","namespace":"ci","uid":"u-)" + name + R"(","resourceVersion":"rv-)" + name + rv +
           R"(","creationTimestamp":")" + runtime::format_rfc3339(now - age_s, 0) + R"(","labels":{"headroom.dev/queue":"ci"},)" +
           R"("annotations":{"headroom.dev/queue-allocation-gate":"true")" + (ungated_at.empty() ? "" : R"(,"headroom.dev/ungated-at":")" + ungated_at + "\"") +
           R"(}},"spec":{)" + (gated ? R"("schedulingGates":[{"name":"headroom.dev/queue-allocation-gate"}],)" : "") +
           R"("containers":[{"name":"c","resources":{"requests":{"cpu":"2"}}}]},"status":{"phase":"Pending"}})";
  }

  // `waiting`: that many more gated pods (w0, w1, …, younger than p3) beyond the Queue's room.
  void start(int waiting = 0) {
    k8s::informer<k8s::pod>::options po;
    po.kind = k8s::kinds::pods;
    po.label_selector = std::string{k8s::admission::queue_label};
    pods = k8s::informer<k8s::pod>::make(kube, po);
    pods->add_index(std::string{gates::queue_index}, [](const k8s::pod& p) {
      const auto* q = p.meta.label(k8s::admission::queue_label);
      return q ? std::vector<std::string>{*q} : std::vector<std::string>{};
    });
    k8s::informer<k8s::unstructured>::options qo;
    qo.kind = {"headroom.dev", "v1alpha1", "queues", false};
    queues = k8s::informer<k8s::unstructured>::make(kube, qo);
    pods->start();
    queues->start();
    ASSERT_TRUE(io.answer("GET", "/api/v1/pods", 200,
                          R"({"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[)" + pod("p1", 30, true) + "," +
                              pod("p2", 20, true) + "," + pod("p3", 10, true) + more(waiting) + "]}"));
    ASSERT_TRUE(io.answer("GET", "/queues", 200,
                          R"({"kind":"QueueList","metadata":{"resourceVersion":"9"},"items":[{"apiVersion":"headroom.dev/v1alpha1",)"
                          R"("kind":"Queue","metadata":{"name":"ci","uid":"u-q","resourceVersion":"1","generation":1},)"
                          R"("spec":{"capacity":{"cpu":"4"},"reservationTimeout":"2m"}}]})"));
    io.fire_timers();
    auto ctx = std::make_shared<gates::controller_context>();
    ctx->kube = &kube;
    ctx->pods = pods;
    ctx->queues = queues;
    ctx->resync_interval = 30s;
    auto* clock = &sys.clock();
    ctx->wall_clock = [clock] { return runtime::actor_system_clock{*clock}.wall(); };
    ctx->metrics = metrics;
    controller = gates::spawn_gate_controller(sys, ctx);
    sched.run();
  }
  std::string more(int n) {
    std::string out;
    for (int i = 0; i < n; ++i)
      out += "," + pod("w" + std::to_string(i), 5, true);
    return out;
  }
  // The pods whose condition is being written (PATCH …/status), by name.
  std::vector<std::string> condition_writes() const {
    std::vector<std::string> out;
    for (const auto& c : io.waiting())
      if (c.request.method == "PATCH" && c.request.url.find("/pods/") != std::string::npos && c.request.url.ends_with("/status"))
        out.push_back(c.request.url.substr(0, c.request.url.rfind("/status")).substr(c.request.url.rfind("/pods/") + 6));
    return out;
  }
  std::vector<std::string> ungates() const {
    std::vector<std::string> out;
    for (const auto& c : io.waiting())
      if (c.request.method == "PATCH" && c.request.body.find(R"("op":"remove","path":"/spec/schedulingGates/0")") != std::string::npos)
        out.push_back(c.request.url.substr(c.request.url.rfind('/') + 1));
    return out;
  }

  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::informer<k8s::unstructured>> queues;
  gates::controller_metrics metrics;  // set before start()
  gates::gate_controller_actor controller;
};

TEST_F(gates_fixture, the_oldest_pods_that_fit_are_ungated_and_an_expired_reservation_frees_the_room) {
  start();
  const auto first = ungates();
  ASSERT_EQ(first, (std::vector<std::string>{"p1", "p2"})) << "4 CPUs of room: the two oldest";
  for (const auto& c : io.waiting())
    if (c.request.url.ends_with("/pods/p1") && c.request.method == "PATCH") {
      EXPECT_NE(c.request.body.find(R"({"op":"test","path":"/metadata/resourceVersion","value":"rv-p1"})"), std::string::npos)
          << c.request.body;
      EXPECT_NE(c.request.body.find(R"({"op":"test","path":"/spec/schedulingGates/0/name","value":"headroom.dev/queue-allocation-gate"})"),
                std::string::npos);
    }
  // Both ungated (the informer shows them so), neither scheduled yet: they hold the room.
  const auto at = runtime::format_rfc3339(runtime::actor_system_clock{sys.clock()}.wall_seconds(), 3);
  for (const auto& name : first) {
    ASSERT_TRUE(io.answer("PATCH", "/pods/" + name, 200, pod(name, 0, false, at)));
    ASSERT_TRUE(io.stream("/api/v1/pods?", std::string{R"({"type":"MODIFIED","object":)"} + pod(name, 30, false, at) + "}\n"));
  }
  sched.run();
  EXPECT_TRUE(ungates().empty()) << "p3 waits: the queue is full";
  sched.advance_time(119s);
  sched.run();
  EXPECT_TRUE(ungates().empty()) << "the reservations hold for 2 minutes";
  sched.advance_time(1s + 60ms);  // the expiry timer wakes 50 ms after the expiry
  sched.run();
  EXPECT_EQ(ungates(), (std::vector<std::string>{"p3"})) << "expired reservations no longer hold the room";
}

TEST_F(gates_fixture, an_ungating_refused_at_a_stale_version_waits_for_the_newer_one) {
  start();
  ASSERT_EQ(ungates(), (std::vector<std::string>{"p1", "p2"}));
  // p1 changed after the cache's view (its test failed), and the cache does not show it yet.
  ASSERT_TRUE(io.answer("PATCH", "/pods/p1", 422,
                        R"({"kind":"Status","status":"Failure","reason":"Invalid","message":"the test operation failed","code":422})"));
  sched.run();
  EXPECT_EQ(ungates(), (std::vector<std::string>{"p2"})) << "not retried against the same stale view";
  // The newer version shows, still gated: judged again from it, and its patch tests the new version.
  ASSERT_TRUE(io.stream("/api/v1/pods?", std::string{R"({"type":"MODIFIED","object":)"} + pod("p1", 30, true, "", "-2") + "}\n"));
  sched.run();
  auto now_waiting = ungates();
  std::sort(now_waiting.begin(), now_waiting.end());
  EXPECT_EQ(now_waiting, (std::vector<std::string>{"p1", "p2"}));
  bool tested_new = false;
  for (const auto& c : io.waiting())
    if (c.request.url.ends_with("/pods/p1") && c.request.method == "PATCH")
      tested_new = c.request.body.find(R"({"op":"test","path":"/metadata/resourceVersion","value":"rv-p1-2"})") != std::string::npos;
  EXPECT_TRUE(tested_new);
}

// headroom_queue_gate_removal_seconds times the hand-off alone: from the decision (the patch sent)
// to its answer, whatever came before the decision.
TEST_F(gates_fixture, a_gate_removal_is_timed_from_the_decision_to_the_patch_acknowledged) {
  std::vector<double> since_decision;
  metrics.ungated = [&since_decision](const std::string&, double, double s, bool) { since_decision.push_back(s); };
  start();
  ASSERT_EQ(ungates(), (std::vector<std::string>{"p1", "p2"}));
  sched.advance_time(250ms);
  ASSERT_TRUE(io.answer("PATCH", "/pods/p1", 200, pod("p1", 0, false)));
  sched.run();
  ASSERT_EQ(since_decision.size(), 1u);
  EXPECT_NEAR(since_decision[0], 0.25, 1e-6);
}

TEST_F(gates_fixture, condition_writes_beyond_the_bulk_limit_wait_their_turn_and_are_written_as_others_return) {
  start(20);
  // 21 pods wait (p3 and w0…w19), each to be told why; at most 16 writes are in flight.
  auto writing = condition_writes();
  ASSERT_EQ(writing.size(), 16u);
  // Each answer lets one more go, oldest held first, until every waiting pod was told.
  std::set<std::string> told(writing.begin(), writing.end());
  for (int round = 0; round < 5; ++round) {
    ASSERT_TRUE(io.answer("PATCH", "/pods/" + writing.front() + "/status", 200, "{}"));
    sched.run();
    writing = condition_writes();
    told.insert(writing.begin(), writing.end());
  }
  EXPECT_EQ(told.size(), 21u);
  EXPECT_LE(writing.size(), 16u);
}

}  // namespace
