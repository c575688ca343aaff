// Runner pods and their JIT Secrets (pure JSON builders), for both runner paths.

#include "actors/runners/pods.hpp"

#include "runtime/json_writer.hpp"

namespace headroom::actors::runners {

const char* role_label(role r) {
  switch (r) {
    case role::runner_placeholder: return "runner-placeholder";
    case role::workflow_placeholder: return "workflow-placeholder";
    case role::runner: return "runner";
    case role::workflow: return "workflow";
    case role::pair_probe: return "pair-probe";
  }
  return "unknown";
}

bool is_runner_pod(const k8s::object_meta& m) {
  const auto* r = m.label(keys::role);
  if (r != nullptr)
    return *r == role_label(role::runner);
  const auto* arc = m.label(keys::arc_ephemeral_runner);
  return arc != nullptr && *arc == "True";
}

namespace json {

void labels_object(runtime::json_writer& w, const runner_spec& s, role r, const std::string& slot, std::string_view pool,
                   std::string_view spec_hash) {
  w.begin_object().field(keys::scale_set, s.name).field(keys::role, role_label(r));
  if (!s.arc_set.empty())
    w.field(keys::arc_scale_set_name, s.arc_set);
  if (!slot.empty())
    w.field(keys::slot, slot);
  if (!pool.empty())
    w.field(keys::pool, pool);
  if (!spec_hash.empty())
    w.field(keys::spec_hash, spec_hash);
  w.end_object();
}

void owner_refs(runtime::json_writer& w, const owner_ref& o) {
  w.begin_array();
  if (!o.empty())
    w.begin_object()
        .field("apiVersion", o.api_version)
        .field("kind", o.kind)
        .field("name", o.name)
        .field("uid", o.uid)
        .field("blockOwnerDeletion", false)
        .end_object();
  w.end_array();
}

// nodeSelector, tolerations and required node affinity, mirrored from the runner template
// (placeholders hold room where a runner may go; no pod (anti-)affinity or preferences: the
// scheduler is free to pack them).
void placement(runtime::json_writer& w, const runner_spec& s, std::string_view pinned_node, bool node_affinity,
               std::string_view pod_affinity) {
  if (!s.node_selector.empty())
    w.key("nodeSelector").string_map(s.node_selector);
  const bool required = node_affinity && !s.required_node_affinity.empty();
  if (!pinned_node.empty() || required || !pod_affinity.empty()) {
    w.key("affinity").begin_object();
    if (!pinned_node.empty()) {
      w.key("nodeAffinity").begin_object().key("requiredDuringSchedulingIgnoredDuringExecution");
      w.begin_object().key("nodeSelectorTerms").begin_array().begin_object().key("matchFields").begin_array().begin_object();
      w.field("key", "metadata.name").field("operator", "In").key("values").strings(std::vector<std::string>{std::string{pinned_node}});
      w.end_object().end_array().end_object().end_array().end_object();  // the requirement, matchFields, the term, the terms, required
      w.end_object();  // nodeAffinity
    } else if (required) {
      w.key("nodeAffinity").begin_object().key("requiredDuringSchedulingIgnoredDuringExecution").raw(s.required_node_affinity).end_object();
    }
    if (!pod_affinity.empty())
      w.key("podAffinity").raw(pod_affinity);
    w.end_object();  // affinity
  }
  if (s.tolerations.empty())
    return;
  w.key("tolerations").begin_array();
  for (const auto& t : s.tolerations) {
    w.begin_object().field("operator", t.op.empty() ? std::string_view{"Equal"} : std::string_view{t.op});
    if (!t.key.empty())
      w.field("key", t.key);
    if (!t.value.empty())
      w.field("value", t.value);
    if (!t.effect.empty())
      w.field("effect", t.effect);
    if (t.toleration_seconds)
      w.field("tolerationSeconds", *t.toleration_seconds);
    w.end_object();
  }
  w.end_array();
}

void resources(runtime::json_writer& w, const std::string& cpu, const std::string& memory, const k8s::string_pairs& more,
               const std::string& slot) {
  // An extended resource cannot be overcommitted: its request and limit must be equal.
  auto extended = [&] {
    if (!slot.empty())
      w.field(slot, "1");
    for (const auto& [name, amount] : more)
      w.field(name, amount);
  };
  w.begin_object();
  w.key("requests").begin_object().field("cpu", cpu).field("memory", memory);
  extended();
  w.end_object();
  w.key("limits").begin_object().field("memory", memory);
  extended();
  w.end_object();
  w.end_object();
}

}  // namespace json

namespace {

// An env entry taking the JIT config from the runner's Secret (named as its pod).
void jit_env(runtime::json_writer& w, const std::string& name, const char* var) {
  w.begin_object().field("name", var).key("valueFrom").begin_object().key("secretKeyRef").begin_object();
  w.field("name", name).field("key", "jitToken").end_object().end_object().end_object();
}

void env_value(runtime::json_writer& w, const char* name, std::string_view value) {
  w.begin_object().field("name", name).field("value", value).end_object();
}

}  // namespace

namespace json {

// What ARC's chart sets on the runner container for containerMode kubernetes-novolume and kubernetes
// (gha-runner-scale-set 0.14.2, _helpers.tpl), and what headroom adds: the hook template, and in
// kubernetes mode ACTIONS_RUNNER_USE_KUBE_SCHEDULER. Without it the k8s hook (0.7.0) sets the
// workflow pod's nodeName: the pod skips the scheduler, so it cannot preempt its workflow
// placeholder, and the kubelet refuses it (OutOfcpu) on a node whose room the placeholders hold.
// With it the hook pins the pod to the runner's node by a required node affinity instead (the
// `work` volume stays ReadWriteOnce), and the scheduler preempts the placeholder there.
void container_mode_env(runtime::json_writer& w, const runner_spec& s) {
  if (!hook_mode(s))
    return;
  const bool kube = s.mode == runner_spec::container_mode::kubernetes;
  env_value(w, "ACTIONS_RUNNER_CONTAINER_HOOKS", kube ? kubernetes_hook : novolume_hook);
  w.begin_object().field("name", "ACTIONS_RUNNER_POD_NAME").key("valueFrom").begin_object().key("fieldRef").begin_object();
  w.field("fieldPath", "metadata.name").end_object().end_object().end_object();
  env_value(w, "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER", "true");
  if (kube)
    env_value(w, "ACTIONS_RUNNER_USE_KUBE_SCHEDULER", "true");
  else
    env_value(w, "ACTIONS_RUNNER_IMAGE", s.runner_image);  // the workflow pod's fs-init container
  if (!s.hook_template_configmap.empty())
    env_value(w, "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE", std::string{hook_template_dir} + "/" + hook_template_key);
}

std::string prefer_node_with(const runner_spec& s, role r) { return prefer_node_with(s, std::vector<role>{r}); }

std::string prefer_node_with(const runner_spec& s, const std::vector<role>& roles, const std::string& slot) {
  runtime::json_writer w;
  w.begin_object().key("preferredDuringSchedulingIgnoredDuringExecution").begin_array().begin_object().field("weight", 100);
  w.key("podAffinityTerm").begin_object().key("labelSelector").begin_object().key("matchLabels").begin_object();
  w.field(keys::scale_set, s.name);
  if (!slot.empty())
    w.field(keys::slot, slot);
  if (roles.size() == 1)
    w.field(keys::role, role_label(roles[0]));
  w.end_object();  // matchLabels
  if (roles.size() > 1) {
    w.key("matchExpressions").begin_array().begin_object().field("key", keys::role).field("operator", "In").key("values").begin_array();
    for (const auto r : roles)
      w.value(role_label(r));
    w.end_array().end_object().end_array();
  }
  w.end_object();  // labelSelector
  w.field("topologyKey", "kubernetes.io/hostname").end_object();  // the term
  w.end_object().end_array().end_object();
  return w.take();
}

std::string workflow_room_affinity(const runner_spec& s) {
  return s.mode == runner_spec::container_mode::kubernetes ? prefer_node_with(s, role::workflow_placeholder) : std::string{};
}

std::string work_volume_object(const runner_spec& s) {
  runtime::json_writer w;
  w.begin_object().field("name", work_volume).key("ephemeral").begin_object().key("volumeClaimTemplate").begin_object();
  w.key("spec").raw(s.work_volume_claim.empty() ? std::string_view{"{}"} : std::string_view{s.work_volume_claim});
  w.end_object().end_object().end_object();
  return w.take();
}

std::string dind_parts(const runner_spec& s) {
  runtime::json_writer w;
  auto mount = [&w](const char* name, const char* path) { w.begin_object().field("name", name).field("mountPath", path).end_object(); };
  w.begin_object().key("env").begin_array();
  env_value(w, "DOCKER_HOST", "unix:///var/run/docker.sock");
  env_value(w, "RUNNER_WAIT_FOR_DOCKER_IN_SECONDS", "120");
  w.end_array().key("mounts").begin_array();
  mount(work_volume, work_mount_path);
  mount("dind-sock", "/var/run");
  w.end_array().key("init").begin_array();
  w.begin_object().field("name", "init-dind-externals").field("image", s.runner_image);
  w.key("command").strings(std::vector<std::string>{"cp"});
  w.key("args").strings(std::vector<std::string>{"-r", "/home/runner/externals/.", "/home/runner/tmpDir/"});
  w.key("volumeMounts").begin_array();
  mount("dind-externals", "/home/runner/tmpDir");
  w.end_array().end_object();
  w.begin_object().field("name", "dind").field("image", "docker:dind");
  w.key("args").strings(std::vector<std::string>{"dockerd", "--host=unix:///var/run/docker.sock", "--group=$(DOCKER_GROUP_GID)"});
  w.key("env").begin_array();
  env_value(w, "DOCKER_GROUP_GID", "123");
  w.end_array();
  w.key("securityContext").begin_object().field("privileged", true).end_object();
  w.field("restartPolicy", "Always");
  w.key("startupProbe").begin_object().key("exec").begin_object().key("command").strings(std::vector<std::string>{"docker", "info"});
  w.end_object().field("initialDelaySeconds", 0).field("failureThreshold", 24).field("periodSeconds", 5).end_object();
  if (!s.dind_cpu.empty() || !s.dind_memory.empty()) {
    w.key("resources");
    resources(w, s.dind_cpu, s.dind_memory, {});
  }
  w.key("volumeMounts").begin_array();
  mount(work_volume, work_mount_path);
  mount("dind-sock", "/var/run");
  mount("dind-externals", "/home/runner/externals");
  w.end_array().end_object();
  w.end_array().key("volumes").begin_array();
  for (const char* v : {"dind-sock", "dind-externals", work_volume})
    w.begin_object().field("name", v).key("emptyDir").begin_object().end_object().end_object();
  w.end_array().end_object();
  return w.take();
}

}  // namespace json

std::string runner_pod(const runner_spec& s, const std::string& name, int64_t runner_id, std::string_view scope,
                       std::string_view pool) {
  if (!s.runner_template.empty())
    return runner_pod_from_template(s.runner_template, s, std::string{pool}, name, runner_id, scope);
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "v1").field("kind", "Pod");
  w.key("metadata").begin_object().field("name", name).field("namespace", s.ns);
  w.key("labels").begin_object().field(keys::scale_set, s.name).field(keys::role, role_label(role::runner));
  if (!pool.empty())
    w.field(keys::pool, pool);
  if (s.arc_labels)
    w.field(keys::arc_scale_set_name, s.name).field(keys::arc_scale_set_namespace, s.ns);
  w.end_object();
  w.key("annotations").begin_object().field(keys::runner_id, std::to_string(runner_id)).field(keys::runner_name, name);
  if (!scope.empty())
    w.field(keys::runner_scope, scope);
  w.end_object().end_object();

