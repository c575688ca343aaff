#include "app/settings.hpp"

#include <map>
#include <set>

namespace headroom::app {

settings::settings(std::span<const modes::registration> registry) {
  const auto shared_keys = modes::shared_sections::keys();
  std::set<std::string> owned{shared_keys.begin(), shared_keys.end()};
  for (const auto& r : registry) {
    auto m = r.make();
    // Two modes owning one key is a programming error, found by any test that reads a configuration.
    for (const auto& k : m->keys())
      if (!owned.insert(k).second)
        throw std::logic_error{"configuration key '" + k + "' is owned twice (mode " + std::string{r.name} + ")"};
    modes_.push_back(std::move(m));
  }
}

modes::mode* settings::find(std::string_view name) const {
  for (const auto& m : modes_)
    if (m->name() == name)
      return m.get();
  return nullptr;
}

std::vector<std::string> settings::keys() const {
  auto out = modes::shared_sections::keys();
  for (const auto& m : modes_)
    for (auto& k : m->keys())
      out.push_back(std::move(k));
  return out;
}

void settings::read(const std::string& key, const YAML::Node& node) {
  for (const auto& k : modes::shared_sections::keys())
    if (k == key)
      return shared.read(key, node);
  for (const auto& m : modes_)
    for (const auto& k : m->keys())
      if (k == key)
        return m->read(key, node);
}

void settings::check() {
  for (const auto& m : modes_)
    m->check(shared);
  // Runner pods are found by their headroom.dev/scale-set label: two owners of one name in one
  // namespace would adopt (and delete) each other's pods.
  std::map<std::pair<std::string, std::string>, std::string> claimed;
  for (const auto& m : modes_)
    for (const auto& c : m->runner_pods()) {
      auto [it, fresh] = claimed.emplace(std::pair{c.ns, c.name}, c.key);
      if (!fresh)
        runtime::config_fail(c.key, "'" + c.name + "' is also " + it->second + " in namespace " + c.ns +
                                        ": their runner pods would mix");
    }
}

std::variant<parsed_config, runtime::config_error> parse_config_yaml(std::string_view yaml, std::string_view origin,
                                                                     std::span<const modes::registration> registry) {
  parsed_config out{{}, settings{registry}};
  auto r = runtime::parse_config_yaml(yaml, origin, &out.modes);
  if (auto* e = std::get_if<runtime::config_error>(&r))
    return *e;
  out.runtime = std::get<runtime::config>(std::move(r));
  return out;
}

}  // namespace headroom::app
