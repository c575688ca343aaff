#pragma once

// Compact typed views of the Kubernetes objects headroom reads: only the fields it uses, copied
// out of the JSON, no DOM kept. Quantities are already parsed (see quantity.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headroom::k8s {

using string_pairs = std::vector<std::pair<std::string, std::string>>;

struct owner_reference {
  std::string api_version, kind, name, uid;
  bool controller = false;
};

struct object_meta {
  std::string name, ns, uid, resource_version, generate_name;
  string_pairs labels, annotations;
  std::vector<owner_reference> owners;
  std::string deletion_timestamp;  // "" unless the object is being deleted
  std::optional<int64_t> deletion_grace_period_seconds;
  std::string creation_timestamp;

  const std::string* label(std::string_view key) const;
  const std::string* annotation(std::string_view key) const;
};

// Requests or capacities: cpu in milli, everything else in whole units (bytes, pods, devices).
struct resource_list {
  int64_t cpu_milli = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t pods = 0;
  std::vector<std::pair<std::string, int64_t>> extended;  // e.g. nvidia.com/gpu

  int64_t get(std::string_view name) const;  // "cpu" in milli, others in units
  void add(std::string_view name, int64_t amount);
  void max_with(const resource_list& other);
  void add_all(const resource_list& other);
  friend bool operator==(const resource_list&, const resource_list&) = default;
};

struct selector_requirement {
  std::string key, op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
};

struct node_selector_term {
  std::vector<selector_requirement> match_expressions;
  std::vector<selector_requirement> match_fields;
};

struct label_selector {
  string_pairs match_labels;
  std::vector<selector_requirement> match_expressions;
};

struct pod_affinity_term {
  label_selector selector;
  std::string topology_key;
  std::vector<std::string> namespaces;
};

struct toleration {
  std::string key, op, value, effect;
  std::optional<int64_t> toleration_seconds;
};

struct topology_spread_constraint {
  int32_t max_skew = 0;
  std::string topology_key, when_unsatisfiable;
  label_selector selector;
};

struct condition {
  std::string type, status, reason, message;
};

struct container_status {
  std::string name;
  bool ready = false;
  int32_t restart_count = 0;
  std::string state;   // waiting | running | terminated
  std::string reason;  // of the waiting/terminated state
};

struct pod {
  object_meta meta;
  std::string node_name, priority_class_name, preemption_policy, scheduler_name;
  std::optional<int32_t> priority;
  std::vector<std::string> scheduling_gates;
  string_pairs node_selector;
  std::vector<node_selector_term> required_node_affinity;
  std::vector<pod_affinity_term> required_pod_affinity;
  std::vector<pod_affinity_term> required_pod_anti_affinity;
  std::vector<toleration> tolerations;
  std::vector<topology_spread_constraint> topology_spread;
  // What the scheduler reserves: max(containers + sidecars, largest init stage) + overhead.
  resource_list requests;
  std::string phase, nominated_node_name, start_time;
  std::vector<condition> conditions;
  std::vector<container_status> container_statuses;

  const condition* find_condition(std::string_view type) const;
};

struct taint {
  std::string key, value, effect;
};

struct node {
  object_meta meta;
  std::vector<taint> taints;
  bool unschedulable = false;
  std::string provider_id;
  resource_list capacity, allocatable;
  std::vector<condition> conditions;
};

struct priority_class {
  object_meta meta;
  int32_t value = 0;
  std::string preemption_policy;
  bool global_default = false;
};

struct lease {
  object_meta meta;
  std::string holder_identity, acquire_time, renew_time;
  std::optional<int32_t> lease_duration_seconds;
  int32_t lease_transitions = 0;
};

struct event {
  object_meta meta;
  std::string involved_kind, involved_namespace, involved_name, involved_uid;
  std::string reason, message, type;
  int32_t count = 0;
};

// A custom resource: its metadata decoded, the whole object kept as raw JSON for the actor that
// owns the kind to decode further.
struct unstructured {
  object_meta meta;
  std::string api_version, kind;
  std::string raw;
};

}  // namespace headroom::k8s
