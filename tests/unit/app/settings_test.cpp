// The modes' configuration sections (modes/<mode>/settings.cpp, read through app/settings.cpp) and
// the spec the scale sets' wiring builds from them (modes/scale_sets/mode.cpp): defaults, and
// errors that name the key.
#include <gtest/gtest.h>

#include "app/settings.hpp"
#include "modes/gates/mode.hpp"
#include "modes/reactive/mode.hpp"
#include "modes/scale_sets/mode.hpp"
#include "modes/scheduler/mode.hpp"

namespace headroom::app {

using runtime::millis;
namespace {

using namespace modes::scale_sets;
using namespace modes::reactive;
using namespace modes::gates;
using namespace modes::scheduler;

TEST(capacity_model, spec_rejects_bad_quantities_by_key) {
  scale_set_section c;
  c.name = "linux";
  c.capacity_aware.workflow_cpu = "two";
  auto s = make_spec(c, 3);
  ASSERT_TRUE(std::holds_alternative<std::string>(s));
  EXPECT_NE(std::get<std::string>(s).find("scaleSets[3].capacityAware.workflowResources.cpu"), std::string::npos)
      << std::get<std::string>(s);
}

TEST(capacity_config, scale_sets_parse_with_defaults) {
  auto r = parse_config_yaml(R"(
github: {configUrl: "https://github.com/org"}
scaleSets:
  - name: linux
    namespace: runners
    maxRunners: 7
    labels: [gpu]
    capacityAware: {proactiveCapacity: 3, maxBurstCapacity: 2, recalculateInterval: 10s, workflowResources: {cpu: "4"}}
)");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& cfg = std::get<parsed_config>(r).modes.get<scale_sets_mode>().config;
  ASSERT_EQ(cfg.sets.size(), 1u);
  const auto& s = cfg.sets[0];
  EXPECT_EQ(s.max_runners, 7u);
  EXPECT_EQ(s.capacity_aware.proactive_capacity, 3u);
  EXPECT_EQ(s.capacity_aware.max_burst_capacity, 2u);
  EXPECT_EQ(std::get<scale_set_spec>(make_spec(s, 0)).max_burst_capacity, 2);
  EXPECT_EQ(s.capacity_aware.workflow_cpu, "4");
  EXPECT_EQ(s.capacity_aware.workflow_memory, "4Gi");
  EXPECT_TRUE(s.capacity_aware.enabled);
  EXPECT_EQ(s.mode, "standalone");
  EXPECT_EQ(s.capacity_aware.placeholder_ttl, std::chrono::milliseconds{900'000}) << "placeholderTTL defaults to 15m";
}

TEST(capacity_config, proactive_capacity_defaults_to_zero_and_the_ttl_is_checked) {
  auto r = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a, capacityAware: {placeholderTTL: \"0\"}}]");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& s = std::get<parsed_config>(r).modes.get<scale_sets_mode>().config.sets.at(0);
  EXPECT_EQ(s.capacity_aware.proactive_capacity, 0u) << "the seed's default: no warm pairs without demand";
  EXPECT_EQ(s.capacity_aware.placeholder_ttl.count(), 0) << "0 turns renewal off";
  auto bad = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a, capacityAware: {placeholderTTL: 30s}}]");
  ASSERT_TRUE(std::holds_alternative<runtime::config_error>(bad));
  EXPECT_NE(std::get<runtime::config_error>(bad).message().find("scaleSets[0].capacityAware.placeholderTTL"), std::string::npos)
      << std::get<runtime::config_error>(bad).message();
}

TEST(capacity_config, extended_resources_are_read_and_checked) {
  auto r = parse_config_yaml(R"(
github: {configUrl: x}
scaleSets:
  - name: gpu
    runner: {resources: {cpu: "1", memory: 2Gi, example.com/fpga: "2"}}
    capacityAware: {workflowResources: {cpu: "4", nvidia.com/gpu: 1}}
)");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& s = std::get<parsed_config>(r).modes.get<scale_sets_mode>().config.sets.at(0);
  EXPECT_EQ(s.runner.extended, (std::vector<std::pair<std::string, std::string>>{{"example.com/fpga", "2"}}));
  EXPECT_EQ(s.capacity_aware.workflow_extended, (std::vector<std::pair<std::string, std::string>>{{"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(s.capacity_aware.workflow_cpu, "4");
  auto error_of = [](const std::string& resources) {
    auto r = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a, capacityAware: {workflowResources: " + resources + "}}]");
    return std::holds_alternative<runtime::config_error>(r) ? std::get<runtime::config_error>(r).message() : std::string{};
  };
  EXPECT_NE(error_of("{nvidia.com/gpu: 0.5}").find("scaleSets[0].capacityAware.workflowResources.nvidia.com/gpu"), std::string::npos);
  EXPECT_NE(error_of("{nvidia.com/gpu: 0.5}").find("whole number"), std::string::npos);
  EXPECT_NE(error_of("{gpu: 1}").find("workflowResources.gpu"), std::string::npos) << "not a qualified name";
  EXPECT_NE(error_of("{kubernetes.io/gpu: 1}").find("outside kubernetes.io"), std::string::npos);
  EXPECT_NE(error_of("{nvidia.com/gpu: lots}").find("nvidia.com/gpu"), std::string::npos);
  EXPECT_NE(error_of("[cpu]").find("expected a mapping"), std::string::npos);
}

// #54: a scale set's runner runs container jobs through the k8s-novolume hook unless told `none`;
// the scheduler's runners default to none; kubernetes needs its work volume's claim. A dind template
// with its own `dind` container, a claim the API server would refuse, and a hook template that is
// not one, are refused naming the key.
TEST(capacity_config, the_container_mode_and_the_users_hook_template_are_read_and_checked) {
  auto r = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a}, {name: b, runner: {containerMode: none, "
                             "hookTemplate: {spec: {containers: [{name: $job, env: [{name: X, value: \"1\"}]}]}}}}]");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& sets = std::get<parsed_config>(r).modes.get<scale_sets_mode>().config.sets;
  EXPECT_EQ(sets.at(0).runner.container_mode, "kubernetes-novolume");
  EXPECT_EQ(sets.at(1).runner.container_mode, "none");
  EXPECT_EQ(sets.at(1).runner.hook_template, R"({"spec":{"containers":[{"name":"$job","env":[{"name":"X","value":"1"}]}]}})");
  auto error_of = [](const std::string& runner) {
    auto r = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a, runner: " + runner + "}]");
    return std::holds_alternative<runtime::config_error>(r) ? std::get<runtime::config_error>(r).message() : std::string{};
  };
  EXPECT_EQ(error_of("{containerMode: dind}"), "");
  EXPECT_NE(error_of("{containerMode: dind, template: {spec: {containers: [{name: runner, image: r, resources: {requests: "
                     "{cpu: 1, memory: 1Gi}}}, {name: dind, image: docker:dind}]}}}")
                .find("scaleSets[0].runner.template.spec.containers[1]: containerMode dind makes this container"),
            std::string::npos);
  EXPECT_NE(error_of("{containerMode: kubernetes}").find("scaleSets[0].runner.workVolumeClaim: required with containerMode kubernetes"),
            std::string::npos);
  EXPECT_NE(error_of("{containerMode: docker}").find("expected kubernetes-novolume, kubernetes, dind or none"), std::string::npos);
  // kubernetes: the work volume's claim, checked for what the API server would refuse in every pod.
  EXPECT_NE(error_of("{workVolumeClaim: {accessModes: [ReadWriteOnce]}}").find("only with containerMode kubernetes"), std::string::npos);
  EXPECT_NE(error_of("{containerMode: kubernetes, workVolumeClaim: {resources: {requests: {storage: 1Gi}}}}")
                .find("scaleSets[0].runner.workVolumeClaim.accessModes: required"),
            std::string::npos);
  EXPECT_NE(error_of("{containerMode: kubernetes, workVolumeClaim: {accessModes: [ReadWriteOnce], resources: {}}}")
                .find("scaleSets[0].runner.workVolumeClaim.resources.requests.storage: required"),
            std::string::npos);
  EXPECT_NE(error_of("{containerMode: kubernetes, workVolumeClaim: [x]}").find("expected a claim spec"), std::string::npos);
  auto k = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a, runner: {containerMode: kubernetes, workVolumeClaim: "
                             "{accessModes: [ReadWriteOnce], storageClassName: fast, resources: {requests: {storage: 1Gi}}}}}]");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(k)) << std::get<runtime::config_error>(k).message();
  const auto& kube = std::get<parsed_config>(k).modes.get<scale_sets_mode>().config.sets.at(0).runner;
  EXPECT_EQ(kube.container_mode, "kubernetes");
  EXPECT_EQ(kube.work_volume_claim, R"({"accessModes":["ReadWriteOnce"],"storageClassName":"fast","resources":{"requests":{"storage":"1Gi"}}})");
  EXPECT_NE(error_of("{hookTemplate: {kind: Pod}}").find("scaleSets[0].runner.hookTemplate: kind"), std::string::npos);
  EXPECT_NE(error_of("{hookTemplate: [x]}").find("expected a pod template"), std::string::npos);
}

// #54: a scale set's runner as a PodTemplateSpec, as ARC's `template:`: read and checked, its
// runner container's requests and its placement become what pairs are counted and placed by; the
// short form beside it, and a template headroom could not run, are refused naming the path.
TEST(capacity_config, a_runner_pod_template_is_read_checked_and_gives_the_runner_its_room_and_placement) {
  auto r = parse_config_yaml(R"(
github: {configUrl: x}
scaleSets:
  - name: a
    runner:
      template:
        metadata: {labels: {team: ci}}
        spec:
          nodeSelector: {pool: ci}
          tolerations: [{key: ci, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
          affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}
          securityContext: {fsGroup: 123}
          containers:
            - name: runner
              image: runner:2
              resources: {requests: {cpu: 1500m, memory: 3Gi, nvidia.com/gpu: "1"}, limits: {memory: 6Gi, nvidia.com/gpu: "1"}}
            - {name: sidecar, image: s:1}
)");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& c = std::get<parsed_config>(r).modes.get<scale_sets_mode>().config.sets.at(0);
  auto made = make_spec(c, 0);
  ASSERT_TRUE(std::holds_alternative<actors::capacity::scale_set_spec>(made)) << std::get<std::string>(made);
  const auto& s = std::get<actors::capacity::scale_set_spec>(made);
  EXPECT_EQ(s.runner_requests.cpu_milli, 1500);
  EXPECT_EQ(s.runner_requests.memory, int64_t{3} << 30);
  EXPECT_EQ(s.runner_requests.get("nvidia.com/gpu"), 1);
  EXPECT_EQ(s.runner_image, "runner:2");
  EXPECT_EQ(s.node_selector, (k8s::string_pairs{{"pool", "ci"}}));
  ASSERT_EQ(s.tolerations.size(), 1u);
  EXPECT_EQ(s.tolerations[0].toleration_seconds, 30);
  EXPECT_NE(s.required_node_affinity.find("nodeSelectorTerms"), std::string::npos);
  EXPECT_FALSE(s.runner_template.empty());

  auto error_of = [](const std::string& runner) {
    auto r = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a, runner: " + runner + "}]");
    return std::holds_alternative<runtime::config_error>(r) ? std::get<runtime::config_error>(r).message() : std::string{};
  };
  const std::string ok = "{spec: {containers: [{name: runner, image: r, resources: {requests: {cpu: 1, memory: 1Gi}}}]}}";
  EXPECT_EQ(error_of("{template: " + ok + "}"), "");
  EXPECT_NE(error_of("{image: x, template: " + ok + "}").find("scaleSets[0].runner.image: give the runner's image in runner.template"),
            std::string::npos);
  EXPECT_NE(error_of("{template: {spec: {containers: [{name: runner, image: r}]}}}")
                .find("scaleSets[0].runner.template: spec.containers[0].resources.requests: required"),
            std::string::npos);
  EXPECT_NE(error_of("{template: {spec: {containers: [{name: runner, image: r, resources: {requests: {cpu: 1}}}]}}}")
                .find("spec.containers[0].resources.requests.memory: required"),
            std::string::npos);
  EXPECT_NE(error_of("{template: {spec: {priorityClassName: high, containers: [{name: runner, image: r, resources: {requests: {cpu: 1, memory: 1Gi}}}]}}}")
                .find("spec.priorityClassName"),
            std::string::npos);
  EXPECT_NE(error_of("{template: {spec: {containers: [{name: runner, image: r, resources: {requests: {cpu: 1, memory: 1Gi, x.io/dev: 2}}}]}}}")
                .find("spec.containers[0].resources.limits.x.io/dev: an extended resource's limit must equal its request"),
            std::string::npos);
  EXPECT_NE(error_of("{template: {spec: {tolerations: [{operator: Maybe}], containers: [{name: runner, image: r, resources: {requests: {cpu: 1, memory: 1Gi}}}]}}}")
                .find("spec.tolerations[0].operator"),
            std::string::npos);
  auto lots = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a, runner: {template: {spec: {containers: "
                                "[{name: runner, image: r, resources: {requests: {cpu: lots, memory: 1Gi}}}]}}}}]");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(lots));
  auto bad = make_spec(std::get<parsed_config>(lots).modes.get<scale_sets_mode>().config.sets.at(0), 0);
  ASSERT_TRUE(std::holds_alternative<std::string>(bad));
  EXPECT_NE(std::get<std::string>(bad).find("scaleSets[0].runner.template.spec.containers[runner].resources.requests.cpu"), std::string::npos)
      << "a quantity that does not parse names where it is: " << std::get<std::string>(bad);
}

// arc mode finds ARC's objects by the AutoscalingRunnerSet's name, the scale set's unless given;
// the EphemeralRunnerSet is pinned only when named.
TEST(capacity_config, arc_mode_names_the_autoscaling_runner_set) {
  auto r = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a, mode: arc}, {name: b, mode: arc, "
                             "autoscalingRunnerSet: arc-b, ephemeralRunnerSet: arc-b-x7k2p}]");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& sets = std::get<parsed_config>(r).modes.get<scale_sets_mode>().config.sets;
  EXPECT_EQ(sets.at(0).autoscaling_runner_set, "a");
  EXPECT_EQ(sets.at(0).ephemeral_runner_set, "");
  EXPECT_EQ(sets.at(1).autoscaling_runner_set, "arc-b");
  EXPECT_EQ(sets.at(1).ephemeral_runner_set, "arc-b-x7k2p");
}

