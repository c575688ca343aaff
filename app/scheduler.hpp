#pragma once

// Webhook-driven runner scheduling's part of the actor tree (seed 003):
//
//   root ── scheduler_http                      every replica (GitHub may call any of them)
//   acting (leader only) ── scheduler ── reconciler

#include <caf/actor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "actors/scheduler/scheduler.hpp"
#include "app/settings.hpp"
#include "runtime/config.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::runtime {
class metrics;
class readiness;
}  // namespace headroom::runtime

namespace headroom::app {

struct scheduler_services {
  std::unique_ptr<store::store> jobs;
  std::unique_ptr<github::rest_client> github;
  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::informer<k8s::node>> nodes;
  std::shared_ptr<actors::scheduler::reconciler_context> reconciler;
  std::shared_ptr<actors::scheduler::http_context> http;
  caf::actor events;  // set before prepare_scheduler: the event_recorder's relay
  void stop();
};

// Opens the store (migrating it), reads the secrets from the environment, makes the GitHub client
// and the informers. A problem is the configuration's (exit 2: a missing secret, a newer schema)
// unless the store could not be opened (`store_unavailable`: exit 1, as any dependency down).
std::optional<std::string> prepare_scheduler(const settings& modes, const std::map<std::string, std::string>& env,
                                             k8s::client& kube, http::transport& io, runtime::metrics& m,
                                             scheduler_services& out, bool& store_unavailable);

runtime::child_spec scheduler_http_child(std::shared_ptr<scheduler_services> svc);
runtime::child_spec scheduler_subtree(const runtime::config& cfg, std::shared_ptr<scheduler_services> svc, runtime::metrics& m,
                                      runtime::readiness& ready);

}  // namespace headroom::app
