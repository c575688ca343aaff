// Runner pods from a pool's pod template: headroom's parts added, the user's kept.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <string>

#include "actors/runners/pods.hpp"
#include "adapters/k8s/decode.hpp"

namespace headroom::actors::runners {
namespace {

const std::string dind = R"({"metadata":{"labels":{"team":"ci"},"annotations":{"note":"x"}},)"
                         R"("spec":{"runtimeClassName":"kata","nodeSelector":{"pool":"docker"},)"
                         R"("containers":[{"name":"runner","image":"r:1","env":[{"name":"DOCKER_HOST","value":"tcp://localhost:2375"},)"
                         R"({"name":"RUNNER_JITCONFIG","value":"stale"}],"resources":{"requests":{"cpu":2,"ephemeral-storage":"20Gi"}}},)"
                         R"({"name":"dind","image":"docker:dind","securityContext":{"privileged":true}}],)"
                         R"("volumes":[{"name":"work","emptyDir":{}}]}})";

runner_spec pool_spec() {
  runner_spec s;
  s.name = "headroom-runner";
  s.ns = "ci";
  s.slot_resource = "headroom.dev/runner";
  s.active_deadline_seconds = 600;
  return s;
}

TEST(pod_template, a_checked_template_gives_its_node_selector) {
  pod_template_facts facts;
  EXPECT_EQ(check_pod_template(dind, &facts), std::nullopt);
  EXPECT_EQ(facts.node_selector, (k8s::string_pairs{{"pool", "docker"}}));
  EXPECT_EQ(check_pod_template("[1]"), "expected a pod template: a map with metadata and spec");
  EXPECT_EQ(check_pod_template(R"({"spec":{"containers":[{"name":"runner","image":"a"},{"name":"runner","image":"b"}]}})"),
            "spec.containers: expected exactly one container named runner (it gets the JIT config), found 2");
}

TEST(pod_template, the_runner_pod_keeps_the_template_and_adds_headrooms_parts) {
  simdjson::dom::parser p;
  const auto text = runner_pod_from_template(dind, pool_spec(), "docker", "headroom-runner-0a1b", 77, "orgs/acme");
  auto pod = p.parse(text);
  ASSERT_EQ(pod.error(), simdjson::SUCCESS) << text;
  EXPECT_EQ(std::string_view(pod["kind"]), "Pod");
  EXPECT_EQ(std::string_view(pod["metadata"]["name"]), "headroom-runner-0a1b");
  EXPECT_EQ(std::string_view(pod["metadata"]["namespace"]), "ci");
  EXPECT_EQ(std::string_view(pod["metadata"]["labels"]["team"]), "ci") << "the template's labels stay";
  EXPECT_EQ(std::string_view(pod["metadata"]["labels"]["headroom.dev/pool"]), "docker");
  EXPECT_EQ(std::string_view(pod["metadata"]["labels"]["headroom.dev/scale-set"]), "headroom-runner");
  EXPECT_EQ(std::string_view(pod["metadata"]["labels"]["headroom.dev/role"]), "runner");
  EXPECT_EQ(std::string_view(pod["metadata"]["annotations"]["note"]), "x");
  EXPECT_EQ(std::string_view(pod["metadata"]["annotations"]["headroom.dev/runner-id"]), "77");
  EXPECT_EQ(std::string_view(pod["metadata"]["annotations"]["headroom.dev/runner-scope"]), "orgs/acme");
  auto spec = pod["spec"];
  EXPECT_EQ(std::string_view(spec["restartPolicy"]), "Never");
  EXPECT_EQ(int64_t(spec["activeDeadlineSeconds"]), 600);
  EXPECT_EQ(std::string_view(spec["runtimeClassName"]), "kata");
  EXPECT_EQ(std::string_view(spec["volumes"].at(0)["name"]), "work");
  auto runner = spec["containers"].at(0);
  auto env = runner["env"].get_array();
  ASSERT_EQ(env.size(), 3u) << "the two JIT variables from the Secret, the template's DOCKER_HOST; its stale RUNNER_JITCONFIG dropped";
  EXPECT_EQ(std::string_view(env.at(0)["name"]), "ACTIONS_RUNNER_INPUT_JITCONFIG");
  EXPECT_EQ(std::string_view(env.at(0)["valueFrom"]["secretKeyRef"]["name"]), "headroom-runner-0a1b");
  EXPECT_EQ(std::string_view(env.at(0)["valueFrom"]["secretKeyRef"]["key"]), "jitToken");
  EXPECT_EQ(std::string_view(env.at(1)["name"]), "RUNNER_JITCONFIG");
  EXPECT_EQ(std::string_view(env.at(2)["name"]), "DOCKER_HOST");
  EXPECT_EQ(int64_t(runner["resources"]["requests"]["cpu"]), 2);
  EXPECT_EQ(std::string_view(runner["resources"]["requests"]["ephemeral-storage"]), "20Gi");
  EXPECT_EQ(std::string_view(runner["resources"]["requests"]["headroom.dev/runner"]), "1");
  EXPECT_EQ(std::string_view(runner["resources"]["limits"]["headroom.dev/runner"]), "1");
  auto sidecar = spec["containers"].at(1);
  EXPECT_TRUE(bool(sidecar["securityContext"]["privileged"]));
  EXPECT_EQ(sidecar["env"].error(), simdjson::NO_SUCH_FIELD) << "only the runner container gets the JIT config";
}

TEST(pod_template, a_template_deadline_wins_and_no_slot_resource_adds_none) {
  auto s = pool_spec();
  s.slot_resource.clear();
  const std::string t = R"({"spec":{"activeDeadlineSeconds":5,"containers":[{"name":"runner","image":"r"}]}})";
  simdjson::dom::parser p;
  auto pod = p.parse(runner_pod_from_template(t, s, "a", "n", 1));
  EXPECT_EQ(int64_t(pod["spec"]["activeDeadlineSeconds"]), 5);
  EXPECT_EQ(pod["spec"]["containers"].at(0)["resources"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(pod["metadata"]["annotations"]["headroom.dev/runner-scope"].error(), simdjson::NO_SUCH_FIELD);
}

TEST(pod_template, the_plain_runner_pod_carries_the_variable_the_runner_reads) {
  auto s = pool_spec();
  s.runner_image = "r";
  const auto text = runner_pod(s, "n1", 3);
  EXPECT_NE(text.find("\"ACTIONS_RUNNER_INPUT_JITCONFIG\""), std::string::npos) << text;
}

// #54: a scale set's runner from its PodTemplateSpec: everything the user wrote passes through
// (sidecars, volumes, security contexts, env); headroom adds its parts: names and labels (ARC's
// too), the ladder's runner class, the JIT config, and the container mode's env (the user's own
// entries of the same name win) with the hook template mounted.
TEST(pod_template, a_scale_sets_runner_pod_from_its_template_keeps_the_users_fields_and_adds_headrooms) {
  const std::string t = R"({"metadata":{"labels":{"team":"ci"}},"spec":{"securityContext":{"fsGroup":123},)"
                        R"("volumes":[{"name":"cache","emptyDir":{}}],"containers":[{"name":"runner","image":"runner:2",)"
                        R"("env":[{"name":"ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER","value":"false"},{"name":"TZ","value":"UTC"}],)"
                        R"("volumeMounts":[{"name":"cache","mountPath":"/cache"}],)"
                        R"("resources":{"requests":{"cpu":"1","memory":"2Gi"}}},{"name":"sidecar","image":"s:1"}]}})";
  const auto r = read_runner_template(t);
  ASSERT_TRUE(r.facts) << r.error;
  runner_spec s;
  s.name = "linux";
  s.ns = "arc";
  s.runner_template = t;
  s.runner_image = r.facts->image;
  s.arc_labels = true;
  s.mode = runner_spec::container_mode::kubernetes_novolume;
  s.hook_template_configmap = "linux-hook-template";
  const auto text = runner_pod(s, "linux-r-1", 9);
  simdjson::dom::parser p;
  auto pod = p.parse(text);
  ASSERT_EQ(pod.error(), simdjson::SUCCESS) << text;
  auto labels = pod["metadata"]["labels"];
  EXPECT_EQ(std::string_view(labels["team"]), "ci");
  EXPECT_EQ(std::string_view(labels["headroom.dev/scale-set"]), "linux");
  EXPECT_EQ(std::string_view(labels["actions.github.com/scale-set-name"]), "linux");
  EXPECT_EQ(std::string_view(labels["actions.github.com/scale-set-namespace"]), "arc");
  EXPECT_EQ(labels["headroom.dev/pool"].error(), simdjson::NO_SUCH_FIELD) << "no pool: a scale set's runner";
  auto spec = pod["spec"];
  EXPECT_EQ(std::string_view(spec["priorityClassName"]), "arc-runner");
  EXPECT_EQ(int64_t(spec["securityContext"]["fsGroup"]), 123);
  EXPECT_EQ(std::string_view(spec["containers"].at(1)["name"]), "sidecar");
  auto volumes = spec["volumes"].get_array();
  ASSERT_EQ(volumes.size(), 2u);
  EXPECT_EQ(std::string_view(volumes.at(0)["name"]), "cache");
  EXPECT_EQ(std::string_view(volumes.at(1)["configMap"]["name"]), "linux-hook-template");
  auto runner = spec["containers"].at(0);
  auto mounts = runner["volumeMounts"].get_array();
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(std::string_view(mounts.at(1)["mountPath"]), hook_template_dir);
  std::map<std::string, std::string> env;
  for (auto e : runner["env"].get_array()) {
    std::string_view v;
    env[std::string{std::string_view(e["name"])}] = e["value"].get(v) == simdjson::SUCCESS ? std::string{v} : "(from)";
  }
  EXPECT_EQ(env["ACTIONS_RUNNER_INPUT_JITCONFIG"], "(from)");
  EXPECT_EQ(env["ACTIONS_RUNNER_POD_NAME"], "(from)");
  EXPECT_EQ(env["ACTIONS_RUNNER_CONTAINER_HOOKS"], novolume_hook);
  EXPECT_EQ(env["ACTIONS_RUNNER_IMAGE"], "runner:2");
  EXPECT_EQ(env["ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"], std::string{hook_template_dir} + "/" + hook_template_key);
  EXPECT_EQ(env["ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER"], "false") << "the user's own entry stays";
  EXPECT_EQ(env["TZ"], "UTC");
  size_t require = 0;
  for (auto e : runner["env"].get_array())
    require += std::string_view(e["name"]) == "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER";
  EXPECT_EQ(require, 1u) << "never twice";
}

// kubernetes mode, as ARC's chart: a `work` volume and mount the template has already are the
// user's (an NFS share, a hostPath) and stay, never doubled; without them headroom adds its own.
TEST(pod_template, kubernetes_mode_keeps_the_users_own_work_volume) {
  const std::string t = R"({"spec":{"volumes":[{"name":"work","nfs":{"server":"nfs","path":"/ci"}}],"containers":[{"name":"runner",)"
                        R"("image":"r:1","volumeMounts":[{"name":"work","mountPath":"/w"}],"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}})";
  ASSERT_TRUE(read_runner_template(t).facts);
  runner_spec s;
  s.name = "linux";
  s.ns = "ci";
  s.runner_template = t;
  s.mode = runner_spec::container_mode::kubernetes;
  s.work_volume_claim = R"({"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}})";
  simdjson::dom::parser p;
  const auto text = runner_pod(s, "linux-r-1", 9);
  auto spec = p.parse(text)["spec"];
  ASSERT_EQ(spec.error(), simdjson::SUCCESS) << text;
  ASSERT_EQ(spec["volumes"].get_array().size(), 1u) << text;
  EXPECT_EQ(std::string_view(spec["volumes"].at(0)["nfs"]["server"]), "nfs");
  ASSERT_EQ(spec["containers"].at(0)["volumeMounts"].get_array().size(), 1u) << text;
  EXPECT_EQ(std::string_view(spec["containers"].at(0)["volumeMounts"].at(0)["mountPath"]), "/w");

  s.runner_template = R"({"spec":{"containers":[{"name":"runner","image":"r:1","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}})";
  simdjson::dom::parser q;
  const auto added = runner_pod(s, "linux-r-2", 10);
  auto spec2 = q.parse(added)["spec"];
  ASSERT_EQ(spec2.error(), simdjson::SUCCESS) << added;
  EXPECT_EQ(std::string_view(spec2["volumes"].at(0)["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"]), "1Gi");
  EXPECT_EQ(std::string_view(spec2["containers"].at(0)["volumeMounts"].at(0)["mountPath"]), work_mount_path);
}