TEST(capacity_config, scale_set_errors_name_the_key) {
  auto error_of = [](const char* yaml) {
    auto r = parse_config_yaml(yaml);
    return std::holds_alternative<runtime::config_error>(r) ? std::get<runtime::config_error>(r).message() : std::string{};
  };
  EXPECT_NE(error_of("scaleSets: [{name: linux}]").find("github.configUrl"), std::string::npos);
  EXPECT_NE(error_of("github: {configUrl: x}\nscaleSets: [{name: Linux}]").find("scaleSets[0].name"), std::string::npos);
  EXPECT_NE(error_of("github: {configUrl: x}\nscaleSets: [{name: a}, {name: a}]").find("scaleSets[1].name"), std::string::npos);
  EXPECT_NE(error_of("github: {configUrl: x}\nscaleSets: [{name: a, ephemeralRunnerSet: e}]").find("scaleSets[0].ephemeralRunnerSet: only in arc mode"),
            std::string::npos);
  EXPECT_NE(error_of("github: {configUrl: x}\nscaleSets: [{name: a, mode: arc, autoscalingRunnerSet: -x}]")
                .find("scaleSets[0].autoscalingRunnerSet: not a label value"),
            std::string::npos);
  EXPECT_NE(error_of("github: {configUrl: x}\nscaleSets: [{name: a, capacityAware: {proactivCapacity: 1}}]")
                .find("did you mean 'proactiveCapacity'"),
            std::string::npos);
}

