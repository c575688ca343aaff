// capacity_requests (actors/bigfleet/capacity_requests.cpp) under CAF's deterministic
// test_coordinator, with the API server answered by hand (tests/unit/support/scripted_exchange.hpp)
// and real informers over it: one CapacityRequest per Pod, stamped Pending on the version its
// create made; a create the API server could not take (503) tried again for that Pod alone after
// 0.5 s, then 1 s, on the injected clock; a Pod that finished has its CR deleted.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "actors/bigfleet/bigfleet.hpp"
#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace bf = actors::bigfleet;

namespace {

std::string pod(const std::string& phase) {
  return R"({"metadata":{"name":"train-0","namespace":"ml","uid":"u-train-0","resourceVersion":"5"},)"
         R"("spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"2","memory":"1Gi"}}}]},"status":{"phase":")" +
         phase + R"("}})";
}
constexpr const char* unavailable = R"({"kind":"Status","reason":"ServiceUnavailable","code":503})";

struct requests_fixture : test_support::actor_fixture {
  ~requests_fixture() override {
    caf::anon_send_exit(upc, caf::exit_reason::kill);
    sched.run();
    deps.pods->stop();
    deps.capacity_requests->stop();
  }

  void start() {
    deps.client = &kube;
    k8s::informer<k8s::pod>::options po;
    po.kind = k8s::kinds::pods;
    deps.pods = k8s::informer<k8s::pod>::make(kube, po);
    k8s::informer<k8s::unstructured>::options co;
    co.kind = bf::kinds::capacity_requests;
    deps.capacity_requests = k8s::informer<k8s::unstructured>::make(kube, co);
    deps.pods->start();
    deps.capacity_requests->start();
    ASSERT_TRUE(io.answer("GET", "/api/v1/pods", 200, R"({"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[)" + pod("Pending") + "]}"));
    ASSERT_TRUE(io.answer("GET", "/capacityrequests", 200, R"({"kind":"CapacityRequestList","metadata":{"resourceVersion":"9"},"items":[]})"));
    io.fire_timers();
    upc = bf::spawn_capacity_requests(sys, deps, bf::operator_options{});
    sched.run();
  }
  // Refuses the waiting create, and the client's own retries of it, with 503.
  void refuse_create() {
    int n = 0;
    while (io.answer("POST", "/namespaces/ml/capacityrequests", 503, unavailable)) {
      ++n;
      sched.run();
    }
    ASSERT_GT(n, 0) << "a create was waiting";
  }

  bf::operator_deps deps;
  bf::capacity_requests_actor upc;
};

TEST_F(requests_fixture, a_refused_create_is_retried_for_its_pod_after_its_backoff_then_stamped_pending) {
  start();
  ASSERT_EQ(waiting("POST"), 1u) << "one CapacityRequest for the Pod";
  refuse_create();
  sched.advance_time(499ms);
  sched.run();
  EXPECT_EQ(waiting("POST"), 0u) << "not before 0.5 s";
  sched.advance_time(1ms);
  sched.run();
  ASSERT_EQ(waiting("POST"), 1u);
  refuse_create();
  sched.advance_time(999ms);
  sched.run();
  EXPECT_EQ(waiting("POST"), 0u) << "the backoff doubled";
  sched.advance_time(1ms);
  sched.run();
  ASSERT_EQ(waiting("POST"), 1u);
  const std::string made = R"({"apiVersion":"bigfleet.lucy.sh/v1alpha1","kind":"CapacityRequest","metadata":{"name":"train-0",)"
                           R"("namespace":"ml","uid":"u-cr","resourceVersion":"42"}})";
  ASSERT_TRUE(io.answer("POST", "/namespaces/ml/capacityrequests", 201, made));
  sched.run();
  ASSERT_EQ(waiting("PATCH"), 1u) << "stamped Pending";
  const auto& stamp = io.waiting().back().request;
  EXPECT_NE(stamp.url.find("/status"), std::string::npos) << stamp.url;
  EXPECT_NE(stamp.body.find(R"("resourceVersion":"42")"), std::string::npos) << stamp.body;
  EXPECT_NE(stamp.body.find(R"("phase":"Pending")"), std::string::npos) << stamp.body;
  ASSERT_TRUE(io.answer("PATCH", "/capacityrequests/", 200, made));
  sched.run();

  // The Pod finished: its CR goes.
  ASSERT_TRUE(io.stream("/api/v1/pods?", std::string{R"({"type":"MODIFIED","object":)"} + pod("Succeeded") + "}\n"));
  sched.run();
  EXPECT_EQ(waiting("DELETE"), 1u);
}

}  // namespace
