#pragma once

// The configuration sections of headroom's modes, read from the same YAML file as the runtime's
// own (runtime/config.hpp) through a config_extension. Each mode's wiring reads its section here;
// nothing below app/ knows them.

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/config.hpp"
#include "runtime/config_reader.hpp"

namespace headroom::app {

using runtime::millis;

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
};

// GitHub: where the scale sets live. Credentials come from the environment only (never from a
// file that might be shared or logged): HEADROOM_GITHUB_TOKEN (a PAT), or HEADROOM_GITHUB_APP_ID,
// HEADROOM_GITHUB_APP_INSTALLATION_ID and HEADROOM_GITHUB_APP_PRIVATE_KEY (PEM text) or
// HEADROOM_GITHUB_APP_PRIVATE_KEY_FILE.
struct github_section {
  std::string config_url;  // https://github.com/<org>[/<repo>], …/enterprises/<slug>, or GHES
  std::string ca_file;     // extra trusted CA (PEM) for a GHES or test endpoint; "" = system CAs
};

// The HUD's queued-job demand (optional). The token comes from HEADROOM_HUD_TOKEN.
struct hud_section {
  std::string url;  // base URL; "" = no HUD, the monitor uses proactiveCapacity alone
  millis interval{30'000};
};

struct toleration_section {
  std::string key, op = "Equal", value, effect;
};

// A runner pod template.
struct runner_section {
  std::string image = "ghcr.io/actions/actions-runner:latest";
  std::vector<std::string> command{"/home/runner/run.sh"};
  std::string cpu = "1", memory = "2Gi";
  // Extended resources (a device plugin's, e.g. nvidia.com/gpu: "1"), whole numbers, as written;
  // requested and limited alike, since an extended resource cannot be overcommitted.
  std::vector<std::pair<std::string, std::string>> extended;
  std::vector<std::pair<std::string, std::string>> node_selector;
  std::vector<toleration_section> tolerations;
  std::string service_account;
  // The scheduler's only: the extended resource one runner takes (a device plugin's slots, as the
  // seed's one-runner-per-node); "" = none, capacity unchecked.
  std::string slot_resource = "headroom.dev/runner";
  int64_t active_deadline_seconds = 525'600;  // the seed's ~6 days; patched to 1 to kill
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
  runner_section runner;
  struct capacity_aware_section {
    bool enabled = true;
    uint32_t proactive_capacity = 0;  // the seed's default: no warm pairs without demand
    millis recalculate_interval{30'000};
    millis placeholder_ready_timeout{300'000};
    millis placeholder_ttl{900'000};  // 0: off
    std::string workflow_cpu = "2", workflow_memory = "4Gi";
    std::vector<std::pair<std::string, std::string>> workflow_extended;  // as runner_section::extended
    std::string placeholder_image = "busybox:1.36";
    // Empty: `sleep` for as long as a placeholder may live (placeholderTTL + 2 × placeholderReadyTimeout,
    // its activeDeadlineSeconds), or 900 s (the seed's self-termination) with placeholderTTL 0.
    std::vector<std::string> placeholder_command;
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

// Reactive metric-driven scaling (seed 001): workloads with a /scale subresource, scaled by one
// Prometheus metric each. Off while `targets` is empty. The Prometheus password or bearer token
// comes from the environment only: HEADROOM_PROMETHEUS_PASSWORD, HEADROOM_PROMETHEUS_TOKEN.
struct reactive_rules_section {
  millis evaluation_interval{60'000};
  millis scale_up_window{120'000};
  millis scale_down_window{300'000};
  double scale_down_threshold = 0.5;
  millis cooldown{180'000};
  millis resolution{15'000};  // the metric's sample spacing (its scrape interval); gaps are 2x this
  // How a step is written: "object" (one JSON patch on the object: the count, tested, and the
  // intent annotation together) when the kind's replicas path is known, else as "subresource"
  // (the annotation, then /scale: admission policies on <kind>/scale see the write).
  bool subresource_writes = false;
};

struct reactive_target_section {
  std::string api_version = "apps/v1", kind = "Deployment", ns = "default", name;  // scaleTargetRef
  uint32_t min_replicas = 1, max_replicas = 1;
  std::string metric;  // PromQL selecting exactly one series
  double target = 0;
  std::string tenant;  // a key of `quotas`, or "" for none
  reactive_rules_section rules;  // the defaults, overridden per target
};

struct reactive_section {
  struct prometheus_section {
    std::string url = "http://127.0.0.1:9090";
    std::string username;  // basic auth with HEADROOM_PROMETHEUS_PASSWORD
    std::string ca_file;
    millis timeout{10'000};
  } prometheus;
  reactive_rules_section defaults;
  std::vector<std::pair<std::string, uint32_t>> quotas;  // tenant → max replicas over its targets
  millis quota_reload_interval{10'000};                   // re-read of `quotas` from the file
  std::vector<reactive_target_section> targets;
};

// Gate-controlled scheduling (seed 002): pods opted in with the annotation
// headroom.dev/queue-allocation-gate: "true" and naming a Queue (label headroom.dev/queue) are gated
// at creation by the admission webhook and ungated when their Queue (headroom.dev/v1alpha1) has
// room. Off unless enabled.
struct gates_section {
  bool enabled = false;
  struct webhook_section {
    bool enabled = true;  // off: another replica or a test serves it; the controller still runs
    std::string listen = ":9443";
    std::string cert_file, key_file;  // PEM; re-read when they change
    millis cert_reload_interval{10'000};
    uint32_t threads = 16;  // each open keep-alive connection holds one
  } webhook;
  millis reservation_timeout{600'000};  // a Queue's spec.reservationTimeout overrides it
  millis resync_interval{30'000};
};

// Webhook-driven runner scheduling (seed 003): GitHub's workflow_job webhooks recorded in a
// durable store, matched to JIT runner pods by a reconcile loop, shown on dashboards. Off unless
// enabled. The webhook secret comes from HEADROOM_WEBHOOK_SECRET, the PostgreSQL connection string
// (when `store.postgres` is true) from HEADROOM_POSTGRES_DSN, GitHub credentials as for scale sets.
struct scheduler_section {
  bool enabled = false;
  std::string listen = ":8080";  // the webhook (POST /webhook) and the dashboards
  uint32_t threads = 8;
  uint32_t max_body = 1 << 20;
  std::string github_url = "https://github.com";  // or a GHES base URL
  struct store_section {
    std::string sqlite_path = "/var/lib/headroom/jobs.db";  // the embedded default
    bool postgres = false;                                    // HEADROOM_POSTGRES_DSN instead
    uint32_t pool = 10;
    // Final jobs and workers, and deliveries, older than this are deleted (hourly); 0 keeps all.
    millis retention{90 * 86'400'000LL};
  } store;
  std::string ns = "default";  // where runner pods go
  std::string runner_group = "headroom";  // ensured in each organization
  std::string name_prefix = "headroom-runner";
  // The labels its runners carry (GitHub gives every self-hosted runner `self-hosted` too). A job is
  // the scheduler's when its runner would take it, GitHub's rule: the runner has every label the job
  // asks for. Empty: every job that asks for `self-hosted` (never a GitHub-hosted one, such as
  // ubuntu-latest), each runner registered with its job's labels.
  std::vector<std::string> runner_labels;
  runner_section runner;
  uint32_t default_max_workers = 20;
  std::vector<std::pair<std::string, uint32_t>> max_workers;  // entity → cap
  millis poll_interval{15'000};
  millis job_sync_interval{15'000};      // each active job is checked with GitHub at most this often
  millis job_stuck_queued{600'000};
  millis registration_timeout{120'000};  // Running this long and not registered → killed
  millis pending_timeout{600'000};
  millis idle_timeout{600'000};
  millis pod_delete_grace{21'600'000};   // terminal pods are deleted after this (6 h)
  millis kill_grace{30'000};             // a killed pod still not terminal after this is deleted
};

// Every mode's section; passed to load_config / parse_config_yaml as their extension.
struct settings final : runtime::config_extension {
  bigfleet_section bigfleet;
  github_section github;
  hud_section hud;
  std::vector<scale_set_section> scale_sets;
  reactive_section reactive;
  gates_section gates;
  scheduler_section scheduler;

  std::vector<std::string> keys() const override;
  void read_reactive(const YAML::Node& node);
  void read_scheduler(const YAML::Node& node);
  void read(const std::string& key, const YAML::Node& node) override;
  void check() override;
};

// The `quotas` of a `reactive` section (also re-read on its own while running); config_fail on a problem.
std::vector<std::pair<std::string, uint32_t>> read_quotas(const YAML::Node& reactive);

// The runtime configuration and the modes' sections from YAML text (tests, check-config).
struct parsed_config {
  runtime::config runtime;
  settings modes;
};
std::variant<parsed_config, runtime::config_error> parse_config_yaml(std::string_view yaml,
                                                                     std::string_view origin = "config");

}  // namespace headroom::app