  w.key("spec").begin_object().field("restartPolicy", "Never");
  if (!s.runner_priority_class.empty())
    w.field("priorityClassName", s.runner_priority_class);
  if (s.active_deadline_seconds > 0)
    w.field("activeDeadlineSeconds", s.active_deadline_seconds);
  if (!s.service_account.empty())
    w.field("serviceAccountName", s.service_account);
  json::placement(w, s, {}, true, json::workflow_room_affinity(s));
  w.key("containers").begin_array().begin_object().field("name", "runner").field("image", s.runner_image);
  w.key("command").strings(s.runner_command);
  w.key("env").begin_array();
  jit_env(w, name, "ACTIONS_RUNNER_INPUT_JITCONFIG");
  jit_env(w, name, "RUNNER_JITCONFIG");
  json::container_mode_env(w, s);
  w.end_array();
  w.key("resources");
  json::resources(w, s.runner_cpu, s.runner_memory, s.runner_extended, s.slot_resource);
  const bool hook = hook_mode(s) && !s.hook_template_configmap.empty();
  const bool work = s.mode == runner_spec::container_mode::kubernetes;
  if (hook || work) {
    w.key("volumeMounts").begin_array();
    if (hook)
      w.begin_object().field("name", json::hook_volume).field("mountPath", hook_template_dir).field("readOnly", true).end_object();
    if (work)
      w.begin_object().field("name", json::work_volume).field("mountPath", work_mount_path).end_object();
    w.end_array();
  }
  w.end_object().end_array();  // the container, the containers
  if (hook || work) {
    w.key("volumes").begin_array();
    if (hook)
      w.begin_object().field("name", json::hook_volume).key("configMap").begin_object().field("name", s.hook_template_configmap)
          .end_object().end_object();
    if (work)
      w.raw(json::work_volume_object(s));
    w.end_array();
  }
  w.end_object().end_object();  // spec, the pod
  return workflow_in_runner_pod(s) ? with_dind(w.take(), s) : w.take();
}

