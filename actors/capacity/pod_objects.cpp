// The pod objects the capacity loop creates (pure JSON builders): placeholders on the priority
// ladder, standalone runner pods and their JIT Secrets, the PriorityClasses.

#include "actors/capacity/capacity.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::capacity {

using runtime::json_escape;

namespace {

std::string string_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? "," : "") + json_escape(items[i]);
  return out + "]";
}

std::string labels_object(const scale_set_spec& s, role r, const std::string& slot) {
  std::string out = "{" + json_escape(keys::scale_set) + ":" + json_escape(s.name) + "," + json_escape(keys::role) + ":" +
                    json_escape(role_label(r));
  if (!slot.empty())
    out += "," + json_escape(keys::slot) + ":" + json_escape(slot);
  return out + "}";
}

std::string owner_refs(const owner_ref& o) {
  if (o.empty())
    return "[]";
  return "[{\"apiVersion\":" + json_escape(o.api_version) + ",\"kind\":" + json_escape(o.kind) + ",\"name\":" +
         json_escape(o.name) + ",\"uid\":" + json_escape(o.uid) + ",\"blockOwnerDeletion\":false}]";
}

// nodeSelector and tolerations, mirrored from the runner template (placeholders hold room where a
// runner may go, no affinity: the scheduler is free to pack them).
std::string placement(const scale_set_spec& s) {
  std::string out;
  if (!s.node_selector.empty()) {
    out += ",\"nodeSelector\":{";
    for (size_t i = 0; i < s.node_selector.size(); ++i)
      out += (i ? "," : "") + json_escape(s.node_selector[i].first) + ":" + json_escape(s.node_selector[i].second);
    out += "}";
  }
  if (!s.tolerations.empty()) {
    out += ",\"tolerations\":[";
    for (size_t i = 0; i < s.tolerations.size(); ++i) {
      const auto& t = s.tolerations[i];
      out += std::string{i ? "," : ""} + "{\"operator\":" + json_escape(t.op.empty() ? "Equal" : t.op);
      if (!t.key.empty())
        out += ",\"key\":" + json_escape(t.key);
      if (!t.value.empty())
        out += ",\"value\":" + json_escape(t.value);
      if (!t.effect.empty())
        out += ",\"effect\":" + json_escape(t.effect);
      out += "}";
    }
    out += "]";
  }
  return out;
}

std::string resources(const std::string& cpu, const std::string& memory, const k8s::string_pairs& more,
                      const std::string& slot = {}) {
  // An extended resource cannot be overcommitted: its request and limit must be equal.
  std::string extended = slot.empty() ? std::string{} : "," + json_escape(slot) + ":\"1\"";
  for (const auto& [name, amount] : more)
    extended += "," + json_escape(name) + ":" + json_escape(amount);
  const std::string q = "{\"cpu\":" + json_escape(cpu) + ",\"memory\":" + json_escape(memory) + extended + "}";
  return "{\"requests\":" + q + ",\"limits\":{\"memory\":" + json_escape(memory) + extended + "}}";
}

}  // namespace

std::string placeholder_pod_name(const scale_set_spec& s, const std::string& slot, role r) {
  return s.name + "-ph-" + slot + (r == role::runner_placeholder ? "-runner" : "-workflow");
}

std::string placeholder_pod(const scale_set_spec& s, const std::string& slot, role r, const owner_ref& owner) {
  const bool runner = r == role::runner_placeholder;
  const std::string priority = runner ? "placeholder-runner" : "placeholder-workflow";
  const std::string res = runner ? resources(s.runner_cpu, s.runner_memory, s.runner_extended)
                                 : resources(s.workflow_cpu, s.workflow_memory, s.workflow_extended);
  return "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":" + json_escape(placeholder_pod_name(s, slot, r)) +
         ",\"namespace\":" + json_escape(s.ns) + ",\"labels\":" + labels_object(s, r, slot) +
         ",\"ownerReferences\":" + owner_refs(owner) +
         "},\"spec\":{\"priorityClassName\":" + json_escape(priority) +
         ",\"preemptionPolicy\":\"Never\",\"terminationGracePeriodSeconds\":0,\"restartPolicy\":\"Never\"" +
         // A leak guard that needs no headroom: the kubelet ends a placeholder that outlived its TTL
         // and one more ready timeout (by then headroom has long renewed it, unless headroom is gone).
         (s.placeholder_ttl.count() > 0
              ? ",\"activeDeadlineSeconds\":" + std::to_string((s.placeholder_ttl + 2 * s.placeholder_ready_timeout).count() / 1000)
              : std::string{}) +
         ",\"automountServiceAccountToken\":false" + placement(s) +
         ",\"containers\":[{\"name\":\"placeholder\",\"image\":" + json_escape(s.placeholder_image) +
         ",\"command\":" + string_array(s.placeholder_command) + ",\"resources\":" + res + "}]}}";
}

