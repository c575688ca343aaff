// The capacity loop's pure parts: the two formulas, what a placeholder's state means, and the pods
// headroom creates (decoded back with headroom's own pod decoder), plus the scaleSets config.

#include <gtest/gtest.h>
#include <simdjson.h>

#include "actors/capacity/capacity.hpp"
#include "modes/scale_sets/mode.hpp"
#include "adapters/k8s/decode.hpp"
#include "runtime/config.hpp"

namespace headroom::actors::capacity {
namespace {

capacity_inputs inputs(int64_t max, int64_t proactive, int64_t queued, int64_t assigned, int64_t placed, int64_t ready) {
  capacity_inputs in;
  in.max_runners = max;
  in.proactive = proactive;
  in.queued = queued;
  in.assigned_jobs = assigned;
  in.runners_placed = placed;
  in.ready_pairs = ready;
  return in;
}

TEST(capacity_model, desired_pairs_follow_demand_within_room) {
  EXPECT_EQ(desired_pairs(inputs(10, 2, 0, 0, 0, 0)), 2);
  EXPECT_EQ(desired_pairs(inputs(10, 2, 5, 0, 0, 0)), 7);
  EXPECT_EQ(desired_pairs(inputs(10, 2, 5, 6, 6, 0)), 4) << "room = maxRunners − assigned";
  EXPECT_EQ(desired_pairs(inputs(10, 2, 5, 10, 10, 0)), 0);
  EXPECT_EQ(desired_pairs(inputs(10, 2, 5, 12, 10, 0)), 0) << "never negative";
  EXPECT_EQ(desired_pairs(inputs(10, 0, 0, 0, 0, 0)), 0) << "scale to zero";
}

TEST(capacity_model, burst_room_paces_pairs_pending_placement) {
  EXPECT_EQ(burst_room(0, 50), INT64_MAX) << "0: no limit";
  EXPECT_EQ(burst_room(3, 0), 3);
  EXPECT_EQ(burst_room(3, 2), 1);
  EXPECT_EQ(burst_room(3, 3), 0);
  EXPECT_EQ(burst_room(3, 7), 0) << "never negative (pairs made before a restart with a lower limit)";
}

TEST(capacity_model, advertised_counts_jobs_and_free_placed_pairs) {
  EXPECT_EQ(advertised_capacity(inputs(10, 2, 0, 0, 0, 0)), 0) << "nothing placed, nothing running";
  EXPECT_EQ(advertised_capacity(inputs(10, 2, 0, 0, 0, 2)), 2);
  EXPECT_EQ(advertised_capacity(inputs(10, 2, 0, 3, 3, 2)), 5);
  EXPECT_EQ(advertised_capacity(inputs(4, 2, 0, 3, 3, 2)), 4) << "capped by maxRunners";
  // A job just assigned whose runner is not Running yet will take a ready pair: not counted twice.
  EXPECT_EQ(advertised_capacity(inputs(10, 2, 0, 1, 0, 2)), 2);
  EXPECT_EQ(advertised_capacity(inputs(10, 2, 0, 3, 0, 2)), 3);
}

TEST(capacity_model, placeholder_states) {
  EXPECT_EQ(placeholder_state(nullptr), pod_state::absent);
  k8s::pod p;
  p.phase = "Pending";
  EXPECT_EQ(placeholder_state(&p), pod_state::pending);
  p.phase = "Running";
  EXPECT_EQ(placeholder_state(&p), pod_state::pending) << "Running without a node is not placed";
  p.node_name = "n1";
  EXPECT_EQ(placeholder_state(&p), pod_state::running);
  p.conditions.edit().push_back({"DisruptionTarget", "True", "PreemptionByScheduler", ""});
  EXPECT_EQ(placeholder_state(&p), pod_state::gone) << "a preemption victim";
  p.conditions.edit().clear();
  p.meta.deletion_timestamp = "2026-11-22T10:00:00Z";
  EXPECT_EQ(placeholder_state(&p), pod_state::gone);
  p.meta.deletion_timestamp.clear();
  p.phase = "Failed";
  EXPECT_EQ(placeholder_state(&p), pod_state::gone);
}

scale_set_spec spec() {
  modes::scale_sets::scale_set_section c;
  c.name = "linux";
  c.ns = "runners";
  c.runner.node_selector = {{"pool", "ci"}};
  c.runner.tolerations.push_back({"ci", "Equal", "true", "NoSchedule"});
  auto s = modes::scale_sets::make_spec(c, 0);
  return std::get<scale_set_spec>(s);
}

TEST(capacity_model, placeholder_pods_have_the_ladder_and_no_preemption) {
  const auto s = spec();
  const owner_ref owner{"v1", "ConfigMap", "headroom-owner-1", "uid-1"};
  auto decoded = k8s::decode_pod(placeholder_pod(s, "abc", role::runner_placeholder, owner));
  ASSERT_TRUE(std::holds_alternative<k8s::pod>(decoded));
  const auto& p = std::get<k8s::pod>(decoded);
  EXPECT_EQ(p.meta.name, "linux-ph-abc-runner");
  EXPECT_EQ(p.meta.ns, "runners");
  EXPECT_EQ(p.spec->priority_class_name, "placeholder-runner");
  EXPECT_EQ(p.spec->preemption_policy, "Never");
  EXPECT_EQ(p.spec->requests.cpu_milli, 1000);
  EXPECT_EQ(p.spec->requests.memory, 2LL << 30);
  ASSERT_EQ(p.meta.owners.size(), 1u);
  EXPECT_EQ(p.meta.owners[0].uid, "uid-1");
  ASSERT_NE(p.meta.label(keys::slot), nullptr);
  EXPECT_EQ(*p.meta.label(keys::slot), "abc");
  EXPECT_EQ(*p.meta.label(keys::role), "runner-placeholder");
  EXPECT_EQ(*p.meta.label(keys::scale_set), "linux");
  ASSERT_EQ(p.spec->node_selector.size(), 1u);
  ASSERT_EQ(p.spec->tolerations.size(), 1u);
  EXPECT_TRUE(p.spec->required_node_affinity.empty());

  auto w = std::get<k8s::pod>(k8s::decode_pod(placeholder_pod(s, "abc", role::workflow_placeholder, owner)));
  EXPECT_EQ(w.spec->priority_class_name, "placeholder-workflow");
  EXPECT_EQ(w.spec->requests.cpu_milli, 2000);
  EXPECT_EQ(w.spec->requests.memory, 4LL << 30);
}

// #61: runner pods have no controller, so only an integer minAvailable keeps kube-controller-manager
// from warning UnmanagedPods on every sync; maxRunners of them allows no disruption at all.
TEST(capacity_model, the_runner_budget_is_an_integer_min_available_of_max_runners) {
  auto s = spec();
  s.max_runners = 7;
  simdjson::dom::parser p;
  const auto pdb = p.parse(runner_pdb(s, {"v1", "ConfigMap", "headroom-owner-1", "uid-1"}));
  ASSERT_EQ(pdb.error(), simdjson::SUCCESS);
  EXPECT_EQ(pdb["spec"]["minAvailable"].get_int64().value(), 7);
  EXPECT_EQ(pdb["spec"]["maxUnavailable"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(std::string_view(pdb["spec"]["selector"]["matchLabels"]["headroom.dev/role"]), "runner");
  EXPECT_EQ(std::string_view(pdb["metadata"]["name"]), "headroom-owner-1-runners");
}

TEST(capacity_model, runner_pod_takes_its_jit_config_from_a_secret) {
  const auto s = spec();
  const std::string body = runner_pod(s, "linux-runner-1", 77);
  EXPECT_EQ(body.find("jit-secret-value"), std::string::npos);
  auto p = std::get<k8s::pod>(k8s::decode_pod(body));
  EXPECT_EQ(p.spec->priority_class_name, "arc-runner");
  EXPECT_EQ(*p.meta.label(keys::role), "runner");
  EXPECT_EQ(*p.meta.annotation(keys::runner_id), "77");
  EXPECT_EQ(p.meta.annotation(keys::runner_scope), nullptr) << "a scale set's runner pod names no scope";
  // A scheduler runner pod names its runner's GitHub scope, for the stray sweep's busy check.
  auto scoped = std::get<k8s::pod>(k8s::decode_pod(runner_pod(s, "linux-runner-2", 78, "octo-org/app")));
  ASSERT_NE(scoped.meta.annotation(keys::runner_scope), nullptr);
  EXPECT_EQ(*scoped.meta.annotation(keys::runner_scope), "octo-org/app");
  const std::string secret = runner_secret(s, "linux-runner-1", "pod-uid", "jit-secret-value");
  EXPECT_NE(secret.find("\"uid\":\"pod-uid\""), std::string::npos) << "owned by its pod";
}

TEST(capacity_model, slot_ids_are_distinct) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i)
    ids.insert(new_slot_id());
  EXPECT_GT(ids.size(), 995u);
}

}  // namespace
}  // namespace headroom::actors::capacity
