#pragma once

// The `scheduler` section.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "modes/shared/sections.hpp"

namespace headroom::modes::scheduler {

// A runner pool: the jobs it serves (by label, GitHub's rule), the pods it makes (a full pod
// template), its caps and where its capacity is counted.
struct pool_section {
  std::string name;                 // headroom.dev/pool on its pods; a DNS label of at most 20
  std::vector<std::string> labels;  // its runners' labels (self-hosted implied); at least one
  // A PodTemplateSpec as JSON (runtime::yaml_to_json), checked; "" = scheduler.runner's pod.
  std::string pod_template;
  std::vector<std::pair<std::string, std::string>> node_selector;  // the template's (or runner's): its nodes
  std::string slot_resource = "headroom.dev/runner";  // one per runner; "" = capacity unchecked; default: runner's
  int64_t active_deadline_seconds = 525'600;          // unless the template sets one; default: runner's
  uint32_t max_workers = 0;  // live runners of the pool across entities; 0 = no pool-wide cap
  // The pool's own cap per account (beside scheduler.maxWorkers, which counts every pool); unset: none.
  bool own_entity_caps = false;
  uint32_t default_max_workers = 20;
  std::vector<std::pair<std::string, uint32_t>> entity_caps;
};

// Webhook-driven runner scheduling (seed 003): GitHub's workflow_job webhooks recorded in a
// durable store, matched to JIT runner pods by a reconcile loop, shown on dashboards. Off unless
// enabled. The webhook secret comes from HEADROOM_WEBHOOK_SECRET, the PostgreSQL connection string
// (when `store.postgres` is true) from HEADROOM_POSTGRES_DSN, GitHub credentials as for scale sets.
struct scheduler_section {
  bool enabled = false;
  std::string listen = ":8080";  // GitHub's webhook (POST /webhook) and GET /health: the public port
  // The dashboards (/usage, /jobs, /history, /workers): not on the webhook's port, since they
  // show every organization's jobs without authentication. The default is reachable only from
  // inside the pod (kubectl port-forward); "" serves none.
  std::string dashboard_listen = "127.0.0.1:8081";
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
  // "owner/repo"s: when given, a runner group headroom creates may be used by its organization's
  // listed repositories only (visibility selected), and an organization's job from another
  // repository is not the scheduler's. Empty: every repository (visibility all).
  std::vector<std::string> runner_group_repositories;
  // An enterprise's slug: organizations' jobs get enterprise runners (registered at the
  // enterprise, in its runner group `runnerGroup`, for every organization). Needs a personal
  // access token with manage_runners:enterprise (GitHub lets no App manage enterprise runners).
  std::string enterprise;
  std::string name_prefix = "headroom-runner";
  // The labels its runners carry (GitHub gives every self-hosted runner `self-hosted` too). A job is
  // the scheduler's when its runner would take it, GitHub's rule: the runner has every label the job
  // asks for. Empty: every job that asks for `self-hosted` (never a GitHub-hosted one, such as
  // ubuntu-latest), each runner registered with its job's labels.
  std::vector<std::string> runner_labels;
  runner_section runner = [] {
    runner_section r;
    r.container_mode = "none";  // the scheduler's runners run their jobs themselves unless told
    return r;
  }();
  // Runner pools: a job goes to the narrowest pool whose labels cover it (fewest labels beyond the
  // job's; a tie to the one listed first; a pool without labels last). Empty: one
  // pool from `runner` and `runnerLabels` (named "default").
  std::vector<pool_section> pools;
  // RunnerPool objects (headroom.dev/v1alpha1) in `ns`: pools declared one object each, changed live.
  struct pool_objects_section {
    bool enabled = false;
    uint32_t max_workers = 0;  // limits.maxWorkers: the declared pools' maxWorkers summed (0: no bound)
  } pool_objects;
  // Live runners per account (an organization, or a personal account with all its repositories),
  // every pool together.
  uint32_t default_max_workers = 20;
  std::vector<std::pair<std::string, uint32_t>> max_workers;  // account → cap
  millis poll_interval{15'000};
  uint32_t provisioning_concurrency = 8;  // runners being made at once
  millis job_sync_interval{15'000};      // each active job is checked with GitHub at most this often
  millis job_stuck_queued{600'000};
  millis registration_timeout{120'000};  // Running this long and not registered → killed
  millis pending_timeout{600'000};
  millis idle_timeout{600'000};
  millis pod_delete_grace{21'600'000};   // terminal pods are deleted after this (6 h)
  millis kill_grace{30'000};             // a killed pod still not terminal after this is deleted
};


void read_section(const YAML::Node& node, scheduler_section& out);

// A scheduler.pools[] entry declared by a RunnerPool object: its spec read as the entry (its name
// the object's), with the object's identity.
struct declared_pool {
  pool_section section;
  std::string ns, uid;
  int64_t generation = 0;
};

// A RunnerPool object's spec, read by the reader of scheduler.pools[] with `runner` (the file's
// scheduler.runner: a pool's defaults); the error names the field ("spec.labels: …").
std::variant<declared_pool, std::string> read_runner_pool_object(std::string_view object_json, const runner_section& runner);

}  // namespace headroom::modes::scheduler
