#include <cstdio>
#include <string>
#include <vector>

#include "app/agent.hpp"
#include "runtime/app.hpp"
#include "runtime/cli.hpp"
#include "runtime/secrets.hpp"

#ifndef HEADROOM_VERSION
#define HEADROOM_VERSION "dev"
#endif

using namespace headroom::runtime;

namespace {

int invalid_config(const config_error& err) {
  // One line, naming the key and the problem; the message passes the secret registry too.
  std::fprintf(stderr, "headroom: invalid configuration: %s\n", redact(err.message()).c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = parse_cli(args);
  if (auto* err = std::get_if<config_error>(&parsed)) {
    std::fprintf(stderr, "headroom: %s\n%s", err->message().c_str(), usage().c_str());
    return 2;
  }
  const auto& cmd = std::get<cli_command>(parsed);
  if (cmd.what == cli_command::help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (cmd.what == cli_command::version) {
    std::printf("headroom %s\n", HEADROOM_VERSION);
    return 0;
  }
  if (cmd.what == cli_command::check_config) {
    headroom::app::settings modes;
    auto loaded = load_config_file(cmd.config_path, &modes);
    if (auto* err = std::get_if<config_error>(&loaded))
      return invalid_config(*err);
    std::printf("%s: valid\n", cmd.config_path.c_str());
    return 0;
  }
  // The runtime's sections, and each mode's (app/settings.hpp), from one file.
  headroom::app::settings modes;
  auto loaded = load_config(cmd, process_env(), &modes);
  if (auto* err = std::get_if<config_error>(&loaded))
    return invalid_config(*err);
  block_shutdown_signals();
  return run_agent(std::get<config>(loaded),
                   [&modes](const config& cfg, caf::actor_system& sys, metrics& m, readiness& ready) {
                     return headroom::app::build_agent(cfg, modes, sys, m, ready);
                   });
}