std::string hook_template(const runner_spec& s, const std::string& priority_class, const std::string& cpu, const std::string& memory,
                          const k8s::string_pairs& extended) {
  runtime::json_writer w;
  w.begin_object().key("metadata").begin_object().key("labels");
  json::labels_object(w, s, role::workflow, "");
  w.end_object();
  w.key("spec").begin_object();
  if (!priority_class.empty())
    w.field("priorityClassName", priority_class);
  // kubernetes mode: no affinity. The hook's merge replaces its own (the runner's node) with the
  // template's, and the workflow pod would be free to leave the node its `work` volume is on.
  json::placement(w, s, {}, !same_node_pairs(s));
  if (workflow_pods_gated(s))
    w.key("schedulingGates").begin_array().begin_object().field("name", keys::held_room_gate).end_object().end_array();
  w.key("containers").begin_array().begin_object().field("name", "$job").key("resources");
  json::resources(w, cpu, memory, extended);
  w.end_object().end_array();
  w.end_object().end_object();
  std::string ours = w.take();
  return s.user_hook_template.empty() ? ours : merge_hook_templates(s.user_hook_template, ours);
}

namespace {
void selector_requirements(runtime::json_writer& w, const std::vector<k8s::selector_requirement>& rs) {
  w.begin_array();
  for (const auto& r : rs) {
    w.begin_object().field("key", r.key).field("operator", r.op);
    if (!r.values.empty()) {
      w.key("values").begin_array();
      for (const auto& v : r.values)
        w.value(v);
      w.end_array();
    }
    w.end_object();
  }
  w.end_array();
}
}  // namespace