std::string runner_pod(const scale_set_spec& s, const std::string& name, int64_t runner_id, std::string_view scope) {
  std::string spec = "{\"restartPolicy\":\"Never\"";
  if (!s.runner_priority_class.empty())
    spec += ",\"priorityClassName\":" + json_escape(s.runner_priority_class);
  if (s.active_deadline_seconds > 0)
    spec += ",\"activeDeadlineSeconds\":" + std::to_string(s.active_deadline_seconds);
  if (!s.service_account.empty())
    spec += ",\"serviceAccountName\":" + json_escape(s.service_account);
  spec += placement(s);
  spec += ",\"containers\":[{\"name\":\"runner\",\"image\":" + json_escape(s.runner_image) +
          ",\"command\":" + string_array(s.runner_command) +
          ",\"env\":[{\"name\":\"RUNNER_JITCONFIG\",\"valueFrom\":{\"secretKeyRef\":{\"name\":" + json_escape(name) +
          ",\"key\":\"jitToken\"}}},{\"name\":\"ACTIONS_RUNNER_CONTAINER_HOOKS\",\"value\":"
          "\"/home/runner/k8s/index.js\"},{\"name\":\"ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER\",\"value\":\"false\"}]" +
          ",\"resources\":" + resources(s.runner_cpu, s.runner_memory, s.runner_extended, s.slot_resource) + "}]}";
  return "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":" + json_escape(name) + ",\"namespace\":" +
         json_escape(s.ns) + ",\"labels\":" + labels_object(s, role::runner, "") + ",\"annotations\":{" +
         json_escape(keys::runner_id) + ":" + json_escape(std::to_string(runner_id)) + "," + json_escape(keys::runner_name) +
         ":" + json_escape(name) + (scope.empty() ? std::string{} : "," + json_escape(keys::runner_scope) + ":" + json_escape(scope)) +
         "}},\"spec\":" + spec + "}";
}

std::string runner_secret(const scale_set_spec& s, const std::string& name, const std::string& pod_uid,
                          const std::string& encoded_jit_config) {
  return "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"Opaque\",\"metadata\":{\"name\":" + json_escape(name) +
         ",\"namespace\":" + json_escape(s.ns) + ",\"labels\":" + labels_object(s, role::runner, "") +
         ",\"ownerReferences\":" + owner_refs({"v1", "Pod", name, pod_uid}) + "},\"stringData\":{\"jitToken\":" +
         json_escape(encoded_jit_config) + "}}";
}

std::string runner_pdb_name(const owner_ref& owner) { return owner.name + "-runners"; }

std::string runner_pdb(const scale_set_spec& s, const owner_ref& owner) {
  return "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":" +
         json_escape(runner_pdb_name(owner)) + ",\"namespace\":" + json_escape(s.ns) +
         ",\"labels\":{\"app.kubernetes.io/managed-by\":\"headroom\"," + json_escape(keys::scale_set) + ":" + json_escape(s.name) +
         "},\"ownerReferences\":" + owner_refs(owner) + "},\"spec\":{\"maxUnavailable\":0,\"selector\":{\"matchLabels\":{" +
         json_escape(keys::scale_set) + ":" + json_escape(s.name) + "," + json_escape(keys::role) + ":" +
         json_escape(role_label(role::runner)) + "}}}}";
}

std::string priority_class_object(const priority_class_spec& p) {
  return std::string{"{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":"} +
         json_escape(p.name) + ",\"labels\":{\"app.kubernetes.io/managed-by\":\"headroom\"}},\"value\":" +
         std::to_string(p.value) + ",\"globalDefault\":false,\"preemptionPolicy\":" +
         json_escape(std::string_view{p.name}.rfind("placeholder", 0) == 0 ? "Never" : "PreemptLowerPriority") +
         ",\"description\":" + json_escape(p.description) + "}";
}

}  // namespace headroom::actors::capacity
