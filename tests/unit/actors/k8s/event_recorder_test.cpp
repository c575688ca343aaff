// event_recorder (actors/k8s/event_recorder.cpp) under CAF's deterministic test_coordinator, with
// the API server answered by hand (tests/unit/support/scripted_exchange.hpp): a new Event is
// created, a repeat joins its series and the series' count is written at the next flush of the
// injected clock; writes in flight are bounded, what waits beyond the bound is dropped and
// counted, and a refused write is counted, never retried.
#include "actors/k8s/event_recorder.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;

namespace {

struct recorder_fixture : test_support::actor_fixture {
  ~recorder_fixture() override {
    caf::anon_send_exit(recorder, caf::exit_reason::user_shutdown);
    sched.run();
  }

  void start(size_t max_in_flight = 8, size_t max_pending = 512) {
    auto o = std::make_shared<actors::event_recorder_options>();
    o->kube = &kube;
    o->instance = "headroom-0";
    o->wall_clock = [] { return 1'800'000'000.0; };
    o->flush_interval = 30s;
    o->max_in_flight = max_in_flight;
    o->max_pending = max_pending;
    o->counted = [this](const char* outcome) { ++counted[outcome]; };
    recorder = actors::spawn_event_recorder(sys, o);
    sched.run();
  }
  void tell(const std::string& name, const std::string& note = "1 → 2") {
    actors::tell_event(recorder, {"apps/v1", "Deployment", "default", name, "uid-" + name, "Normal", "ScaledUp", "Scale", note});
    sched.run();
  }

  actors::event_sink recorder;
  std::map<std::string, int> counted;
};

TEST_F(recorder_fixture, a_repeat_joins_the_series_and_its_count_is_written_at_the_next_flush) {
  start();
  tell("web");
  ASSERT_EQ(io.waiting().size(), 1u);
  const auto& create = io.waiting().front().request;
  EXPECT_EQ(create.method, "POST");
  EXPECT_NE(create.url.find("/apis/events.k8s.io/v1/namespaces/default/events"), std::string::npos) << create.url;
  EXPECT_NE(create.body.find("\"reportingController\":\"headroom.dev/headroom\""), std::string::npos) << create.body;
  EXPECT_NE(create.body.find("\"reportingInstance\":\"headroom-0\""), std::string::npos);
  ASSERT_TRUE(io.answer("POST", "/events", 201, "{}"));
  sched.run();
  EXPECT_EQ(counted["created"], 1);

  tell("web");
  tell("web");
  EXPECT_EQ(counted["series"], 2);
  EXPECT_TRUE(io.waiting().empty()) << "a repeat writes nothing until the flush";
  sched.advance_time(30s);
  sched.run();
  ASSERT_EQ(waiting("PATCH"), 1u);
  EXPECT_NE(io.waiting().front().request.body.find("\"count\":3"), std::string::npos) << io.waiting().front().request.body;
  ASSERT_TRUE(io.answer("PATCH", "/events/", 200, "{}"));
  sched.run();
  sched.advance_time(30s);
  sched.run();
  EXPECT_TRUE(io.waiting().empty()) << "an unchanged series is not written again";
}

TEST_F(recorder_fixture, writes_in_flight_are_bounded_and_what_waits_beyond_the_bound_is_dropped) {
  start(/*max_in_flight=*/1, /*max_pending=*/2);
  tell("a");
  tell("b");
  tell("c");
  tell("d");  // a in flight, b and c wait: d is one too many
  EXPECT_EQ(io.waiting().size(), 1u);
  EXPECT_EQ(counted["queue_full"], 1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(io.answer("POST", "/events", 201, "{}"));
    sched.run();
    EXPECT_EQ(io.waiting().size(), i < 2 ? 1u : 0u);
  }
  EXPECT_EQ(counted["created"], 3);
}

TEST_F(recorder_fixture, a_refused_create_is_counted_and_the_next_occurrence_creates_again) {
  start();
  tell("web");
  ASSERT_TRUE(io.answer("POST", "/events", 403, R"({"kind":"Status","message":"events is forbidden","reason":"Forbidden","code":403})"));
  sched.run();
  EXPECT_EQ(counted["failed"], 1);
  EXPECT_TRUE(io.waiting().empty()) << "not retried";
  tell("web");
  EXPECT_EQ(waiting("POST"), 1u) << "forgotten: the next occurrence is a new Event";
}

}  // namespace
