#pragma once

// Webhook-driven runner scheduling's part of the actor tree (seed 003):
//
//   root ── scheduler_http                      every replica (GitHub may call any of them)
//   acting (leader only) ── scheduler ── reconciler

#include <caf/actor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "actors/k8s/event_recorder.hpp"
#include "actors/scheduler/scheduler.hpp"
#include "modes/mode.hpp"
#include "modes/scheduler/settings.hpp"
#include "runtime/config.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::runtime {
class metrics;
class readiness;
}  // namespace headroom::runtime

namespace headroom::modes::scheduler {

struct scheduler_services {
  std::unique_ptr<store::store> jobs;
  std::unique_ptr<github::rest_client> github;
  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::informer<k8s::node>> nodes;
  std::shared_ptr<actors::scheduler::reconciler_context> reconciler;
  std::shared_ptr<actors::scheduler::http_context> http;
  actors::event_sink events;  // set before prepare_scheduler: the event_recorder's relay
  // Set before prepare_scheduler: the process's GitHub App tokens (modes::services::github_tokens).
  std::shared_ptr<github::app_tokens> github_tokens;
  // RunnerPool objects (scheduler.poolObjects): their informer, the registry their holders write,
  // and what their specs are read with.
  struct declared_section {
    std::shared_ptr<k8s::informer<k8s::unstructured>> objects;
    std::shared_ptr<actors::scheduler::pool_registry> registry;
    runner_section runner;          // scheduler.runner: a pool's defaults
    std::set<std::string> file;     // the configuration's pools' names
    uint32_t max_workers = 0;       // poolObjects.limits.maxWorkers
  } declared;
  k8s::client* kube = nullptr;
  void stop();
};

// Opens the store (migrating it), reads the secrets from the environment, makes the GitHub client
// and the informers. A problem is the configuration's (exit 2: a missing secret, a newer schema)
// unless the store could not be opened (`store_unavailable`: exit 1, as any dependency down).
std::optional<std::string> prepare_scheduler(const scheduler_section& c, const github_section& gh,
                                             const std::map<std::string, std::string>& env,
                                             k8s::client& kube, k8s::informer_set& informers, http::transport& io,
                                             runtime::metrics& m, scheduler_services& out, bool& store_unavailable);

runtime::child_spec scheduler_http_child(std::shared_ptr<scheduler_services> svc);

// A scheduler.pools[] entry (or a RunnerPool's spec) as the reconciler matches it, its pods made
// from `base` (the runner section's pod) unless it has a template.
actors::scheduler::pool_options pool_of(const pool_section& cp, const actors::runners::runner_spec& base);
runtime::child_spec scheduler_subtree(const runtime::config& cfg, std::shared_ptr<scheduler_services> svc, runtime::metrics& m,
                                      runtime::readiness& ready);

class scheduler_mode final : public mode {
 public:
  scheduler_section config;

  std::string_view name() const override { return "scheduler"; }
  std::string_view summary() const override { return "runner scheduling"; }
  std::vector<std::string> keys() const override { return {"scheduler"}; }
  void read(const std::string& key, const YAML::Node& node) override;
  bool enabled() const override { return config.enabled; }
  std::string_view switch_key() const override { return "scheduler.enabled"; }
  std::vector<runner_claim> runner_pods() const override;
  std::optional<start_problem> prepare(const services& s) override;
  std::vector<runtime::child_spec> every_replica() override;
  std::optional<runtime::child_spec> leader_only(const runtime::config& cfg, runtime::metrics& m, runtime::readiness& ready) override;
  void stop() override;
  std::vector<tree_line> every_replica_tree() const override;
  std::vector<tree_line> leader_only_tree() const override;

 private:
  std::shared_ptr<scheduler_services> svc_;
};

std::unique_ptr<mode> make();

}  // namespace headroom::modes::scheduler
