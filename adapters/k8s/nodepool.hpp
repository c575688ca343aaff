#pragma once

// Karpenter's NodePool (karpenter.sh/v1, cluster-scoped), reduced to what the capacity loop needs
// (seed 000: "watch NodePools: limits and current usage"): which nodes the pool can make (its
// template's labels, requirements and taints) and how much it may still add (spec.limits minus
// status.resources). Read from an informer's unstructured object; headroom never writes one.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/objects.hpp"
#include "adapters/k8s/queue.hpp"

namespace headroom::k8s {

inline const resource_kind nodepools{"karpenter.sh", "v1", "nodepools", false};

struct nodepool {
  std::string name;
  string_pairs labels;                             // spec.template.metadata.labels
  std::vector<selector_requirement> requirements;  // spec.template.spec.requirements
  std::vector<taint> taints;                       // spec.template.spec.taints (startupTaints go away)
  std::optional<resource_amounts> limits;          // spec.limits; nullopt: unlimited
  resource_amounts used;                           // status.resources: what its nodes already have
};

// Errors name the pool and the field. Amounts as in resource_amounts (cpu in milli).
decoded<nodepool> decode_nodepool(std::string_view json);

}  // namespace headroom::k8s