TEST(capacity_config, the_queue_share_is_read_and_its_index_checked) {
  auto r = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a}]\nhud: {url: h, share: {index: 2, count: 3, takeAllAfter: 90s}}");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& hud = std::get<parsed_config>(r).modes.get<scale_sets_mode>().config.hud;
  EXPECT_EQ(hud.share_index, 2u);
  EXPECT_EQ(hud.share_count, 3u);
  EXPECT_EQ(hud.take_all_after, std::chrono::milliseconds{90'000});
  auto bad = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a}]\nhud: {share: {index: 2, count: 2}}");
  ASSERT_TRUE(std::holds_alternative<runtime::config_error>(bad));
  EXPECT_NE(std::get<runtime::config_error>(bad).message().find("hud.share.index: this cluster's place among `count` clusters: 0 to 1, found 2"),
            std::string::npos)
      << std::get<runtime::config_error>(bad).message();
}

// The ladder's PriorityClasses are the deployment's to name (two releases on one cluster name theirs
// apart): every pod headroom makes, and the classes it reads or makes, take the configured names.
TEST(capacity_config, the_priority_ladder_takes_the_configured_names) {
  auto r = parse_config_yaml(R"(
github: {configUrl: "https://github.com/org"}
priorityClasses: {placeholderRunner: ci-ph-runner, runner: ci-runner, placeholderWorkflow: ci-ph-workflow, workflow: ci.workflow}
scaleSets: [{name: linux, namespace: runners}]
)");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& cfg = std::get<parsed_config>(r).modes.get<scale_sets_mode>().config;
  auto s = std::get<scale_set_spec>(make_spec(cfg.sets.at(0), 0, cfg.priority_classes));
  using actors::capacity::rung;
  EXPECT_EQ(s.priority_classes.of(rung::placeholder_runner), "ci-ph-runner");
  EXPECT_EQ(s.priority_classes.of(rung::workflow), "ci.workflow");
  EXPECT_EQ(s.runner_priority_class, "ci-runner");
  actors::capacity::owner_ref owner{"v1", "ConfigMap", "o", "uid"};
  EXPECT_NE(actors::capacity::placeholder_pod(s, "a", actors::capacity::role::runner_placeholder, owner)
                .find("\"priorityClassName\":\"ci-ph-runner\""),
            std::string::npos);
  EXPECT_NE(actors::capacity::placeholder_pod(s, "a", actors::capacity::role::workflow_placeholder, owner)
                .find("\"priorityClassName\":\"ci-ph-workflow\""),
            std::string::npos);
  EXPECT_NE(actors::capacity::runner_pod(s, "linux-r1", 1).find("\"priorityClassName\":\"ci-runner\""), std::string::npos);
  const auto pc = actors::capacity::priority_class_object(actors::capacity::priority_ladder[3], "ci.workflow");
  EXPECT_NE(pc.find("\"name\":\"ci.workflow\""), std::string::npos) << pc;
  EXPECT_NE(pc.find("\"value\":20"), std::string::npos) << pc;
  EXPECT_NE(pc.find("\"preemptionPolicy\":\"Never\""), std::string::npos) << "given its room by headroom, never preempting: " << pc;
  EXPECT_NE(actors::capacity::priority_class_object(actors::capacity::priority_ladder[1], "x").find("PreemptLowerPriority"), std::string::npos)
      << "runner pods preempt runner placeholders";
  EXPECT_NE(actors::capacity::priority_class_object(actors::capacity::priority_ladder[0], "x").find("\"Never\""), std::string::npos);

  // Unset: the seed's names.
  auto d = parse_config_yaml("github: {configUrl: x}\nscaleSets: [{name: a}]");
  const auto& dc = std::get<parsed_config>(d).modes.get<scale_sets_mode>().config;
  auto ds = std::get<scale_set_spec>(make_spec(dc.sets.at(0), 0, dc.priority_classes));
  EXPECT_EQ(ds.priority_classes.of(rung::placeholder_workflow), "placeholder-workflow");
  EXPECT_EQ(ds.runner_priority_class, "arc-runner");

  auto error_of = [](const char* yaml) {
    auto e = parse_config_yaml(yaml);
    return std::holds_alternative<runtime::config_error>(e) ? std::get<runtime::config_error>(e).message() : std::string{};
  };
  EXPECT_NE(error_of("priorityClasses: {runner: Runner}").find("priorityClasses.runner"), std::string::npos);
  EXPECT_NE(error_of("priorityClasses: {workflow: arc-runner}").find("names two rungs"), std::string::npos);
  EXPECT_NE(error_of("priorityClasses: {placeholderRuner: x}").find("did you mean 'placeholderRunner'"), std::string::npos);
}

}  // namespace
}  // namespace headroom::app