// The runner template's placement reaches its placeholders and the workflow pod's hook template:
// nodeSelector, tolerations (with their seconds) and the required node affinity; not its pod
// affinities or preferences.
TEST(pod_template, the_runners_required_node_affinity_and_tolerations_are_mirrored) {
  const auto r = read_runner_template(
      R"({"spec":{"tolerations":[{"key":"ci","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}],)"
      R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":)"
      R"([{"key":"zone","operator":"In","values":["a"]}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[]},)"
      R"("podAntiAffinity":{}},"containers":[{"name":"runner","image":"r","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}})");
  ASSERT_TRUE(r.facts) << r.error;
  runner_spec s;
  s.name = "linux";
  s.tolerations = r.facts->tolerations;
  s.required_node_affinity = r.facts->required_node_affinity;
  const auto text = hook_template(s, "arc-workflow", "2", "4Gi", {});
  simdjson::dom::parser p;
  auto spec = p.parse(text)["spec"];
  ASSERT_EQ(spec.error(), simdjson::SUCCESS) << text;
  EXPECT_EQ(int64_t(spec["tolerations"].at(0)["tolerationSeconds"]), 30);
  EXPECT_EQ(std::string_view(spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                                 .at(0)["matchExpressions"].at(0)["key"]),
            "zone");
  EXPECT_EQ(spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(spec["affinity"]["podAntiAffinity"].error(), simdjson::NO_SUCH_FIELD);
}


