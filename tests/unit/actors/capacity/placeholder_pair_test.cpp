// placeholder_pair (actors/capacity/placeholder_pair.cpp) under CAF's deterministic
// test_coordinator, with the API server answered by hand (tests/unit/support/scripted_exchange.hpp)
// and the pods' changes streamed to a real informer over its scripted watch: the pair creates its
// two placeholders, reports ready only when both are Running on a node, is lost when the workflow
// placeholder goes, and times out (deleting its pods) when they are not Running within
// placeholderReadyTimeout on the injected clock.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/capacity/capacity.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer_slice.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace cap = actors::capacity;

namespace {

struct pair_fixture : test_support::actor_fixture {
  ~pair_fixture() override {
    caf::anon_send_exit(pair, caf::exit_reason::kill);
    caf::anon_send_exit(owner, caf::exit_reason::kill);
    sched.run();
    pods->stop();
  }

  void start() {
    pods = pod_informer("arc");
    router = k8s::label_router<k8s::pod>::make(pods, std::string{cap::keys::scale_set});
    auto ctx = std::make_shared<cap::scale_set_context>();
    ctx->spec.ns = "arc";
    ctx->spec.name = "linux";
    ctx->spec.placeholder_ready_timeout = 300s;
    ctx->spec.placeholder_image = "registry.k8s.io/pause:3.10";
    ctx->kube = &kube;
    ctx->pods = router->slice("linux");
    owner = sys.spawn(
        [](cap::pair_owner::pointer, std::shared_ptr<std::vector<msg::pair_report>> seen) -> cap::pair_owner::behavior_type {
          return {[seen](msg::pair_report& r) { seen->push_back(std::move(r)); }, [](msg::k8s_event&) {}};
        },
        reports);
    pair = cap::spawn_placeholder_pair(sys, ctx, "a1b2c3d4", false, owner, {"v1", "ConfigMap", "headroom-owner", "u-owner"});
    sched.run();
  }

  // The pods the pair asked to create, by name, answered as created.
  std::vector<std::string> create_both() {
    std::vector<std::string> names;
    for (const auto& c : io.waiting())
      if (c.request.method == "POST") {
        simdjson::dom::parser p;
        std::string_view name;
        EXPECT_EQ(p.parse(c.request.body)["metadata"]["name"].get(name), simdjson::SUCCESS);
        names.emplace_back(name);
      }
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_TRUE(io.answer("POST", "/api/v1/namespaces/arc/pods", 201, "{}"));
      sched.run();
    }
    return names;
  }
  // The watch tells a pod's change, and the monitor hands it to the pair (as capacity_monitor does).
  void pod_is(const std::string& type, const std::string& name, const std::string& phase, const std::string& node = "") {
    const std::string pod = R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name +
                            R"(","resourceVersion":"11","labels":{"headroom.dev/scale-set":"linux","headroom.dev/slot":"a1b2c3d4"}},)" +
                            R"("spec":{"nodeName":")" + node + R"("},"status":{"phase":")" + phase + R"("}})";
    ASSERT_TRUE(io.stream("watch=true", R"({"type":")" + type + R"(","object":)" + pod + "}\n")) << "the watch waits";
    auto p = pods->get("arc", name);
    caf::anon_send(pair, msg::pod_event{type == "DELETED" ? msg::object_change::deleted : msg::object_change::modified,
                                        p ? p : std::make_shared<const k8s::pod>()});
    sched.run();
  }

  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::label_router<k8s::pod>> router;
  std::shared_ptr<std::vector<msg::pair_report>> reports = std::make_shared<std::vector<msg::pair_report>>();
  cap::pair_owner owner;
  cap::pair_actor pair;
};

using state = msg::pair_report::state;

TEST_F(pair_fixture, ready_only_when_both_placeholders_run_and_lost_when_the_workflow_one_goes) {
  start();
  const auto names = create_both();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(names[0].find("runner"), std::string::npos) << names[0];
  EXPECT_NE(names[1].find("workflow"), std::string::npos) << names[1];
  pod_is("ADDED", names[0], "Running", "node-1");
  pod_is("ADDED", names[1], "Pending");
  EXPECT_TRUE(reports->empty()) << "pending, as it started: nothing to report";
  pod_is("MODIFIED", names[1], "Running", "node-1");
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ(reports->back().what, state::ready);
  EXPECT_EQ(reports->back().slot, "a1b2c3d4");
  pod_is("DELETED", names[1], "Running", "node-1");
  EXPECT_EQ(reports->back().what, state::lost);
  EXPECT_NE(reports->back().reason.find(names[1]), std::string::npos) << reports->back().reason;
  ASSERT_EQ(waiting("DELETE"), 1u) << "the pod the watch showed deleted is not deleted again";
  EXPECT_NE(find("DELETE", names[0]), nullptr) << "the runner placeholder is deleted";
}

TEST_F(pair_fixture, not_running_within_the_ready_timeout_times_out_and_deletes_its_pods) {
  start();
  const auto names = create_both();
  pod_is("ADDED", names[0], "Pending");
  pod_is("ADDED", names[1], "Pending");
  sched.advance_time(299s);
  sched.run();
  EXPECT_TRUE(reports->empty());
  EXPECT_EQ(waiting("DELETE"), 0u);
  sched.advance_time(1s);
  sched.run();
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ(reports->back().what, state::timed_out);
  EXPECT_EQ(waiting("DELETE"), 2u) << "its two pods are deleted";
}

}  // namespace
