#pragma once

// The `scaleSets` and `hud` sections (and `github.configUrl`, read by the settings).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "actors/capacity/warm_pool.hpp"
#include "modes/shared/sections.hpp"

namespace headroom::modes::scale_sets {

// The HUD's queued-job demand (optional). The token comes from HEADROOM_HUD_TOKEN.
struct hud_section {
  std::string url;  // base URL; "" = no HUD, the monitor uses proactiveCapacity alone
  millis interval{30'000};
  // Several clusters on one queue: this one is `index` of `count` and counts its share of the
  // queued jobs (the HUD's and the service's own); a job still queued after takeAllAfter is anyone's.
  uint32_t share_index = 0, share_count = 1;
  millis take_all_after{300'000};
};

// One runner scale set (the seed's Helm values, per scale set).
struct scale_set_section {
  std::string name;
  std::string ns = "default";  // where its runner and placeholder pods live
  std::string runner_group = "default";
  std::vector<std::string> labels;  // extra labels; the name is always one
  uint32_t max_runners = 10;
  std::string mode = "standalone";   // standalone: headroom makes runner pods; arc: patches an EphemeralRunnerSet
  std::string autoscaling_runner_set;  // arc mode: ARC's AutoscalingRunnerSet (default: name)
  std::string ephemeral_runner_set;    // arc mode: pinned; "" = the AutoscalingRunnerSet's newest
  runner_section runner;
  struct capacity_aware_section {
    bool enabled = true;
    uint32_t proactive_capacity = 0;  // the seed's default: no warm pairs without demand
    // warmPool: above proactiveCapacity in time windows, or following the queue (max 0: maxRunners).
    actors::capacity::warm_pool_policy warm_pool;
    uint32_t max_burst_capacity = 0;  // pairs pending (not yet placed) at once; 0 = no limit
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
    // While the held poll advertises no room free, the jobs queued for the scale set are read
    // this often (a GET of the scale set), so a queue is seen in seconds, not at the hold's end
    // (~50 s). 0: only after each poll.
    millis queue_check_interval{10'000};
  } capacity_aware;
  struct health_section {
    millis interval{30'000};
    millis registration_timeout{120'000};  // Running this long and not registered → replaced
    millis pending_timeout{600'000};       // Pending this long → replaced
    millis idle_timeout{600'000};          // registered, no job this long → removed
    millis terminal_grace{60'000};         // a finished runner pod is deleted after this
  } health;
};


// The ladder's four PriorityClass names (cluster-scoped: two deployments on one cluster name theirs
// apart; the chart names them after its release). Defaults: the seed's names.
struct priority_classes_section {
  std::string placeholder_runner = "placeholder-runner", runner = "arc-runner";
  std::string placeholder_workflow = "placeholder-workflow", workflow = "arc-workflow";
};

// The cluster's budget of pending placeholder pairs, shared by every scale set (max-min fair).
struct burst_budget_section {
  uint32_t max_pending_pairs = 0;  // 0 = no cluster budget (each scale set's maxBurstCapacity alone)
};

// A ScaleSet object (headroom.dev/v1alpha1) read as a scaleSets[] entry: its name and namespace
// from its metadata, the rest from its spec, by the same reader (the same rules, defaults and
// messages as the file's). An error names the field: "spec.capacityAware.placeholderTTL: …".
struct declared_scale_set {
  scale_set_section section;
  std::string uid;
  int64_t generation = 0;
};
std::variant<declared_scale_set, std::string> read_scale_set_object(std::string_view object_json);

// The whole `scaleSets` list; config_fail on a problem.
std::vector<scale_set_section> read_scale_sets(const YAML::Node& node);
void read_hud(const YAML::Node& node, hud_section& out);
// `scaleSetObjects`: the namespaces whose ScaleSet objects headroom serves, and what the scale sets
// declared in one namespace may ask for together (0: no bound).
struct scale_set_objects_section {
  std::vector<std::string> namespaces;
  uint32_t max_runners = 0, proactive_capacity = 0;
};
scale_set_objects_section read_scale_set_objects(const YAML::Node& node);
void read_priority_classes(const YAML::Node& node, priority_classes_section& out);
void read_burst_budget(const YAML::Node& node, burst_budget_section& out);

}  // namespace headroom::modes::scale_sets