// kubernetes-novolume: the hook template gates the workflow pod (headroom pins it to its held room's
// node, then ungates it); kubernetes mode's hook names the runner's node, which a gated pod may not.
TEST(pod_template, the_novolume_hook_template_gates_the_workflow_pod) {
  runner_spec s;
  s.name = "linux";
  s.mode = runner_spec::container_mode::kubernetes_novolume;
  simdjson::dom::parser p;
  auto text = hook_template(s, "arc-workflow", "100m", "", {});
  EXPECT_EQ(p.parse(text)["spec"]["schedulingGates"].error(), simdjson::NO_SUCH_FIELD) << "capacity awareness off: no room is held\n" << text;
  s.held_rooms = true;
  text = hook_template(s, "arc-workflow", "100m", "", {});
  std::string_view gate;
  ASSERT_EQ(p.parse(text)["spec"]["schedulingGates"].at(0)["name"].get(gate), simdjson::SUCCESS) << text;
  EXPECT_EQ(gate, keys::held_room_gate);
  s.mode = runner_spec::container_mode::kubernetes;
  text = hook_template(s, "arc-workflow", "100m", "", {});
  EXPECT_EQ(p.parse(text)["spec"]["schedulingGates"].error(), simdjson::NO_SUCH_FIELD) << text;
}

