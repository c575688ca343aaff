// reactive_quota (actors/reactive/reactive_quota.cpp) under CAF's deterministic test_coordinator:
// the tenants' caps as the scalers claim and report, and the caps re-read on the injected clock's
// reload timer (no sleeping).
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "actors/reactive/reactive.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
using actors::reactive::quota_actor;
using actors::reactive::quota_caps;

namespace {

struct quota_fixture : test_support::actor_fixture {
  ~quota_fixture() override {
    caf::anon_send_exit(quota, caf::exit_reason::user_shutdown);
    sched.run();
  }

  // Caps {ml: 10, web: 4}; ml has two targets (a and b), web one (w). `reload_to`: what the next
  // re-read returns (nullopt: unchanged).
  void start(std::chrono::milliseconds reload_interval = 10s) {
    actors::reactive::quota_options o;
    o.caps = {{"ml", 10}, {"web", 4}};
    o.members = {{"ml", {"a", "b"}}, {"web", {"w"}}};
    o.reload_interval = reload_interval;
    o.reload = [this](std::string& error) -> std::optional<quota_caps> {
      ++reloads;
      if (!reload_error.empty()) {
        error = reload_error;
        return std::nullopt;
      }
      return std::exchange(reload_to, std::nullopt);
    };
    o.report = [this](const std::string& tenant, int32_t used, int32_t cap) { reported[tenant] = {used, cap}; };
    quota = actors::reactive::spawn_reactive_quota(sys, std::move(o));
    sched.run();
  }

  msg::quota_verdict claim(const std::string& tenant, const std::string& target, int32_t current, int32_t wanted) {
    auto out = std::make_shared<std::optional<msg::quota_verdict>>();
    sys.spawn(
        [](caf::event_based_actor* self, quota_actor q, msg::quota_claim c, std::shared_ptr<std::optional<msg::quota_verdict>> out) {
          self->request(q, caf::infinite, std::move(c)).then([out](const msg::quota_verdict& v) { *out = v; });
        },
        quota, msg::quota_claim{tenant, target, current, wanted}, out);
    sched.run();
    EXPECT_TRUE(out->has_value()) << "the quota keeper answered";
    return out->value_or(msg::quota_verdict{});
  }
  void report(const std::string& tenant, const std::string& target, int32_t replicas) {
    caf::anon_send(quota, msg::quota_report{tenant, target, replicas});
    sched.run();
  }

  quota_actor quota;
  int reloads = 0;
  std::optional<quota_caps> reload_to;
  std::string reload_error;
  std::map<std::string, std::pair<int32_t, int32_t>> reported;  // tenant → (used, cap)
};

TEST_F(quota_fixture, a_claim_waits_until_every_target_of_the_tenant_has_reported) {
  start();
  auto v = claim("ml", "a", 1, 3);
  EXPECT_FALSE(v.granted);
  EXPECT_EQ(v.detail, "tenant ml: waiting for 1 targets to report");
  report("ml", "b", 2);
  v = claim("ml", "a", 1, 3);
  EXPECT_TRUE(v.granted) << v.detail;
  EXPECT_EQ(reported["ml"], (std::pair<int32_t, int32_t>{5, 10})) << "a's claim is held (3) beside b's 2";
}

TEST_F(quota_fixture, a_claim_over_the_cap_is_refused_and_a_tenant_without_one_is_free) {
  start();
  report("ml", "a", 4);
  report("ml", "b", 5);
  auto v = claim("ml", "a", 4, 6);
  EXPECT_FALSE(v.granted);
  EXPECT_EQ(v.detail, "tenant ml: 9 of 10 replicas in use");
  v = claim("ml", "a", 4, 5);
  EXPECT_TRUE(v.granted) << "5 + 5 is the cap, not over it";
  v = claim("batch", "x", 0, 1000);
  EXPECT_TRUE(v.granted);
  EXPECT_EQ(v.detail, "tenant batch has no quota");
}

TEST_F(quota_fixture, caps_are_re_read_on_the_reload_timer_and_a_bad_read_keeps_the_last) {
  start(10s);
  report("web", "w", 4);
  EXPECT_FALSE(claim("web", "w", 4, 5).granted);
  EXPECT_EQ(reloads, 0);
  reload_to = quota_caps{{"ml", 10}, {"web", 8}};
  sched.advance_time(9s);
  sched.run();
  EXPECT_EQ(reloads, 0) << "not before its interval";
  sched.advance_time(1s);
  sched.run();
  EXPECT_EQ(reloads, 1);
  EXPECT_EQ(reported["web"], (std::pair<int32_t, int32_t>{4, 8})) << "the new cap is published at once";
  EXPECT_TRUE(claim("web", "w", 4, 8).granted);
  reload_error = "configuration: line 3: not a number";
  sched.advance_time(10s);
  sched.run();
  EXPECT_EQ(reloads, 2) << "the timer keeps going";
  EXPECT_FALSE(claim("web", "w", 8, 9).granted) << "a failed re-read keeps the caps it had (8)";
}

}  // namespace
