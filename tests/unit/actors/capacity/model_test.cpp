// The capacity loop's pure parts: the two formulas, what a placeholder's state means, and the pods
// headroom creates (decoded back with headroom's own pod decoder), plus the scaleSets config.

#include <gtest/gtest.h>

#include <map>
#include <simdjson.h>

#include "actors/capacity/capacity.hpp"
#include "actors/capacity/pod_census.hpp"
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

// bench/job_outcomes' two-clusters scenario: a cluster whose node was cordoned right after it
// claimed three jobs kept advertising them (capacity 3, assigned 3); each time the service
// re-queued one (no runner for 120 s) it was offered back to that cluster, never to the one with
// room, until cancelled. A stuck runner's job no longer counts.
TEST(capacity_model, a_job_whose_runner_has_no_room_and_nothing_to_preempt_holds_no_capacity) {
  auto in = inputs(10, 2, 0, 3, 0, 0);
  in.runners_stuck = 3;
  EXPECT_EQ(advertised_capacity(in), 0) << "a re-queued job is not handed back";
  in.runners_stuck = 1;
  EXPECT_EQ(advertised_capacity(in), 2) << "the two others still hold their room";
  in = inputs(10, 2, 0, 2, 1, 2);
  in.runners_stuck = 1;
  EXPECT_EQ(advertised_capacity(in), 2) << "a stuck runner takes a pair placed for it in turn: not counted twice";
}

