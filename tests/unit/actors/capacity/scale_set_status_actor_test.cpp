// scale_set_status (actors/capacity/scale_set_status.cpp) under CAF's deterministic
// test_coordinator, with the API server answered by hand (tests/unit/support/scripted_exchange.hpp):
// the ScaleSet object is created, Events about it wait for its uid, changes within the write
// interval become one status write when the interval has passed on the injected clock, and a
// missing CRD is retried after 5 minutes, not at every change, and a failed write within a second.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/capacity/capacity.hpp"
#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace cap = actors::capacity;

namespace {

struct status_fixture : test_support::actor_fixture {
  ~status_fixture() override {
    caf::anon_send_exit(status, caf::exit_reason::kill);
    caf::anon_send_exit(recorder, caf::exit_reason::kill);
    sched.run();
  }

  void start() {
    recorder = sys.spawn(
        [](actors::event_sink::pointer, std::shared_ptr<std::vector<msg::k8s_event>> seen) -> actors::event_sink::behavior_type {
          return {[seen](msg::k8s_event& e) { seen->push_back(std::move(e)); }};
        },
        events);
    auto ctx = std::make_shared<cap::scale_set_context>();
    ctx->spec.ns = "arc-runners";
    ctx->spec.name = "linux";
    ctx->spec.max_runners = 10;
    ctx->kube = &kube;
    ctx->events = recorder;
    ctx->instance = "headroom-system.headroom";
    status = cap::spawn_scale_set_status(sys, ctx, 5s);
    settle();
  }
  // Runs what is queued and the timers due now (a write "at once" is a timer of 0).
  void settle() {
    sched.run();
    sched.advance_time(0ms);
    sched.run();
  }
  void answer(const std::string& method, long status_code, const std::string& body) {
    ASSERT_TRUE(io.answer(method, "/apis/headroom.dev/v1alpha1/namespaces/arc-runners/scalesets", status_code, body))
        << method << " is not waiting";
    settle();
  }

  std::shared_ptr<std::vector<msg::k8s_event>> events = std::make_shared<std::vector<msg::k8s_event>>();
  actors::event_sink recorder;
  cap::status_actor status;
};

TEST_F(status_fixture, events_wait_for_the_uid_and_changes_within_the_interval_are_one_write) {
  start();
  ASSERT_EQ(waiting("POST"), 1u) << "the object is created at start";
  EXPECT_NE(io.waiting().front().request.body.find("\"headroom.dev/instance\":\"headroom-system.headroom\""), std::string::npos)
      << io.waiting().front().request.body;
  caf::anon_send(status, msg::k8s_event{"headroom.dev/v1alpha1", "ScaleSet", "arc-runners", "linux", "", "Normal",
                                        "PairsWaitForBurstBudget", "Reserve", "2 pairs wait"});
  settle();
  EXPECT_TRUE(events->empty()) << "held until the object's uid is known";
  answer("POST", 201, R"({"metadata":{"name":"linux","namespace":"arc-runners","uid":"u-linux"}})");
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->front().uid, "u-linux");
  // The first status write follows the create at once.
  ASSERT_EQ(waiting("PATCH"), 1u);
  answer("PATCH", 200, "{}");

  // Three changes within the interval: one write when it has passed, with the newest values.
  caf::anon_send(status, msg::capacity_view{3, 10, 4, 4, 3, 1, {}});
  caf::anon_send(status, msg::session_view{"Open", "", false});
  caf::anon_send(status, msg::capacity_view{4, 10, 4, 4, 4, 1, {}});
  settle();
  EXPECT_EQ(waiting("PATCH"), 0u);
  sched.advance_time(4900ms);
  sched.run();
  EXPECT_EQ(waiting("PATCH"), 0u) << "not before the 5 s interval";
  sched.advance_time(100ms);
  sched.run();
  ASSERT_EQ(waiting("PATCH"), 1u);
  const auto& body = io.waiting().front().request.body;
  EXPECT_NE(body.find("\"session\":\"Open\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"advertisedCapacity\":4"), std::string::npos) << body;
  EXPECT_NE(io.waiting().front().request.url.find("/scalesets/linux/status"), std::string::npos);
  answer("PATCH", 200, "{}");
  EXPECT_TRUE(io.waiting().empty());
}

