#pragma once

// Gate-controlled scheduling's part of the actor tree (seed 002):
//
//   root ── admission_webhook           every replica (the API server calls any of them)
//   acting (leader only) ── gates ── gate_controller

#include <caf/actor.hpp>
#include <memory>
#include <optional>
#include <string>

#include "actors/k8s/event_recorder.hpp"
#include "actors/gates/gates.hpp"
#include "modes/gates/settings.hpp"
#include "modes/mode.hpp"
#include "runtime/config.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::runtime {
class metrics;
class readiness;
}  // namespace headroom::runtime

namespace headroom::modes::gates {

struct gates_services {
  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::informer<k8s::unstructured>> queues;
  std::shared_ptr<k8s::informer<k8s::unstructured>> namespaces;  // labelled headroom.dev/queue (namespace enforcement)
  actors::gates::controller_context_ptr controller;
  std::shared_ptr<const actors::gates::webhook_options> webhook;  // null: not served here
  actors::event_sink events;  // set before prepare_gates: the event_recorder's relay
  void stop();
};

std::optional<std::string> prepare_gates(const gates_section& g, k8s::client& kube, k8s::informer_set& informers,
                                         runtime::metrics& m, gates_services& out);

// The webhook, a child of the root supervisor (served whether or not this replica leads).
runtime::child_spec gates_webhook_child(std::shared_ptr<gates_services> svc);
// The controller's supervisor, under the acting (leader-only) subtree.
runtime::child_spec gates_subtree(const runtime::config& cfg, std::shared_ptr<gates_services> svc, runtime::metrics& m,
                                  runtime::readiness& ready);

// The mode: its section, and its services once prepared.
class gates_mode final : public mode {
 public:
  gates_section config;

  std::string_view name() const override { return "gates"; }
  std::string_view summary() const override { return "gate-controlled scheduling"; }
  std::vector<std::string> keys() const override { return {"gates"}; }
  void read(const std::string& key, const YAML::Node& node) override;
  bool enabled() const override { return config.enabled; }
  std::string_view switch_key() const override { return "gates.enabled"; }
  std::optional<start_problem> prepare(const services& s) override;
  std::vector<runtime::child_spec> every_replica() override;
  std::optional<runtime::child_spec> leader_only(const runtime::config& cfg, runtime::metrics& m, runtime::readiness& ready) override;
  void stop() override;
  std::vector<tree_line> every_replica_tree() const override;
  std::vector<tree_line> leader_only_tree() const override;

 private:
  std::shared_ptr<gates_services> svc_;
};

std::unique_ptr<mode> make();

}  // namespace headroom::modes::gates
