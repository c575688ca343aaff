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
// (`--config` or HEADROOM_CONFIG), environment variables (HEADROOM_*), command-line flags.
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
  } kubernetes;
  struct leader_election_section {
    bool enabled = true;
    std::string ns = "kube-system";  // HEADROOM_NAMESPACE overrides (the Pod's own namespace)
    std::string name = "headroom";
    millis lease_duration{15'000};
    millis renew_deadline{10'000};
    millis retry_period{2'000};
  } leader_election;
  // The BigFleet operator (one outbound stream to a shard). Off unless enabled.
  struct bigfleet_section {
    bool enabled = false;
    std::string cluster_id;  // Hello.cluster_id; with mTLS also the client certificate's URI SAN
    std::string shard;       // host:port
    std::string tls_ca_file, tls_cert_file, tls_key_file, tls_server_name;  // all three files = mTLS
    millis rollup_interval{10'000};
    std::string bootstrap_template_file;  // "" = a minimal cloud-config comment
    std::string penalty_defaults_file;    // PriorityClass → penalties (YAML); "" = none
    bool capacity_requests = true;        // run the controller that makes one CR per Pod
  } bigfleet;
  // GitHub: where the scale sets live. Credentials come from the environment only (never from a
  // file that might be shared or logged): HEADROOM_GITHUB_TOKEN (a PAT), or HEADROOM_GITHUB_APP_ID,
  // HEADROOM_GITHUB_APP_INSTALLATION_ID and HEADROOM_GITHUB_APP_PRIVATE_KEY (PEM text) or
  // HEADROOM_GITHUB_APP_PRIVATE_KEY_FILE.
  struct github_section {
    std::string config_url;  // https://github.com/<org>[/<repo>], …/enterprises/<slug>, or GHES
    std::string ca_file;     // extra trusted CA (PEM) for a GHES or test endpoint; "" = system CAs
  } github;
  // The HUD's queued-job demand (optional). The token comes from HEADROOM_HUD_TOKEN.
  struct hud_section {
    std::string url;  // base URL; "" = no HUD, the monitor uses proactiveCapacity alone
    millis interval{30'000};
  } hud;
  struct toleration_section {
    std::string key, op = "Equal", value, effect;
  };
  // One runner scale set (the seed's Helm values, per scale set).
  struct scale_set_section {
    std::string name;
    std::string ns = "default";  // where its runner and placeholder pods live
    std::string runner_group = "default";
    std::vector<std::string> labels;  // extra labels; the name is always one
    uint32_t max_runners = 10;
    std::string mode = "standalone";   // standalone: headroom makes runner pods; arc: patches an EphemeralRunnerSet
    std::string ephemeral_runner_set;  // arc mode: its name in `ns`
    struct runner_section {
      std::string image = "ghcr.io/actions/actions-runner:latest";
      std::vector<std::string> command{"/home/runner/run.sh"};
      std::string cpu = "1", memory = "2Gi";
      std::vector<std::pair<std::string, std::string>> node_selector;
      std::vector<toleration_section> tolerations;
      std::string service_account;
    } runner;
    struct capacity_aware_section {
      bool enabled = true;
      uint32_t proactive_capacity = 1;
      millis recalculate_interval{30'000};
      millis placeholder_ready_timeout{300'000};
      std::string workflow_cpu = "2", workflow_memory = "4Gi";
      std::string placeholder_image = "busybox:1.36";
      std::vector<std::string> placeholder_command{"sleep", "900"};
      // A capacity change cancels the held poll and re-polls with the new value (false: the stock
      // behaviour, the capacity is read only when the next poll starts; for comparison).
      bool repoll_on_change = true;
    } capacity_aware;
    struct health_section {
      millis interval{30'000};
      millis registration_timeout{120'000};  // Running this long and not registered → replaced
      millis pending_timeout{600'000};       // Pending this long → replaced
      millis idle_timeout{600'000};          // registered, no job this long → removed
      millis terminal_grace{60'000};         // a finished runner pod is deleted after this
    } health;
  };
  std::vector<scale_set_section> scale_sets;
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

// Parses YAML text; `origin` names the file in error messages.
config_result parse_config_yaml(std::string_view yaml, std::string_view origin = "config");
config_result load_config_file(const std::string& path);

// Overrides from the environment (HEADROOM_LOG_LEVEL, HEADROOM_METRICS_ADDR,
// HEADROOM_SCHEDULER_THREADS, HEADROOM_SHUTDOWN_TIMEOUT). `env` maps names to values.
std::optional<config_error> apply_env(config& cfg, const std::map<std::string, std::string>& env);
std::map<std::string, std::string> process_env();

// Go-style durations: "300ms", "1.5s", "1m30s", "2h". Negative values are rejected.
std::optional<millis> parse_duration(std::string_view text);
std::string format_duration(millis d);

// host:port with a numeric port 0..65535.
std::optional<std::string> check_listen_address(std::string_view text);

}  // namespace headroom::runtime
