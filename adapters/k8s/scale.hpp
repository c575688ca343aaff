#pragma once

// The /scale subresource (autoscaling/v1 Scale) of any workload that has one (Deployment,
// StatefulSet, ReplicaSet, a custom resource with `subresources.scale`), and discovery of the REST
// collection that serves a kind: what the reactive scaler reads and writes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/decode.hpp"

namespace headroom::k8s {

struct scale {
  std::string resource_version;
  int32_t spec_replicas = 0;
  int32_t status_replicas = 0;
  std::string selector;  // status.selector: the label selector of the workload's pods, "" if none
};

decoded<scale> decode_scale(std::string_view json);

// A PUT body for /scale: replicas, with the resourceVersion as the precondition ("" = none).
std::string encode_scale(std::string_view ns, std::string_view name, std::string_view resource_version, int32_t replicas);

// The REST collection serving `kind` in the APIResourceList `json` of `api_version` ("apps/v1",
// "v1"), and whether it has a /scale subresource; nullopt with `error` set when it is not served.
struct found_resource {
  resource_kind kind;
  bool has_scale = false;
};
std::optional<found_resource> find_resource(std::string_view json, std::string_view api_version, std::string_view kind,
                                            std::string& error);

}  // namespace headroom::k8s