namespace headroom::app {

using runtime::millis;
namespace {

using namespace modes::reactive;
using namespace modes::gates;
using namespace modes::scheduler;

TEST(reactive_config, targets_take_the_seed_defaults_and_override_them) {
  auto r = parse_config_yaml(R"(
reactive:
  prometheus: {url: "http://prom:9090", timeout: 3s}
  defaults: {cooldown: 1m}
  quotas: {ml: 12}
  targets:
    - scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, namespace: serving, name: inference}
      minReplicas: 2
      maxReplicas: 20
      metric: 'custom_metric{job="my-inference"}'
      target: 100
      tenant: ml
    - scaleTargetRef: {kind: StatefulSet, name: cache}
      maxReplicas: 3
      metric: queue_depth
      target: 0.8
      scaleUpWindow: 30s
      scaleDownThreshold: 0.25
      scaleWrite: subresource
)");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& re = std::get<parsed_config>(r).modes.get<reactive_mode>().config;
  EXPECT_EQ(re.prometheus.url, "http://prom:9090");
  ASSERT_EQ(re.targets.size(), 2u);
  const auto& a = re.targets[0];
  EXPECT_EQ(a.ns, "serving");
  EXPECT_EQ(a.min_replicas, 2u);
  ASSERT_EQ(a.metrics.size(), 1u);
  EXPECT_EQ(a.metrics[0].query, "custom_metric{job=\"my-inference\"}");
  EXPECT_EQ(a.metrics[0].target, 100);
  EXPECT_FALSE(a.metrics[0].absent_zero);
  EXPECT_EQ(a.tenant, "ml");
  // The seed's defaults, and the section's own default for cooldown.
  EXPECT_EQ(a.rules.evaluation_interval, millis{60'000});
  EXPECT_EQ(a.rules.scale_up_window, millis{120'000});
  EXPECT_EQ(a.rules.scale_down_window, millis{300'000});
  EXPECT_EQ(a.rules.scale_down_threshold, 0.5);
  EXPECT_EQ(a.rules.cooldown, millis{60'000});
  const auto& b = re.targets[1];
  EXPECT_EQ(b.api_version, "apps/v1");
  EXPECT_EQ(b.kind, "StatefulSet");
  EXPECT_EQ(b.ns, "default");
  EXPECT_EQ(b.min_replicas, 1u);
  EXPECT_EQ(b.rules.scale_up_window, millis{30'000});
  EXPECT_EQ(b.rules.scale_down_threshold, 0.25);
  EXPECT_FALSE(a.rules.subresource_writes);  // one patch on the object by default
  EXPECT_TRUE(b.rules.subresource_writes);
  ASSERT_EQ(re.quotas.size(), 1u);
  EXPECT_EQ(re.quotas[0], (std::pair<std::string, uint32_t>{"ml", 12}));
}

TEST(reactive_config, several_metrics_and_scale_to_zero) {
  auto r = parse_config_yaml(R"(
reactive:
  targets:
    - scaleTargetRef: {name: worker}
      minReplicas: 0
      maxReplicas: 8
      metrics:
        - {query: 'queue_depth{queue="jobs"}', target: 50, activationThreshold: 2, ifAbsent: zero}
        - {query: 'rate(cpu_seconds[1m])', target: 0.8}
    - scaleTargetRef: {name: api}
      minReplicas: 0
      maxReplicas: 3
      metric: requests_per_second
      target: 100
      activationThreshold: 0.5
)");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& re = std::get<parsed_config>(r).modes.get<reactive_mode>().config;
  ASSERT_EQ(re.targets.size(), 2u);
  const auto& w = re.targets[0];
  EXPECT_EQ(w.min_replicas, 0u);
  ASSERT_EQ(w.metrics.size(), 2u);
  EXPECT_EQ(w.metrics[0].query, "queue_depth{queue=\"jobs\"}");
  EXPECT_EQ(w.metrics[0].activation, 2);
  EXPECT_TRUE(w.metrics[0].absent_zero);
  EXPECT_EQ(w.metrics[1].target, 0.8);
  EXPECT_FALSE(w.metrics[1].absent_zero);
  ASSERT_EQ(re.targets[1].metrics.size(), 1u);
  EXPECT_EQ(re.targets[1].metrics[0].activation, 0.5);
}

TEST(reactive_config, errors_name_the_key) {
  const std::pair<const char*, const char*> cases[] = {
      {"reactive: {targets: [{metric: x, target: 1}]}", "reactive.targets[0].scaleTargetRef"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, target: 1}]}", "reactive.targets[0].metric"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x}]}", "reactive.targets[0].target"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x, target: lots}]}", "reactive.targets[0].target"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x, target: 1, minReplicas: 5, maxReplicas: 2}]}",
       "reactive.targets[0].maxReplicas"},
      {"reactive: {targets: [{scaleTargetRef: {name: A_b}, metric: x, target: 1}]}", "reactive.targets[0].scaleTargetRef.name"},
      {"reactive: {targets: [{scaleTargetRef: {name: a, kind: deployment}, metric: x, target: 1}]}",
       "reactive.targets[0].scaleTargetRef.kind"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x, target: 1, scaleDownThreshold: 2}]}",
       "reactive.targets[0].scaleDownThreshold"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x, target: 1, cooldwn: 1m}]}", "reactive.targets[0].cooldwn"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x, target: 1, scaleWrite: scale}]}", "reactive.targets[0].scaleWrite"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x, target: 1, tenant: ml}]}", "reactive.targets[0].tenant"},
      {"reactive: {quotas: {ml: -1}}", "reactive.quotas.ml"},
      {"reactive: {quotas: [ml]}", "reactive.quotas"},
      {"reactive: {prometheus: {url: prom:9090}}", "reactive.prometheus.url"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x, target: 1}, {scaleTargetRef: {name: a}, metric: y, target: 2}]}",
       "reactive.targets[1].scaleTargetRef"},
      // Several metrics: a list of {query, target}, not both forms; activation only with minReplicas 0.
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x, target: 1, metrics: [{query: y, target: 2}]}]}",
       "reactive.targets[0].metrics"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metrics: []}]}", "reactive.targets[0].metrics"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metrics: [{query: y}]}]}", "reactive.targets[0].metrics[0].target"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metrics: [{query: y, target: 1}, {target: 2}]}]}",
       "reactive.targets[0].metrics[1].query"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metrics: [{query: y, target: 1, ifAbsent: drop}]}]}",
       "reactive.targets[0].metrics[0].ifAbsent"},
      {"reactive: {targets: [{scaleTargetRef: {name: a}, metric: x, target: 1, activationThreshold: 3}]}",
       "reactive.targets[0].activationThreshold"},
      {"reactive: {objects: {namespaces: [Team_A]}}", "reactive.objects.namespaces[0]"},
      {"reactive: {objects: {namespaces: [a, a]}}", "reactive.objects.namespaces[1]"},
      {"reactive: {objects: {limits: {maxReplicas: -1}}}", "reactive.objects.limits.maxReplicas"},
      {"reactive: {objects: {namespace: [a]}}", "reactive.objects.namespace"},
  };
  for (const auto& [yaml, key] : cases) {
    auto r = parse_config_yaml(yaml);
    ASSERT_TRUE(std::holds_alternative<runtime::config_error>(r)) << yaml;
    EXPECT_EQ(std::get<runtime::config_error>(r).path, key) << yaml << " → " << std::get<runtime::config_error>(r).message();
  }
}


