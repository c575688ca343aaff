// reclaim_drain (actors/bigfleet/reclaim_drain.cpp) under CAF's deterministic test_coordinator,
// with the API server answered by hand (tests/unit/support/scripted_exchange.hpp) and the pods of a
// real informer (its "node" index, as the mode builds it): the node is cordoned and acknowledged to
// the shard through the session's outbox, every pod but the DaemonSet's is evicted, a
// PodDisruptionBudget refusal is retried every 2 s on the injected clock, and at the grace period
// what is left fails the node and the drain ends.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/bigfleet/bigfleet.hpp"
#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace bf = actors::bigfleet;

namespace {

std::string pod(const std::string& name, const std::string& owner_kind = "ReplicaSet") {
  return R"({"metadata":{"name":")" + name + R"(","namespace":"work","uid":"u-)" + name +
         R"(","resourceVersion":"5","ownerReferences":[{"apiVersion":"apps/v1","kind":")" + owner_kind +
         R"(","name":"o","uid":"u-o","controller":true}]},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}})";
}

struct drain_fixture : test_support::actor_fixture {
  ~drain_fixture() override {
    for (const auto& a : {caf::actor_cast<caf::actor>(drain), outbox, watcher})
      caf::anon_send_exit(a, caf::exit_reason::kill);
    sched.run();
    deps.pods->stop();
  }

  void start() {
    k8s::informer<k8s::pod>::options o;
    o.kind = k8s::kinds::pods;
    deps.client = &kube;
    deps.pods = k8s::informer<k8s::pod>::make(kube, o);
    deps.pods->add_index("node", [](const k8s::pod& p) {
      return p.node_name.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.node_name};
    });
    deps.pods->start();
    ASSERT_TRUE(io.answer("GET", "/api/v1/pods", 200,
                          R"({"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[)" + pod("web-1") + "," + pod("guarded") +
                              "," + pod("agent", "DaemonSet") + "]}"));
    io.fire_timers();
    ASSERT_TRUE(deps.pods->synced());
    // The session's outbox: what the drain sends the shard.
    outbox = sys.spawn(
        [](caf::event_based_actor*, std::shared_ptr<std::vector<bf::outbox_message>> sent) -> caf::behavior {
          return {[sent](bf::outbox_message& m) { sent->push_back(std::move(m)); }, [](bf::outbox_rollup&) {}};
        },
        acks);
    deps.outbox = caf::actor_cast<bf::shard_outbox>(outbox);
    ::bigfleet::v1alpha1::ReclaimInstruction in;
    in.set_instruction_id("reclaim-1");
    in.add_nodes("n1");
    in.set_grace_period_seconds(30);
    drain = bf::spawn_reclaim_drain(sys, deps, in);
    watcher = sys.spawn(
        [](caf::event_based_actor* self, bf::reclaim_drain_actor d, std::shared_ptr<std::optional<caf::error>> out) -> caf::behavior {
          self->monitor(d);
          self->set_down_handler([out](caf::down_msg& m) { *out = m.reason; });
          return {[](int) {}};
        },
        drain, ended);
    sched.run();
  }
  bool answer(const std::string& method, const std::string& url_part, long status, const std::string& body = "{}") {
    const bool ok = io.answer(method, url_part, status, body);
    sched.run();
    return ok;
  }
  size_t evictions_waiting(const std::string& name) const {
    size_t n = 0;
    for (const auto& c : io.waiting())
      n += c.request.method == "POST" && c.request.url.find("/pods/" + name + "/eviction") != std::string::npos;
    return n;
  }

  bf::operator_deps deps;
  std::shared_ptr<std::vector<bf::outbox_message>> acks = std::make_shared<std::vector<bf::outbox_message>>();
  std::shared_ptr<std::optional<caf::error>> ended = std::make_shared<std::optional<caf::error>>();
  caf::actor outbox, watcher;
  bf::reclaim_drain_actor drain;
};

constexpr const char* pdb_refusal =
    R"({"kind":"Status","status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","code":429})";

TEST_F(drain_fixture, cordons_acks_evicts_all_but_the_daemonset_and_retries_a_pdb_refusal_until_it_passes) {
  start();
  ASSERT_TRUE(answer("PATCH", "/api/v1/nodes/n1", 200)) << "the cordon";
  ASSERT_EQ(acks->size(), 1u) << "acknowledged once the cordon landed";
  const auto& ack = acks->front().message.reclaim_ack();
  EXPECT_EQ(ack.instruction_id(), "reclaim-1");
  ASSERT_EQ(ack.nodes_started_size(), 1);
  EXPECT_EQ(ack.nodes_started(0), "n1");
  EXPECT_EQ(evictions_waiting("web-1"), 1u);
  EXPECT_EQ(evictions_waiting("guarded"), 1u);
  EXPECT_EQ(evictions_waiting("agent"), 0u) << "a DaemonSet's pod is left";

  ASSERT_TRUE(answer("POST", "/pods/web-1/eviction", 201));
  ASSERT_TRUE(answer("POST", "/pods/guarded/eviction", 429, pdb_refusal));
  EXPECT_EQ(evictions_waiting("guarded"), 0u);
  sched.advance_time(1900ms);
  sched.run();
  EXPECT_EQ(evictions_waiting("guarded"), 0u) << "retried after 2 s, not before";
  sched.advance_time(100ms);
  sched.run();
  ASSERT_EQ(evictions_waiting("guarded"), 1u);
  EXPECT_FALSE(ended->has_value());
  ASSERT_TRUE(answer("POST", "/pods/guarded/eviction", 201));
  ASSERT_TRUE(ended->has_value()) << "every pod evicted: drained, and the drain ends";
  EXPECT_FALSE(**ended);
}

TEST_F(drain_fixture, a_budget_that_never_allows_it_fails_the_node_at_the_grace_period) {
  start();
  ASSERT_TRUE(answer("PATCH", "/api/v1/nodes/n1", 200));
  ASSERT_TRUE(answer("POST", "/pods/web-1/eviction", 201));
  int refusals = 0;
  for (int s = 0; s < 40 && !ended->has_value(); s += 2) {
    if (answer("POST", "/pods/guarded/eviction", 429, pdb_refusal))
      ++refusals;
    sched.advance_time(2s);
    sched.run();
  }
  EXPECT_GE(refusals, 14) << "retried every 2 s for the 30 s grace period";
  EXPECT_LE(refusals, 16);
  ASSERT_TRUE(ended->has_value()) << "the grace period ends it";
}

}  // namespace
