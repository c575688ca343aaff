// The scale sets' configuration section (app/settings.cpp) and the spec the wiring builds from it
// (app/scale_sets.cpp): defaults, and errors that name the key.
#include <gtest/gtest.h>

#include "app/scale_sets.hpp"
#include "app/settings.hpp"

namespace headroom::app {
namespace {

TEST(capacity_model, spec_rejects_bad_quantities_by_key) {
  scale_set_section c;
  c.name = "linux";
  c.capacity_aware.workflow_cpu = "two";
  auto s = make_spec(c, 3);
  ASSERT_TRUE(std::holds_alternative<std::string>(s));
  EXPECT_NE(std::get<std::string>(s).find("scaleSets[3].capacityAware.workflowResources.cpu"), std::string::npos)
      << std::get<std::string>(s);
}

TEST(capacity_config, scale_sets_parse_with_defaults) {
  auto r = parse_config_yaml(R"(
github: {configUrl: "https://github.com/org"}
scaleSets:
  - name: linux
    namespace: runners
    maxRunners: 7
    labels: [gpu]
    capacityAware: {proactiveCapacity: 3, recalculateInterval: 10s, workflowResources: {cpu: "4"}}
)");
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << std::get<runtime::config_error>(r).message();
  const auto& cfg = std::get<parsed_config>(r).modes;
  ASSERT_EQ(cfg.scale_sets.size(), 1u);
  const auto& s = cfg.scale_sets[0];
  EXPECT_EQ(s.max_runners, 7u);
  EXPECT_EQ(s.capacity_aware.proactive_capacity, 3u);
  EXPECT_EQ(s.capacity_aware.workflow_cpu, "4");
  EXPECT_EQ(s.capacity_aware.workflow_memory, "4Gi");
  EXPECT_TRUE(s.capacity_aware.enabled);
  EXPECT_EQ(s.mode, "standalone");
}

TEST(capacity_config, scale_set_errors_name_the_key) {
  auto error_of = [](const char* yaml) {
    auto r = parse_config_yaml(yaml);
    return std::holds_alternative<runtime::config_error>(r) ? std::get<runtime::config_error>(r).message() : std::string{};
  };
  EXPECT_NE(error_of("scaleSets: [{name: linux}]").find("github.configUrl"), std::string::npos);
  EXPECT_NE(error_of("github: {configUrl: x}\nscaleSets: [{name: Linux}]").find("scaleSets[0].name"), std::string::npos);
  EXPECT_NE(error_of("github: {configUrl: x}\nscaleSets: [{name: a}, {name: a}]").find("scaleSets[1].name"), std::string::npos);
  EXPECT_NE(error_of("github: {configUrl: x}\nscaleSets: [{name: a, mode: arc}]").find("ephemeralRunnerSet"), std::string::npos);
  EXPECT_NE(error_of("github: {configUrl: x}\nscaleSets: [{name: a, capacityAware: {proactivCapacity: 1}}]")
                .find("did you mean 'proactiveCapacity'"),
            std::string::npos);
}

}  // namespace
}  // namespace headroom::app
