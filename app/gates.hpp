#pragma once

// Gate-controlled scheduling's part of the actor tree (seed 002):
//
//   root ── admission_webhook           every replica (the API server calls any of them)
//   acting (leader only) ── gates ── gate_controller

#include <caf/actor.hpp>
#include <memory>
#include <optional>
#include <string>

#include "actors/gates/gates.hpp"
#include "app/settings.hpp"
#include "runtime/config.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::runtime {
class metrics;
class readiness;
}  // namespace headroom::runtime

namespace headroom::app {

struct gates_services {
  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::informer<k8s::unstructured>> queues;
  actors::gates::controller_context_ptr controller;
  std::shared_ptr<const actors::gates::webhook_options> webhook;  // null: not served here
  caf::actor events;  // set before prepare_gates: the event_recorder's relay
  void stop();
};

std::optional<std::string> prepare_gates(const settings& modes, k8s::client& kube, runtime::metrics& m, gates_services& out);

// The webhook, a child of the root supervisor (served whether or not this replica leads).
runtime::child_spec gates_webhook_child(std::shared_ptr<gates_services> svc);
// The controller's supervisor, under the acting (leader-only) subtree.
runtime::child_spec gates_subtree(const runtime::config& cfg, std::shared_ptr<gates_services> svc, runtime::metrics& m,
                                  runtime::readiness& ready);

}  // namespace headroom::app
