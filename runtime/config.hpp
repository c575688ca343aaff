#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/log.hpp"

namespace headroom::runtime {

using millis = std::chrono::milliseconds;

// headroom's runtime configuration. Sources, later ones winning: built-in defaults, the YAML file
// (`--config` or HEADROOM_CONFIG), environment variables (HEADROOM_*), command-line flags. Each
// mode's own section (scale sets, BigFleet, …) belongs to the layer that wires the mode (app/),
// which reads it from the same file through a config_extension (runtime/config_reader.hpp).
struct config {
  struct runtime_section {
    uint32_t scheduler_threads = 0;  // 0: one per core
    uint32_t max_throughput = 300;   // messages an actor handles before yielding its thread
    millis shutdown_timeout{10'000}; // per child, while supervisors stop in reverse order
  } runtime;
  struct logging_section {
    log_level level = log_level::info;
  } logging;
  struct http_section {
    std::string listen = "127.0.0.1:9090";  // /metrics, /healthz, /readyz; port 0 = any free port
  } http;
  struct supervision_section {
    uint32_t max_restarts = 5;      // more restarts than this within the window → escalate
    millis restart_window{60'000};
    millis backoff_initial{100};
    millis backoff_max{30'000};
  } supervision;
  struct kubernetes_section {
    // "" with KUBERNETES_SERVICE_HOST set: the in-cluster service account; "" otherwise: no
    // cluster (the agent runs its runtime only, as scripts/demo does).
    std::string kubeconfig;
    std::string context;
    uint32_t qps = 50;
    uint32_t burst = 100;
    // A watch that delivers nothing, not even a bookmark, for this long is dropped and resumed:
    // a stream a proxy or a half-dead connection silenced would otherwise blind its informer
    // until the server's own timeout (5-10 min). The apiserver sends a bookmark about every
    // minute, so the default leaves half a minute of slack.
    millis watch_stall_timeout{90'000};
  } kubernetes;
  struct leader_election_section {
    bool enabled = true;
    std::string ns = "kube-system";  // HEADROOM_NAMESPACE overrides (the Pod's own namespace)
    std::string name = "headroom";
    millis lease_duration{15'000};
    millis renew_deadline{10'000};
    millis retry_period{2'000};
  } leader_election;
  std::string source;  // where the file came from, for logs ("" = defaults only)
};

// What is wrong and where: `path` is a YAML key path (runtime.schedulerThreads), an environment
// variable or a flag; values of secret keys are never echoed.
struct config_error {
  std::string path;
  std::string problem;
  std::string message() const { return path.empty() ? problem : path + ": " + problem; }
};

using config_result = std::variant<config, config_error>;

class config_extension;

// Parses YAML text; `origin` names the file in error messages. `ext`, when given, owns more
// top-level keys and reads them (an unknown key is an error either way).
config_result parse_config_yaml(std::string_view yaml, std::string_view origin = "config", config_extension* ext = nullptr);
config_result load_config_file(const std::string& path, config_extension* ext = nullptr);

// Overrides from the environment (HEADROOM_LOG_LEVEL, HEADROOM_METRICS_ADDR,
// HEADROOM_SCHEDULER_THREADS, HEADROOM_SHUTDOWN_TIMEOUT). `env` maps names to values.
std::optional<config_error> apply_env(config& cfg, const std::map<std::string, std::string>& env);
// The process's HEADROOM_* variables, and HUD_API_TOKEN (the design's name for the HUD's token).
std::map<std::string, std::string> process_env();

// Go-style durations: "300ms", "1.5s", "1m30s", "2h". Negative values are rejected.
std::optional<millis> parse_duration(std::string_view text);
std::string format_duration(millis d);

// host:port with a numeric port 0..65535.
std::optional<std::string> check_listen_address(std::string_view text);

}  // namespace headroom::runtime
