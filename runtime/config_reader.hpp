#pragma once

// Reading headroom's YAML configuration, for runtime/config.cpp and for the layers above that own
// a section of their own (app/: each mode's section). A problem ends the parse with one
// config_error naming the key path.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/config.hpp"

namespace headroom::runtime {

// Thrown by the readers below; parse_config_yaml turns it into its result.
struct config_failure {
  config_error error;
};

[[noreturn]] void config_fail(std::string path, std::string problem);

// "a mapping", "a list", "a scalar", "null": for messages.
std::string yaml_kind(const YAML::Node& n);

// What the readers accept, recorded as they read: the source of the chart's values.schema.json
// (`config:`) and of docs/configuration.md (`headroom --print-config-keys`, scripts/gen-config-docs).
// Paths name list items `[]`: scaleSets[].capacityAware.enabled.
struct config_key {
  std::string type;  // integer, number, boolean, duration, string, strings, string-map, integer-map, quantities
  std::string min, max, default_value;  // "" when none or unknown
};
struct config_schema {
  std::map<std::string, std::set<std::string>> sections;  // a mapping's path → the keys it accepts
  std::map<std::string, config_key> keys;                 // a key read by a read_* (or described)
};

// While one is alive, every config_section on this thread records into `into`.
class config_recording {
 public:
  explicit config_recording(config_schema& into);
  ~config_recording();
  config_recording(const config_recording&) = delete;
  config_recording& operator=(const config_recording&) = delete;

 private:
  config_schema* previous_;
};

// For a key read by hand (a map of quantities, a map of counts): what it holds, for the schema.
void describe_config_key(const std::string& path, config_key key);

// Walks one mapping: every key must be known (an unknown one fails, with the nearest known key as
// a hint); each read_* leaves `out` as it was when the key is absent or null.
class config_section {
 public:
  config_section(const YAML::Node& node, std::string path, std::set<std::string> known);

  std::optional<YAML::Node> get(const std::string& key) const;
  std::string path(const std::string& key) const;

  void read_uint(const std::string& key, uint32_t& out, uint32_t min, uint32_t max) const;
  void read_duration(const std::string& key, millis& out, millis min, millis max) const;
  void read_double(const std::string& key, double& out, double min, double max) const;
  void read_bool(const std::string& key, bool& out) const;
  std::vector<std::string> read_strings(const std::string& key) const;
  std::vector<std::pair<std::string, std::string>> read_string_map(const std::string& key) const;
  std::optional<std::string> read_string(const std::string& key) const;

 private:
  YAML::Node node_;
  std::string path_;
};

// The top-level keys a layer above the runtime owns (a mode's sections). parse_config_yaml accepts
// them beside its own, hands each present one to read() in keys() order, then calls check().
class config_extension {
 public:
  virtual ~config_extension() = default;
  virtual std::vector<std::string> keys() const = 0;
  virtual void read(const std::string& key, const YAML::Node& node) = 0;  // config_fail on a problem
  virtual void check() {}  // rules across sections
};

}  // namespace headroom::runtime
