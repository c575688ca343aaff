// The pod objects the capacity loop creates (pure JSON builders): placeholders on the priority
// ladder, the runners' PodDisruptionBudget, the PriorityClasses. Runner pods: actors/runners/pods.cpp.

#include "actors/capacity/capacity.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::capacity {

using runtime::json_escape;

using runners::json::labels_object;
using runners::json::owner_refs;
using runners::json::placement;
using runners::json::resources;
using runners::json::string_array;


std::string placeholder_pod_name(const scale_set_spec& s, const std::string& slot, role r) {
  return s.name + "-ph-" + slot + (r == role::runner_placeholder ? "-runner" : "-workflow");
}

std::string placeholder_pod(const scale_set_spec& s, const std::string& slot, role r, const owner_ref& owner) {
  const bool runner = r == role::runner_placeholder;
  const std::string& priority = s.priority_classes.of(runner ? rung::placeholder_runner : rung::placeholder_workflow);
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

std::string runner_pdb_name(const owner_ref& owner) { return owner.name + "-runners"; }

std::string runner_pdb(const scale_set_spec& s, const owner_ref& owner) {
  return "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":" +
         json_escape(runner_pdb_name(owner)) + ",\"namespace\":" + json_escape(s.ns) +
         ",\"labels\":{\"app.kubernetes.io/managed-by\":\"headroom\"," + json_escape(keys::scale_set) + ":" + json_escape(s.name) +
         "},\"ownerReferences\":" + owner_refs(owner) + "},\"spec\":{\"maxUnavailable\":0,\"selector\":{\"matchLabels\":{" +
         json_escape(keys::scale_set) + ":" + json_escape(s.name) + "," + json_escape(keys::role) + ":" +
         json_escape(role_label(role::runner)) + "}}}}";
}

std::string priority_class_object(const priority_class_spec& p, const std::string& name) {
  return std::string{"{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":"} +
         json_escape(name) + ",\"labels\":{\"app.kubernetes.io/managed-by\":\"headroom\"}},\"value\":" +
         std::to_string(p.value) + ",\"globalDefault\":false,\"preemptionPolicy\":" +
         json_escape(p.preempts ? "PreemptLowerPriority" : "Never") +
         ",\"description\":" + json_escape(p.description) + "}";
}

}  // namespace headroom::actors::capacity
