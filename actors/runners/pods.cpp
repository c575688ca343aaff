// Runner pods and their JIT Secrets (pure JSON builders), for both runner paths.

#include "actors/runners/pods.hpp"

#include "runtime/log.hpp"

namespace headroom::actors::runners {

using runtime::json_escape;

const char* role_label(role r) {
  switch (r) {
    case role::runner_placeholder: return "runner-placeholder";
    case role::workflow_placeholder: return "workflow-placeholder";
    case role::runner: return "runner";
  }
  return "unknown";
}

namespace json {

std::string string_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? "," : "") + json_escape(items[i]);
  return out + "]";
}

std::string labels_object(const runner_spec& s, role r, const std::string& slot) {
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
std::string placement(const runner_spec& s) {
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
                      const std::string& slot) {
  // An extended resource cannot be overcommitted: its request and limit must be equal.
  std::string extended = slot.empty() ? std::string{} : "," + json_escape(slot) + ":\"1\"";
  for (const auto& [name, amount] : more)
    extended += "," + json_escape(name) + ":" + json_escape(amount);
  const std::string q = "{\"cpu\":" + json_escape(cpu) + ",\"memory\":" + json_escape(memory) + extended + "}";
  return "{\"requests\":" + q + ",\"limits\":{\"memory\":" + json_escape(memory) + extended + "}}";
}

}  // namespace json

namespace {

// An env entry taking the JIT config from the runner's Secret (named as its pod).
std::string jit_env(const std::string& name, const char* var) {
  return "{\"name\":\"" + std::string{var} + "\",\"valueFrom\":{\"secretKeyRef\":{\"name\":" + json_escape(name) +
         ",\"key\":\"jitToken\"}}}";
}

std::string runner_labels(const runner_spec& s, std::string_view pool) {
  auto out = json::labels_object(s, role::runner, "");
  if (!pool.empty())
    out.insert(out.size() - 1, "," + json_escape(keys::pool) + ":" + json_escape(pool));
  return out;
}

}  // namespace

std::string runner_pod(const runner_spec& s, const std::string& name, int64_t runner_id, std::string_view scope,
                       std::string_view pool) {
  std::string spec = "{\"restartPolicy\":\"Never\"";
  if (!s.runner_priority_class.empty())
    spec += ",\"priorityClassName\":" + json_escape(s.runner_priority_class);
  if (s.active_deadline_seconds > 0)
    spec += ",\"activeDeadlineSeconds\":" + std::to_string(s.active_deadline_seconds);
  if (!s.service_account.empty())
    spec += ",\"serviceAccountName\":" + json_escape(s.service_account);
  spec += json::placement(s);
  spec += ",\"containers\":[{\"name\":\"runner\",\"image\":" + json_escape(s.runner_image) +
          ",\"command\":" + json::string_array(s.runner_command) +
          ",\"env\":[" + jit_env(name, "ACTIONS_RUNNER_INPUT_JITCONFIG") + "," + jit_env(name, "RUNNER_JITCONFIG") + ",{\"name\":\"ACTIONS_RUNNER_CONTAINER_HOOKS\",\"value\":"
          "\"/home/runner/k8s/index.js\"},{\"name\":\"ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER\",\"value\":\"false\"}]" +
          ",\"resources\":" + json::resources(s.runner_cpu, s.runner_memory, s.runner_extended, s.slot_resource) + "}]}";
  return "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":" + json_escape(name) + ",\"namespace\":" +
         json_escape(s.ns) + ",\"labels\":" + runner_labels(s, pool) + ",\"annotations\":{" +
         json_escape(keys::runner_id) + ":" + json_escape(std::to_string(runner_id)) + "," + json_escape(keys::runner_name) +
         ":" + json_escape(name) + (scope.empty() ? std::string{} : "," + json_escape(keys::runner_scope) + ":" + json_escape(scope)) +
         "}},\"spec\":" + spec + "}";
}

std::string runner_secret(const runner_spec& s, const std::string& name, const std::string& pod_uid,
                          const std::string& encoded_jit_config) {
  return "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"Opaque\",\"metadata\":{\"name\":" + json_escape(name) +
         ",\"namespace\":" + json_escape(s.ns) + ",\"labels\":" + json::labels_object(s, role::runner, "") +
         ",\"ownerReferences\":" + json::owner_refs({"v1", "Pod", name, pod_uid}) + "},\"stringData\":{\"jitToken\":" +
         json_escape(encoded_jit_config) + "}}";
}

}  // namespace headroom::actors::runners
