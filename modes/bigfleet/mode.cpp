#include "modes/bigfleet/mode.hpp"

#include <caf/all.hpp>

#include "adapters/k8s/client.hpp"
#include "modes/shared/start.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/relay.hpp"
#include "runtime/secrets.hpp"

namespace headroom::modes::bigfleet {

namespace {

// Reads what the BigFleet actors need once, at start-up, and starts their informers.
std::optional<std::string> prepare_bigfleet(const bigfleet_section& b, k8s::client& api, k8s::informer_set& informers, actors::event_sink events, runtime::metrics& m,
                                           bigfleet_services& svc) {
  auto& o = svc.opts;
  o.endpoint.target = b.shard;
  o.endpoint.cluster_id = b.cluster_id;
  o.rollup_interval = b.rollup_interval;
  struct file_field {
    const std::string& path;
    std::string* out;
    const char* what;
  };
  std::string bootstrap_text;
  const file_field files[] = {{b.bootstrap_template_file, &bootstrap_text, "bigfleet.bootstrapTemplateFile"},
                              {b.tls_ca_file, &o.endpoint.ca_pem, "bigfleet.tls.caFile"},
                              {b.tls_cert_file, &o.endpoint.cert_pem, "bigfleet.tls.certFile"},
                              {b.tls_key_file, &o.endpoint.key_pem, "bigfleet.tls.keyFile"}};
  for (const auto& f : files) {
    if (f.path.empty())
      continue;
    std::string error;
    *f.out = read_text(f.path, error, f.what);
    if (!error.empty())
      return error;
  }
  auto bootstrap = actors::bigfleet::parse_bootstrap_template(std::move(bootstrap_text));
  if (auto* e = std::get_if<std::string>(&bootstrap))
    return "bigfleet.bootstrapTemplateFile " + b.bootstrap_template_file + ": " + *e;
  o.bootstrap = std::get<actors::bigfleet::bootstrap_template>(std::move(bootstrap));
  if (o.bootstrap.legacy)
    runtime::log::warn("bigfleet", "bigfleet.bootstrapTemplateFile uses headroom's older template syntax ({{cluster_id}}, {{#requirements}}); "
                       "it still renders, but write Go text/template ({{ .ClusterID }}, {{ range .Requirements }}) as the reference operator reads",
                       {{"file", b.bootstrap_template_file}});
  o.endpoint.tls = !b.tls_cert_file.empty();
  o.endpoint.tls_server_name = b.tls_server_name;
  runtime::secret_registry::global().add(o.endpoint.key_pem);
  if (!b.penalty_defaults_file.empty()) {
    std::string error;
    const auto text = read_text(b.penalty_defaults_file, error, "bigfleet.penaltyDefaultsFile");
    if (!error.empty())
      return error;
    auto parsed = headroom::bigfleet::parse_penalty_defaults(text);
    if (auto* e = std::get_if<headroom::bigfleet::decode_error>(&parsed))
      return "bigfleet.penaltyDefaultsFile " + b.penalty_defaults_file + ": " + e->message;
    o.penalties = std::get<headroom::bigfleet::penalty_defaults>(std::move(parsed));
  }
  auto& d = svc.deps;
  d.client = &api;
  d.events = events;
  d.queue = std::make_shared<headroom::bigfleet::send_queue>();
  d.track_buffer = [&m](const runtime::buffer_stats_ptr& stats) { m.buffers().track(stats); };
  d.track_buffer(d.queue->rollup_stats());
  d.track_buffer(d.queue->outbox_stats());
  k8s::informer<k8s::unstructured>::options cr_opts;
  cr_opts.kind = actors::bigfleet::kinds::capacity_requests;
  k8s::informer<k8s::unstructured>::options upn_opts;
  upn_opts.kind = actors::bigfleet::kinds::upcoming_nodes;
  k8s::informer<k8s::pod>::options pod_opts;
  pod_opts.kind = k8s::kinds::pods;
  d.capacity_requests = informers.get<k8s::unstructured>(cr_opts);
  d.upcoming_nodes = informers.get<k8s::unstructured>(upn_opts);
  d.pods = informers.get<k8s::pod>(pod_opts);
  d.pods->add_index("node", [](const k8s::pod& p) {
    return p.node_name.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.node_name};
  });
  d.capacity_requests->start();
  d.upcoming_nodes->start();
  d.pods->start();
  return std::nullopt;
}

// BigFleet's supervisor: rollup first (the session needs it), then the session, then the
// controller that makes one CapacityRequest per Pod.
runtime::child_spec bigfleet_subtree(const runtime::config& cfg, const bigfleet_section& b, const std::shared_ptr<bigfleet_services>& svc,
                                     runtime::metrics& m, runtime::readiness& ready) {
  runtime::child_spec out;
  out.name = "bigfleet";
  // The relays live as long as this subtree: the session reaches every rollup incarnation, and the
  // rollup and the drains every session incarnation (the send queue's one writer).
  out.start = [opts = runtime::supervisor_options_from(cfg, "bigfleet", &m, &ready), upc = b.capacity_requests,
               svc](caf::actor_system& sys) {
    auto rollup_relay = runtime::spawn_relay(sys, "bigfleet/rollup");
    auto session_relay = runtime::spawn_relay(sys, "bigfleet/shard_session");
    auto deps = svc->deps;
    deps.outbox = runtime::relay_as<actors::bigfleet::shard_outbox>(session_relay);
    std::vector<runtime::child_spec> children;
    runtime::child_spec rollup;
    rollup.name = "rollup";
    rollup.relay = rollup_relay;
    rollup.start = [svc, deps](caf::actor_system& s) {
      return runtime::untyped(actors::bigfleet::spawn_rollup(s, deps, svc->opts));
    };
    children.push_back(std::move(rollup));
    runtime::child_spec session;
    session.name = "shard_session";
    session.relay = session_relay;
    session.start = [svc, deps, rollup_relay](caf::actor_system& s) {
      return runtime::untyped(actors::bigfleet::spawn_shard_session(
          s, deps, svc->opts, runtime::relay_as<actors::bigfleet::rollup_actor>(rollup_relay)));
    };
    children.push_back(std::move(session));
    if (upc) {
      runtime::child_spec requests;
      requests.name = "capacity_requests";
      requests.start = [svc](caf::actor_system& s) {
        return runtime::untyped(actors::bigfleet::spawn_capacity_requests(s, svc->deps, svc->opts));
      };
      children.push_back(std::move(requests));
    }
    auto sup = runtime::untyped(runtime::spawn_supervisor(sys, opts, std::move(children)));
    runtime::own_relay(rollup_relay, sup);
    runtime::own_relay(session_relay, sup);
    return sup;
  };
  return out;
}

}  // namespace

