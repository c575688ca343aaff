#pragma once

#include <string>
#include <variant>
#include <vector>

#include "runtime/config.hpp"

namespace headroom::runtime {

struct cli_command {
  enum kind { run, check_config, help, version, print_actor_tree, print_config_keys } what = run;
  std::string config_path;                            // --config FILE, check-config FILE, HEADROOM_CONFIG
  std::vector<std::pair<std::string, std::string>> flags;  // overrides, applied after the environment
};

std::variant<cli_command, config_error> parse_cli(const std::vector<std::string>& args);

// Applies flag overrides to a loaded config.
std::optional<config_error> apply_flags(config& cfg, const cli_command& cmd);

// File, then environment, then flags. A missing --config means built-in defaults.
config_result load_config(const cli_command& cmd, const std::map<std::string, std::string>& env,
                          config_extension* ext = nullptr);

std::string usage();

}  // namespace headroom::runtime
