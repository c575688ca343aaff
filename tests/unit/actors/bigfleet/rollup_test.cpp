// rollup (actors/bigfleet/rollup.cpp) under CAF's deterministic test_coordinator, with the API
// server answered by hand (tests/unit/support/scripted_exchange.hpp) and the CapacityRequests on a
// real informer: every rollupInterval on the injected clock, and at once when the session says the
// stream opened, the cluster's whole demand goes to the session's outbox; then the Pending
// CapacityRequests are acknowledged, at most ack_parallelism at a time, each once.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
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

std::string cr(const std::string& ns, const std::string& name, const std::string& cpu, const std::string& phase) {
  return R"({"apiVersion":"bigfleet.lucy.sh/v1alpha1","kind":"CapacityRequest","metadata":{"name":")" + name + R"(","namespace":")" + ns +
         R"(","uid":"u-)" + ns + name + R"(","resourceVersion":"3"},"spec":{"resources":{"cpu":")" + cpu +
         R"(","memory":"1Gi"},"priority":7,"reclamationPenalty":"500m"})" +
         (phase.empty() ? std::string{} : R"(,"status":{"phase":")" + phase + R"("})") + "}";
}

struct rollup_fixture : test_support::actor_fixture {
  ~rollup_fixture() override {
    caf::anon_send_exit(rollup, caf::exit_reason::kill);
    caf::anon_send_exit(outbox, caf::exit_reason::kill);
    sched.run();
    deps.capacity_requests->stop();
  }

  void start(size_t ack_parallelism = 1, const std::string& more = {}) {
    deps.client = &kube;
    k8s::informer<k8s::unstructured>::options o;
    o.kind = bf::kinds::capacity_requests;
    deps.capacity_requests = k8s::informer<k8s::unstructured>::make(kube, o);
    deps.capacity_requests->start();
    ASSERT_TRUE(io.answer("GET", "/capacityrequests", 200,
                          R"({"kind":"CapacityRequestList","metadata":{"resourceVersion":"9"},"items":[)" + cr("ml", "a", "2", "") + "," +
                              cr("ml", "b", "2", "Pending") + "," + cr("web", "c", "1", "Acknowledged") + more + "]}"));
    io.fire_timers();
    outbox = sys.spawn(
        [](caf::event_based_actor*, std::shared_ptr<std::vector<bf::outbox_rollup>> sent) -> caf::behavior {
          return {[sent](bf::outbox_rollup& r) { sent->push_back(std::move(r)); }, [](bf::outbox_message&) {}};
        },
        rollups);
    deps.outbox = caf::actor_cast<bf::shard_outbox>(outbox);
    bf::operator_options opts;
    opts.endpoint.cluster_id = "test-cluster";
    opts.rollup_interval = 10s;
    opts.ack_parallelism = ack_parallelism;
    rollup = bf::spawn_rollup(sys, deps, opts);
    sched.run();
  }
  std::vector<std::string> acks_in_flight() const {
    std::vector<std::string> out;
    for (const auto& c : io.waiting())
      if (c.request.method == "PATCH" && c.request.url.find("/status") != std::string::npos)
        out.push_back(c.request.url.substr(0, c.request.url.rfind("/status")).substr(c.request.url.find("/namespaces/") + 12));
    return out;
  }
  size_t acks_waiting() const {
    size_t n = 0;
    for (const auto& c : io.waiting())
      n += c.request.method == "PATCH" && c.request.url.find("/status") != std::string::npos;
    return n;
  }
  int64_t cpu_millis(const bf::outbox_rollup& r) const {
    int64_t total = 0;
    for (const auto& n : r.rollup.needs())
      if (auto it = n.aggregate_resources().find("cpu"); it != n.aggregate_resources().end())
        total += it->second.back() == 'm' ? std::stoll(it->second) : std::stoll(it->second) * 1000;
    return total;
  }

  bf::operator_deps deps;
  std::shared_ptr<std::vector<bf::outbox_rollup>> rollups = std::make_shared<std::vector<bf::outbox_rollup>>();
  caf::actor outbox;
  bf::rollup_actor rollup;
};

TEST_F(rollup_fixture, the_whole_demand_goes_out_at_once_on_connect_and_every_interval_and_pending_crs_are_acked_once) {
  start();
  EXPECT_TRUE(rollups->empty()) << "nothing before the stream opens or the interval passes";
  caf::anon_send(rollup, msg::rollup_atom_v);  // the session: the stream just opened
  sched.run();
  ASSERT_EQ(rollups->size(), 1u);
  EXPECT_EQ(rollups->back().rollup.cluster_id(), "test-cluster");
  EXPECT_EQ(cpu_millis(rollups->back()), 5000) << "every CapacityRequest, acknowledged or not";
  ASSERT_EQ(acks_waiting(), 1u) << "the two Pending ones, one at a time";
  for (const auto& c : io.waiting()) {
    if (c.request.method == "PATCH") {
      EXPECT_NE(c.request.body.find(R"("phase":"Acknowledged")"), std::string::npos) << c.request.body;
    }
  }
  ASSERT_TRUE(io.answer("PATCH", "/status", 200, "{}"));
  sched.run();
  ASSERT_EQ(acks_waiting(), 1u) << "then the other";
  sched.advance_time(10s);
  sched.run();
  ASSERT_EQ(rollups->size(), 2u) << "every rollupInterval";
  EXPECT_EQ(acks_waiting(), 1u) << "a CR whose acknowledgement is in flight is not acknowledged twice";
  ASSERT_TRUE(io.answer("PATCH", "/status", 200, "{}"));
  sched.run();
  EXPECT_EQ(acks_waiting(), 0u);
}

// At most ack_parallelism acknowledgements at once; a failed one is sent again at the next
// roll-up, one answered NotFound (the CR is gone) is not, though the cache still shows it Pending.
TEST_F(rollup_fixture, acks_go_ack_parallelism_at_a_time_a_failed_one_is_retried_and_a_not_found_one_is_not) {
  start(2, "," + cr("web", "d", "1", "Pending"));
  caf::anon_send(rollup, msg::rollup_atom_v);
  sched.run();
  const auto first = acks_in_flight();
  ASSERT_EQ(first.size(), 2u) << "three Pending, two at a time";
  const std::string gone = first[0], failed = first[1];
  ASSERT_TRUE(io.answer("PATCH", gone + "/status", 404, R"({"kind":"Status","reason":"NotFound","code":404})"));
  sched.run();
  auto now = acks_in_flight();
  ASSERT_EQ(now.size(), 2u) << "a slot freed: the third";
  const std::string third = now[0] == failed ? now[1] : now[0];
  EXPECT_EQ((std::set<std::string>{gone, failed, third}),
            (std::set<std::string>{"ml/capacityrequests/a", "ml/capacityrequests/b", "web/capacityrequests/d"}));
  // Refused (the client retries a 5xx itself; a 403 comes back to the roll-up).
  ASSERT_TRUE(io.answer("PATCH", failed + "/status", 403, R"({"kind":"Status","reason":"Forbidden","code":403})"));
  ASSERT_TRUE(io.answer("PATCH", third + "/status", 200, "{}"));
  sched.run();
  EXPECT_TRUE(acks_in_flight().empty());
  sched.advance_time(10s);
  sched.run();
  EXPECT_EQ(acks_in_flight(), (std::vector<std::string>{failed}))
      << "the failed one again; not the one that is gone, nor the one acknowledged";
}

}  // namespace
