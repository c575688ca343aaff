#pragma once

// The scale sets' part of the actor tree:
//
//   scale_sets ── hud_poller (when hud.url is set)
//              └─ scale_set/<name> ── runner_provisioner, capacity_monitor, listener_session, health_check
//
// prepare_scale_sets reads what the actors need once, at start-up (credentials from the
// environment, quantities, the GitHub client, the informers), and names the key of anything wrong.

#include <caf/actor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/k8s/event_recorder.hpp"
#include "actors/capacity/capacity.hpp"
#include "modes/mode.hpp"
#include "modes/scale_sets/settings.hpp"
#include "runtime/config.hpp"
#include "runtime/memo.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::runtime {
class metrics;
class readiness;
}  // namespace headroom::runtime

namespace headroom::modes::scale_sets {

using actors::capacity::context_ptr;
using actors::capacity::scale_set_spec;

struct scale_set_services {
  std::vector<context_ptr> contexts;
  std::shared_ptr<hud::client> hud;
  std::shared_ptr<k8s::informer<k8s::node>> nodes;
  std::shared_ptr<k8s::informer<k8s::unstructured>> nodepools;  // started when karpenter.sh/v1 is served
  std::map<std::string, std::shared_ptr<k8s::label_router<k8s::pod>>> pods;  // namespace → its scale sets' pods
  // namespace → its arc-mode scale sets' pods, by ARC's scale-set-name label
  std::map<std::string, std::shared_ptr<k8s::label_router<k8s::pod>>> arc_pods;
  std::shared_ptr<github::actions_client> github;
  actors::event_sink events;  // set before prepare_scale_sets: the event_recorder's relay
  std::string instance;  // set before prepare_scale_sets: actors::capacity::instance_label of the Lease
  // Set before prepare_scale_sets: the process's GitHub App tokens (modes::services::github_tokens).
  std::shared_ptr<github::app_tokens> github_tokens;
  // ScaleSet objects (scaleSetObjects.namespaces): their informers, one per namespace, and the
  // pods of the scale sets they declare, one informer per namespace (by label existence: the set
  // of names changes live), sliced by scale set like the file's.
  std::vector<std::shared_ptr<k8s::informer<k8s::unstructured>>> objects;
  std::map<std::string, std::shared_ptr<k8s::label_router<k8s::pod>>> declared_pods, declared_arc_pods;
  // What every scale set's context shares, for those built later from objects.
  std::shared_ptr<k8s::shared_reads> reads;
  std::string owner_process, owner_prefix;
  github::config_url where;
  // Per declared scale set (touched by the catalog's builds only): its listener's session and the
  // flag that hands it to the subtree replacing it.
  struct declared_session {
    std::shared_ptr<runtime::memo<msg::session_held>> memo;
    std::shared_ptr<runtime::memo<bool>> hand_over;
  };
  std::map<std::string, declared_session> declared_sessions;
  k8s::client* kube = nullptr;
  k8s::client* status_kube = nullptr;
  void stop();  // the informers
};

// Every section the scale sets read.
struct scale_sets_config {
  std::vector<scale_set_section> sets;
  hud_section hud;
  priority_classes_section priority_classes;
  burst_budget_section burst_budget;
  scale_set_objects_section objects;  // scaleSetObjects
};

std::optional<std::string> prepare_scale_sets(const scale_sets_config& cfg, const github_section& gh,
                                              const std::map<std::string, std::string>& env,
                                              k8s::client& kube, k8s::informer_set& informers, k8s::client* status_kube,
                                              http::transport& io, runtime::metrics& m, scale_set_services& out);

runtime::child_spec scale_sets_subtree(const runtime::config& cfg, const scale_sets_config& modes, std::shared_ptr<scale_set_services> svc,
                                       runtime::metrics& m, runtime::readiness& ready);

// A scale set's Prometheus series, with ARC's listener names, labels and buckets.
actors::capacity::scale_set_metrics make_metrics(runtime::metrics& m, const scale_set_spec& spec, const github::config_url& where);
// The cluster's burst budget's series (its limit, and the pairs pending, committed and waiting).
actors::capacity::burst_budget_metrics burst_budget_metrics(runtime::metrics& m, int64_t limit);
// The HUD's fetches: how long each took, by outcome.
actors::capacity::hud_metrics hud_fetch_metrics(runtime::metrics& m);

// Builds a scale set's spec from its configuration; an error names the key.
std::variant<scale_set_spec, std::string> make_spec(const scale_set_section& c, size_t index,
                                                   const priority_classes_section& ladder = {});
// The same, an error naming the key under `at` (a ScaleSet object's "spec").
std::variant<scale_set_spec, std::string> make_spec(const scale_set_section& c, const std::string& at,
                                                   const priority_classes_section& ladder);

class scale_sets_mode final : public mode {
 public:
  scale_sets_config config;

  std::string_view name() const override { return "scale_sets"; }
  std::string_view summary() const override { return "runner scale sets"; }
  std::vector<std::string> keys() const override { return {"scaleSets", "scaleSetObjects", "hud", "priorityClasses", "burstBudget"}; }
  void read(const std::string& key, const YAML::Node& node) override;
  void check(const shared_sections& shared) override;
  bool enabled() const override { return !config.sets.empty() || !config.objects.namespaces.empty(); }
  std::string_view switch_key() const override { return "scaleSets"; }
  std::vector<runner_claim> runner_pods() const override;
  std::optional<start_problem> prepare(const services& s) override;
  std::optional<runtime::child_spec> leader_only(const runtime::config& cfg, runtime::metrics& m, runtime::readiness& ready) override;
  void stop() override;
  std::vector<tree_line> leader_only_tree() const override;

 private:
  std::shared_ptr<scale_set_services> svc_;
};

std::unique_ptr<mode> make();

}  // namespace headroom::modes::scale_sets
