// health_check (actors/capacity/health_check.cpp) under CAF's deterministic test_coordinator, with
// the API server answered by hand (tests/unit/support/scripted_exchange.hpp) and the runner pods on
// a real informer: a finished runner pod is deleted after the terminal grace, a runner pod Pending
// past its timeout is replaced (an Event says why, then the pod goes), and a healthy one is left
// alone; every timer is the injected clock's.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/capacity/capacity.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer_slice.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/rfc3339.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace cap = actors::capacity;

namespace {

struct health_fixture : test_support::actor_fixture {
  ~health_fixture() override {
    caf::anon_send_exit(health, caf::exit_reason::kill);
    caf::anon_send_exit(recorder, caf::exit_reason::kill);
    sched.run();
    pods->stop();
  }

  std::string runner_pod(const std::string& name, const std::string& phase, const std::string& node = "") {
    const auto created = runtime::format_rfc3339(runtime::actor_system_clock{sys.clock()}.wall_seconds(), 0);
    return R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name + R"(","creationTimestamp":")" + created +
           R"(","resourceVersion":"5","labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"runner"}},)" +
           R"("spec":{"nodeName":")" + node + R"("},"status":{"phase":")" + phase + R"("}})";
  }

  void start() {
    pods = pod_informer("arc", runner_pod("done", "Succeeded") + "," + runner_pod("stuck", "Pending") + "," +
                                   runner_pod("fine", "Running", "node-1"));
    router = k8s::label_router<k8s::pod>::make(pods, std::string{cap::keys::scale_set});
    recorder = sys.spawn(
        [](actors::event_sink::pointer, std::shared_ptr<std::vector<msg::k8s_event>> seen) -> actors::event_sink::behavior_type {
          return {[seen](msg::k8s_event& e) { seen->push_back(std::move(e)); }};
        },
        events);
    auto ctx = std::make_shared<cap::scale_set_context>();
    ctx->spec.ns = "arc";
    ctx->spec.name = "linux";
    ctx->spec.health_check.interval = 30s;
    ctx->spec.health_check.terminal_grace = 60s;
    ctx->spec.health_check.pending_timeout = 600s;
    ctx->kube = &kube;
    ctx->pods = router->slice("linux");
    ctx->events = recorder;
    ctx->metrics.add = [](const char*, int64_t) {};
    health = cap::spawn_health_check(sys, ctx);
    sched.run();
  }
  // Runs the checks due in the next `d`, one interval at a time.
  void pass(std::chrono::seconds d) {
    for (auto t = 0s; t < d; t += 30s) {
      sched.advance_time(30s);
      sched.run();
    }
  }
  size_t deletes(const std::string& name) const {
    size_t n = 0;
    for (const auto& c : io.waiting())
      n += c.request.method == "DELETE" && c.request.url.find("/pods/" + name) != std::string::npos;
    return n;
  }

  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::label_router<k8s::pod>> router;
  std::shared_ptr<std::vector<msg::k8s_event>> events = std::make_shared<std::vector<msg::k8s_event>>();
  actors::event_sink recorder;
  cap::health_check_actor health;
};

TEST_F(health_fixture, a_finished_pod_goes_after_its_grace_and_a_stuck_one_is_replaced_after_its_timeout) {
  start();
  pass(30s);  // the first check: the finished pod's grace starts
  EXPECT_EQ(deletes("done"), 0u);
  pass(30s);
  EXPECT_EQ(deletes("done"), 0u) << "30 s into its 60 s grace";
  pass(30s);
  EXPECT_EQ(deletes("done"), 1u) << "deleted after the grace";
  EXPECT_EQ(deletes("stuck"), 0u);
  EXPECT_TRUE(events->empty());
  pass(510s);  // 600 s since the stuck pod was created
  EXPECT_EQ(deletes("stuck"), 1u) << "Pending past its timeout: replaced";
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->front().reason, "RunnerReplaced");
  EXPECT_EQ(events->front().name, "stuck");
  EXPECT_EQ(deletes("fine"), 0u) << "a runner pod Running on a node, with no runner id to ask GitHub about, is left alone";
}

}  // namespace
