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

// Where `kind`'s replica count lives in the object itself, as a JSON pointer ("/spec/replicas"):
// what lets the reactive scaler write the count and its intent annotation in one atomic JSON
// patch instead of two writes. Known for the built-in workloads with /scale (apps Deployment,
// StatefulSet, ReplicaSet; core ReplicationController); nullopt for any other kind, whose path is
// its CustomResourceDefinition's (crd_replicas_pointer).
std::optional<std::string> builtin_replicas_pointer(const resource_kind& kind);

// `key` as one JSON-pointer token (RFC 6901): "~" → "~0", "/" → "~1".
std::string json_pointer_escape(std::string_view key);

// The CRD name that defines `kind`: "<plural>.<group>".
std::string crd_name(const resource_kind& kind);

// From a CustomResourceDefinition `json`: version `version`'s subresources.scale.specReplicasPath
// (a dotted path under .spec, no array notation, as the API server requires) as a JSON pointer.
// nullopt with `error` set when the body is malformed, the version is not served with a /scale,
// or the path is not a plain dotted one.
std::optional<std::string> crd_replicas_pointer(std::string_view json, std::string_view version, std::string& error);

}  // namespace headroom::k8s
