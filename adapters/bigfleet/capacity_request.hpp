#pragma once

// CapacityRequest (bigfleet.lucy.sh/v1alpha1): one per unschedulable Pod, the unit the roll-up
// aggregates. Decoded once per informer event into a compact view whose aggregation key and
// resource sums are precomputed, so building a roll-up is a hash lookup and an add per CR.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "adapters/k8s/objects.hpp"
#include "bigfleet/v1alpha1/capacity.pb.h"

namespace headroom::bigfleet {

namespace pb = ::bigfleet::v1alpha1;

struct requirement {
  std::string key, op;  // In | NotIn | Exists | DoesNotExist (Gt/Lt pass through)
  std::vector<std::string> values;
  friend bool operator==(const requirement&, const requirement&) = default;
};

struct spread {
  std::string topology_key, when_unsatisfiable;  // DoNotSchedule | ScheduleAnyway
  int32_t max_skew = 0;
  friend bool operator==(const spread&, const spread&) = default;
};

struct co_location {
  std::string topology_key;
  k8s::label_selector selector;
};

// A resource amount in the unit the roll-up sums in: milli-units for cpu, whole units otherwise.
struct resource_amount {
  std::string name;
  int64_t amount = 0;
};

struct capacity_request {
  k8s::object_meta meta;
  std::vector<requirement> requirements;      // sorted by key, then operator, values sorted
  std::vector<resource_amount> resources;     // sorted by name
  int32_t priority = 0;
  std::string interruption_penalty, reclamation_penalty;  // as written ("" = none)
  std::vector<spread> topology_spread;        // ScheduleAnyway dropped, sorted
  std::optional<co_location> colocation;
  std::string phase;  // status.phase: "" | Pending | Acknowledged

  // Precomputed at decode time.
  pb::PenaltyBucket interruption_bucket = pb::PENALTY_BUCKET_UNSPECIFIED;
  pb::PenaltyBucket reclamation_bucket = pb::PENALTY_BUCKET_UNSPECIFIED;
  std::string profile_key;  // canonical (requirements, priority, spread, buckets, co-location group)
  uint64_t profile_hash = 0;  // of profile_key: the roll-up groups by this alone (64 bits: a
                              // collision among 100k distinct profiles has odds of about 1e-10)
};

struct decode_error {
  std::string message;  // "CapacityRequest ns/name: spec.resources.cpu: invalid quantity …"
};

// From an informer's unstructured view (metadata decoded, spec and status read from the raw JSON),
// or from the whole object's JSON.
std::variant<capacity_request, decode_error> decode_capacity_request(const k8s::unstructured& object);
std::variant<capacity_request, decode_error> decode_capacity_request(std::string_view json);

// Dollars (an int-or-string quantity: "12", "0.5", "500m", "1k") → the bucket the value rounds
// *up* to. Empty → UNSPECIFIED. Parsed as floating point, so "500m" is $0.50, not $0.
std::variant<pb::PenaltyBucket, decode_error> penalty_bucket(std::string_view dollars);

// Order-independent canonical text of a label selector (matchLabels and matchExpressions merged,
// sorted, values sorted): equal selectors give equal text however they were written.
std::string canonical_selector(const k8s::label_selector& s);

// The quantity in roll-up units, and back ("1500m", "2", "4294967296").
std::optional<int64_t> resource_units(std::string_view name, std::string_view quantity);
std::string format_units(std::string_view name, int64_t amount);

// ---- Pod → CapacityRequest (the capacity_requests controller) ----

struct penalty_defaults {
  struct entry {
    std::string interruption, reclamation;
  };
  std::unordered_map<std::string, entry> by_priority_class;
};
// YAML: {priorityClasses: {<name>: {interruptionPenalty: "5", reclamationPenalty: "0.5"}}}.
std::variant<penalty_defaults, decode_error> parse_penalty_defaults(std::string_view yaml_text);

inline constexpr std::string_view interruption_penalty_annotation = "bigfleet.lucy.sh/interruption-penalty";
inline constexpr std::string_view reclamation_penalty_annotation = "bigfleet.lucy.sh/reclamation-penalty";
inline constexpr std::string_view pod_uid_label = "bigfleet.lucy.sh/pod-uid";

// The CR's name for a Pod (stable: one CR per Pod).
std::string capacity_request_name(const k8s::pod& pod);

// The whole object to create: owner-referenced to the Pod, labelled with its UID. Its spec:
// - requirements: the first required node-affinity term and the nodeSelector (each `In [value]`),
//   sorted; `Exists` on node.kubernetes.io/instance-type when the Pod has no constraint;
// - resources by the scheduler's arithmetic (the Pod's effective requests);
// - priority; penalties from annotations, else PriorityClass defaults, else none;
// - topologySpread without ScheduleAnyway; coLocation from the first required pod-affinity term.
std::string capacity_request_object(const k8s::pod& pod, const penalty_defaults& defaults);

}  // namespace headroom::bigfleet
