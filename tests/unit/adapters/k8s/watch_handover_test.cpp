// Make-before-break (#62): a successor watch, started before the server ends the current one,
// takes over once it has delivered what the current one applied meanwhile; nothing is applied
// twice, nothing is lost, and the current watch is cancelled. First the matching alone
// (adapters/k8s/watch_handover.hpp), then an informer over a scripted API server.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer.hpp"
#include "adapters/k8s/watch_handover.hpp"
#include "unit/support/scripted_exchange.hpp"

using namespace headroom;
using namespace std::chrono_literals;

namespace {

using handover = k8s::watch_handover<std::string>;

TEST(watch_handover, the_successors_events_up_to_the_last_one_the_current_watch_applied_are_dropped) {
  handover h;
  h.begin();
  EXPECT_FALSE(h.current_applied("11").take_over);
  EXPECT_FALSE(h.current_applied("12").take_over);
  EXPECT_FALSE(h.successor_event("e11", "11").take_over);
  const auto v = h.successor_event("e12", "12");
  ASSERT_TRUE(v.take_over);
  EXPECT_TRUE(v.apply.empty()) << "both were applied by the current watch";
  EXPECT_FALSE(h.active());
}

TEST(watch_handover, a_successor_that_delivers_the_last_event_applied_takes_over_at_once) {
  handover h;
  h.begin();
  EXPECT_FALSE(h.current_applied("11").take_over);
  const auto v = h.successor_event("e11", "11");
  EXPECT_TRUE(v.take_over);
  EXPECT_TRUE(v.apply.empty());
}

TEST(watch_handover, events_after_the_match_are_applied_in_order) {
  handover h;
  h.begin();
  h.current_applied("11");
  ASSERT_FALSE(h.successor_event("bookmark", "").take_over);
  ASSERT_FALSE(h.successor_event("e10?", "10").take_over);  // not applied here (it cannot be, but it does not match)
  ASSERT_FALSE(h.successor_event("e12", "12").take_over) << "11 not delivered yet";
  ASSERT_FALSE(h.successor_event("e13", "13").take_over);
  const auto v = h.current_applied("12");
  ASSERT_TRUE(v.take_over) << "the successor already delivered 12";
  EXPECT_EQ(v.apply, std::vector<std::string>{"e13"});
}

TEST(watch_handover, with_nothing_applied_since_it_began_the_successors_first_event_is_new) {
  handover h;
  h.begin();
  const auto v = h.successor_event("e11", "11");
  ASSERT_TRUE(v.take_over);
  EXPECT_EQ(v.apply, std::vector<std::string>{"e11"});
}

TEST(watch_handover, a_current_watch_that_ends_first_leaves_the_successor_to_catch_up) {
  handover h;
  h.begin();
  h.current_applied("11");
  EXPECT_FALSE(h.current_ended().take_over) << "11 must come from the successor first";
  const auto v = h.successor_event("e11", "11");
  ASSERT_TRUE(v.take_over);
  EXPECT_TRUE(v.apply.empty());
  handover quiet;
  quiet.begin();
  const auto q = quiet.current_ended();
  EXPECT_TRUE(q.take_over) << "nothing applied since: the successor has everything";
}

struct informer_handover : ::testing::Test {
  test_support::scripted_exchange io;
  k8s::client kube{k8s::connection{"https://api.test", {}, [] { return std::string{"token"}; }}, io};
  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::vector<std::string> seen;  // "added a 6", "modified a 7", …

  void SetUp() override {
    k8s::informer<k8s::pod>::options o;
    o.kind = k8s::kinds::pods;
    o.ns = "ci";
    o.watch_timeout = 100s;
    o.hand_over = 10s;
    pods = k8s::informer<k8s::pod>::make(kube, o);
    pods->subscribe([this](const k8s::informer<k8s::pod>::event& e) {
      const char* type[] = {"added", "modified", "deleted", "resync"};
      seen.push_back(std::string{type[static_cast<int>(e.type)]} + " " + e.object->meta.name + " " + e.resource_version);
    });
    pods->start();
    ASSERT_TRUE(io.answer("GET", "/namespaces/ci/pods", 200, R"({"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]})"));
  }
  void TearDown() override {
    pods->stop();
    io.deliver_cancelled();
  }
  static std::string line(const std::string& type, const std::string& name, const std::string& rv) {
    return R"({"type":")" + type + R"(","object":{"metadata":{"name":")" + name + R"(","namespace":"ci","uid":"u-)" + name +
           R"(","resourceVersion":")" + rv + R"("},"status":{"phase":"Running"}}})" + "\n";
  }
  size_t watches_waiting() const {
    size_t n = 0;
    for (const auto& c : io.waiting())
      n += c.request.stream ? 1 : 0;
    return n;
  }
};

