// reactive_scaler (actors/reactive/reactive_scaler.cpp and scaler_*.cpp) under CAF's deterministic
// test_coordinator, with the API server answered by hand (tests/unit/support/scripted_exchange.hpp)
// and the metric reader's evaluations sent by the test: start-up discovery and reads, a sustained
// high metric stepping the Deployment up in one JSON patch (the count tested, replaced and the
// intent annotation added), the cooldown holding the next step until it has passed on the injected
// clock, three refused writes of one step backing off for two cooldowns, and a target of two
// metrics with one unreadable (a step up on the other, no step down). No server, no sleeping.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/reactive/reactive.hpp"
#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace rx = actors::reactive;

namespace {

constexpr const char* discovery = R"({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[
  {"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]},
  {"name":"deployments","singularName":"","namespaced":true,"kind":"Deployment","verbs":["get","patch"]}]})";

std::string deployment(int replicas) {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ml","uid":"u-web",)"
         R"("resourceVersion":"7","annotations":{"team":"ml"}},"spec":{"replicas":)" +
         std::to_string(replicas) + "}}";
}
std::string scale(int replicas) {
  return R"({"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web","namespace":"ml","resourceVersion":"7"},)"
         R"("spec":{"replicas":)" +
         std::to_string(replicas) + R"(},"status":{"replicas":)" + std::to_string(replicas) + R"(,"selector":"app=web"}})";
}

struct scaler_fixture : test_support::actor_fixture {
  ~scaler_fixture() override {
    caf::anon_send_exit(scaler, caf::exit_reason::kill);
    caf::anon_send_exit(reader, caf::exit_reason::kill);
    sched.run();
  }

  // Scales ml/web between 1 and 5 on one metric with target 100 (or on `metrics`): up after 30 s
  // above it, down after 60 s below 50, a 60 s cooldown, an evaluation every 10 s.
  void start(std::vector<rx::scaler_spec::metric> metrics = {{"sum(rate(requests[1m]))", 100, 0, false}}) {
    auto ctx = std::make_shared<rx::scaler_context>();
    ctx->spec.target = {"apps/v1", "Deployment", "ml", "web"};
    ctx->spec.metrics = std::move(metrics);
    auto& r = ctx->spec.rules;
    r.min_replicas = 1;
    r.max_replicas = 5;
    r.target = 100;
    r.evaluation_interval = 10s;
    r.scale_up_window = 30s;
    r.scale_down_window = 60s;
    r.cooldown = 60s;
    r.resolution = 5s;
    ctx->kube = &kube;
    ctx->metrics.set = [this](const char* name, double v) { gauges[name] = v; };
    ctx->metrics.add = [this](const char* name, double v) { counters[name] += v; };
    ctx->metrics.decided = [this](const char* action, const char* why) { decisions[std::string{action} + "/" + why] += 1; };
    ctx->metrics.scale_latency = [](double) {};
    // The metric reader's relay: subscriptions and its watch are taken and dropped; the test plays
    // the reader's evaluations itself.
    reader = sys.spawn([](caf::event_based_actor*, int) -> caf::behavior {
      return {[](msg::metric_subscription&) {}, [](msg::watch_atom) {}};
    }, 0);
    scaler = rx::spawn_reactive_scaler(sys, ctx, rx::quota_actor{},
                                       caf::actor_cast<runtime::watched_relay<rx::metric_reader_actor>>(reader));
    sched.run();
  }

