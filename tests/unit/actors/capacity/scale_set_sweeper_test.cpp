// scale_set_sweeper (actors/capacity/scale_set_sweeper.cpp) under CAF's deterministic
// test_coordinator, with the API server answered by hand (tests/unit/support/scripted_exchange.hpp):
// the ScaleSet objects of this deployment that no configured scale set names are deleted, then it
// quits; an unanswered list is retried with backoff on the injected clock; no CRD, nothing to do.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "actors/capacity/capacity.hpp"
#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace cap = actors::capacity;

namespace {

struct sweeper_fixture : test_support::actor_fixture {
  ~sweeper_fixture() override {
    caf::anon_send_exit(sweeper, caf::exit_reason::kill);
    caf::anon_send_exit(watcher, caf::exit_reason::kill);
    sched.run();
  }

  void start() {
    sweeper = cap::spawn_scale_set_sweeper(sys, &kube, "headroom-system.headroom", {{"arc", "linux"}, {"arc", "gpu"}});
    // Watches for the sweeper's end (held: an actor nothing refers to is gone).
    watcher = sys.spawn(
        [](caf::event_based_actor* self, cap::sweeper_actor s, std::shared_ptr<std::optional<caf::error>> out) -> caf::behavior {
          self->monitor(s);
          self->set_down_handler([out](caf::down_msg& d) { *out = d.reason; });
          return {[](int) {}};
        },
        sweeper, ended);
    sched.run();
  }

  cap::sweeper_actor sweeper;
  caf::actor watcher;
  std::shared_ptr<std::optional<caf::error>> ended = std::make_shared<std::optional<caf::error>>();
};

constexpr const char* three = R"({"kind":"ScaleSetList","items":[
  {"metadata":{"name":"linux","namespace":"arc"}},
  {"metadata":{"name":"old","namespace":"arc"}},
  {"metadata":{"name":"linux","namespace":"retired-ns"}}]})";

TEST_F(sweeper_fixture, deletes_the_objects_no_configured_scale_set_names_then_quits) {
  start();
  ASSERT_EQ(io.waiting().size(), 1u);
  EXPECT_NE(io.waiting().front().request.url.find("labelSelector=headroom.dev%2Finstance%3Dheadroom-system.headroom"),
            std::string::npos)
      << io.waiting().front().request.url;
  ASSERT_TRUE(io.answer("GET", "/scalesets", 200, three));
  sched.run();
  ASSERT_EQ(io.waiting().size(), 2u);
  EXPECT_TRUE(io.answer("DELETE", "/namespaces/arc/scalesets/old", 200, "{}"));
  sched.run();
  EXPECT_FALSE(ended->has_value()) << "one delete still in flight";
  EXPECT_TRUE(io.answer("DELETE", "/namespaces/retired-ns/scalesets/linux", 404, R"({"kind":"Status","reason":"NotFound","code":404})"));
  sched.run();
  ASSERT_TRUE(ended->has_value()) << "done: it quits";
  EXPECT_FALSE(**ended) << "normally";
}

TEST_F(sweeper_fixture, a_failed_list_is_retried_with_backoff_and_no_crd_means_nothing_to_sweep) {
  start();
  ASSERT_TRUE(io.fail_transfer("/scalesets"));
  sched.run();
  // A transport failure: the client's own retries first, then the sweeper's backoff.
  while (io.fail_transfer("/scalesets"))
    sched.run();
  EXPECT_TRUE(io.waiting().empty());
  sched.advance_time(400ms);
  sched.run();
  EXPECT_TRUE(io.waiting().empty()) << "the first backoff is drawn in [0.5 s, 1 s]";
  sched.advance_time(1200ms);
  sched.run();
  ASSERT_EQ(io.waiting().size(), 1u) << "listed again";
  ASSERT_TRUE(io.answer("GET", "/scalesets", 404, R"({"kind":"Status","reason":"NotFound","code":404})"));
  sched.run();
  ASSERT_TRUE(ended->has_value()) << "no CRD: nothing was ever made";
}

}  // namespace
