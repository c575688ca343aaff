#pragma once

// A YAML node as JSON, for configuration that is a Kubernetes object (a runner pool's pod
// template): the API server takes JSON, and yaml-cpp has no writer for it. Written by hand because
// neither library converts; RapidJSON writes (escaping), this walk decides each scalar's type.
//
// Scalars follow YAML 1.2's core schema, as kubectl's YAML decoder does: a quoted scalar is a
// string; a plain one is null (null, ~, empty), a boolean (true/false, any case), an integer
// (decimal; 0x hex; 0o or a leading 0 octal, as kubectl reads `defaultMode: 0644`), a float (with . or e, .inf, .nan), else a string. So `privileged: true` is
// a boolean and `value: "1"` a string, as Kubernetes expects.

#include <string>
#include <variant>

#include <yaml-cpp/yaml.h>

namespace headroom::runtime {

struct yaml_json_error {
  std::string where;    // the path below the converted node, e.g. spec.containers[1].env
  std::string message;  // what is wrong there
};

// `node` as compact JSON, or where and why it cannot be (a key that is not a scalar, a nesting
// deeper than max_depth).
std::variant<std::string, yaml_json_error> yaml_to_json(const YAML::Node& node, int max_depth = 64);

}  // namespace headroom::runtime