  // One evaluation as the reader sends it: metric `index` at `value` at every resolution step over
  // the last `span` seconds (with several metrics, the evaluation is decided once each has come).
  void evaluate(double value, uint32_t index = 0, double span = 40) {
    const double now = runtime::actor_system_clock{sys.clock()}.wall_seconds();
    msg::metric_samples m;
    m.due_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(sys.clock().now().time_since_epoch()).count();
    m.index = index;
    m.ok = true;
    m.labels = "{}";
    for (double t = now - span; t <= now + 1e-6; t += 5) {
      m.times.push_back(t);
      m.values.push_back(value);
    }
    caf::anon_send(scaler, std::move(m));
    sched.run();
  }
  // Metric `index` of this evaluation gave no number (the reader's "no metric", e.g. NaN).
  void unreadable(uint32_t index, const std::string& why = "NaN") {
    msg::metric_samples m;
    m.due_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(sys.clock().now().time_since_epoch()).count();
    m.index = index;
    m.reason = why;
    caf::anon_send(scaler, std::move(m));
    sched.run();
  }
  void answer(const std::string& method, const std::string& url_part, long status, const std::string& body) {
    ASSERT_TRUE(io.answer(method, url_part, status, body)) << method << " " << url_part << " is not waiting; waiting:\n" << waiting_text();
    sched.run();
  }
  // Start-up: the first evaluation finds the reader's target not read yet and reads it.
  void come_up(int replicas) {
    evaluate(50);
    answer("GET", "/apis/apps/v1", 200, discovery);
    answer("GET", "/apis/apps/v1/namespaces/ml/deployments/web", 200, deployment(replicas));
    answer("GET", "/deployments/web/scale", 200, scale(replicas));
  }
  // An evaluation that decides to step up from `from`: the count read, the pause checked, /scale
  // read for the selector, its Pending pods listed (`pending`: none unschedulable by default), and
  // the step's one patch, which waits for the test's answer.
  void step_up_from(int from, const std::string& pending = R"({"kind":"PodList","items":[]})") {
    evaluate(150);
    answer("GET", "/deployments/web/scale", 200, scale(from));
    answer("GET", "/apis/apps/v1/namespaces/ml/deployments/web", 200, deployment(from));
    answer("GET", "/deployments/web/scale", 200, scale(from));
    answer("GET", "/api/v1/namespaces/ml/pods?", 200, pending);
  }
  const http::http_request* waiting_patch() const {
    for (const auto& c : io.waiting())
      if (c.request.method == "PATCH")
        return &c.request;
    return nullptr;
  }

  caf::actor reader;
  rx::reactive_scaler_actor scaler;
  std::map<std::string, double> counters, gauges;
  std::map<std::string, int> decisions;
};

TEST_F(scaler_fixture, a_sustained_high_metric_steps_up_in_one_patch_and_the_cooldown_holds_the_next) {
  start();
  come_up(1);
  EXPECT_TRUE(io.waiting().empty()) << waiting_text();

  step_up_from(1);
  const auto* patch = waiting_patch();
  ASSERT_NE(patch, nullptr) << waiting_text();
  EXPECT_NE(patch->url.find("/apis/apps/v1/namespaces/ml/deployments/web"), std::string::npos) << patch->url;
  EXPECT_NE(patch->body.find(R"({"op":"test","path":"/spec/replicas","value":1})"), std::string::npos) << patch->body;
  EXPECT_NE(patch->body.find(R"({"op":"replace","path":"/spec/replicas","value":2})"), std::string::npos) << patch->body;
  EXPECT_NE(patch->body.find(R"("op":"add","path":"/metadata/annotations/headroom.dev~1reactive-scale")"), std::string::npos)
      << patch->body;
  answer("PATCH", "/deployments/web", 200, deployment(2));
  EXPECT_EQ(counters["headroom_reactive_scale_ups_total"], 1);

  // Still high 10 s later: the cooldown (60 s) holds it.
  sched.advance_time(10s);
  evaluate(150);
  answer("GET", "/deployments/web/scale", 200, scale(2));
  EXPECT_EQ(waiting_patch(), nullptr) << waiting_text();
  EXPECT_EQ(decisions["none/cooldown"], 1);

  // Past the cooldown: the next step.
  sched.advance_time(60s);
  step_up_from(2);
  patch = waiting_patch();
  ASSERT_NE(patch, nullptr) << waiting_text();
  EXPECT_NE(patch->body.find(R"({"op":"replace","path":"/spec/replicas","value":3})"), std::string::npos) << patch->body;
  answer("PATCH", "/deployments/web", 200, deployment(3));
  EXPECT_EQ(counters["headroom_reactive_scale_ups_total"], 2);
}

