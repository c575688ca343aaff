// metric_reader (actors/reactive/metric_reader.cpp) under CAF's deterministic test_coordinator, with
// Prometheus answered by hand (tests/unit/support/scripted_exchange.hpp): a subscriber of an
// expression gets one evaluation per interval on the injected clock, each its window's samples
// from one instant subquery, and, when Prometheus fails, the reason instead (never a number).
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/reactive/reactive.hpp"
#include "adapters/prometheus/client.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace rx = actors::reactive;

namespace {

constexpr const char* matrix = R"({"status":"success","data":{"resultType":"matrix","result":[
  {"metric":{},"values":[[1790000000,"10"],[1790000005,"12.5"],[1790000010,"15"]]}]}})";

struct reader_fixture : test_support::actor_fixture {
  ~reader_fixture() override {
    caf::anon_send_exit(reader, caf::exit_reason::kill);
    caf::anon_send_exit(scaler, caf::exit_reason::kill);
    sched.run();
  }

  void start() {
    prom::client_options po;
    po.url = "http://prometheus.test:9090";
    rx::reader_options o;
    o.prom = std::make_shared<prom::client>(io, po);
    reader = rx::spawn_metric_reader(sys, o);
    // A scaler's part: it subscribes, and keeps what it is sent.
    scaler = sys.spawn(
        [](rx::metric_subscriber::pointer self, rx::metric_reader_actor r,
           std::shared_ptr<std::vector<msg::metric_samples>> got) -> rx::metric_subscriber::behavior_type {
          self->send(r, msg::metric_subscription{"ml/Deployment/web", {"sum(rate(requests_total[1m]))"}, 60, 5, 10'000});
          return {[got](msg::metric_samples& s) { got->push_back(std::move(s)); }};
        },
        reader, samples);
    sched.run();
  }
  // The evaluations due within `d`, one second at a time.
  void pass(std::chrono::seconds d) {
    for (auto t = 0s; t < d; t += 1s) {
      sched.advance_time(1s);
      sched.run();
    }
  }
  size_t queries_waiting() const {
    size_t n = 0;
    for (const auto& c : io.waiting())
      n += c.request.url.find("/api/v1/query") != std::string::npos;
    return n;
  }

  rx::metric_reader_actor reader;
  rx::metric_subscriber scaler;
  std::shared_ptr<std::vector<msg::metric_samples>> samples = std::make_shared<std::vector<msg::metric_samples>>();
};

TEST_F(reader_fixture, one_evaluation_per_interval_with_its_window_and_the_reason_when_prometheus_fails) {
  start();
  pass(10s);
  ASSERT_EQ(queries_waiting(), 1u) << "one evaluation in the first interval";
  const auto& url = io.waiting().front().request.url;
  EXPECT_NE(url.find("query=%28sum%28rate%28requests_total%5B1m%5D%29%29%29%5B60s%3A5s%5D"), std::string::npos) << url;
  ASSERT_TRUE(io.answer("GET", "/api/v1/query", 200, matrix));
  sched.run();
  ASSERT_EQ(samples->size(), 1u);
  ASSERT_TRUE(samples->back().ok) << samples->back().reason;
  EXPECT_EQ(samples->back().values, (std::vector<double>{10, 12.5, 15}));
  EXPECT_EQ(samples->back().index, 0u);

  pass(10s);
  ASSERT_EQ(queries_waiting(), 1u) << "the next interval's";
  ASSERT_TRUE(io.answer("GET", "/api/v1/query", 503, "unavailable", "text/plain"));
  sched.run();
  ASSERT_EQ(samples->size(), 2u);
  EXPECT_FALSE(samples->back().ok);
  EXPECT_FALSE(samples->back().reason.empty());
  EXPECT_TRUE(samples->back().values.empty()) << "never a number without a metric";
  EXPECT_GT(samples->back().due_ns, samples->front().due_ns);
}

}  // namespace
