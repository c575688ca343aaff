#include "app/agent.hpp"

#include <caf/all.hpp>
#include <prometheus/counter.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <future>
#include <mutex>
#include <sstream>
#include <random>

#include "actors/bigfleet/bigfleet.hpp"
#include "actors/k8s/event_recorder.hpp"
#include "app/gates.hpp"
#include "app/reactive.hpp"
#include "app/scheduler.hpp"
#include "app/scale_sets.hpp"
#include "actors/leadership/leadership_gate.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/leader_election.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/secrets.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"
#include "runtime/relay.hpp"
#include "runtime/clock.hpp"

namespace headroom::app {

namespace {

// A start-up problem in what the user gave (configuration, credentials, files): exit 2, as an
// invalid configuration file does. A dependency that cannot be reached exits 1.
constexpr int config_error_exit = 2;


// Everything the tree uses that is not an actor, alive until the actor system is gone.
struct cluster_services {
  std::unique_ptr<k8s::transport> io;
  std::unique_ptr<k8s::client> api;
  std::shared_ptr<k8s::leader_elector> elector;
  // BigFleet: the informers and send queue its actors share.
  actors::bigfleet::operator_deps fleet;
  actors::bigfleet::operator_options fleet_opts;
  // The scale sets' contexts, informers and GitHub client.
  std::shared_ptr<scale_set_services> sets;
  // Reactive scaling: the Prometheus client (its own I/O thread) and the targets.
  std::shared_ptr<reactive_services> reactive;
  // Gate-controlled scheduling: the pod and Queue informers, the webhook's options.
  std::shared_ptr<gates_services> gates;
  // Webhook-driven scheduling: the job store, GitHub's REST client, the informers.
  std::shared_ptr<scheduler_services> scheduler;
  // The event_recorder's relay: every mode's actors send it msg::k8s_event.
  caf::actor events;

