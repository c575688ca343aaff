// The clock an informer and a leader elector measure on is the one their client's exchange runs
// on (main hands the process's real clock to the transport; a test gives its own): a watch that
// ran 10 s on that clock had worked, so its failure is retried at once rather than after the
// backoff the earlier failures grew; a Lease is written with that clock's wall time.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer.hpp"
#include "adapters/k8s/leader_election.hpp"
#include "runtime/clock.hpp"
#include "unit/support/scripted_exchange.hpp"

using namespace headroom;
using namespace std::chrono_literals;

namespace {

struct on_the_exchanges_clock : ::testing::Test {
  runtime::manual_clock clock;
  test_support::scripted_exchange io;
  k8s::client kube{k8s::connection{"https://api.test", {}, [] { return std::string{"token"}; }}, io};
  on_the_exchanges_clock() { io.use_clock(clock); }

  // The delay of the watch waiting (the informer's backoff), failing the test when there is none.
  std::chrono::milliseconds watch_delay() {
    for (const auto& c : io.waiting())
      if (c.request.stream)
        return std::chrono::duration_cast<std::chrono::milliseconds>(c.request.delay);
    ADD_FAILURE() << "no watch waiting";
    return -1ms;
  }
};

TEST_F(on_the_exchanges_clock, a_watch_that_ran_ten_seconds_is_resumed_at_once_after_it_fails) {
  k8s::informer<k8s::pod>::options o;
  o.kind = k8s::kinds::pods;
  o.ns = "ci";
  auto pods = k8s::informer<k8s::pod>::make(kube, o);  // no clock given: the exchange's
  pods->start();
  ASSERT_TRUE(io.answer("GET", "/namespaces/ci/pods", 200, R"({"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]})"));
  EXPECT_EQ(watch_delay(), 0ms);
  // Four watches that fail at once: the backoff grows to 2-4 s (0.5, 1, 2, 4 s, each with a jitter
  // that halves it at most).
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(io.fail_transfer("watch=true"));
  const auto grown = watch_delay();
  EXPECT_GE(grown, 2000ms);
  // This one runs 10 s on the exchange's clock before it fails: it had worked.
  clock.advance(grown + 10s);
  ASSERT_TRUE(io.fail_transfer("watch=true"));
  EXPECT_LE(watch_delay(), 500ms) << "the backoff starts over after a watch that ran";
  pods->stop();
  io.deliver_cancelled();
}

TEST_F(on_the_exchanges_clock, a_lease_is_written_with_the_exchanges_wall_time) {
  k8s::leader_elector::options o;
  o.ns = "headroom";
  o.identity = "me";  // no clock given: the exchange's
  auto le = k8s::leader_elector::make(kube, o);
  clock.advance(60s);
  le->start();
  ASSERT_TRUE(io.answer("GET", "/leases/headroom", 404, R"({"kind":"Status","code":404,"reason":"NotFound"})"));
  std::string body;
  for (const auto& c : io.waiting())
    if (c.request.method == "POST")
      body = c.request.body;
  // manual_clock's wall time starts at 1,790,000,000 s (2026-09-21T14:13:20Z); a minute on.
  EXPECT_NE(body.find(R"("renewTime":"2026-09-21T14:14:20.000000Z")"), std::string::npos) << body;
  le->stop(false);
}

}  // namespace
