// Leader election on a clock the test moves (runtime::manual_clock) and an API server it answers by
// hand (tests/unit/support/scripted_exchange.hpp): the renew deadline and a lease's expiry are
// measured on the clock it is given, and the Lease's times are written from its wall time.
#include "adapters/k8s/leader_election.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "adapters/k8s/client.hpp"
#include "runtime/clock.hpp"
#include "unit/support/scripted_exchange.hpp"

using namespace headroom;
using namespace std::chrono_literals;

namespace {

struct election : ::testing::Test {
  test_support::scripted_exchange io;
  k8s::client kube{k8s::connection{"https://api.test", {}, [] { return std::string{"token"}; }}, io};
  runtime::manual_clock clock;
  int started = 0, stopped = 0;
  std::shared_ptr<k8s::leader_elector> le;

  void start(const std::string& identity = "me") {
    k8s::leader_elector::options o;
    o.ns = "headroom";
    o.identity = identity;
    o.clock = &clock;
    o.on_started_leading = [this] { ++started; };
    o.on_stopped_leading = [this] { ++stopped; };
    le = k8s::leader_elector::make(kube, o);
    le->start();
  }
  // The POST or PUT of the Lease waiting, its body.
  std::string written() {
    for (const auto& c : io.waiting())
      if (c.request.method == "POST" || c.request.method == "PUT")
        return c.request.body;
    return {};
  }
  std::string lease(const std::string& holder, const std::string& renewed) {
    return R"({"metadata":{"name":"headroom","namespace":"headroom","resourceVersion":"7"},"spec":{"holderIdentity":")" + holder +
           R"(","leaseDurationSeconds":15,"renewTime":")" + renewed + R"(","leaseTransitions":1}})";
  }
};

TEST_F(election, the_lease_is_written_with_the_given_clocks_wall_time) {
  start();
  ASSERT_TRUE(io.answer("GET", "/leases/headroom", 404, R"({"kind":"Status","code":404,"reason":"NotFound"})"));
  const auto body = written();
  // manual_clock's wall time starts at 1,790,000,000 s: 2026-09-21T14:13:20Z.
  EXPECT_NE(body.find(R"("renewTime":"2026-09-21T14:13:20.000000Z")"), std::string::npos) << body;
  ASSERT_TRUE(io.answer("POST", "/leases", 201, "{}"));
  EXPECT_EQ(started, 1);
  EXPECT_TRUE(le->leading());
}

TEST_F(election, a_leader_whose_renewals_fail_steps_down_at_the_renew_deadline_on_its_clock) {
  start();
  ASSERT_TRUE(io.answer("GET", "/leases/headroom", 404, "{}"));
  ASSERT_TRUE(io.answer("POST", "/leases", 201, "{}"));
  ASSERT_TRUE(le->leading());
  // Renewals fail for 9 s (the Lease cannot be read: a refusal, which the client does not retry
  // itself): still the leader (renew deadline 10 s).
  for (int i = 0; i < 3; ++i) {
    clock.advance(3s);
    io.fire_timers();
    ASSERT_TRUE(io.answer("GET", "/leases/headroom", 403, R"({"kind":"Status","code":403,"reason":"Forbidden"})"));
  }
  EXPECT_TRUE(le->leading()) << "9 s of failed renewals is within the 10 s deadline";
  EXPECT_EQ(stopped, 0);
  clock.advance(2s);  // 11 s since the last renewal
  io.fire_timers();
  EXPECT_FALSE(le->leading());
  EXPECT_EQ(stopped, 1) << "stepped down before anyone else may take the lease (15 s)";
  le->stop(false);
}

TEST_F(election, another_holders_lease_is_taken_only_once_it_expired_as_observed_here) {
  start("me");
  ASSERT_TRUE(io.answer("GET", "/leases/headroom", 200, lease("other", "2026-09-21T13:33:00.000000Z")));
  EXPECT_TRUE(written().empty()) << "held by another: nothing written";
  clock.advance(14s);
  io.fire_timers();
  // The same holder and renewTime: not renewed since it was first seen, 14 s ago (< 15 s).
  ASSERT_TRUE(io.answer("GET", "/leases/headroom", 200, lease("other", "2026-09-21T13:33:00.000000Z")));
  EXPECT_TRUE(written().empty()) << "14 s without a renewal is within the lease's 15 s";
  clock.advance(2s);
  io.fire_timers();
  ASSERT_TRUE(io.answer("GET", "/leases/headroom", 200, lease("other", "2026-09-21T13:33:00.000000Z")));
  const auto body = written();
  EXPECT_NE(body.find(R"("holderIdentity":"me")"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("leaseTransitions":2)"), std::string::npos) << body;
  ASSERT_TRUE(io.answer("PUT", "/leases/headroom", 200, "{}"));
  EXPECT_EQ(started, 1);
  le->stop(false);
}

}  // namespace