TEST_F(scaler_fixture, three_refused_writes_of_one_step_back_off_for_two_cooldowns) {
  start();
  come_up(1);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    step_up_from(1);
    ASSERT_NE(waiting_patch(), nullptr) << "attempt " << attempt << ": " << waiting_text();
    answer("PATCH", "/deployments/web", 403, R"({"kind":"Status","reason":"Forbidden","message":"denied by policy","code":403})");
    // A failed write is read again (a lost response may have applied it): still 1, so refused.
    answer("GET", "/deployments/web/scale", 200, scale(1));
    sched.advance_time(10s);
  }
  EXPECT_EQ(counters["headroom_reactive_scale_refused_total"], 3);
  // Backing off for 2 cooldowns (120 s): high evaluations take no step.
  for (int i = 0; i < 11; ++i) {
    evaluate(150);
    answer("GET", "/deployments/web/scale", 200, scale(1));
    ASSERT_EQ(waiting_patch(), nullptr) << "evaluation " << i << " during the backoff: " << waiting_text();
    sched.advance_time(10s);
  }
  EXPECT_GE(decisions["none/backoff"], 10);
  sched.advance_time(10s);
  step_up_from(1);
  EXPECT_NE(waiting_patch(), nullptr) << "the backoff is over: " << waiting_text();
}

// Two metrics, one unreadable (NaN) and one at 5 × its target: the one read steps the target up,
// as the HPA does (issue #61: every evaluation was no_metric).
TEST_F(scaler_fixture, an_unreadable_metric_is_skipped_and_the_other_steps_up) {
  start({{"queue_depth", 100, 0, false}, {"sum(rate(requests[1m]))", 100, 0, false}});
  come_up(1);
  sched.advance_time(10s);
  unreadable(0);
  evaluate(500, 1);
  answer("GET", "/deployments/web/scale", 200, scale(1));
  answer("GET", "/apis/apps/v1/namespaces/ml/deployments/web", 200, deployment(1));
  answer("GET", "/deployments/web/scale", 200, scale(1));
  answer("GET", "/api/v1/namespaces/ml/pods?", 200, R"({"kind":"PodList","items":[]})");
  const auto* patch = waiting_patch();
  ASSERT_NE(patch, nullptr) << waiting_text();
  EXPECT_NE(patch->body.find(R"({"op":"replace","path":"/spec/replicas","value":2})"), std::string::npos) << patch->body;
  EXPECT_EQ(decisions["up/sustained_high"], 1);
  EXPECT_EQ(decisions["none/no_metric"], 0);
  EXPECT_EQ(counters["headroom_reactive_metric_query_failures_total"], 0) << "the evaluation was not skipped";
}

// One unreadable and one low for the whole down-window: no step down without the missing one. It
// counts towards the alert all the same, and the first evaluation with both read clears it.
TEST_F(scaler_fixture, an_unreadable_metric_holds_a_step_down_and_raises_the_alert) {
  start({{"queue_depth", 100, 0, false}, {"sum(rate(requests[1m]))", 100, 0, false}});
  come_up(3);
  for (int i = 0; i < 3; ++i) {
    sched.advance_time(10s);
    evaluate(10, 0, 70);
    unreadable(1);
    answer("GET", "/deployments/web/scale", 200, scale(3));
    ASSERT_TRUE(io.waiting().empty()) << "evaluation " << i << ": " << waiting_text();
  }
  EXPECT_EQ(decisions["none/no_metric"], 3);
  EXPECT_EQ(decisions["down/sustained_low"], 0);
  EXPECT_EQ(gauges["headroom_reactive_metric_alert"], 1);
  sched.advance_time(10s);
  evaluate(70, 0, 70);
  evaluate(70, 1, 70);
  answer("GET", "/deployments/web/scale", 200, scale(3));
  EXPECT_EQ(decisions["none/within_band"], 1);
  EXPECT_EQ(gauges["headroom_reactive_metric_alert"], 0);
}

