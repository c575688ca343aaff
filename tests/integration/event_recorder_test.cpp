// event_recorder against the real API server: repeats become one events.k8s.io/v1 Event with a
// series, a flapping object is held to its burst, and what kubectl describe lists is what was meant.

#include <caf/all.hpp>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <mutex>

#include "actors/k8s/event_recorder.hpp"
#include "testenv/transport_options.hpp"
#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "testenv/cluster_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using headroom::testenv::eventually;

struct counts {
  std::mutex m;
  std::map<std::string, int> by_outcome;
  int get(const std::string& o) {
    std::lock_guard lock{m};
    return by_outcome[o];
  }
};

struct seen_event {
  std::string name, reason, note, controller, instance, type, action;
  int64_t series = 0;
};

// The events.k8s.io/v1 Events in `ns` about `object`.
std::vector<seen_event> events_about(headroom::testenv::cluster* c, const std::string& ns, const std::string& object) {
  auto r = c->kubectl({"get", "events.events.k8s.io", "-n", ns, "-o", "json"});
  std::vector<seen_event> out;
  simdjson::dom::parser p;
  auto doc = p.parse(r.out);
  if (doc.error())
    return out;
  for (auto item : doc["items"].get_array()) {
    if (std::string_view{item["regarding"]["name"]} != object)
      continue;
    seen_event e;
    e.name = std::string{std::string_view{item["metadata"]["name"]}};
    e.reason = std::string{std::string_view{item["reason"]}};
    e.note = std::string{std::string_view{item["note"]}};
    e.controller = std::string{std::string_view{item["reportingController"]}};
    e.instance = std::string{std::string_view{item["reportingInstance"]}};
    e.type = std::string{std::string_view{item["type"]}};
    e.action = std::string{std::string_view{item["action"]}};
    int64_t n = 0;
    if (item["series"]["count"].get(n) == simdjson::SUCCESS)
      e.series = n;
    out.push_back(std::move(e));
  }
  return out;
}

TEST(event_recorder, repeats_join_one_series_and_a_flapping_object_is_held_to_its_burst) {
  HEADROOM_REQUIRE_CLUSTER(c);
  headroom::k8s::transport io{headroom::testenv::real_time_transport()};
  auto conn = headroom::k8s::load_kubeconfig(c->kubeconfig());
  ASSERT_TRUE(std::holds_alternative<headroom::k8s::connection>(conn));
  headroom::k8s::client kube{std::get<headroom::k8s::connection>(conn), io};
  auto tally = std::make_shared<counts>();
  auto opts = std::make_shared<headroom::actors::event_recorder_options>();
  opts->kube = &kube;
  opts->instance = "recorder-test-0";
  opts->wall_clock = [] { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); };
  opts->flush_interval = 200ms;
  opts->book.burst = 3;
  opts->counted = [tally](const char* o) {
    std::lock_guard lock{tally->m};
    ++tally->by_outcome[o];
  };
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto recorder = headroom::actors::spawn_event_recorder(sys, opts);

  for (int i = 0; i < 5; ++i)
    headroom::actors::tell_event(recorder, {"apps/v1", "Deployment", "default", "steady", "", "Normal", "ScaledUp", "Scale", "1 → 2"});
  for (int i = 0; i < 10; ++i)
    headroom::actors::tell_event(recorder, {"v1", "Pod", "default", "flappy", "", "Warning", "QueueFull", "Admit",
                                            "queue full, attempt " + std::to_string(i)});
  // Cluster-scoped: in the default namespace.
  headroom::actors::tell_event(recorder, {"v1", "Node", "", "node-x", "", "Warning", "ReclaimDrainFailed", "Drain", "a PDB blocked it"});

  ASSERT_TRUE(eventually([&] {
    auto v = events_about(c, "default", "steady");
    return v.size() == 1 && v[0].series == 5;
  }, 20s)) << "counts: created " << tally->get("created") << ", series " << tally->get("series");
  const auto steady = events_about(c, "default", "steady");
  EXPECT_EQ(steady[0].reason, "ScaledUp");
  EXPECT_EQ(steady[0].note, "1 → 2");
  EXPECT_EQ(steady[0].controller, "headroom.dev/headroom");
  EXPECT_EQ(steady[0].instance, "recorder-test-0");
  EXPECT_EQ(steady[0].action, "Scale");
  EXPECT_EQ(steady[0].name.rfind("steady.", 0), 0u);

  ASSERT_TRUE(eventually([&] { return tally->get("created") == 1 + 3 + 1; }, 20s));
  EXPECT_EQ(events_about(c, "default", "flappy").size(), 3u);
  EXPECT_EQ(tally->get("rate_limited"), 7);
  EXPECT_EQ(tally->get("series"), 4);
  EXPECT_EQ(tally->get("failed"), 0);
  ASSERT_EQ(events_about(c, "default", "node-x").size(), 1u);
  EXPECT_EQ(events_about(c, "default", "node-x")[0].type, "Warning");

  // The core/v1 view (what kubectl describe and kubectl get events read) lists it too.
  auto listed = c->kubectl({"get", "events", "-n", "default", "--field-selector", "involvedObject.name=steady", "-o",
                            "jsonpath={.items[*].reason}"});
  EXPECT_EQ(listed.out, "ScaledUp") << "the core/v1 view kubectl describe reads";
  caf::anon_send_exit(recorder, caf::exit_reason::user_shutdown);
}

}  // namespace
