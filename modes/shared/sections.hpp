#pragma once

// Configuration sections more than one mode reads: `github` (the settings reader owns the key and
// hands it to every mode), and the runner pod template both runner modes use.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/runners/pods.hpp"
#include "runtime/config.hpp"
#include "runtime/config_reader.hpp"

namespace headroom::modes {

using runtime::millis;

// GitHub: where the scale sets live (configUrl), and the CA both GitHub modes trust (caFile). Credentials come from the environment only (never from a
// file that might be shared or logged): HEADROOM_GITHUB_TOKEN (a PAT), or HEADROOM_GITHUB_APP_ID,
// HEADROOM_GITHUB_APP_INSTALLATION_ID and HEADROOM_GITHUB_APP_PRIVATE_KEY (PEM text) or
// HEADROOM_GITHUB_APP_PRIVATE_KEY_FILE.
struct github_section {
  std::string config_url;  // https://github.com/<org>[/<repo>], …/enterprises/<slug>, or GHES
  std::string ca_file;     // extra trusted CA (PEM) for a GHES or test endpoint; "" = system CAs
};

// Every section no single mode owns.
struct shared_sections {
  github_section github;
  void read(const std::string& key, const YAML::Node& node);
  static std::vector<std::string> keys() { return {"github"}; }
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
  // How jobs with a `container:` run, as ARC's containerMode.type: "kubernetes-novolume" (the
  // runner's container hook makes a workflow pod; headroom gives it a hook template), "kubernetes"
  // (the same, sharing a `work` volume with the runner, on the runner's node) or "none"
  // (jobs run in the runner container). The scale sets' default is kubernetes-novolume, the
  // scheduler's none.
  std::string container_mode = "kubernetes-novolume";
  // kubernetes: the `work` volume's claim spec as JSON (workVolumeClaim, required there); "" otherwise.
  std::string work_volume_claim;
  // The user's own hook template (a PodTemplateSpec as JSON), merged under headroom's; "" none.
  std::string hook_template;
  // The scheduler's only: the extended resource one runner takes (a device plugin's slots, as the
  // seed's one-runner-per-node); "" = none, capacity unchecked.
  std::string slot_resource = "headroom.dev/runner";
  int64_t active_deadline_seconds = 525'600;  // the seed's ~6 days; patched to 1 to kill
  // The scale sets' only: the runner as a PodTemplateSpec (JSON, as ARC's `template:`) and what it
  // says of the runner (read_runner_template); "" = the short form above. Given instead of image,
  // command, resources, nodeSelector, tolerations and serviceAccountName, never beside them.
  std::string template_json;
  std::optional<actors::runners::runner_template_facts> template_facts;
};

// A runner pod template (scale sets' `runner`, the scheduler's `runner`): the scheduler's form
// (`extended`) also takes slotResource and activeDeadlineSeconds.
void read_runner(const YAML::Node& node, const std::string& where, runner_section& out, bool extended);
// cpu, memory and extended resources (whole numbers outside kubernetes.io); config_fail on a problem.
void read_resources(const YAML::Node& node, const std::string& where, std::string& cpu, std::string& memory,
                    std::vector<std::pair<std::string, std::string>>& extended);
// A pod template in the configuration (a pool's `template`, a runner's `hookTemplate`) as the JSON
// the API server takes; config_fail naming `where` (and the path below it) when it is not a map or
// cannot be JSON.
std::string read_pod_template_json(const YAML::Node& node, const std::string& where);
// A DNS-1123 label short enough that "<name>-ph-<slot>-workflow" stays a valid pod name.
bool valid_runner_name(const std::string& n);

}  // namespace headroom::modes
