#pragma once

// Reading headroom's YAML configuration, for runtime/config.cpp and for the layers above that own
// a section of their own (app/: each mode's section). A problem ends the parse with one
// config_error naming the key path.

#include <yaml-cpp/yaml.h>

#include <cstdint>
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