TEST(gates_config, defaults_overrides_and_errors_name_the_key) {
  auto r = parse_config_yaml("gates:\n  enabled: true\n  reservationTimeout: 90s\n  webhook: {listen: ':8443', certFile: /t/tls.crt, keyFile: /t/tls.key}\n");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& g = std::get<parsed_config>(r).modes.get<gates_mode>().config;
  EXPECT_TRUE(g.enabled);
  EXPECT_EQ(g.reservation_timeout, std::chrono::milliseconds{90'000});
  EXPECT_EQ(g.webhook.listen, ":8443");
  EXPECT_EQ(g.webhook.cert_reload_interval, std::chrono::milliseconds{10'000});
  const std::pair<const char*, const char*> cases[] = {
      {"gates: {enabled: true}", "gates.webhook.certFile"},
      {"gates: {enabled: true, webhook: {certFile: a}}", "gates.webhook.keyFile"},
      {"gates: {enabled: true, webhook: {enabled: false}, reservationTimeout: soon}", "gates.reservationTimeout"},
      {"gates: {webhook: {threads: 0}}", "gates.webhook.threads"},
      {"gates: {webhok: {}}", "gates.webhok"},
  };
  for (const auto& [yaml, key] : cases) {
    auto bad = parse_config_yaml(yaml);
    ASSERT_TRUE(std::holds_alternative<runtime::config_error>(bad)) << yaml;
    EXPECT_EQ(std::get<runtime::config_error>(bad).path, key) << yaml;
  }
}

TEST(scheduler_config, the_dashboards_are_on_their_own_port_never_the_webhooks) {
  auto r = parse_config_yaml("scheduler: {listen: \":8080\"}");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  EXPECT_EQ(std::get<parsed_config>(r).modes.get<scheduler_mode>().config.dashboard_listen, "127.0.0.1:8081")
      << "inside the pod by default";
  auto none = parse_config_yaml("scheduler: {dashboardListen: \"\"}");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(none));
  EXPECT_EQ(std::get<parsed_config>(none).modes.get<scheduler_mode>().config.dashboard_listen, "");
  auto same = parse_config_yaml("scheduler: {listen: \":9000\", dashboardListen: \":9000\"}");
  ASSERT_TRUE(std::holds_alternative<runtime::config_error>(same));
  EXPECT_EQ(std::get<runtime::config_error>(same).path, "scheduler.dashboardListen");
  auto bad = parse_config_yaml("scheduler: {dashboardListen: \"localhost:http\"}");
  ASSERT_TRUE(std::holds_alternative<runtime::config_error>(bad));
  EXPECT_EQ(std::get<runtime::config_error>(bad).path, "scheduler.dashboardListen");
}

TEST(scheduler_config, the_store_retention_defaults_to_90_days_and_is_0_or_at_least_72h) {
  auto r = parse_config_yaml("scheduler: {store: {sqlitePath: /x/jobs.db}}");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  EXPECT_EQ(std::get<parsed_config>(r).modes.get<scheduler_mode>().config.store.retention, std::chrono::hours{90 * 24});
  for (const auto& [text, hours] : {std::pair{"\"0\"", 0}, std::pair{"72h", 72}, std::pair{"8760h", 8760}}) {
    auto ok = parse_config_yaml(std::string{"scheduler: {store: {retention: "} + text + "}}");
    ASSERT_TRUE(std::holds_alternative<parsed_config>(ok)) << text << ": " << std::get<runtime::config_error>(ok).message();
    EXPECT_EQ(std::get<parsed_config>(ok).modes.get<scheduler_mode>().config.store.retention, std::chrono::hours{hours}) << text;
  }
  for (const char* text : {"71h", "30m", "forever", "-1h"}) {
    auto bad = parse_config_yaml(std::string{"scheduler: {store: {retention: "} + text + "}}");
    ASSERT_TRUE(std::holds_alternative<runtime::config_error>(bad)) << text;
    const auto& e = std::get<runtime::config_error>(bad);
    EXPECT_EQ(e.path, "scheduler.store.retention") << text << ": " << e.message();
  }
  auto why = std::get<runtime::config_error>(parse_config_yaml("scheduler: {store: {retention: 24h}}")).message();
  EXPECT_NE(why.find("at least 72h"), std::string::npos) << why;
  EXPECT_NE(why.find("found 24h"), std::string::npos) << why;
}

// The seed's configuration table (003: internal/constants.go and k8s.go), value by value.
TEST(scheduler_config, the_defaults_are_the_seeds) {
  auto r = parse_config_yaml("scheduler: {enabled: true}");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& c = std::get<parsed_config>(r).modes.get<scheduler_mode>().config;
  EXPECT_EQ(c.poll_interval, std::chrono::seconds{15}) << "PollInterval";
  EXPECT_EQ(c.default_max_workers, 20u) << "DefaultMaxWorkers";
  EXPECT_EQ(c.runner.active_deadline_seconds, 525'600) << "the pod's active deadline (~6 days)";
  EXPECT_EQ(c.pod_delete_grace, std::chrono::hours{6}) << "PodDeleteGrace";
  EXPECT_EQ(c.registration_timeout, std::chrono::seconds{120}) << "RunnerRegistrationTimeout";
  EXPECT_EQ(c.idle_timeout, std::chrono::seconds{600}) << "RunnerPendingTimeout (registered, idle)";
  EXPECT_EQ(c.pending_timeout, std::chrono::seconds{600}) << "PodPendingTimeout";
  EXPECT_EQ(c.job_stuck_queued, std::chrono::minutes{10}) << "JobStuckQueuedMinAge";
  EXPECT_EQ(c.store.pool, 10u) << "PostgresMaxConn";
  EXPECT_EQ(c.listen, ":8080") << "HTTPPort";
  EXPECT_EQ(c.ns, "default") << "the runner pods' namespace";
  EXPECT_EQ(c.runner.slot_resource, "headroom.dev/runner") << "one slot of the device plugin's resource per runner";
}

// A Docker-in-Docker pool as docs/modes/scheduler.md shows it, beside a plain one.
const char* pools_yaml = R"(
scheduler:
  maxWorkers: {default: 7, entities: {acme: 3}}
  pools:
    - name: linux
      labels: [linux, x64]
      template:
        spec:
          nodeSelector: {pool: linux}
          containers: [{name: runner, image: "ghcr.io/actions/actions-runner:2.330.0", command: [/home/runner/run.sh]}]
    - name: docker
      labels: [linux, x64, docker]
      maxWorkers: 4
      maxWorkersPerEntity: {default: 2}
      slotResource: ""
      template:
        metadata: {labels: {team: ci}}
        spec:
          runtimeClassName: kata
          containers:
            - name: runner
              image: ghcr.io/actions/actions-runner:latest
              env: [{name: DOCKER_HOST, value: "tcp://localhost:2375"}, {name: RETRIES, value: "3"}]
              resources: {requests: {cpu: 2, ephemeral-storage: 20Gi}}
            - name: dind
              image: docker:dind
              securityContext: {privileged: true}
              volumeMounts: [{name: work, mountPath: /var/lib/docker}]
          volumes: [{name: work, emptyDir: {}}]
)";

TEST(scheduler_config, pools_take_a_full_pod_template_and_their_own_caps) {
  auto r = parse_config_yaml(pools_yaml);
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& c = std::get<parsed_config>(r).modes.get<scheduler_mode>().config;
  ASSERT_EQ(c.pools.size(), 2u);
  const auto& linux = c.pools[0];
  EXPECT_EQ(linux.name, "linux");
  EXPECT_EQ(linux.labels, (std::vector<std::string>{"linux", "x64"}));
  EXPECT_EQ(linux.node_selector, (std::vector<std::pair<std::string, std::string>>{{"pool", "linux"}}));
  EXPECT_EQ(linux.slot_resource, "headroom.dev/runner");
  EXPECT_EQ(linux.max_workers, 0u) << "no pool-wide cap unless given";
  EXPECT_FALSE(linux.own_entity_caps) << "scheduler.maxWorkers caps each account across every pool; a pool adds none unless given";
  EXPECT_EQ(c.default_max_workers, 7u);
  EXPECT_EQ(c.max_workers, (std::vector<std::pair<std::string, uint32_t>>{{"acme", 3}}));
  const auto& docker = c.pools[1];
  EXPECT_EQ(docker.max_workers, 4u);
  EXPECT_TRUE(docker.own_entity_caps);
  EXPECT_EQ(docker.default_max_workers, 2u);
  EXPECT_TRUE(docker.entity_caps.empty());
  EXPECT_EQ(docker.slot_resource, "");
  // Typed as kubectl would send it: a boolean, numbers, quoted strings kept strings.
  for (const char* part : {"\"privileged\":true", "\"cpu\":2", "\"ephemeral-storage\":\"20Gi\"", "\"value\":\"3\"",
                           "\"emptyDir\":{}", "\"runtimeClassName\":\"kata\"", "\"labels\":{\"team\":\"ci\"}"})
    EXPECT_NE(docker.pod_template.find(part), std::string::npos) << part << " in " << docker.pod_template;
}

TEST(scheduler_config, a_bad_pool_is_refused_naming_the_field) {
  auto err = [](const std::string& yaml) {
    auto r = parse_config_yaml(yaml);
    return std::holds_alternative<runtime::config_error>(r) ? std::get<runtime::config_error>(r).message() : std::string{"accepted"};
  };
  const std::string runner = "template: {spec: {containers: [{name: runner, image: r}]}}";
  EXPECT_EQ(err("scheduler: {pools: [{name: a, " + runner + "}]}"),
            "scheduler.pools[0].labels: at least one label: the jobs this pool serves ask for no label it lacks (self-hosted is implied)");
  EXPECT_EQ(err("scheduler: {pools: [{name: A_b, labels: [x], " + runner + "}]}").rfind("scheduler.pools[0].name: ", 0), 0u);
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], " + runner + "}, {name: a, labels: [y], " + runner + "}]}"),
            "scheduler.pools[1].name: pool 'a' is named twice");
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], template: {spec: {containers: [{name: main, image: r}]}}}]}"),
            "scheduler.pools[0].template: spec.containers: expected exactly one container named runner (it gets the JIT config), found 0");
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], template: {spec: {containers: [{name: runner}]}}}]}"),
            "scheduler.pools[0].template: spec.containers[0].image: the runner container needs an image");
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], template: {metadata: {name: fixed}, spec: {containers: [{name: runner, image: r}]}}}]}"),
            "scheduler.pools[0].template: metadata.name: only labels and annotations (headroom names each runner pod)");
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], template: {metadata: {labels: {headroom.dev/pool: b}}, spec: {containers: [{name: runner, image: r}]}}}]}"),
            "scheduler.pools[0].template: metadata.labels.headroom.dev/pool: headroom.dev/ labels are headroom's own");
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], template: {spec: {restartPolicy: Always, containers: [{name: runner, image: r}]}}}]}"),
            "scheduler.pools[0].template: spec.restartPolicy: a runner takes one job, so Never (or leave it out)");
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], template: {spec: {nodeSelector: {gpu: true}, containers: [{name: runner, image: r}]}}}]}"),
            "scheduler.pools[0].template: spec.nodeSelector.gpu: expected a string (quote it)");
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], template: {spec: {containers: [{name: runner, image: r}]}, kind: Pod}}]}"),
            "scheduler.pools[0].template: kind: a pod template has only metadata and spec");
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], template: {spec: {containers: [{name: runner, image: r}]}}, maxWorker: 3}]}"),
            "scheduler.pools[0].maxWorker: unknown key (did you mean 'maxWorkers'?)");
  EXPECT_EQ(err("scheduler: {runnerLabels: [x], pools: [{name: a, labels: [x], " + runner + "}]}").rfind("scheduler.pools: with pools", 0), 0u);
  EXPECT_EQ(err("scheduler: {enterprise: acme/x}"), "scheduler.enterprise: an enterprise's slug (as in github.com/enterprises/<slug>), found 'acme/x'");
  EXPECT_EQ(err("scheduler: {runnerGroupRepositories: [acme]}"), "scheduler.runnerGroupRepositories[0]: expected owner/repo, found 'acme'");
  EXPECT_EQ(err("scheduler: {runnerGroupRepositories: [acme/app, a/b/c]}"),
            "scheduler.runnerGroupRepositories[1]: expected owner/repo, found 'a/b/c'");
  EXPECT_EQ(err("scheduler: {pools: [{name: a, labels: [x], template: [1]}]}"),
            "scheduler.pools[0].template: expected a pod template (metadata, spec), found a list");
}

