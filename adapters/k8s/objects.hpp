#pragma once

// Compact typed views of the Kubernetes objects headroom reads: only the fields it uses, copied
// out of the JSON, no DOM kept. Quantities are already parsed (see quantity.hpp). The parts that
// objects made from one template have in common (labels, annotations, owners, a pod's scheduling
// constraints, its condition texts) are held as shared<T>: one copy for all equal values.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/k8s/shared.hpp"

namespace headroom::k8s {

using string_pairs = std::vector<std::pair<std::string, std::string>>;

struct owner_reference {
  std::string api_version, kind, name, uid;
  bool controller = false;
  friend bool operator==(const owner_reference&, const owner_reference&) = default;
};

struct object_meta {
  std::string name, ns, uid, resource_version;
  shared<string_pairs> labels, annotations;
  shared<std::vector<owner_reference>> owners;
  std::string deletion_timestamp;  // "" unless the object is being deleted
  // creationTimestamp in seconds since the epoch (none when absent or not RFC 3339): a number,
  // not its 20-character text, in each of the 100,000 cached pods (#38).
  std::optional<double> created;

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
  friend bool operator==(const selector_requirement&, const selector_requirement&) = default;
};

struct node_selector_term {
  std::vector<selector_requirement> match_expressions;
  std::vector<selector_requirement> match_fields;
  friend bool operator==(const node_selector_term&, const node_selector_term&) = default;
};

struct label_selector {
  string_pairs match_labels;
  std::vector<selector_requirement> match_expressions;
  friend bool operator==(const label_selector&, const label_selector&) = default;
};

struct pod_affinity_term {
  label_selector selector;
  std::string topology_key;
  std::vector<std::string> namespaces;
  friend bool operator==(const pod_affinity_term&, const pod_affinity_term&) = default;
};

struct toleration {
  std::string key, op, value, effect;
  std::optional<int64_t> toleration_seconds;
  friend bool operator==(const toleration&, const toleration&) = default;
};

struct topology_spread_constraint {
  int32_t max_skew = 0;
  std::string topology_key, when_unsatisfiable;
  label_selector selector;
  friend bool operator==(const topology_spread_constraint&, const topology_spread_constraint&) = default;
};

struct condition {
  std::string type, status, reason, message;
  friend bool operator==(const condition&, const condition&) = default;
};

struct container_status {
  std::string name;
  bool ready = false;
  int32_t restart_count = 0;
  std::string state;   // waiting | running | terminated
  std::string reason;  // of the waiting/terminated state
  friend bool operator==(const container_status&, const container_status&) = default;
};

// What a pod asks of the scheduler, apart from its node and priority: the part of the spec that
// pods from one template share.
struct pod_spec {
  std::string priority_class_name, preemption_policy, scheduler_name;
  std::vector<std::string> scheduling_gates;
  string_pairs node_selector;
  std::vector<node_selector_term> required_node_affinity;
  std::vector<pod_affinity_term> required_pod_affinity;
  std::vector<pod_affinity_term> required_pod_anti_affinity;
  std::vector<toleration> tolerations;
  std::vector<topology_spread_constraint> topology_spread;
  // What the scheduler reserves: max(containers + sidecars, largest init stage) + overhead.
  resource_list requests;
  friend bool operator==(const pod_spec&, const pod_spec&) = default;
};

struct pod {
  object_meta meta;
  std::string node_name;
  std::optional<int32_t> priority;
  shared<pod_spec> spec;
  std::string phase, nominated_node_name;
  shared<std::vector<condition>> conditions;
  shared<std::vector<container_status>> container_statuses;

  const condition* find_condition(std::string_view type) const;
};

struct taint {
  std::string key, value, effect;
  friend bool operator==(const taint&, const taint&) = default;
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
  // Who said it: source.component (core/v1 recorders, e.g. "karpenter", "default-scheduler") and
  // reportingComponent (events.k8s.io/v1 recorders); either may be empty.
  std::string source_component, reporting_component;
  // When it was last said, seconds since the epoch: the newest of lastTimestamp, eventTime and
  // series.lastObservedTime; 0 when none is set.
  double last_seen = 0;
};

// A custom resource: its metadata decoded, the whole object kept as raw JSON for the actor that
// owns the kind to decode further.
struct unstructured {
  object_meta meta;
  std::string api_version, kind;
  std::string raw;
};

}  // namespace headroom::k8s