TEST_F(status_fixture, a_missing_crd_is_tried_again_after_five_minutes) {
  start();
  answer("POST", 404, R"({"kind":"Status","reason":"NotFound","code":404,"message":"the server could not find the requested resource"})");
  caf::anon_send(status, msg::capacity_view{1, 10, 1, 1, 1, 0, {}});
  settle();
  sched.advance_time(299s);
  sched.run();
  EXPECT_TRUE(io.waiting().empty()) << "no write while the CRD is missing";
  sched.advance_time(1s);
  sched.run();
  EXPECT_EQ(waiting("POST"), 1u) << "the create again after 5 minutes";
}

// A new poll alone (lastPollTime) is written every 4 to 6 minutes, not every minute: at 1,000
// scale sets a write a minute each spent a third of the default API budget on a timestamp. A real
// change (capacity) still goes within the 5 s interval.
TEST_F(status_fixture, a_new_poll_alone_waits_minutes_and_a_change_does_not) {
  start();
  answer("POST", 201, R"({"metadata":{"name":"linux","namespace":"arc-runners","uid":"u-linux"}})");
  ASSERT_EQ(waiting("PATCH"), 1u);
  answer("PATCH", 200, "{}");
  caf::anon_send(status, msg::session_view{"Open", "", true});  // a poll started
  settle();
  sched.advance_time(239s);
  sched.run();
  EXPECT_EQ(waiting("PATCH"), 0u) << "a poll's time alone is not written within 4 minutes";
  sched.advance_time(121s);
  sched.run();
  ASSERT_EQ(waiting("PATCH"), 1u) << "written within 6 minutes";
  EXPECT_NE(io.waiting().front().request.body.find("lastPollTime"), std::string::npos) << io.waiting().front().request.body;
  answer("PATCH", 200, "{}");
  caf::anon_send(status, msg::session_view{"Open", "", true});
  caf::anon_send(status, msg::capacity_view{2, 10, 2, 2, 2, 0, {}});
  settle();
  sched.advance_time(5s);
  sched.run();
  EXPECT_EQ(waiting("PATCH"), 1u) << "a capacity change goes within the interval, the poll with it";
}

}  // namespace

// A failed status write (here the 403 a restarted API server answers until its RBAC caches are
// filled) is tried again after 1 s doubling, jittered down by up to half: written again within a
// second or two of the API server being back, not after a fixed 30 s.
TEST_F(status_fixture, a_failed_write_is_tried_again_within_a_second_then_backs_off) {
  start();
  answer("POST", 201, R"({"metadata":{"name":"linux","namespace":"arc-runners","uid":"u-linux"}})");
  ASSERT_EQ(waiting("PATCH"), 1u);
  const std::string forbidden = R"({"kind":"Status","reason":"Forbidden","code":403,"message":"scalesets.headroom.dev is forbidden"})";
  answer("PATCH", 403, forbidden);
  sched.advance_time(499ms);
  sched.run();
  EXPECT_EQ(waiting("PATCH"), 0u) << "not before half the first delay";
  sched.advance_time(501ms);
  sched.run();
  ASSERT_EQ(waiting("PATCH"), 1u) << "tried again within 1 s";
  answer("PATCH", 403, forbidden);
  sched.advance_time(999ms);
  sched.run();
  EXPECT_EQ(waiting("PATCH"), 0u) << "the second delay is 1 to 2 s";
  sched.advance_time(1001ms);
  sched.run();
  ASSERT_EQ(waiting("PATCH"), 1u);
  answer("PATCH", 200, "{}");
  EXPECT_TRUE(io.waiting().empty());
}