TEST(scheduler_config, a_pool_without_a_template_makes_the_runner_sections_pod) {
  auto r = parse_config_yaml("scheduler:\n  runner: {image: r, nodeSelector: {pool: ci}, slotResource: example.com/slot}\n"
                             "  pools: [{name: a, labels: [x]}, {name: b, labels: [y], slotResource: \"\"}]\n");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& c = std::get<parsed_config>(r).modes.get<scheduler_mode>().config;
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.pools[0].pod_template, "");
  EXPECT_EQ(c.pools[0].node_selector, (std::vector<std::pair<std::string, std::string>>{{"pool", "ci"}}));
  EXPECT_EQ(c.pools[0].slot_resource, "example.com/slot");
  EXPECT_EQ(c.pools[1].slot_resource, "");
}

}  // namespace
}  // namespace headroom::app

namespace headroom::app {
namespace {

using modes::scale_sets::declared_scale_set;
using modes::scale_sets::read_scale_set_object;

// A ScaleSet object is read by the file's reader: the same defaults, and errors naming the field.
TEST(scale_set_objects, an_objects_spec_reads_as_a_scale_set_entry_named_by_its_metadata) {
  auto read = read_scale_set_object(
      R"({"apiVersion":"headroom.dev/v1alpha1","kind":"ScaleSet","metadata":{"name":"linux","namespace":"team-a","uid":"u-1","generation":3},)"
      R"("spec":{"maxRunners":7,"labels":["x64"],"capacityAware":{"proactiveCapacity":2,"placeholderTTL":"20m"}}})");
  ASSERT_TRUE(std::holds_alternative<declared_scale_set>(read)) << std::get<std::string>(read);
  const auto& d = std::get<declared_scale_set>(read);
  EXPECT_EQ(d.section.name, "linux");
  EXPECT_EQ(d.section.ns, "team-a");
  EXPECT_EQ(d.section.max_runners, 7u);
  EXPECT_EQ(d.section.labels, std::vector<std::string>{"x64"});
  EXPECT_EQ(d.section.capacity_aware.proactive_capacity, 2u);
  EXPECT_EQ(d.section.capacity_aware.placeholder_ttl, millis{1'200'000});
  EXPECT_EQ(d.section.capacity_aware.placeholder_ready_timeout, millis{300'000}) << "the file's default";
  EXPECT_EQ(d.uid, "u-1");
  EXPECT_EQ(d.generation, 3);
  auto empty = read_scale_set_object(R"({"metadata":{"name":"a","namespace":"b"}})");
  ASSERT_TRUE(std::holds_alternative<declared_scale_set>(empty)) << "no spec: every default";
}

TEST(scale_set_objects, what_the_reader_refuses_is_named_by_its_field_in_the_object) {
  auto error = [](const std::string& json) {
    auto r = read_scale_set_object(json);
    return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : std::string{"accepted"};
  };
  const std::string meta = R"("metadata":{"name":"linux","namespace":"team-a"})";
  EXPECT_EQ(error("{" + meta + R"(,"spec":{"capacityAware":{"placeholderTTL":"1m"}}})").rfind("spec.capacityAware.placeholderTTL:", 0), 0u);
  EXPECT_EQ(error("{" + meta + R"(,"spec":{"maxRunners":-1}})").rfind("spec.maxRunners:", 0), 0u);
  EXPECT_EQ(error("{" + meta + R"(,"spec":{"surprise":1}})").rfind("spec", 0), 0u);
  EXPECT_EQ(error("{" + meta + R"(,"spec":{"name":"other"}})").rfind("spec.name:", 0), 0u);
  EXPECT_EQ(error("{" + meta + R"(,"spec":[1,2]})").rfind("spec:", 0), 0u);
  EXPECT_EQ(error(R"({"metadata":{"name":"Not_A_Name","namespace":"team-a"}})").rfind("metadata.name:", 0), 0u);
  EXPECT_EQ(error(R"({"metadata":{"name":"x"}})").rfind("metadata:", 0), 0u);
  EXPECT_EQ(error("not json").rfind("metadata:", 0), 0u);
}

// A ReactiveTarget object is read by the reader of reactive.targets[]: the file's defaults under
// it, its namespace the object's, errors naming the field in the object.
TEST(reactive_target_objects, an_objects_spec_reads_as_a_target_entry_in_its_own_namespace) {
  modes::reactive::reactive_rules_section defaults;
  defaults.cooldown = millis{2'000};
  auto read = modes::reactive::read_reactive_target_object(
      R"({"apiVersion":"headroom.dev/v1alpha1","kind":"ReactiveTarget","metadata":{"name":"web","namespace":"team-a","uid":"u-2","generation":4},)"
      R"("spec":{"scaleTargetRef":{"name":"web"},"maxReplicas":5,"metric":"q","target":10,"scaleUpWindow":"30s"}})",
      defaults);
  ASSERT_TRUE(std::holds_alternative<modes::reactive::declared_target>(read)) << std::get<std::string>(read);
  const auto& d = std::get<modes::reactive::declared_target>(read);
  EXPECT_EQ(d.section.ns, "team-a");
  EXPECT_EQ(d.section.kind, "Deployment");
  EXPECT_EQ(d.section.name, "web");
  EXPECT_EQ(d.section.max_replicas, 5u);
  EXPECT_EQ(d.section.rules.scale_up_window, millis{30'000});
  EXPECT_EQ(d.section.rules.cooldown, millis{2'000}) << "the file's reactive.defaults";
  EXPECT_EQ(d.uid, "u-2");
  EXPECT_EQ(d.generation, 4);
}

TEST(reactive_target_objects, what_the_reader_refuses_is_named_by_its_field_in_the_object) {
  auto error = [](const std::string& spec) {
    auto r = modes::reactive::read_reactive_target_object(R"({"metadata":{"name":"t","namespace":"team-a"},"spec":)" + spec + "}", {});
    return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : std::string{"accepted"};
  };
  EXPECT_EQ(error(R"({"scaleTargetRef":{"name":"w"},"metric":"q","target":1})"), "accepted");
  EXPECT_EQ(error(R"({"scaleTargetRef":{"name":"w","namespace":"other"},"metric":"q","target":1})").rfind("spec.scaleTargetRef.namespace:", 0), 0u);
  EXPECT_EQ(error(R"({"scaleTargetRef":{"name":"w"},"metric":"q","target":1,"tenant":"ml"})").rfind("spec.tenant:", 0), 0u);
  EXPECT_EQ(error(R"({"scaleTargetRef":{"name":"w"},"metric":"q","target":1,"minReplicas":4,"maxReplicas":2})").rfind("spec.maxReplicas:", 0), 0u);
  EXPECT_EQ(error(R"({"metric":"q","target":1})").rfind("spec.scaleTargetRef:", 0), 0u);
  EXPECT_EQ(error(R"({"scaleTargetRef":{"name":"w"},"metric":"q"})").rfind("spec.target:", 0), 0u);
  EXPECT_EQ(error("[1]").rfind("spec:", 0), 0u);
  EXPECT_EQ(modes::reactive::read_reactive_target_object(R"({"metadata":{"name":"t"}})", {}).index(), 1u) << "no namespace";
}

// A RunnerPool object is read by the reader of scheduler.pools[]: scheduler.runner's defaults, its
// name the object's, errors naming the field in the object.
TEST(runner_pool_objects, an_objects_spec_reads_as_a_pool_named_by_its_metadata) {
  modes::runner_section runner;
  runner.slot_resource = "example.com/slot";
  auto read = modes::scheduler::read_runner_pool_object(
      R"({"apiVersion":"headroom.dev/v1alpha1","kind":"RunnerPool","metadata":{"name":"gpu","namespace":"ci","uid":"u-3","generation":2},)"
      R"("spec":{"labels":["linux","gpu"],"maxWorkers":3}})",
      runner);
  ASSERT_TRUE(std::holds_alternative<modes::scheduler::declared_pool>(read)) << std::get<std::string>(read);
  const auto& d = std::get<modes::scheduler::declared_pool>(read);
  EXPECT_EQ(d.section.name, "gpu");
  EXPECT_EQ(d.section.labels, (std::vector<std::string>{"linux", "gpu"}));
  EXPECT_EQ(d.section.max_workers, 3u);
  EXPECT_EQ(d.section.slot_resource, "example.com/slot") << "scheduler.runner's";
  EXPECT_EQ(d.ns, "ci");
  EXPECT_EQ(d.generation, 2);
  auto error = [](const std::string& name, const std::string& spec) {
    auto r = modes::scheduler::read_runner_pool_object(
        R"({"metadata":{"name":")" + name + R"(","namespace":"ci"},"spec":)" + spec + "}", {});
    return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : std::string{"accepted"};
  };
  EXPECT_EQ(error("gpu", R"({"labels":[]})").rfind("spec.labels:", 0), 0u);
  EXPECT_EQ(error("gpu", R"({"labels":["a"],"name":"x"})").rfind("spec.name:", 0), 0u);
  EXPECT_EQ(error("a-name-longer-than-twenty", R"({"labels":["a"]})").rfind("metadata.name:", 0), 0u);
  EXPECT_EQ(error("gpu", R"({"labels":["a"],"template":{"spec":{"containers":[{"name":"sidecar","image":"x"}]}}})").rfind("spec.template:", 0), 0u);
  EXPECT_EQ(error("gpu", R"({"labels":["a"],"maxWorkers":-2})").rfind("spec.maxWorkers:", 0), 0u);
}

}  // namespace
}  // namespace headroom::app