TEST_F(scaler_fixture, no_metric_read_skips_the_evaluation) {
  start({{"queue_depth", 100, 0, false}, {"sum(rate(requests[1m]))", 100, 0, false}});
  come_up(1);
  sched.advance_time(10s);
  unreadable(0);
  unreadable(1, "no series");
  EXPECT_TRUE(io.waiting().empty()) << "not even /scale is read: " << waiting_text();
  EXPECT_EQ(decisions["none/no_metric"], 1);
  EXPECT_EQ(counters["headroom_reactive_metric_query_failures_total"], 1);
}

// #58, the design's preemption during a scale-up: while a replica is Pending and unschedulable
// (its room taken, or never there), no further step up; a Warning when the hold starts; once every
// replica is placed, the next step.
TEST_F(scaler_fixture, a_step_up_waits_while_a_replica_cannot_be_placed) {
  start();
  come_up(2);
  const std::string unplaced =
      R"({"kind":"PodList","items":[{"metadata":{"name":"web-2","namespace":"ml","uid":"u2"},"spec":{"containers":[]},)"
      R"("status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable",)"
      R"("message":"0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available"}]}}]})";
  for (int i = 0; i < 3; ++i) {
    step_up_from(2, unplaced);
    ASSERT_EQ(waiting_patch(), nullptr) << "evaluation " << i << ": held\n" << waiting_text();
    sched.advance_time(10s);
  }
  EXPECT_EQ(decisions["up/unschedulable"], 3);
  EXPECT_EQ(gauges["headroom_reactive_unschedulable_replicas"], 1);
  EXPECT_EQ(counters["headroom_reactive_scale_ups_total"], 0);
  step_up_from(2);
  ASSERT_NE(waiting_patch(), nullptr) << "placed: the step goes on\n" << waiting_text();
  EXPECT_EQ(gauges["headroom_reactive_unschedulable_replicas"], 0);
}

// #58, the design's resume: the step wanted when the pause is seen to end is not taken; the cooldown
// runs from the resume, and the next step after it.
TEST_F(scaler_fixture, after_a_pause_the_cooldown_runs_from_the_resume) {
  start();
  come_up(1);
  evaluate(150);
  answer("GET", "/deployments/web/scale", 200, scale(1));
  answer("GET", "/apis/apps/v1/namespaces/ml/deployments/web", 200,
         R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ml","uid":"u-web",)"
         R"("annotations":{"headroom.dev/reactive-paused":"true"}},"spec":{"replicas":1}})");
  EXPECT_EQ(decisions["none/paused"], 1);
  sched.advance_time(10s);
  evaluate(150);
  answer("GET", "/deployments/web/scale", 200, scale(1));
  answer("GET", "/apis/apps/v1/namespaces/ml/deployments/web", 200, deployment(1));  // the annotation is gone
  EXPECT_EQ(waiting_patch(), nullptr) << "no step at the resume\n" << waiting_text();
  EXPECT_EQ(decisions["none/cooldown"], 1);
  sched.advance_time(30s);
  evaluate(150);
  answer("GET", "/deployments/web/scale", 200, scale(1));
  EXPECT_EQ(waiting_patch(), nullptr) << "within the cooldown (60 s) from the resume\n" << waiting_text();
  EXPECT_EQ(decisions["none/cooldown"], 2);
  sched.advance_time(40s);
  step_up_from(1);
  EXPECT_NE(waiting_patch(), nullptr) << "past the cooldown: the step\n" << waiting_text();
}

}  // namespace