  // The I/O thread goes first (its callbacks hold informers and the elector), then the rest.
  ~cluster_services() {
    for (auto* inf : {fleet.capacity_requests.get(), fleet.upcoming_nodes.get()})
      if (inf)
        inf->stop();
    if (fleet.pods)
      fleet.pods->stop();
    if (sets)
      sets->stop();
    if (gates)
      gates->stop();
    if (scheduler)
      scheduler->stop();
    io.reset();
    reactive.reset();
  }
};

// The elector's newest verdict, and the order of the sends that carry it (see build_agent).
struct verdict_order {
  std::mutex m;
  bool leading = false;
};

std::string identity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0')
    return pod;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  return std::string{host} + "_" + std::to_string(getpid()) + "_" + std::to_string(rd() % 100000);
}

std::variant<std::string, std::string> read_file(const std::string& path, const char* what) {
  std::ifstream in{path};
  if (!in)
    return std::variant<std::string, std::string>{std::in_place_index<1>, std::string{what} + " " + path + ": cannot open"};
  std::stringstream ss;
  ss << in.rdbuf();
  return std::variant<std::string, std::string>{std::in_place_index<0>, ss.str()};
}

// Reads what the BigFleet actors need once, at start-up, and starts their informers.
std::optional<std::string> prepare_bigfleet(const settings& modes, cluster_services& svc, runtime::metrics& m) {
  const auto& b = modes.bigfleet;
  auto& o = svc.fleet_opts;
  o.endpoint.target = b.shard;
  o.endpoint.cluster_id = b.cluster_id;
  o.rollup_interval = b.rollup_interval;
  struct file_field {
    const std::string& path;
    std::string* out;
    const char* what;
  };
  const file_field files[] = {{b.bootstrap_template_file, &o.bootstrap_template, "bigfleet.bootstrapTemplateFile"},
                              {b.tls_ca_file, &o.endpoint.ca_pem, "bigfleet.tls.caFile"},
                              {b.tls_cert_file, &o.endpoint.cert_pem, "bigfleet.tls.certFile"},
                              {b.tls_key_file, &o.endpoint.key_pem, "bigfleet.tls.keyFile"}};
  for (const auto& f : files) {
    if (f.path.empty())
      continue;
    auto r = read_file(f.path, f.what);
    if (r.index() == 1)
      return std::get<1>(r);
    *f.out = std::get<0>(std::move(r));
  }
  o.endpoint.tls = !b.tls_cert_file.empty();
  o.endpoint.tls_server_name = b.tls_server_name;
  runtime::secret_registry::global().add(o.endpoint.key_pem);
  if (!b.penalty_defaults_file.empty()) {
    auto r = read_file(b.penalty_defaults_file, "bigfleet.penaltyDefaultsFile");
    if (r.index() == 1)
      return std::get<1>(r);
    auto parsed = headroom::bigfleet::parse_penalty_defaults(std::get<0>(r));
    if (auto* e = std::get_if<headroom::bigfleet::decode_error>(&parsed))
      return "bigfleet.penaltyDefaultsFile " + b.penalty_defaults_file + ": " + e->message;
    o.penalties = std::get<headroom::bigfleet::penalty_defaults>(std::move(parsed));
  }
  auto& d = svc.fleet;
  d.client = svc.api.get();
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
  d.capacity_requests = k8s::informer<k8s::unstructured>::make(*svc.api, cr_opts);
  d.upcoming_nodes = k8s::informer<k8s::unstructured>::make(*svc.api, upn_opts);
  d.pods = k8s::informer<k8s::pod>::make(*svc.api, pod_opts);
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
runtime::child_spec bigfleet_subtree(const runtime::config& cfg, const settings& modes, const std::shared_ptr<cluster_services>& svc,
                                     runtime::metrics& m, runtime::readiness& ready) {
  runtime::child_spec out;
  out.name = "bigfleet";
  // The rollup's relay lives as long as this subtree: the session reaches every rollup incarnation.
  out.start = [opts = runtime::supervisor_options_from(cfg, "bigfleet", &m, &ready), upc = modes.bigfleet.capacity_requests,
               svc](caf::actor_system& sys) {
    auto rollup_relay = runtime::spawn_relay(sys, "bigfleet/rollup");
    std::vector<runtime::child_spec> children;
    runtime::child_spec rollup;
    rollup.name = "rollup";
    rollup.relay = rollup_relay;
    rollup.start = [svc](caf::actor_system& s) { return actors::bigfleet::spawn_rollup(s, svc->fleet, svc->fleet_opts); };
    children.push_back(std::move(rollup));
    runtime::child_spec session;
    session.name = "shard_session";
    session.start = [svc, rollup_relay](caf::actor_system& s) {
      return actors::bigfleet::spawn_shard_session(s, svc->fleet, svc->fleet_opts, rollup_relay);
    };
    children.push_back(std::move(session));
    if (upc) {
      runtime::child_spec requests;
      requests.name = "capacity_requests";
      requests.start = [svc](caf::actor_system& s) { return actors::bigfleet::spawn_capacity_requests(s, svc->fleet, svc->fleet_opts); };
      children.push_back(std::move(requests));
    }
    auto sup = runtime::spawn_supervisor(sys, opts, std::move(children));
    runtime::own_relay(rollup_relay, sup);
    return sup;
  };
  return out;
}

runtime::child_spec event_recorder_child(const caf::actor& relay, k8s::client& api, const std::string& instance,
                                        runtime::metrics& m) {
  auto& outcomes = prometheus::BuildCounter()
                       .Name("headroom_kubernetes_events_total")
                       .Help("Kubernetes Events by outcome: created, series (joined a recorded Event), rate_limited, "
                             "queue_full, failed")
                       .Register(m.registry());
  auto opts = std::make_shared<actors::event_recorder_options>();
  opts->kube = &api;
  opts->instance = instance;
  opts->wall_clock = [] {
    return std::chrono::duration<double>(runtime::real_clock().wall().time_since_epoch()).count();
  };
  std::map<std::string, prometheus::Counter*> by_outcome;
  for (const char* o : {"created", "series", "rate_limited", "queue_full", "failed"})
    by_outcome[o] = &outcomes.Add({{"outcome", o}});
  opts->counted = [by_outcome](const char* outcome) {
    if (auto it = by_outcome.find(outcome); it != by_outcome.end())
      it->second->Increment();
  };
  runtime::child_spec out;
  out.name = "event_recorder";
  out.relay = relay;
  out.start = [opts](caf::actor_system& s) { return actors::spawn_event_recorder(s, opts); };
  return out;
}

runtime::child_spec acting_subtree(const runtime::config& cfg, const settings& modes, const std::shared_ptr<cluster_services>& svc,
                                   runtime::metrics& m, runtime::readiness& ready) {
  std::vector<runtime::child_spec> children;
  if (svc && modes.bigfleet.enabled)
    children.push_back(bigfleet_subtree(cfg, modes, svc, m, ready));
  if (svc && svc->sets)
    children.push_back(scale_sets_subtree(cfg, modes, svc->sets, m, ready));
  if (svc && svc->reactive)
    children.push_back(reactive_subtree(cfg, svc->reactive, m, ready));
  if (svc && svc->gates)
    children.push_back(gates_subtree(cfg, svc->gates, m, ready));
  if (svc && svc->scheduler)
    children.push_back(scheduler_subtree(cfg, svc->scheduler, m, ready));
  return runtime::supervisor_child(runtime::supervisor_options_from(cfg, "acting", &m, &ready), std::move(children));
}

}  // namespace

std::variant<runtime::agent_plan, runtime::start_failure> build_agent(const runtime::config& cfg, const settings& modes, caf::actor_system& sys,
                                                           runtime::metrics& m, runtime::readiness& ready) {
  runtime::agent_plan plan;
  std::optional<k8s::connection> conn;
  if (!cfg.kubernetes.kubeconfig.empty()) {
    auto loaded = k8s::load_kubeconfig(cfg.kubernetes.kubeconfig, cfg.kubernetes.context);
    if (auto* e = std::get_if<k8s::connection_error>(&loaded))
      return runtime::start_failure{e->message, config_error_exit};
    conn = std::get<k8s::connection>(std::move(loaded));
  } else if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    std::map<std::string, std::string> k8s_env;
    for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"})
      if (const char* v = std::getenv(name))
        k8s_env[name] = v;
    auto loaded = k8s::in_cluster(k8s_env);
    if (auto* e = std::get_if<k8s::connection_error>(&loaded))
      return runtime::start_failure{e->message, config_error_exit};
    conn = std::get<k8s::connection>(std::move(loaded));
  }

