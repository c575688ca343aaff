#pragma once

// A mode is a module: one folder under modes/, one CMake library (headroom_mode_<name>), one line
// in the registry (app/registry.cpp). The composition root (app/agent.cpp), the settings reader,
// `check-config`, `--print-actor-tree` and the docs loop over the registry; nothing outside a
// mode's folder names its sections or actors.
//
// A mode's life in the process:
//
//   read(key, node) for each key it owns, then check(shared)      the configuration (config_fail)
//   enabled()? prepare(services)                                  start-up: adapters, informers
//   every_replica()                                               children of the root supervisor
//   leader_only(…)                                                its subtree under `acting`
//   stop()                                                        informers, before the I/O thread goes
//
// Modes never include one another: a piece two modes use lives in modes/shared/ or actors/runners/
// (each mode's library links only those, so the linker refuses a sideways use; see the CTest
// modes_link_alone).

#include <caf/actor.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/github/app_tokens.hpp"
#include "adapters/k8s/informer_set.hpp"
#include "actors/k8s/event_recorder.hpp"
#include "modes/shared/sections.hpp"
#include "runtime/config.hpp"
#include "runtime/config_reader.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::http {
class transport;
}
namespace headroom::k8s {
class client;
}  // namespace headroom::k8s
namespace headroom::runtime {
class clock;
class metrics;
class readiness;
}  // namespace headroom::runtime

namespace headroom::modes {

// What the composition root hands a mode at start-up. `api` and `io` are null without a cluster
// (only a mode whose needs_cluster() is false is prepared then).
struct services {
  const runtime::config& cfg;
  const std::map<std::string, std::string>& env;  // credentials come from here, never from the file
  const runtime::clock& clock;                    // the process's: for the adapters a mode builds
  const shared_sections& shared;
  k8s::client* api = nullptr;
  http::transport* io = nullptr;       // the API server's I/O thread and its rate budget (kubernetes.qps)
  http::transport* github_io = nullptr;  // GitHub's and the HUD's: their own thread and budget
  runtime::metrics& metrics;
  runtime::readiness& ready;
  actors::event_sink events;  // the event_recorder's relay (msg::k8s_event); null without a cluster
  // `api`'s server and rate budget at background priority (status writes); null without a cluster.
  k8s::client* background_api = nullptr;
  // The process's informers, one per kind, namespace and selectors (shared by the modes that watch
  // the same objects); a mode asks here instead of making its own. Null without a cluster.
  k8s::informer_set* informers = nullptr;
  // The GitHub Apps' installation tokens on github_io, one exchange per installation for every
  // mode's client (the scale sets' Actions Service client, the scheduler's REST client).
  std::shared_ptr<github::app_tokens> github_tokens = nullptr;
};

// Why a mode cannot start: the message names the key or variable; exit 2 for what the user gave
// (configuration, credentials, files), 1 for a dependency that cannot be reached.
struct start_problem {
  std::string message;
  int exit_code = 2;
};

// Runner pods a mode makes, by the value of their headroom.dev/scale-set label: two modes (or two
// entries) claiming one name in one namespace would adopt each other's pods.
struct runner_claim {
  std::string ns, name;
  std::string key;  // the configuration key that chose the name, for the error
};

// One line of the static actor tree: depth under the node the mode hangs from, and the name.
struct tree_line {
  int depth = 0;
  std::string text;
};

class mode {
 public:
  virtual ~mode() = default;

  virtual std::string_view name() const = 0;     // the folder's name: scale_sets
  virtual std::string_view summary() const = 0;  // for messages and docs: "runner scale sets"

  // ---- configuration
  virtual std::vector<std::string> keys() const = 0;  // the top-level keys it owns
  virtual void read(const std::string& key, const YAML::Node& node) = 0;  // runtime::config_fail on a problem
  virtual void check(const shared_sections&) {}                          // rules across its sections
  virtual bool enabled() const = 0;
  virtual std::string_view switch_key() const = 0;  // the key that turns it on, for messages
  virtual bool needs_cluster() const { return true; }
  virtual std::vector<runner_claim> runner_pods() const { return {}; }

  // ---- the process
  virtual std::optional<start_problem> prepare(const services& s) = 0;
  virtual std::vector<runtime::child_spec> every_replica() { return {}; }
  virtual std::optional<runtime::child_spec> leader_only(const runtime::config& cfg, runtime::metrics& m,
                                                         runtime::readiness& ready) = 0;
  virtual void stop() {}

  // ---- the docs: the subtree it adds, as `headroom --print-actor-tree` prints it
  virtual std::vector<tree_line> every_replica_tree() const { return {}; }
  virtual std::vector<tree_line> leader_only_tree() const = 0;
};

using mode_factory = std::unique_ptr<mode> (*)();

struct registration {
  std::string_view name;
  mode_factory make;
};

}  // namespace headroom::modes
