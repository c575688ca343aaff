#pragma once

// The modes' configuration: every registered mode's sections and the shared ones, read from the
// same YAML file as the runtime's own (runtime/config.hpp) through a config_extension. The keys,
// their did-you-mean hints and the rules across modes come from the registry (app/registry.hpp).

#include <memory>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "app/registry.hpp"
#include "modes/mode.hpp"
#include "runtime/config.hpp"
#include "runtime/config_reader.hpp"

namespace headroom::app {

class settings final : public runtime::config_extension {
 public:
  // One instance of each registered mode, in the registry's order.
  explicit settings(std::span<const modes::registration> registry = builtin_modes());

  modes::shared_sections shared;

  std::vector<std::string> keys() const override;
  void read(const std::string& key, const YAML::Node& node) override;
  void check() override;

  const std::vector<std::unique_ptr<modes::mode>>& all() const { return modes_; }
  modes::mode* find(std::string_view name) const;
  // The mode of type M (tests, tools); throws std::out_of_range when it is not registered.
  template <class M>
  M& get() const {
    for (const auto& m : modes_)
      if (auto* p = dynamic_cast<M*>(m.get()))
        return *p;
    throw std::out_of_range{"mode not registered"};
  }

 private:
  std::vector<std::unique_ptr<modes::mode>> modes_;
};

// The runtime configuration and the modes' sections from YAML text (tests, check-config).
struct parsed_config {
  runtime::config runtime;
  settings modes;
};
std::variant<parsed_config, runtime::config_error> parse_config_yaml(std::string_view yaml, std::string_view origin = "config",
                                                                     std::span<const modes::registration> registry = builtin_modes());

}  // namespace headroom::app
