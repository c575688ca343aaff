#include "runtime/cli.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

using namespace headroom::runtime;

namespace {
cli_command parse(std::vector<std::string> args) {
  auto r = parse_cli(args);
  EXPECT_TRUE(std::holds_alternative<cli_command>(r));
  return std::holds_alternative<cli_command>(r) ? std::get<cli_command>(r) : cli_command{};
}
}  // namespace

TEST(cli, parses_commands_and_flags) {
  EXPECT_EQ(parse({"--help"}).what, cli_command::help);
  EXPECT_EQ(parse({"--version"}).what, cli_command::version);
  auto check = parse({"check-config", "x.yaml"});
  EXPECT_EQ(check.what, cli_command::check_config);
  EXPECT_EQ(check.config_path, "x.yaml");
  auto run = parse({"--config=a.yaml", "--log-level", "debug", "--metrics-addr=127.0.0.1:0"});
  EXPECT_EQ(run.config_path, "a.yaml");
  ASSERT_EQ(run.flags.size(), 2u);
}

TEST(cli, unknown_flag_and_missing_value_are_errors) {
  auto r = parse_cli({"--frobnicate"});
  ASSERT_TRUE(std::holds_alternative<config_error>(r));
  EXPECT_EQ(std::get<config_error>(r).path, "--frobnicate");
  r = parse_cli({"--log-level"});
  ASSERT_TRUE(std::holds_alternative<config_error>(r));
  EXPECT_EQ(std::get<config_error>(r).message(), "--log-level: needs a value");
}

// Precedence: defaults < file < environment < flags.
TEST(cli, flags_win_over_environment_over_file) {
  const std::string path = ::testing::TempDir() + "/headroom-cli-test.yaml";
  std::ofstream{path} << "logging: {level: error}\nhttp: {listen: \"127.0.0.1:1111\"}\n";
  auto cmd = parse({"--config", path, "--log-level", "debug"});
  auto r = load_config(cmd, {{"HEADROOM_LOG_LEVEL", "warn"}, {"HEADROOM_METRICS_ADDR", "127.0.0.1:2222"}});
  ASSERT_TRUE(std::holds_alternative<config>(r));
  const auto& c = std::get<config>(r);
  EXPECT_EQ(c.logging.level, log_level::debug);      // flag
  EXPECT_EQ(c.http.listen, "127.0.0.1:2222");         // environment over file
  std::remove(path.c_str());
}

TEST(cli, bad_flag_value_names_the_flag) {
  auto cmd = parse({"--scheduler-threads", "lots"});
  auto r = load_config(cmd, {});
  ASSERT_TRUE(std::holds_alternative<config_error>(r));
  EXPECT_EQ(std::get<config_error>(r).message(), "--scheduler-threads: expected an integer from 0 to 256, found 'lots'");
}

TEST(cli, missing_config_file_is_a_clear_error) {
  auto r = load_config(parse({"--config", "/nonexistent/headroom.yaml"}), {});
  ASSERT_TRUE(std::holds_alternative<config_error>(r));
  EXPECT_EQ(std::get<config_error>(r).message(), "/nonexistent/headroom.yaml: cannot open: No such file or directory");
}