std::string held_room_patch(const k8s::pod& p, const std::string& node) {
  runtime::json_writer w;
  w.begin_object().key("metadata").begin_object().field("resourceVersion", p.meta.resource_version).end_object();
  w.key("spec").begin_object();
  std::vector<std::string> kept;
  for (const auto& g : p.spec->scheduling_gates)
    if (g != keys::held_room_gate)
      kept.push_back(g);
  w.key("schedulingGates");
  if (kept.empty()) {
    w.null();
  } else {
    w.begin_array();
    for (const auto& g : kept)
      w.begin_object().field("name", g).end_object();
    w.end_array();
  }
  if (!node.empty()) {
    const k8s::selector_requirement here{"metadata.name", "In", {node}};
    std::vector<k8s::node_selector_term> terms = p.spec->required_node_affinity;
    if (terms.empty())
      terms.emplace_back();
    w.key("affinity").begin_object().key("nodeAffinity").begin_object().key("requiredDuringSchedulingIgnoredDuringExecution").begin_object();
    w.key("nodeSelectorTerms").begin_array();
    for (auto& t : terms) {
      t.match_fields.push_back(here);
      w.begin_object();
      if (!t.match_expressions.empty()) {
        w.key("matchExpressions");
        selector_requirements(w, t.match_expressions);
      }
      w.key("matchFields");
      selector_requirements(w, t.match_fields);
      w.end_object();
    }
    w.end_array().end_object().end_object().end_object();
  }
  w.end_object().end_object();
  return w.take();
}

std::string hook_template_configmap(const runner_spec& s, const std::string& name, const std::string& template_json) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "v1").field("kind", "ConfigMap");
  w.key("metadata").begin_object().field("name", name).field("namespace", s.ns);
  w.key("labels").begin_object().field("app.kubernetes.io/managed-by", "headroom").field(keys::scale_set, s.name).end_object();
  w.end_object();
  w.key("data").begin_object().field(hook_template_key, template_json).end_object();
  w.end_object();
  return w.take();
}

std::string runner_secret(const runner_spec& s, const std::string& name, const std::string& pod_uid,
                          const std::string& encoded_jit_config) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "v1").field("kind", "Secret").field("type", "Opaque");
  w.key("metadata").begin_object().field("name", name).field("namespace", s.ns);
  w.key("labels");
  json::labels_object(w, s, role::runner, "");
  w.key("ownerReferences");
  json::owner_refs(w, {"v1", "Pod", name, pod_uid});
  w.end_object();
  w.key("stringData").begin_object().field("jitToken", encoded_jit_config).end_object();
  w.end_object();
  return w.take();
}

}  // namespace headroom::actors::runners