TEST_F(informer_handover, the_successor_takes_over_with_nothing_applied_twice_and_nothing_lost) {
  ASSERT_TRUE(io.stream("resourceVersion=5", line("ADDED", "a", "6")));
  for (const auto& c : io.waiting()) {
    if (c.request.stream) {
      const auto at = c.request.url.find("timeoutSeconds=");
      ASSERT_NE(at, std::string::npos) << c.request.url;
      const int timeout = std::stoi(c.request.url.substr(at + 15));
      EXPECT_GE(timeout, 100) << "the server ends it 10 s after its successor is due (90-110 s)";
      EXPECT_LE(timeout, 120);
    }
  }
  ASSERT_EQ(io.fire_timers(), 1u) << "the successor's start, before the server's end";
  ASSERT_EQ(watches_waiting(), 2u);
  ASSERT_TRUE(io.stream("resourceVersion=5", line("MODIFIED", "a", "7"))) << "the current watch goes on meanwhile";
  ASSERT_TRUE(io.stream("resourceVersion=6", line("MODIFIED", "a", "7"))) << "the successor catches up: takes over";
  EXPECT_EQ(watches_waiting(), 1u) << "the current watch is cancelled";
  EXPECT_EQ(io.deliver_cancelled(), 1u);
  ASSERT_TRUE(io.stream("resourceVersion=6", line("ADDED", "b", "8")));
  EXPECT_EQ(seen, (std::vector<std::string>{"added a 6", "modified a 7", "added b 8"}));
  EXPECT_EQ(pods->counters().handovers.load(), 1u);
  EXPECT_EQ(pods->resource_version(), "8");
  ASSERT_EQ(io.fire_timers(), 1u) << "the new watch's own successor is due later";
  EXPECT_EQ(watches_waiting(), 2u);
}

TEST_F(informer_handover, a_current_watch_the_server_ends_first_is_not_resumed_the_successor_is_the_watch) {
  ASSERT_EQ(io.fire_timers(), 1u);
  ASSERT_TRUE(io.stream("resourceVersion=5", line("ADDED", "a", "6")));
  ASSERT_TRUE(io.answer("GET", "resourceVersion=5", 200, "")) << "the server ends the current watch";
  EXPECT_EQ(watches_waiting(), 1u) << "no resumption: the successor is already open";
  ASSERT_TRUE(io.stream("resourceVersion=5", line("ADDED", "a", "6")))
      << "the successor (from 5) delivers what the ended one applied";
  ASSERT_TRUE(io.stream("resourceVersion=5", line("ADDED", "b", "7")));
  EXPECT_EQ(seen, (std::vector<std::string>{"added a 6", "added b 7"}));
  EXPECT_EQ(pods->counters().handovers.load(), 1u);
  EXPECT_TRUE(pods->watching());
}

TEST_F(informer_handover, a_successor_that_fails_leaves_the_current_watch_to_end_and_resume_as_before) {
  ASSERT_TRUE(io.stream("resourceVersion=5", line("ADDED", "a", "6")));
  ASSERT_EQ(io.fire_timers(), 1u);
  ASSERT_TRUE(io.fail_transfer("resourceVersion=6"));
  ASSERT_EQ(watches_waiting(), 1u);
  ASSERT_TRUE(io.stream("resourceVersion=5", line("ADDED", "b", "7")));
  ASSERT_TRUE(io.answer("GET", "resourceVersion=5", 200, "")) << "the server ends it";
  ASSERT_EQ(watches_waiting(), 1u) << "resumed";
  ASSERT_TRUE(io.stream("resourceVersion=7", line("ADDED", "c", "8")));
  EXPECT_EQ(seen, (std::vector<std::string>{"added a 6", "added b 7", "added c 8"}));
  EXPECT_EQ(pods->counters().handovers.load(), 0u);
}

TEST_F(informer_handover, a_successor_that_does_not_catch_up_within_10_s_of_the_end_is_dropped_and_the_watch_resumed) {
  ASSERT_EQ(io.fire_timers(), 1u);
  ASSERT_TRUE(io.stream("resourceVersion=5", line("ADDED", "a", "6")));
  ASSERT_TRUE(io.answer("GET", "resourceVersion=5", 200, "")) << "the server ends the current watch";
  ASSERT_EQ(watches_waiting(), 1u) << "the successor, which has not delivered 6";
  ASSERT_GE(io.fire_timers(), 1u) << "10 s on (the successor's own handover timer is due too, and does nothing)";
  EXPECT_EQ(io.deliver_cancelled(), 1u) << "the successor is cancelled";
  ASSERT_EQ(watches_waiting(), 1u);
  ASSERT_TRUE(io.stream("resourceVersion=6", line("ADDED", "b", "7"))) << "resumed where the ended one was";
  EXPECT_EQ(seen, (std::vector<std::string>{"added a 6", "added b 7"}));
  EXPECT_EQ(pods->counters().handovers.load(), 0u);
}

}  // namespace
