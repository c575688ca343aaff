#include "runtime/cli.hpp"

#include <algorithm>

namespace headroom::runtime {

namespace {

// Flags that take a value, mapped onto the environment variable with the same meaning so both
// sources share one validation path.
const std::vector<std::pair<std::string, std::string>> value_flags = {
    {"--log-level", "HEADROOM_LOG_LEVEL"},
    {"--metrics-addr", "HEADROOM_METRICS_ADDR"},
    {"--scheduler-threads", "HEADROOM_SCHEDULER_THREADS"},
    {"--shutdown-timeout", "HEADROOM_SHUTDOWN_TIMEOUT"},
    {"--kubeconfig", "HEADROOM_KUBECONFIG"},
};

}  // namespace

std::string usage() {
  return R"(usage: headroom [flags]                 run the capacity agent
       headroom check-config FILE        validate a config file and exit (0 valid, 2 invalid)
       headroom --help | --version
       headroom --print-actor-tree       the actor tree of every mode this binary has
       headroom --print-config-keys FILE every key the readers accept, read from FILE (for the docs)

flags (each overrides the config file and the environment):
  --config FILE              YAML configuration (env HEADROOM_CONFIG)
  --log-level LEVEL          debug | info | warn | error | off (env HEADROOM_LOG_LEVEL)
  --metrics-addr HOST:PORT   /metrics, /healthz, /readyz; port 0 picks a free port
                             (env HEADROOM_METRICS_ADDR, default 127.0.0.1:9090)
  --scheduler-threads N      actor scheduler threads, 0 = one per core (env HEADROOM_SCHEDULER_THREADS)
  --shutdown-timeout DUR     per-child stop deadline on SIGTERM, e.g. 10s (env HEADROOM_SHUTDOWN_TIMEOUT)
  --kubeconfig FILE          the cluster to act on (env HEADROOM_KUBECONFIG); without it headroom uses
                             the in-cluster service account when KUBERNETES_SERVICE_HOST is set

exit codes: 0 stopped cleanly, 1 runtime failure, 2 invalid configuration or usage
)";
}

std::variant<cli_command, config_error> parse_cli(const std::vector<std::string>& args) {
  cli_command cmd;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_value = true;
      }
    }
    auto take_value = [&]() -> std::optional<config_error> {
      if (has_value)
        return std::nullopt;
      if (i + 1 >= args.size())
        return config_error{arg, "needs a value"};
      value = args[++i];
      return std::nullopt;
    };
    if (arg == "--help" || arg == "-h") {
      cmd.what = cli_command::help;
    } else if (arg == "--version") {
      cmd.what = cli_command::version;
    } else if (arg == "--print-actor-tree") {
      cmd.what = cli_command::print_actor_tree;
    } else if (arg == "--print-config-keys") {
      if (auto e = take_value())
        return *e;
      cmd.what = cli_command::print_config_keys;
      cmd.config_path = value;
    } else if (arg == "check-config") {
      if (i + 1 >= args.size())
        return config_error{"check-config", "needs a file"};
      cmd.what = cli_command::check_config;
      cmd.config_path = args[++i];
    } else if (arg == "--config") {
      if (auto e = take_value())
        return *e;
      cmd.config_path = value;
    } else {
      auto known = std::find_if(value_flags.begin(), value_flags.end(), [&](const auto& f) { return f.first == arg; });
      if (known == value_flags.end())
        return config_error{arg, "unknown flag or command (see headroom --help)"};
      if (auto e = take_value())
        return *e;
      cmd.flags.emplace_back(arg, value);
    }
  }
  return cmd;
}

std::optional<config_error> apply_flags(config& cfg, const cli_command& cmd) {
  for (const auto& entry : cmd.flags) {
    const std::string& flag = entry.first;
    const std::string& value = entry.second;
    auto known = std::find_if(value_flags.begin(), value_flags.end(), [&](const auto& f) { return f.first == flag; });
    if (auto err = apply_env(cfg, {{known->second, value}})) {
      err->path = flag;
      return err;
    }
  }
  return std::nullopt;
}

config_result load_config(const cli_command& cmd, const std::map<std::string, std::string>& env,
                          config_extension* ext) {
  std::string path = cmd.config_path;
  if (path.empty())
    if (auto it = env.find("HEADROOM_CONFIG"); it != env.end())
      path = it->second;
  config_result loaded = path.empty() ? config_result{config{}} : load_config_file(path, ext);
  if (std::holds_alternative<config_error>(loaded))
    return loaded;
  auto& cfg = std::get<config>(loaded);
  if (auto err = apply_env(cfg, env))
    return *err;
  if (auto err = apply_flags(cfg, cmd))
    return *err;
  return loaded;
}

}  // namespace headroom::runtime