TEST(capacity_model, a_pending_runner_pod_is_stuck_only_with_no_room_and_no_nominated_node) {
  k8s::pod p;
  p.phase = "Pending";
  EXPECT_FALSE(pod_census::mark_of(p).stuck) << "not tried yet";
  p.conditions.edit().push_back({"PodScheduled", "False", "Unschedulable", "0/3 nodes are available"});
  EXPECT_TRUE(pod_census::mark_of(p).stuck);
  p.nominated_node_name = "node-a";
  EXPECT_FALSE(pod_census::mark_of(p).stuck) << "preempting a placeholder there: its room is coming";
  p.nominated_node_name.clear();
  p.node_name = "node-a";
  p.phase = "Running";
  EXPECT_FALSE(pod_census::mark_of(p).stuck);
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

// A placement's "affinity" prefers (weight 100, never requires) a node holding the scale set
// "linux"'s pod in role `role`; `body` for the messages.
// `slot`: only that pair's pods ("" any pod of the role).
void expect_prefers_node_with(simdjson::simdjson_result<simdjson::dom::element> affinity, const std::string& role, const std::string& body,
                              const std::string& slot = "") {
  auto preferred = affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
  ASSERT_EQ(preferred.error(), simdjson::SUCCESS) << body;
  ASSERT_EQ(preferred.get_array().size(), 1u) << body;
  EXPECT_EQ(int64_t(preferred.at(0)["weight"]), 100);
  auto term = preferred.at(0)["podAffinityTerm"];
  EXPECT_EQ(std::string_view(term["topologyKey"]), "kubernetes.io/hostname");
  EXPECT_EQ(std::string_view(term["labelSelector"]["matchLabels"]["headroom.dev/scale-set"]), "linux");
  if (role.find(',') == std::string::npos) {
    EXPECT_EQ(std::string_view(term["labelSelector"]["matchLabels"]["headroom.dev/role"]), role) << body;
  } else {  // any of "a,b"
    auto e = term["labelSelector"]["matchExpressions"].at(0);
    EXPECT_EQ(std::string_view(e["key"]), "headroom.dev/role") << body;
    EXPECT_EQ(std::string_view(e["operator"]), "In") << body;
    std::string values;
    for (auto v : e["values"].get_array())
      values += (values.empty() ? "" : ",") + std::string{std::string_view(v)};
    EXPECT_EQ(values, role) << body;
  }
  if (slot.empty())
    EXPECT_EQ(term["labelSelector"]["matchLabels"]["headroom.dev/slot"].error(), simdjson::NO_SUCH_FIELD) << body;
  else
    EXPECT_EQ(std::string_view(term["labelSelector"]["matchLabels"]["headroom.dev/slot"]), slot)
        << "its own pair's pod: two pairs made at once must not cross\n" << body;
  EXPECT_EQ(affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"].error(), simdjson::NO_SUCH_FIELD)
      << "never required: a pod is not left unschedulable for want of another: " << body;
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

// none mode: no workflow pod comes, and a pair starts as its probe (the runner placeholder's
// stand-in) beside its workflow placeholder, made at once. Each prefers a node holding its own
// pair's pod of the other role (the workflow placeholder: a runner placeholder's or a probe's), so
// a warm pair keeps one node from going back once empty, not two; never required (a full node must
// not strand either). No preference in the other modes.
TEST(capacity_model, in_none_mode_a_pairs_placeholders_prefer_one_node) {
  auto s = spec();
  s.mode = runners::runner_spec::container_mode::none;
  const owner_ref owner{"v1", "ConfigMap", "headroom-owner-1", "uid-1"};
  for (const auto& [r, other] : {std::pair{role::runner_placeholder, "workflow-placeholder"}, std::pair{role::pair_probe, "workflow-placeholder"},
                                 std::pair{role::workflow_placeholder, "runner-placeholder,pair-probe"}}) {
    simdjson::dom::parser parser;
    const std::string body = placeholder_pod(s, "abc", r, owner);
    expect_prefers_node_with(parser.parse(body)["spec"]["affinity"], other, body, "abc");
    const std::string hash{std::string_view(parser.parse(body)["metadata"]["labels"]["headroom.dev/spec-hash"])};
    const std::string other_pair = placeholder_pod(s, "def", r, owner);
    EXPECT_EQ(hash, std::string_view(parser.parse(other_pair)["metadata"]["labels"]["headroom.dev/spec-hash"]))
        << "the spec hash is every pair's: taken without the slot";
  }
  for (const auto m : {runners::runner_spec::container_mode::kubernetes_novolume, runners::runner_spec::container_mode::kubernetes,
                       runners::runner_spec::container_mode::dind}) {
    s.mode = m;
    for (const auto r : {role::runner_placeholder, role::workflow_placeholder, role::pair_probe})
      EXPECT_EQ(placeholder_pod(s, "abc", r, owner).find("podAffinity"), std::string::npos) << static_cast<int>(m);
  }
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
  // #54: the runner placeholders' budget, never met, so kube-scheduler prefers a workflow
  // placeholder as a workflow pod's victim over another pair's runner placeholder.
  const auto ph = p.parse(runner_placeholder_pdb(s, {"v1", "ConfigMap", "headroom-owner-1", "uid-1"}));
  ASSERT_EQ(ph.error(), simdjson::SUCCESS);
  EXPECT_EQ(ph["spec"]["minAvailable"].get_int64().value(), 14);
  EXPECT_EQ(std::string_view(ph["spec"]["selector"]["matchLabels"]["headroom.dev/role"]), "runner-placeholder");
  EXPECT_EQ(std::string_view(ph["metadata"]["name"]), "headroom-owner-1-runner-placeholders");
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

// #54: a scale set's runner pod carries what the runner's container hook (k8s-novolume, as ARC's
// chart renders kubernetes-novolume) reads: its own name, the hook, the image for the workflow
// pod's init container, a job container required; and the hook template headroom writes, mounted.
TEST(capacity_model, a_runner_pod_carries_what_its_container_hook_reads) {
  const auto s = spec();
  ASSERT_EQ(s.mode, runners::runner_spec::container_mode::kubernetes_novolume) << "the scale sets' default";
  ASSERT_EQ(s.hook_template_configmap, "linux-hook-template");
  simdjson::dom::parser parser;
  const std::string body = runner_pod(s, "linux-runner-1", 77);
  const auto pod = parser.parse(body);
  std::map<std::string, std::string> env;
  for (auto e : pod["spec"]["containers"].at(0)["env"].get_array()) {
    std::string_view name, value, field;
    ASSERT_EQ(e["name"].get(name), simdjson::SUCCESS);
    if (e["value"].get(value) == simdjson::SUCCESS)
      env[std::string{name}] = std::string{value};
    else if (e["valueFrom"]["fieldRef"]["fieldPath"].get(field) == simdjson::SUCCESS)
      env[std::string{name}] = "fieldRef:" + std::string{field};
    else
      env[std::string{name}] = "secret";
  }
  EXPECT_EQ(env["ACTIONS_RUNNER_CONTAINER_HOOKS"], "/home/runner/k8s-novolume/index.js");
  EXPECT_EQ(env["ACTIONS_RUNNER_POD_NAME"], "fieldRef:metadata.name");
  EXPECT_EQ(env["ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER"], "true");
  EXPECT_EQ(env["ACTIONS_RUNNER_IMAGE"], "ghcr.io/actions/actions-runner:latest");
  EXPECT_EQ(env["ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"], "/home/runner/headroom-hook/template.yaml");
  EXPECT_EQ(env["ACTIONS_RUNNER_INPUT_JITCONFIG"], "secret");
  std::string_view mount, volume, cm;
  ASSERT_EQ(pod["spec"]["containers"].at(0)["volumeMounts"].at(0)["mountPath"].get(mount), simdjson::SUCCESS);
  EXPECT_EQ(mount, "/home/runner/headroom-hook");
  ASSERT_EQ(pod["spec"]["volumes"].at(0)["name"].get(volume), simdjson::SUCCESS);
  ASSERT_EQ(pod["spec"]["volumes"].at(0)["configMap"]["name"].get(cm), simdjson::SUCCESS);
  EXPECT_EQ(cm, "linux-hook-template");
  // ARC's labels, so ARC users' selectors and dashboards keep working.
  auto p = std::get<k8s::pod>(k8s::decode_pod(body));
  ASSERT_NE(p.meta.label(keys::arc_scale_set_name), nullptr);
  EXPECT_EQ(*p.meta.label(keys::arc_scale_set_name), "linux");
  EXPECT_EQ(*p.meta.label(keys::arc_scale_set_namespace), "runners");

  // none: the job runs in the runner container; nothing of the hook.
  auto plain = s;
  plain.mode = runners::runner_spec::container_mode::none;
  const std::string none = runner_pod(plain, "linux-runner-2", 78);
  for (const char* absent : {"ACTIONS_RUNNER_CONTAINER_HOOKS", "ACTIONS_RUNNER_POD_NAME", "REQUIRE_JOB_CONTAINER", "volumes"})
    EXPECT_EQ(none.find(absent), std::string::npos) << absent;
}

// A scale set's spec from its section, its runner template read as the configuration reader does.
std::variant<scale_set_spec, std::string> spec_from_template(modes::scale_sets::scale_set_section& c) {
  auto facts = runners::read_runner_template(c.runner.template_json);
  if (!facts.facts)
    return facts.error;
  c.runner.template_facts = facts.facts;
  return modes::scale_sets::make_spec(c, 0);
}

// #54: containerMode kubernetes, as ARC's chart renders it: the k8s hook, the pod's name, a job
// container required, and the `work` volume (an ephemeral claim of workVolumeClaim) at
// /home/runner/_work; and headroom's ACTIONS_RUNNER_USE_KUBE_SCHEDULER, so the hook pins the
// workflow pod to the runner's node by affinity (through the scheduler, which preempts the
// placeholder) rather than nodeName (past it). A pair's placeholders share the node its probe was
// placed on; the hook template carries no affinity (the hook's merge would replace its own with it).
TEST(capacity_model, kubernetes_mode_shares_a_work_volume_and_keeps_pairs_on_one_node) {
  modes::scale_sets::scale_set_section c;
  c.name = "linux";
  c.ns = "runners";
  c.runner.container_mode = "kubernetes";
  c.runner.work_volume_claim = R"({"accessModes":["ReadWriteOnce"],"storageClassName":"fast","resources":{"requests":{"storage":"1Gi"}}})";
  c.runner.template_json = R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":)"
                           R"([{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},)"
                           R"("containers":[{"name":"runner","image":"r:1","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}})";
  const auto made = spec_from_template(c);
  ASSERT_TRUE(std::holds_alternative<scale_set_spec>(made)) << std::get<std::string>(made);
  const auto& s = std::get<scale_set_spec>(made);
  ASSERT_EQ(s.hook_template_configmap, "linux-hook-template") << "a hook mode: headroom's hook template is mounted";
  for (const bool from_template : {true, false}) {
    auto ss = s;
    if (!from_template)
      ss.runner_template.clear();  // the short form
    simdjson::dom::parser parser;
    const std::string body = runner_pod(ss, "linux-runner-1", 77);
    const auto pod = parser.parse(body);
    ASSERT_EQ(pod.error(), simdjson::SUCCESS) << body;
    std::map<std::string, std::string> env;
    for (auto e : pod["spec"]["containers"].at(0)["env"].get_array()) {
      std::string_view name, value;
      ASSERT_EQ(e["name"].get(name), simdjson::SUCCESS);
      env[std::string{name}] = e["value"].get(value) == simdjson::SUCCESS ? std::string{value} : "(from)";
    }
    EXPECT_EQ(env["ACTIONS_RUNNER_CONTAINER_HOOKS"], "/home/runner/k8s/index.js") << body;
    EXPECT_EQ(env["ACTIONS_RUNNER_POD_NAME"], "(from)");
    EXPECT_EQ(env["ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER"], "true");
    EXPECT_EQ(env["ACTIONS_RUNNER_USE_KUBE_SCHEDULER"], "true");
    EXPECT_EQ(env["ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"], "/home/runner/headroom-hook/template.yaml");
    EXPECT_EQ(env.count("ACTIONS_RUNNER_IMAGE"), 0u) << "k8s-novolume's only";
    std::map<std::string, std::string> mounts;
    for (auto m : pod["spec"]["containers"].at(0)["volumeMounts"].get_array())
      mounts[std::string{std::string_view(m["name"])}] = std::string{std::string_view(m["mountPath"])};
    EXPECT_EQ(mounts["work"], "/home/runner/_work");
    EXPECT_EQ(mounts["headroom-hook-template"], "/home/runner/headroom-hook");
    bool work = false;
    for (auto v : pod["spec"]["volumes"].get_array())
      if (std::string_view(v["name"]) == "work") {
        work = true;
        auto claim = v["ephemeral"]["volumeClaimTemplate"]["spec"];
        EXPECT_EQ(std::string_view(claim["storageClassName"]), "fast");
        EXPECT_EQ(std::string_view(claim["accessModes"].at(0)), "ReadWriteOnce");
        EXPECT_EQ(std::string_view(claim["resources"]["requests"]["storage"]), "1Gi");
      }
    EXPECT_TRUE(work) << body;
    // The runner prefers a node holding its scale set's workflow placeholder (its pair's, whose
    // runner placeholder was just deleted): its workflow pod is pinned to the runner's node, and
    // elsewhere it would preempt what it could there, a running runner (its own) among them.
    auto affinity = pod["spec"]["affinity"];
    expect_prefers_node_with(affinity, "workflow-placeholder", body);
    EXPECT_EQ(std::string_view(affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                                   .at(0)["matchExpressions"].at(0)["key"]),
              "zone")
        << "the template's own node affinity kept: " << body;
  }
  {  // pinned to the node of the pair handed to its job: the node alone, the room's slot noted
    simdjson::dom::parser parser;
    const std::string body = runners::pinned_to_workflow_room(runner_pod(s, "linux-runner-3", 79), {"node-9", "abc"});
    auto pod = parser.parse(body);
    ASSERT_EQ(pod.error(), simdjson::SUCCESS) << body;
    EXPECT_EQ(std::string_view(pod["metadata"]["annotations"]["headroom.dev/workflow-room"]), "abc");
    EXPECT_EQ(std::string_view(pod["metadata"]["annotations"]["headroom.dev/runner-id"]), "79") << "ours kept";
    auto terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    ASSERT_EQ(terms.get_array().size(), 1u) << "the node alone (it satisfied the runner's terms): " << body;
    EXPECT_EQ(std::string_view(terms.at(0)["matchFields"].at(0)["key"]), "metadata.name");
    EXPECT_EQ(std::string_view(terms.at(0)["matchFields"].at(0)["values"].at(0)), "node-9");
    EXPECT_EQ(std::string_view(pod["spec"]["containers"].at(0)["name"]), "runner");
  }
  {  // kubernetes-novolume (the workflow pod goes anywhere): no preference
    auto novolume = spec();
    const std::string body = runner_pod(novolume, "linux-runner-2", 78);
    EXPECT_EQ(body.find("podAffinity"), std::string::npos) << body;
  }
  // The pair is placed by its probe first, holding both pods' room at the workflow placeholder's
  // rung (no runner pod can take it) under the runner's own placement; its placeholders are then
  // required on the probe's node.
  const owner_ref owner{"v1", "ConfigMap", "headroom-owner-1", "uid-1"};
  {
    simdjson::dom::parser parser;
    const std::string body = placeholder_pod(s, "abc", role::pair_probe, owner);
    auto probe = parser.parse(body);
    ASSERT_EQ(probe.error(), simdjson::SUCCESS) << body;
    EXPECT_EQ(std::string_view(probe["metadata"]["name"]), "linux-ph-abc-probe");
    EXPECT_EQ(std::string_view(probe["metadata"]["labels"]["headroom.dev/role"]), "pair-probe");
    EXPECT_EQ(std::string_view(probe["spec"]["priorityClassName"]), "placeholder-workflow");
    EXPECT_EQ(std::string_view(probe["spec"]["preemptionPolicy"]), "Never");
    auto p = std::get<k8s::pod>(k8s::decode_pod(body));
    EXPECT_EQ(p.spec->requests.cpu_milli, 1000 + s.workflow_requests.cpu_milli) << "the runner's and the workflow's cpu";
    EXPECT_EQ(p.spec->requests.memory, (1LL << 30) + s.workflow_requests.memory);
    EXPECT_EQ(std::string_view(probe["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                                   ["nodeSelectorTerms"].at(0)["matchExpressions"].at(0)["key"]),
              "zone")
        << "the runner's placement";
  }
  for (const auto r : {role::runner_placeholder, role::workflow_placeholder}) {
    simdjson::dom::parser parser;
    const std::string body = placeholder_pod(s, "abc", r, owner, "node-7");
    auto term = parser.parse(body)["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    ASSERT_EQ(term.error(), simdjson::SUCCESS) << body;
    ASSERT_EQ(term.get_array().size(), 1u) << "the node alone (it satisfied the runner's terms)";
    auto field = term.at(0)["matchFields"].at(0);
    EXPECT_EQ(std::string_view(field["key"]), "metadata.name");
    EXPECT_EQ(std::string_view(field["operator"]), "In");
    EXPECT_EQ(std::string_view(field["values"].at(0)), "node-7");
  }
  const std::string hook = runners::hook_template(s, "arc-workflow", "500m", "512Mi", {});
  EXPECT_EQ(hook.find("affinity"), std::string::npos) << hook;
  // kubernetes-novolume: the pair's placeholders may land apart, as the seed says.
  EXPECT_FALSE(runners::same_node_pairs(spec()));
  EXPECT_TRUE(runners::same_node_pairs(s));
}

// The hook template gives the workflow pod the ladder's workflow PriorityClass (it preempts its
// workflow placeholder), the workflow's resources (`$job`: the hook replaces the job container's),
// and the runner's placement, as the workflow placeholder has them.
TEST(capacity_model, the_hook_template_gives_the_workflow_pod_its_rung_its_room_and_its_placement) {
  const auto s = spec();
  const std::string t = runners::hook_template(s, "arc-workflow", "500m", "512Mi", {{"nvidia.com/gpu", "1"}});
  simdjson::dom::parser parser;
  const auto d = parser.parse(t);
  std::string_view v;
  ASSERT_EQ(d["spec"]["priorityClassName"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "arc-workflow");
  ASSERT_EQ(d["spec"]["containers"].at(0)["name"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "$job");
  ASSERT_EQ(d["spec"]["containers"].at(0)["resources"]["requests"]["cpu"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "500m");
  ASSERT_EQ(d["spec"]["containers"].at(0)["resources"]["limits"]["nvidia.com/gpu"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "1");
  ASSERT_EQ(d["spec"]["nodeSelector"]["pool"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "ci");
  ASSERT_EQ(d["spec"]["tolerations"].at(0)["key"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "ci");
  ASSERT_EQ(d["metadata"]["labels"][keys::role].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "workflow");
  const std::string cm = runners::hook_template_configmap(s, "linux-hook-template", t);
  const auto c = parser.parse(cm);
  ASSERT_EQ(c["data"]["template.yaml"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, t) << "JSON is YAML: the hook's js-yaml reads it";
  ASSERT_EQ(c["metadata"]["namespace"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "runners");
}

// The user's own hook template is merged under headroom's: its keys pass through (a sidecar, a
// volume, env on the job container); headroom's PriorityClass, labels and the job container's
// resources replace the user's; the runner's placement only where the user placed nothing.
TEST(capacity_model, a_users_hook_template_is_merged_under_headroom_s) {
  auto s = spec();
  const std::string user = R"({"metadata":{"labels":{"team":"ci"}},"spec":{"priorityClassName":"low",)"
                           R"("securityContext":{"runAsNonRoot":true},"volumes":[{"name":"cache","emptyDir":{}}],)"
                           R"("containers":[{"name":"$job","env":[{"name":"X","value":"1"}],"resources":{"requests":{"cpu":"9"}}},)"
                           R"({"name":"sidecar","image":"busybox"}]}})";
  ASSERT_EQ(runners::check_hook_template(user), std::nullopt);
  s.user_hook_template = user;
  simdjson::dom::parser parser;
  const std::string merged = runners::hook_template(s, "arc-workflow", "500m", "512Mi", {});
  const auto d = parser.parse(merged);
  std::string_view v;
  ASSERT_EQ(d["spec"]["priorityClassName"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "arc-workflow") << "headroom's rung wins";
  ASSERT_EQ(d["metadata"]["labels"]["team"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "ci");
  ASSERT_EQ(d["metadata"]["labels"][keys::role].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "workflow");
  ASSERT_EQ(d["spec"]["containers"].at(0)["resources"]["requests"]["cpu"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "500m") << "the room the placeholder holds";
  ASSERT_EQ(d["spec"]["containers"].at(0)["env"].at(0)["name"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "X");
  ASSERT_EQ(d["spec"]["containers"].at(1)["name"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "sidecar");
  ASSERT_EQ(d["spec"]["volumes"].at(0)["name"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "cache");
  ASSERT_EQ(d["spec"]["nodeSelector"]["pool"].get(v), simdjson::SUCCESS) << "no placement of the user's: the runner's";
  // A placement of the user's is kept.
  s.user_hook_template = R"({"spec":{"nodeSelector":{"disk":"ssd"}}})";
  const auto p = parser.parse(runners::hook_template(s, "arc-workflow", "500m", "512Mi", {}));
  ASSERT_EQ(p["spec"]["nodeSelector"]["disk"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(p["spec"]["tolerations"].error(), simdjson::NO_SUCH_FIELD);
  ASSERT_EQ(p["spec"]["containers"].at(0)["name"].get(v), simdjson::SUCCESS);
  EXPECT_EQ(v, "$job");
  // Refused, naming the field.
  EXPECT_NE(runners::check_hook_template(R"({"kind":"Pod"})"), std::nullopt);
  EXPECT_NE(runners::check_hook_template(R"({"metadata":{"name":"x"}})"), std::nullopt);
  EXPECT_NE(runners::check_hook_template(R"({"metadata":{"labels":{"headroom.dev/role":"mine"}}})"), std::nullopt);
  EXPECT_EQ(*runners::check_hook_template(R"({"spec":{"containers":[{"image":"x"}]}})"),
            "spec.containers[0].name: expected a string ($job patches the job container)");
}

// #54: containerMode dind, field by field as ARC's chart renders it (gha-runner-scale-set 0.14.2,
// _helpers.tpl dind-init-container, dind-container, dind-runner-container, dind-volume,
// dind-work-volume; autoscalingrunnerset.yaml on Kubernetes >= 1.29: the sidecar as an init
// container), for the short form and a template; headroom adds only the sidecar's requests (the
// job's room). No hook, no hook template; a pair's placeholders share a node (the runner pod needs
// both rooms there).
TEST(capacity_model, dind_mode_renders_arcs_sidecar_and_holds_the_jobs_room) {
  modes::scale_sets::scale_set_section c;
  c.name = "linux";
  c.ns = "runners";
  c.runner.container_mode = "dind";
  c.capacity_aware.workflow_cpu = "3";
  c.capacity_aware.workflow_memory = "6Gi";
  c.runner.template_json = R"({"spec":{"initContainers":[{"name":"setup","image":"busybox"}],)"
                           R"("volumes":[{"name":"work","hostPath":{"path":"/mnt/fast"}}],)"
                           R"("containers":[{"name":"runner","image":"r:1","env":[{"name":"DOCKER_HOST","value":"tcp://localhost:2375"}],)"
                           R"("resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}})";
  const auto made = spec_from_template(c);
  ASSERT_TRUE(std::holds_alternative<scale_set_spec>(made)) << std::get<std::string>(made);
  const auto& s = std::get<scale_set_spec>(made);
  EXPECT_EQ(s.hook_template_configmap, "") << "no hook in dind mode";
  EXPECT_TRUE(runners::same_node_pairs(s));
  for (const bool from_template : {true, false}) {
    auto ss = s;
    if (!from_template)
      ss.runner_template.clear();
    simdjson::dom::parser parser;
    const std::string body = runner_pod(ss, "linux-runner-1", 77);
    const auto pod = parser.parse(body);
    ASSERT_EQ(pod.error(), simdjson::SUCCESS) << body;
    SCOPED_TRACE(from_template ? "template" : "short form");
    auto strings = [](auto a) {
      std::vector<std::string> out;
      for (auto v : a.get_array())
        out.emplace_back(std::string_view(v));
      return out;
    };
    auto mounts_of = [](auto c) {
      std::map<std::string, std::string> out;
      for (auto m : c["volumeMounts"].get_array())
        out[std::string{std::string_view(m["name"])}] = std::string{std::string_view(m["mountPath"])};
      return out;
    };
    using mounts = std::map<std::string, std::string>;
    auto init = pod["spec"]["initContainers"];
    ASSERT_EQ(init.get_array().size(), from_template ? 3u : 2u) << body;
    auto externals = init.at(0);
    EXPECT_EQ(std::string_view(externals["name"]), "init-dind-externals");
    EXPECT_EQ(std::string_view(externals["image"]), "r:1") << "the runner image";
    EXPECT_EQ(strings(externals["command"]), (std::vector<std::string>{"cp"}));
    EXPECT_EQ(strings(externals["args"]), (std::vector<std::string>{"-r", "/home/runner/externals/.", "/home/runner/tmpDir/"}));
    EXPECT_EQ(mounts_of(externals), (mounts{{"dind-externals", "/home/runner/tmpDir"}}));
    auto dind = init.at(1);
    EXPECT_EQ(std::string_view(dind["name"]), "dind");
    EXPECT_EQ(std::string_view(dind["image"]), "docker:dind");
    EXPECT_EQ(strings(dind["args"]),
              (std::vector<std::string>{"dockerd", "--host=unix:///var/run/docker.sock", "--group=$(DOCKER_GROUP_GID)"}));
    EXPECT_EQ(std::string_view(dind["env"].at(0)["name"]), "DOCKER_GROUP_GID");
    EXPECT_EQ(std::string_view(dind["env"].at(0)["value"]), "123");
    EXPECT_TRUE(bool(dind["securityContext"]["privileged"]));
    EXPECT_EQ(std::string_view(dind["restartPolicy"]), "Always") << "a sidecar (Kubernetes >= 1.29)";
    EXPECT_EQ(strings(dind["startupProbe"]["exec"]["command"]), (std::vector<std::string>{"docker", "info"}));
    EXPECT_EQ(int64_t(dind["startupProbe"]["failureThreshold"]), 24);
    EXPECT_EQ(int64_t(dind["startupProbe"]["periodSeconds"]), 5);
    EXPECT_EQ(int64_t(dind["startupProbe"]["initialDelaySeconds"]), 0);
    EXPECT_EQ(mounts_of(dind),
              (mounts{{"work", "/home/runner/_work"}, {"dind-sock", "/var/run"}, {"dind-externals", "/home/runner/externals"}}));
    EXPECT_EQ(std::string_view(dind["resources"]["requests"]["cpu"]), "3") << "headroom's: the job's room";
    EXPECT_EQ(std::string_view(dind["resources"]["requests"]["memory"]), "6Gi");
    if (from_template) {
      EXPECT_EQ(std::string_view(init.at(2)["name"]), "setup") << "the template's own init containers after ARC's";
    }
    auto runner = pod["spec"]["containers"].at(0);
    std::map<std::string, std::string> env;
    for (auto e : runner["env"].get_array()) {
      std::string_view value;
      env[std::string{std::string_view(e["name"])}] = e["value"].get(value) == simdjson::SUCCESS ? std::string{value} : "(from)";
    }
    EXPECT_EQ(env["DOCKER_HOST"], from_template ? "tcp://localhost:2375" : "unix:///var/run/docker.sock") << "the user's stays";
    EXPECT_EQ(env["RUNNER_WAIT_FOR_DOCKER_IN_SECONDS"], "120");
    EXPECT_EQ(env.count("ACTIONS_RUNNER_CONTAINER_HOOKS"), 0u);
    EXPECT_EQ(env.count("ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER"), 0u);
    EXPECT_EQ(mounts_of(runner), (mounts{{"work", "/home/runner/_work"}, {"dind-sock", "/var/run"}}));
    std::map<std::string, std::string> volumes;
    for (auto v : pod["spec"]["volumes"].get_array())
      volumes[std::string{std::string_view(v["name"])}] = v["hostPath"].error() == simdjson::SUCCESS ? "hostPath" : "emptyDir";
    EXPECT_EQ(volumes, (mounts{{"dind-sock", "emptyDir"}, {"dind-externals", "emptyDir"},
                               {"work", from_template ? "hostPath" : "emptyDir"}}))
        << "a work volume of the template's stays";
  }
}

TEST(capacity_model, slot_ids_are_distinct) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i)
    ids.insert(new_slot_id());
  EXPECT_GT(ids.size(), 995u);
}

}  // namespace
}  // namespace headroom::actors::capacity
