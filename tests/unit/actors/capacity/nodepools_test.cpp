// Extended resources (GPUs) in the pair's pods, and which Karpenter NodePools can still make room
// for a pair (actors/capacity/nodepools.cpp, adapters/k8s/nodepool.cpp).

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "actors/capacity/capacity.hpp"
#include "modes/scale_sets/mode.hpp"
#include "adapters/k8s/decode.hpp"

namespace headroom::actors::capacity {
namespace {

scale_set_spec gpu_spec() {
  modes::scale_sets::scale_set_section c;
  c.name = "gpu";
  c.ns = "runners";
  c.runner.cpu = "500m";
  c.runner.memory = "1Gi";
  c.runner.node_selector = {{"pool", "gpu"}};
  c.runner.tolerations.push_back({"nvidia.com/gpu", "Exists", "", "NoSchedule"});
  c.capacity_aware.workflow_cpu = "2";
  c.capacity_aware.workflow_memory = "8Gi";
  c.capacity_aware.workflow_extended = {{"nvidia.com/gpu", "1"}};
  return std::get<scale_set_spec>(modes::scale_sets::make_spec(c, 0));
}

// requests[name] and limits[name] of a pod body's first container, "" when absent.
std::pair<std::string, std::string> request_and_limit(const std::string& body, const std::string& name) {
  simdjson::dom::parser p;
  auto res = p.parse(body)["spec"]["containers"].at(0)["resources"];
  std::string_view r, l;
  if (res["requests"][name].get(r) != simdjson::SUCCESS)
    r = {};
  if (res["limits"][name].get(l) != simdjson::SUCCESS)
    l = {};
  return {std::string{r}, std::string{l}};
}

// #58 (seed 000): both placeholders end at once when preempted (terminationGracePeriodSeconds 0,
// mandatory: a preempting pod waits out its victim's grace), never preempt anything themselves,
// run the configured image, and end by themselves: their command sleeps past the renewal, never
// past the kubelet's activeDeadlineSeconds, so a placeholder headroom lost track of still goes.
TEST(capacity_placeholders, both_end_at_once_when_preempted_and_by_themselves_when_forgotten) {
  const auto s = gpu_spec();
  ASSERT_FALSE(s.placeholder_image.empty());
  const owner_ref owner{"v1", "ConfigMap", "o", "u"};
  for (const auto r : {role::runner_placeholder, role::workflow_placeholder}) {
    const auto body = placeholder_pod(s, "a", r, owner);
    simdjson::dom::parser p;
    auto spec = p.parse(body)["spec"];
    int64_t grace = -1, deadline = 0;
    std::string_view preemption, restart, image;
    ASSERT_EQ(spec["terminationGracePeriodSeconds"].get(grace), simdjson::SUCCESS) << body;
    EXPECT_EQ(grace, 0);
    ASSERT_EQ(spec["preemptionPolicy"].get(preemption), simdjson::SUCCESS);
    EXPECT_EQ(preemption, "Never");
    ASSERT_EQ(spec["restartPolicy"].get(restart), simdjson::SUCCESS);
    EXPECT_EQ(restart, "Never") << "an ended placeholder stays ended";
    auto c = spec["containers"].at(0);
    ASSERT_EQ(c["image"].get(image), simdjson::SUCCESS);
    EXPECT_EQ(image, s.placeholder_image);
    std::vector<std::string> command;
    for (auto a : c["command"].get_array())
      command.emplace_back(std::string_view(a));
    ASSERT_EQ(command.size(), 3u) << body;
    EXPECT_EQ(command[0], "sh");
    EXPECT_EQ(command[1], "-c");
    EXPECT_TRUE(command[2].starts_with("trap 'exit 0' TERM; sleep ")) << "it ends at once on SIGTERM: " << command[2];
    EXPECT_TRUE(command[2].ends_with(" & wait")) << command[2];
    ASSERT_EQ(spec["activeDeadlineSeconds"].get(deadline), simdjson::SUCCESS) << body;
    const int64_t sleeps = std::stoll(command[2].substr(command[2].find("sleep ") + 6));
    EXPECT_EQ(sleeps, deadline) << "it ends by itself when the kubelet would end it";
    EXPECT_GT(sleeps * 1000, s.placeholder_ttl.count()) << "it outlives its renewal";
  }
}

TEST(capacity_gpu, the_workflow_placeholder_holds_the_gpu_request_equal_to_limit) {
  const auto s = gpu_spec();
  const owner_ref owner{"v1", "ConfigMap", "o", "u"};
  EXPECT_EQ(request_and_limit(placeholder_pod(s, "a", role::workflow_placeholder, owner), "nvidia.com/gpu"),
            (std::pair<std::string, std::string>{"1", "1"}));
  EXPECT_EQ(request_and_limit(placeholder_pod(s, "a", role::runner_placeholder, owner), "nvidia.com/gpu").first, "")
      << "the runner takes no GPU here, so neither does its placeholder";
  auto w = std::get<k8s::pod>(k8s::decode_pod(placeholder_pod(s, "a", role::workflow_placeholder, owner)));
  EXPECT_EQ(w.spec->requests.get("nvidia.com/gpu"), 1);
  EXPECT_EQ(s.workflow_requests.get("nvidia.com/gpu"), 1) << "counted by the same arithmetic as cpu and memory";
  EXPECT_EQ(pair_requests(s).get("nvidia.com/gpu"), 1);
  EXPECT_EQ(pair_requests(s).cpu_milli, 2500);
  EXPECT_EQ(pair_requests(s).pods, 2);
}

TEST(capacity_gpu, a_runner_template_gpu_reaches_runner_pods_and_runner_placeholders) {
  modes::scale_sets::scale_set_section c;
  c.name = "gpu";
  c.runner.extended = {{"nvidia.com/gpu", "2"}};
  const auto s = std::get<scale_set_spec>(modes::scale_sets::make_spec(c, 0));
  EXPECT_EQ(request_and_limit(runner_pod(s, "gpu-runner-1", 1), "nvidia.com/gpu"), (std::pair<std::string, std::string>{"2", "2"}));
  EXPECT_EQ(request_and_limit(placeholder_pod(s, "a", role::runner_placeholder, {}), "nvidia.com/gpu").second, "2");
  EXPECT_EQ(pair_requests(s).get("nvidia.com/gpu"), 2);
}

constexpr const char* gpu_pool = R"({"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"gpu"},
  "spec":{"limits":{"cpu":"32","nvidia.com/gpu":2},
    "template":{"metadata":{"labels":{"pool":"gpu"}},
      "spec":{"requirements":[{"key":"node.kubernetes.io/instance-type","operator":"In","values":["g-8x-amd64-linux"]},
                              {"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]}],
              "taints":[{"key":"nvidia.com/gpu","value":"true","effect":"NoSchedule"}]}}},
  "status":{"resources":{"cpu":"8","memory":"32Gi","nvidia.com/gpu":"1","pods":"58"}}})";

k8s::nodepool decode(const std::string& json) {
  auto d = k8s::decode_nodepool(json);
  EXPECT_TRUE(std::holds_alternative<k8s::nodepool>(d)) << std::get<k8s::decode_error>(d).message;
  return std::get<k8s::nodepool>(d);
}

TEST(capacity_nodepools, a_pool_is_decoded_with_its_limits_usage_labels_requirements_and_taints) {
  const auto p = decode(gpu_pool);
  EXPECT_EQ(p.name, "gpu");
  ASSERT_TRUE(p.limits);
  EXPECT_EQ(*p.limits, (k8s::resource_amounts{{"cpu", 32000}, {"nvidia.com/gpu", 2}}));
  EXPECT_EQ(p.used.size(), 4u);
  EXPECT_EQ(p.requirements.size(), 2u);
  ASSERT_EQ(p.taints.size(), 1u);
  EXPECT_EQ(p.taints[0].effect, "NoSchedule");
  EXPECT_FALSE(decode(R"({"metadata":{"name":"open"},"spec":{"template":{}}})").limits) << "no limits: unlimited";
}

TEST(capacity_nodepools, a_malformed_pool_is_an_error_naming_the_field) {
  auto msg = [](const char* json) {
    auto d = k8s::decode_nodepool(json);
    return std::holds_alternative<k8s::decode_error>(d) ? std::get<k8s::decode_error>(d).message : std::string{};
  };
  EXPECT_NE(msg(R"({"metadata":{"name":"x"}})").find("NodePool x: spec"), std::string::npos);
  EXPECT_NE(msg(R"({"metadata":{"name":"x"},"spec":{"limits":{"cpu":"lots"},"template":{}}})").find("spec.limits[cpu]"), std::string::npos);
  EXPECT_NE(msg(R"({"metadata":{"name":"x"},"spec":{"template":{"spec":{"requirements":[{"key":"a"}]}}}})")
                .find("requirements[0]"),
            std::string::npos);
  EXPECT_NE(msg("{not json").find("not JSON"), std::string::npos);
}

TEST(capacity_nodepools, a_pool_matches_when_its_nodes_satisfy_the_selector_and_its_taints_are_tolerated) {
  const auto s = gpu_spec();
  auto p = decode(gpu_pool);
  EXPECT_TRUE(nodepool_matches(p, s));
  auto untolerated = s;
  untolerated.tolerations.clear();
  EXPECT_FALSE(nodepool_matches(p, untolerated)) << "its nodes are tainted for GPUs only";
  auto other = p;
  other.labels = {{"pool", "cpu"}};
  EXPECT_FALSE(nodepool_matches(other, s)) << "its nodes carry pool=cpu";
  auto unlabelled = p;
  unlabelled.labels.clear();
  EXPECT_FALSE(nodepool_matches(unlabelled, s)) << "Karpenter cannot put a label the pool never names";
  auto by_name = s;
  by_name.node_selector = {{"karpenter.sh/nodepool", "gpu"}, {"topology.kubernetes.io/zone", "test-zone-a"}};
  EXPECT_TRUE(nodepool_matches(p, by_name)) << "its own name, and a well-known label an instance type fills";
  by_name.node_selector = {{"node.kubernetes.io/instance-type", "m-4x-amd64-linux"}};
  EXPECT_FALSE(nodepool_matches(p, by_name)) << "a requirement that excludes the value";
  by_name.node_selector = {{"karpenter.sh/nodepool", "default"}};
  EXPECT_FALSE(nodepool_matches(p, by_name));
}

TEST(capacity_nodepools, room_is_usage_plus_one_pair_within_every_limit) {
  const auto need = pair_requests(gpu_spec());  // 2.5 CPU, 9 GiB, 1 GPU, 2 pods
  auto p = decode(gpu_pool);                    // 8 of 32 CPU, 1 of 2 GPUs used
  EXPECT_TRUE(nodepool_has_room(p, need));
  p.used = {{"cpu", 8000}, {"nvidia.com/gpu", 2}};
  EXPECT_FALSE(nodepool_has_room(p, need)) << "every GPU the pool may have is on a node already";
  p.used = {{"cpu", 30000}, {"nvidia.com/gpu", 0}};
  EXPECT_FALSE(nodepool_has_room(p, need)) << "1.5 CPU left, a pair needs 2.5";
  p.used = {{"cpu", 29500}};
  EXPECT_TRUE(nodepool_has_room(p, need)) << "exactly a pair left";
  p.limits = k8s::resource_amounts{{"cpu", 1000}};
  p.used = {{"cpu", 2000}};
  auto cpu_only = need;
  EXPECT_FALSE(nodepool_has_room(p, cpu_only)) << "a pool already over its limit makes nothing";
  p.limits.reset();
  EXPECT_TRUE(nodepool_has_room(p, need)) << "no limits";
  nodepool_room room;
  EXPECT_FALSE(room.limited()) << "no matching pool (no Karpenter, static nodes): not limited";
  room.matching = 2;
  room.with_room = 0;
  EXPECT_TRUE(room.limited());
  room.with_room = 1;
  EXPECT_FALSE(room.limited());
}

}  // namespace
}  // namespace headroom::actors::capacity
