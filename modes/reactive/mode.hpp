#pragma once

// Reactive scaling's part of the actor tree (seed 001):
//
//   reactive ── reactive_quota            (the tenants' caps, re-read from the file)
//            └─ reactive_scaler × N       (one per reactive.targets entry)
//
// prepare_reactive reads what the actors need once, at start-up (the Prometheus client and its
// credentials from the environment, the CA file, each target's rules), and names the key of
// anything wrong.

#include <caf/actor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/k8s/event_recorder.hpp"
#include "actors/reactive/reactive.hpp"
#include "adapters/k8s/informer.hpp"
#include "modes/mode.hpp"
#include "modes/reactive/settings.hpp"
#include "runtime/config.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::http {
class transport;
}
namespace headroom::runtime {
class metrics;
class readiness;
}  // namespace headroom::runtime

namespace headroom::modes::reactive {

struct reactive_services {
  std::unique_ptr<http::transport> io;  // Prometheus' own I/O thread, not throttled by the API server's budget
  std::shared_ptr<prom::client> prom;
  std::vector<actors::reactive::scaler_context_ptr> targets;
  actors::reactive::quota_options quota;
  actors::reactive::reader_options reader;
  actors::event_sink events;  // set before prepare_reactive: the event_recorder's relay
  k8s::client* kube = nullptr;
  // ReactiveTarget objects (reactive.objects): their informers, and what their specs are read with.
  struct declared_section {
    std::vector<std::shared_ptr<k8s::informer<k8s::unstructured>>> objects;
    reactive_rules_section defaults;  // the file's reactive.defaults
    uint32_t max_replicas = 0;        // reactive.objects.limits.maxReplicas
  } declared;
  ~reactive_services();
};

std::optional<std::string> prepare_reactive(const runtime::config& cfg, const reactive_section& r,
                                            const std::map<std::string, std::string>& env, k8s::client& kube,
                                            const runtime::clock& clock, runtime::metrics& m, reactive_services& out);

runtime::child_spec reactive_subtree(const runtime::config& cfg, std::shared_ptr<reactive_services> svc, runtime::metrics& m,
                                     runtime::readiness& ready);

// A target's rules from its section (the defaults already merged in by the parser).
actors::reactive::rules make_rules(const reactive_target_section& t);

// A target's scaler context, with its metrics' series.
actors::reactive::scaler_context_ptr make_context(const reactive_target_section& t, k8s::client& kube, actors::event_sink events,
                                                  runtime::metrics& m);

class reactive_mode final : public mode {
 public:
  reactive_section config;

  std::string_view name() const override { return "reactive"; }
  std::string_view summary() const override { return "reactive scaling"; }
  std::vector<std::string> keys() const override { return {"reactive"}; }
  void read(const std::string& key, const YAML::Node& node) override;
  bool enabled() const override { return !config.targets.empty() || !config.objects.namespaces.empty(); }
  std::string_view switch_key() const override { return "reactive.targets"; }
  std::optional<start_problem> prepare(const services& s) override;
  std::optional<runtime::child_spec> leader_only(const runtime::config& cfg, runtime::metrics& m, runtime::readiness& ready) override;
  std::vector<tree_line> leader_only_tree() const override;

 private:
  // Prometheus' client has its own I/O thread: it goes with the mode, after the actor system.
  std::shared_ptr<reactive_services> svc_;
};

std::unique_ptr<mode> make();

}  // namespace headroom::modes::reactive