// The ungating patch: headroom's gate removed (another controller's kept), the pod pinned to the
// room's node by a field requirement added to each of its own required terms (a gated pod's node
// affinity may only be narrowed), its resourceVersion carried.
TEST(pod_template, the_held_room_patch_pins_to_the_node_and_removes_only_headrooms_gate) {
  auto pod = [](const std::string& spec) {
    auto d = k8s::decode_pod(R"({"metadata":{"name":"w","namespace":"ci","resourceVersion":"42"},"spec":)" + spec + "}");
    EXPECT_TRUE(std::holds_alternative<k8s::pod>(d));
    return std::get<k8s::pod>(d);
  };
  const auto alone = pod(R"({"schedulingGates":[{"name":"headroom.dev/held-room"}],"containers":[{"name":"job","image":"i"}]})");
  EXPECT_EQ(held_room_patch(alone, "node-1"),
            R"({"metadata":{"resourceVersion":"42"},"spec":{"schedulingGates":null,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
            R"({"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-1"]}]}]}}}}})");
  EXPECT_EQ(held_room_patch(alone, ""), R"({"metadata":{"resourceVersion":"42"},"spec":{"schedulingGates":null}})") << "no room: only ungated";
  const auto placed = pod(R"({"schedulingGates":[{"name":"example.com/quota"},{"name":"headroom.dev/held-room"}],)"
                          R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)"
                          R"({"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},{"matchExpressions":[{"key":"pool","operator":"Exists"}]}]}}},)"
                          R"("containers":[{"name":"job","image":"i"}]})");
  const std::string here = R"("matchFields":[{"key":"metadata.name","operator":"In","values":["node-2"]}])";
  EXPECT_EQ(held_room_patch(placed, "node-2"),
            R"({"metadata":{"resourceVersion":"42"},"spec":{"schedulingGates":[{"name":"example.com/quota"}],"affinity":{"nodeAffinity":)"
            R"({"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}],)" +
                here + R"(},{"matchExpressions":[{"key":"pool","operator":"Exists"}],)" + here + "}]}}}}}");
}

}  // namespace
}  // namespace headroom::actors::runners