  if (!conn) {
    if (modes.bigfleet.enabled)
      return runtime::start_failure{"bigfleet.enabled: the BigFleet operator needs a cluster (kubernetes.kubeconfig, --kubeconfig or a Pod)", config_error_exit};
    if (!modes.scale_sets.empty())
      return runtime::start_failure{"scaleSets: runner scale sets need a cluster (kubernetes.kubeconfig, --kubeconfig or a Pod)", config_error_exit};
    if (!modes.reactive.targets.empty())
      return runtime::start_failure{"reactive.targets: reactive scaling needs a cluster (kubernetes.kubeconfig, --kubeconfig or a Pod)", config_error_exit};
    if (modes.gates.enabled)
      return runtime::start_failure{"gates.enabled: gate-controlled scheduling needs a cluster (kubernetes.kubeconfig, --kubeconfig or a Pod)", config_error_exit};
    if (modes.scheduler.enabled)
      return runtime::start_failure{"scheduler.enabled: runner scheduling needs a cluster (kubernetes.kubeconfig, --kubeconfig or a Pod)", config_error_exit};
    runtime::log::info("agent", "no cluster configured", {{"hint", "set kubernetes.kubeconfig, --kubeconfig or run in a Pod"}});
    plan.children.push_back(acting_subtree(cfg, modes, nullptr, m, ready));
    return plan;
  }

  auto svc = std::make_shared<cluster_services>();
  k8s::transport::options topts;
  topts.qps = cfg.kubernetes.qps;
  topts.burst = cfg.kubernetes.burst;
  svc->io = std::make_unique<k8s::transport>(topts);
  svc->api = std::make_unique<k8s::client>(*conn, *svc->io);
  svc->api->set_watch_stall_timeout(std::chrono::duration_cast<std::chrono::seconds>(cfg.kubernetes.watch_stall_timeout));
  runtime::log::info("agent", "cluster", {{"server", conn->server}});
  const std::string me = identity();
  // One Event writer for the process, outside the leader gate: it outlives the acting tree's
  // restarts, so series and rate limits carry over a lost and regained lease.
  svc->events = runtime::spawn_relay(sys, "event_recorder");
  plan.relays.push_back(svc->events);
  plan.children.push_back(event_recorder_child(svc->events, *svc->api, me, m));
  svc->fleet.events = svc->events;
  if (modes.bigfleet.enabled)
    if (auto problem = prepare_bigfleet(modes, *svc, m))
      return runtime::start_failure{*problem, config_error_exit};
  if (!modes.scale_sets.empty()) {
    svc->sets = std::make_shared<scale_set_services>();
    svc->sets->events = svc->events;
    if (auto problem = prepare_scale_sets(modes, runtime::process_env(), *svc->api, *svc->io, m, *svc->sets))
      return runtime::start_failure{*problem, config_error_exit};
  }
  if (!modes.reactive.targets.empty()) {
    svc->reactive = std::make_shared<reactive_services>();
    svc->reactive->events = svc->events;
    if (auto problem = prepare_reactive(cfg, modes, runtime::process_env(), *svc->api, m, *svc->reactive))
      return runtime::start_failure{*problem, config_error_exit};
  }
  if (modes.gates.enabled) {
    svc->gates = std::make_shared<gates_services>();
    svc->gates->events = svc->events;
    if (auto problem = prepare_gates(modes, *svc->api, m, *svc->gates))
      return runtime::start_failure{*problem, config_error_exit};
    // Every replica serves the webhook: the API server calls whichever one the Service picks.
    if (svc->gates->webhook)
      plan.children.push_back(gates_webhook_child(svc->gates));
  }
  if (modes.scheduler.enabled) {
    svc->scheduler = std::make_shared<scheduler_services>();
    svc->scheduler->events = svc->events;
    bool store_unavailable = false;
    if (auto problem = prepare_scheduler(modes, runtime::process_env(), *svc->api, *svc->io, m, *svc->scheduler, store_unavailable))
      return runtime::start_failure{*problem, store_unavailable ? 1 : config_error_exit};
    // Every replica takes webhooks and serves the dashboards; only the leader reconciles.
    plan.children.push_back(scheduler_http_child(svc->scheduler));
  }
  plan.services = svc;

