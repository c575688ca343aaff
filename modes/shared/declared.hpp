#pragma once

// What users declare as objects (ScaleSet, ReactiveTarget, RunnerPool): each kind's spec is an
// entry of the configuration file read by that entry's own reader, so the file and the objects
// accept the same things and refuse them with the same messages, the path starting at `spec`.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace headroom::modes {

// The object's identity.
struct declared_object {
  std::string name, ns, uid;
  int64_t generation = 0;
};

// Reads the object's metadata into `meta` and hands its spec (a mapping; {} when absent) to
// `read`, which may give an error of its own or fail as a configuration reader does
// (runtime::config_fail under "spec"); either way, and for a spec that is not YAML, the message
// is returned. A "spec.name:" failure is about metadata.name, where the entry's name comes from.
std::optional<std::string> read_declared(std::string_view object_json, std::string_view kind, declared_object& meta,
                                         const std::function<std::optional<std::string>(YAML::Node& spec)>& read);

}  // namespace headroom::modes