void bigfleet_services::stop() {
  for (auto* inf : {deps.capacity_requests.get(), deps.upcoming_nodes.get()})
    if (inf)
      inf->stop();
  if (deps.pods)
    deps.pods->stop();
}

void bigfleet_mode::read(const std::string&, const YAML::Node& node) { read_section(node, config); }

std::optional<start_problem> bigfleet_mode::prepare(const services& s) {
  svc_ = std::make_shared<bigfleet_services>();
  if (auto problem = prepare_bigfleet(config, *s.api, *s.informers, s.events, s.metrics, *svc_))
    return start_problem{*problem};
  return std::nullopt;
}

std::optional<runtime::child_spec> bigfleet_mode::leader_only(const runtime::config& cfg, runtime::metrics& m,
                                                              runtime::readiness& ready) {
  return bigfleet_subtree(cfg, config, svc_, m, ready);
}

void bigfleet_mode::stop() {
  if (svc_)
    svc_->stop();
}

std::vector<tree_line> bigfleet_mode::leader_only_tree() const {
  return {{0, "bigfleet (supervisor)"}, {1, "rollup"}, {1, "shard_session"}, {2, "reclaim_drain × one per node being reclaimed"}, {1, "capacity_requests"}};
}

std::unique_ptr<mode> make() { return std::make_unique<bigfleet_mode>(); }

}  // namespace headroom::modes::bigfleet
