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

#include "actors/capacity/capacity.hpp"
#include "app/settings.hpp"
#include "runtime/config.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::runtime {
class metrics;
class readiness;
}  // namespace headroom::runtime

namespace headroom::app {

using actors::capacity::context_ptr;
using actors::capacity::scale_set_spec;

struct scale_set_services {
  std::vector<context_ptr> contexts;
  std::shared_ptr<hud::client> hud;
  std::shared_ptr<k8s::informer<k8s::node>> nodes;
  std::shared_ptr<k8s::informer<k8s::unstructured>> nodepools;  // started when karpenter.sh/v1 is served
  std::shared_ptr<github::actions_client> github;
  caf::actor events;  // set before prepare_scale_sets: the event_recorder's relay
  void stop();  // the informers
};

std::optional<std::string> prepare_scale_sets(const settings& cfg, const std::map<std::string, std::string>& env,
                                              k8s::client& kube, http::transport& io, runtime::metrics& m,
                                              scale_set_services& out);

runtime::child_spec scale_sets_subtree(const runtime::config& cfg, const settings& modes, std::shared_ptr<scale_set_services> svc,
                                       runtime::metrics& m, runtime::readiness& ready);

// A runner pod template into a spec (quantities checked); an error names the key under `at`.
std::optional<std::string> apply_runner(const runner_section& r, const std::string& at, scale_set_spec& s);

// GitHub credentials from the environment (HEADROOM_GITHUB_TOKEN, or the App's three), registered as secrets.
std::variant<github::credentials, std::string> github_credentials(const std::map<std::string, std::string>& env);

// A file's text; `error` names `what` and the path when it cannot be read.
std::string read_text(const std::string& path, std::string& error, const std::string& what);

// Builds a scale set's spec from its configuration; an error names the key.
std::variant<scale_set_spec, std::string> make_spec(const scale_set_section& c, size_t index);

}  // namespace headroom::app