  if (!cfg.leader_election.enabled) {
    runtime::log::info("agent", "leader election disabled: acting at once");
    plan.children.push_back(acting_subtree(cfg, modes, svc, m, ready));
    return plan;
  }

  k8s::leader_elector::options le;
  le.ns = cfg.leader_election.ns;
  le.name = cfg.leader_election.name;
  le.identity = me;
  le.lease_duration = std::chrono::duration_cast<std::chrono::seconds>(cfg.leader_election.lease_duration);
  le.renew_deadline = std::chrono::duration_cast<std::chrono::seconds>(cfg.leader_election.renew_deadline);
  le.retry_period = std::chrono::duration_cast<std::chrono::seconds>(cfg.leader_election.retry_period);
  // The elector's verdicts go to the gate's relay, so whichever gate incarnation runs gets them.
  // The elector calls back on the I/O thread, not in an actor: `verdicts` orders its sends with a
  // restarted gate's first one (below), so a gate never sees an old verdict after a newer one.
  auto gate_relay = runtime::spawn_relay(sys, "leadership_gate");
  plan.relays.push_back(gate_relay);
  auto verdicts = std::make_shared<verdict_order>();
  auto tell = [gate_relay, verdicts](bool leading) {
    std::lock_guard lock{verdicts->m};
    verdicts->leading = leading;
    caf::anon_send(gate_relay, msg::leadership{leading, {}});
  };
  le.on_started_leading = [tell] { tell(true); };
  le.on_stopped_leading = [tell] { tell(false); };
  le.on_new_leader = [](const std::string& holder) {
    runtime::log::info("agent", "leader", {{"holder", holder.empty() ? "(none)" : holder}});
  };
  svc->elector = k8s::leader_elector::make(*svc->api, le);
  ready.set("leader_election", true, "");

  runtime::child_spec gate;
  gate.name = "leadership_gate";
  gate.restart = runtime::restart_mode::permanent;
  gate.relay = gate_relay;
  gate.start = [gate_relay, verdicts, acting = acting_subtree(cfg, modes, svc, m, ready),
                deadline = cfg.runtime.shutdown_timeout](caf::actor_system& s) {
    auto g = actors::spawn_leadership_gate(s, acting, deadline);
    // A restarted gate resumes where the old one was: the relay is pointed at it (the supervisor
    // does so again after this returns) and given the newest verdict, both in the elector's order.
    std::lock_guard lock{verdicts->m};
    caf::anon_send(gate_relay, msg::relay_target{g});
    if (verdicts->leading)
      caf::anon_send(gate_relay, msg::leadership{true, {}});
    return g;
  };
  plan.children.push_back(std::move(gate));
  svc->elector->start();
  plan.before_stop = [svc] {
    // Hand the Lease over before stopping: the standby takes it at its next retry, not after
    // the lease duration.
    auto released = std::make_shared<std::promise<void>>();
    svc->elector->stop(/*release=*/true, [released] { released->set_value(); });
    released->get_future().wait_for(std::chrono::seconds(3));
  };
  return plan;
}

}  // namespace headroom::app
