// A mode that exists only in this test binary: adding a mode is its folder (here, this file), one
// registry line and its build target. Everything that loops over the registry takes it without
// another change: the settings reader (its keys, their did-you-mean hints, the rules across
// modes), build_agent (prepare, every-replica and leader-only children) and the actor tree.
#include <caf/all.hpp>
#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "app/agent.hpp"
#include "app/settings.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"

namespace headroom::app {
namespace {

// ---- the mode ---------------------------------------------------------------------------------

struct echo_section {
  bool enabled = false;
  std::string greeting = "hello";
  std::string runner_name;  // claims runner pods by this name in `default`, to test the rule across modes
};

// What its actor saw, for the test to read.
struct echo_journal {
  std::promise<std::string> started;
  std::vector<std::string> prepared_with;
};

caf::behavior echo_actor(caf::event_based_actor*, std::string greeting, std::shared_ptr<echo_journal> j) {
  j->started.set_value(std::move(greeting));
  return {[](int32_t x) { return x; }};
}

class echo_mode final : public modes::mode {
 public:
  echo_section config;
  static inline std::shared_ptr<echo_journal> journal;

  std::string_view name() const override { return "echo"; }
  std::string_view summary() const override { return "the echo mode"; }
  std::vector<std::string> keys() const override { return {"echo"}; }
  void read(const std::string&, const YAML::Node& node) override {
    runtime::config_section s{node, "echo", {"enabled", "greeting", "runnerName"}};
    s.read_bool("enabled", config.enabled);
    if (auto v = s.read_string("greeting"))
      config.greeting = *v;
    if (auto v = s.read_string("runnerName"))
      config.runner_name = *v;
  }
  bool enabled() const override { return config.enabled; }
  std::string_view switch_key() const override { return "echo.enabled"; }
  bool needs_cluster() const override { return false; }
  std::vector<modes::runner_claim> runner_pods() const override {
    if (config.runner_name.empty())
      return {};
    return {{"default", config.runner_name, "echo.runnerName"}};
  }
  std::optional<modes::start_problem> prepare(const modes::services& s) override {
    if (config.greeting.empty())
      return modes::start_problem{"echo.greeting: must not be empty"};
    journal->prepared_with.push_back(s.api == nullptr ? "no cluster" : "a cluster");
    return std::nullopt;
  }
  std::optional<runtime::child_spec> leader_only(const runtime::config& cfg, runtime::metrics& m,
                                                 runtime::readiness& ready) override {
    runtime::child_spec echo;
    echo.name = "echo";
    // Spawned with its arguments: CAF 0.17 spawning a lambda that takes none dereferences a null
    // argument tuple (UBSan reports it).
    echo.start = [greeting = config.greeting, j = journal](caf::actor_system& sys) { return sys.spawn(echo_actor, greeting, j); };
    std::vector<runtime::child_spec> children;
    children.push_back(std::move(echo));
    return runtime::supervisor_child(runtime::supervisor_options_from(cfg, "echo", &m, &ready), std::move(children));
  }
  std::vector<modes::tree_line> leader_only_tree() const override { return {{0, "echo (supervisor)"}, {1, "echo"}}; }
};

std::unique_ptr<modes::mode> make_echo() { return std::make_unique<echo_mode>(); }

// ---- the one registry line ----------------------------------------------------------------------

std::vector<modes::registration> with_echo() {
  std::vector<modes::registration> r{builtin_modes().begin(), builtin_modes().end()};
  r.push_back({"echo", &make_echo});
  return r;
}

struct echo_fixture : ::testing::Test {
  echo_fixture() { echo_mode::journal = std::make_shared<echo_journal>(); }
  ~echo_fixture() override { echo_mode::journal.reset(); }
  std::vector<modes::registration> registry = with_echo();
};

std::string error_of(const std::variant<parsed_config, runtime::config_error>& r) {
  return std::holds_alternative<runtime::config_error>(r) ? std::get<runtime::config_error>(r).message() : std::string{};
}

TEST_F(echo_fixture, its_section_is_read_only_where_it_is_registered) {
  auto r = parse_config_yaml("echo: {enabled: true, greeting: hi}\n", "config", registry);
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << error_of(r);
  EXPECT_EQ(std::get<parsed_config>(r).modes.get<echo_mode>().config.greeting, "hi");
  EXPECT_TRUE(std::get<parsed_config>(r).modes.find("echo")->enabled());

  // The headroom binary's registry does not have it: `echo` is an unknown key there.
  EXPECT_NE(error_of(parse_config_yaml("echo: {enabled: true}\n")).find("echo"), std::string::npos);
}

TEST_F(echo_fixture, its_keys_get_the_same_errors_and_hints_as_every_other_mode) {
  EXPECT_NE(error_of(parse_config_yaml("ecoh: {enabled: true}\n", "config", registry)).find("did you mean 'echo'"),
            std::string::npos)
      << error_of(parse_config_yaml("ecoh: {enabled: true}\n", "config", registry));
  const auto e = error_of(parse_config_yaml("echo: {greting: hi}\n", "config", registry));
  EXPECT_NE(e.find("echo.greting"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'greeting'"), std::string::npos) << e;
}

TEST_F(echo_fixture, the_rule_across_modes_sees_its_runner_pods) {
  const auto e = error_of(parse_config_yaml(R"(
github: {configUrl: "https://github.com/org"}
scaleSets: [{name: linux}]
echo: {runnerName: linux}
)",
                                            "config", registry));
  EXPECT_NE(e.find("echo.runnerName"), std::string::npos) << e;
  EXPECT_NE(e.find("scaleSets[0].name"), std::string::npos) << e;
  EXPECT_NE(e.find("would mix"), std::string::npos) << e;
}

TEST_F(echo_fixture, build_agent_prepares_it_and_runs_its_subtree_under_acting) {
  auto r = parse_config_yaml("echo: {enabled: true, greeting: bonjour}\n", "config", registry);
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << error_of(r);
  auto& parsed = std::get<parsed_config>(r);
  runtime::metrics m;  // outlive the actor system, which the supervisors report to
  runtime::readiness ready;
  caf::actor_system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto built = build_agent(parsed.runtime, parsed.modes, sys, m, ready, {}, runtime::real_clock());
  ASSERT_TRUE(std::holds_alternative<runtime::agent_plan>(built)) << std::get<runtime::start_failure>(built).message;
  auto& plan = std::get<runtime::agent_plan>(built);
  EXPECT_EQ(echo_mode::journal->prepared_with, std::vector<std::string>{"no cluster"});
  ASSERT_EQ(plan.children.size(), 1u) << "no cluster: only `acting`";
  auto acting = plan.children[0].start(sys);
  auto started = echo_mode::journal->started.get_future();
  ASSERT_EQ(started.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "the echo actor never started";
  EXPECT_EQ(started.get(), "bonjour");
  caf::scoped_actor self{sys};
  self->monitor(acting);
  self->send_exit(acting, caf::exit_reason::user_shutdown);
  bool down = false;
  self->receive([&down](const caf::down_msg&) { down = true; }, caf::after(std::chrono::seconds(15)) >> [] {});
  EXPECT_TRUE(down) << "acting stops its mode's subtree";
}

TEST_F(echo_fixture, a_failed_prepare_stops_the_start_with_its_message) {
  auto r = parse_config_yaml("echo: {enabled: true, greeting: \"\"}\n", "config", registry);
  ASSERT_TRUE(std::holds_alternative<parsed_config>(r)) << error_of(r);
  auto& parsed = std::get<parsed_config>(r);
  runtime::metrics m;  // outlive the actor system, which the supervisors report to
  runtime::readiness ready;
  caf::actor_system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto built = build_agent(parsed.runtime, parsed.modes, sys, m, ready, {}, runtime::real_clock());
  ASSERT_TRUE(std::holds_alternative<runtime::start_failure>(built));
  EXPECT_EQ(std::get<runtime::start_failure>(built).message, "echo.greeting: must not be empty");
  EXPECT_EQ(std::get<runtime::start_failure>(built).exit_code, 2);
}

TEST_F(echo_fixture, the_actor_tree_shows_its_subtree_under_acting) {
  const auto tree = actor_tree(settings{registry});
  EXPECT_NE(tree.find("    └── acting (supervisor)\n"), std::string::npos) << tree;
  EXPECT_NE(tree.find("        └── echo (supervisor)\n            └── echo\n"), std::string::npos) << tree;
  EXPECT_EQ(actor_tree(settings{}).find("echo"), std::string::npos) << "only where it is registered";
}

}  // namespace
}  // namespace headroom::app
