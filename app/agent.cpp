#include "app/agent.hpp"

#include <caf/all.hpp>
#include <prometheus/counter.h>
#include <unistd.h>

#include <map>
#include <future>
#include <mutex>
#include <random>

#include "actors/k8s/event_recorder.hpp"
#include "actors/leadership/leadership_gate.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/leader_election.hpp"
#include "app/kubernetes_metrics.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
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
  // Watches and the informers' lists on a connection of their own: the API server writes a watch's
  // events through the same HTTP/2 connection as the answers to every write sharing it, and with
  // the pod writes beside it (50 a second) it delivered the pod watch's events up to 1.7 s after a
  // watch on a connection of its own (many_scale_sets_bench at 1,000 scale sets; #62).
  std::unique_ptr<k8s::transport> watch_io;
  // GitHub and the HUD on a transport of their own: the API server's client-side budget
  // (kubernetes.qps) is not theirs to spend, and a poll carrying new capacity must not wait behind
  // a burst of placeholder writes (it did: 100 scale sets changing at 10/s held polls up to 3 s).
  std::unique_ptr<http::transport> github_io;
  std::shared_ptr<github::app_tokens> github_tokens;  // on github_io, for every mode's GitHub client
  std::unique_ptr<k8s::client> api;
  std::unique_ptr<k8s::client> watch_api;  // on watch_io: the informers'
  // The same server, credentials and budget; its calls wait after every other one (status and
  // Event writes: nobody waits on them, and a burst of them must not delay the pod writes).
  std::unique_ptr<k8s::client> background_api;
  // One informer per kind, namespace and selectors, shared by the modes (they ask it for theirs).
  std::unique_ptr<k8s::informer_set> informers;
  std::shared_ptr<k8s::leader_elector> elector;
  std::vector<modes::mode*> running;  // the enabled modes, prepared
  // The event_recorder's relay: every mode's actors send it msg::k8s_event.
  caf::actor events;

  // The I/O threads go after the modes' informers (their callbacks hold them) and before the rest
  // (the clients: a request still in flight is answered cancelled through its client).
  ~cluster_services() {
    for (auto* m : running)
      m->stop();
    if (informers)
      informers->stop();
    io.reset();
    watch_io.reset();
    github_io.reset();
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
  opts->wall_clock = [&clock = api.clock()] { return clock.wall_seconds(); };
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
  out.start = [opts](caf::actor_system& s) { return runtime::untyped(actors::spawn_event_recorder(s, opts)); };
  return out;
}

runtime::child_spec acting_subtree(const runtime::config& cfg, const std::vector<modes::mode*>& running, runtime::metrics& m,
                                   runtime::readiness& ready) {
  std::vector<runtime::child_spec> children;
  for (auto* mode : running)
    if (auto child = mode->leader_only(cfg, m, ready))
      children.push_back(std::move(*child));
  return runtime::supervisor_child(runtime::supervisor_options_from(cfg, "acting", &m, &ready), std::move(children));
}

// The cluster: kubernetes.kubeconfig when set, else the Pod's in-cluster account, else none
// (nullopt, no failure).
std::variant<std::optional<k8s::connection>, runtime::start_failure> cluster_connection(const runtime::config& cfg) {
  if (!cfg.kubernetes.kubeconfig.empty()) {
    auto loaded = k8s::load_kubeconfig(cfg.kubernetes.kubeconfig, cfg.kubernetes.context);
    if (auto* e = std::get_if<k8s::connection_error>(&loaded))
      return runtime::start_failure{e->message, config_error_exit};
    return std::optional<k8s::connection>{std::get<k8s::connection>(std::move(loaded))};
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") == nullptr)
    return std::optional<k8s::connection>{};
  std::map<std::string, std::string> k8s_env;
  for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"})
    if (const char* v = std::getenv(name))
      k8s_env[name] = v;
  auto loaded = k8s::in_cluster(k8s_env);
  if (auto* e = std::get_if<k8s::connection_error>(&loaded))
    return runtime::start_failure{e->message, config_error_exit};
  return std::optional<k8s::connection>{std::get<k8s::connection>(std::move(loaded))};
}

// No cluster: the modes that need none run; one that needs a cluster is a configuration error.
std::variant<runtime::agent_plan, runtime::start_failure> plan_without_cluster(const runtime::config& cfg, settings& configured,
                                                                               const std::vector<modes::mode*>& enabled,
                                                                               runtime::metrics& m, runtime::readiness& ready,
                                                                               const std::map<std::string, std::string>& env,
                                                                               const runtime::clock& clock) {
  runtime::agent_plan plan;
  std::vector<modes::mode*> running;
  for (auto* mode : enabled) {
    if (mode->needs_cluster())
      return runtime::start_failure{std::string{mode->switch_key()} + ": " + std::string{mode->summary()} +
                                        " needs a cluster (kubernetes.kubeconfig, --kubeconfig or a Pod)",
                                    config_error_exit};
    const modes::services s{cfg, env, clock, configured.shared, nullptr, nullptr, nullptr, m, ready, actors::event_sink{}};
    if (auto problem = mode->prepare(s))
      return runtime::start_failure{problem->message, problem->exit_code};
    for (auto& child : mode->every_replica())
      plan.children.push_back(std::move(child));
    running.push_back(mode);
  }
  if (running.empty())
    runtime::log::info("agent", "no cluster configured", {{"hint", "set kubernetes.kubeconfig, --kubeconfig or run in a Pod"}});
  plan.children.push_back(acting_subtree(cfg, running, m, ready));
  return plan;
}

// The API server's two clients on one transport, and GitHub's transport.
std::shared_ptr<cluster_services> make_cluster_services(const runtime::config& cfg, const k8s::connection& conn,
                                                        runtime::metrics& m, const runtime::clock& clock) {
  auto svc = std::make_shared<cluster_services>();
  k8s::transport::options topts;
  topts.clock = &clock;
  topts.qps = cfg.kubernetes.qps;
  topts.burst = cfg.kubernetes.burst;
  topts.max_wait = std::chrono::milliseconds(5);  // watch events read at once (transport.hpp, max_wait)
  count_rate_limit_waits(topts, m);
  time_io_turns(topts, m);
  svc->io = std::make_unique<k8s::transport>(topts);
  svc->watch_io = std::make_unique<k8s::transport>(topts);
  svc->api = std::make_unique<k8s::client>(conn, *svc->io);
  svc->watch_api = std::make_unique<k8s::client>(conn, *svc->watch_io);
  svc->background_api = std::make_unique<k8s::client>(conn, *svc->io);
  svc->background_api->set_priority(http::priority::background);
  svc->informers = std::make_unique<k8s::informer_set>(*svc->watch_api);
  count_responses({svc->api.get(), svc->watch_api.get(), svc->background_api.get()}, m);
  // Read at scrape time from services held weakly: a scrape during shutdown finds none.
  collect_informers(m, [weak = std::weak_ptr<cluster_services>(svc)] {
    auto s = weak.lock();
    return s && s->watch_api ? s->watch_api->informers() : std::vector<k8s::tracked_informer>{};
  });
  http::transport::options gopts;
  gopts.clock = &clock;
  gopts.qps = 200;  // GitHub limits by the hour, not by the second; this only spaces a start-up burst
  gopts.burst = 1000;
  // A long poll per scale set held open: the I/O thread visits only the ready ones (a thousand
  // scale sets idled at 9 % of a core when each turn visited every poll, 2.6 % event-driven).
  gopts.event_driven = true;
  gopts.read_buffer_bytes = 4096;  // a thousand polls held open: 12 MiB less than libcurl's 16 KiB each
  svc->github_io = std::make_unique<http::transport>(gopts);
  svc->github_tokens = github::app_tokens::make(*svc->github_io, {});
  svc->api->set_watch_stall_timeout(std::chrono::duration_cast<std::chrono::seconds>(cfg.kubernetes.watch_stall_timeout));
  svc->watch_api->set_watch_stall_timeout(std::chrono::duration_cast<std::chrono::seconds>(cfg.kubernetes.watch_stall_timeout));
  runtime::log::info("agent", "cluster", {{"server", conn.server}});
  return svc;
}

// Each enabled mode prepared on the cluster's services; its every-replica children join the plan.
std::optional<runtime::start_failure> prepare_modes(const runtime::config& cfg, settings& configured,
                                                    const std::vector<modes::mode*>& enabled, cluster_services& svc,
                                                    runtime::agent_plan& plan, runtime::metrics& m, runtime::readiness& ready,
                                                    const std::map<std::string, std::string>& env, const runtime::clock& clock) {
  for (auto* mode : enabled) {
    const modes::services s{cfg, env, clock, configured.shared, svc.api.get(), svc.io.get(), svc.github_io.get(), m, ready,
                            runtime::relay_as<actors::event_sink>(svc.events), svc.background_api.get(), svc.informers.get(),
                            svc.github_tokens};
    auto problem = mode->prepare(s);
    svc.running.push_back(mode);  // stopped with the rest even when its start-up failed half-way
    if (problem) {
      // The root never starts to own the relays made so far, and a mode's services still hold
      // their handles: stopped here, or the actor system would wait for them at exit.
      for (const auto& r : plan.relays)
        caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
      return runtime::start_failure{problem->message, problem->exit_code};
    }
    for (auto& child : mode->every_replica())
      plan.children.push_back(std::move(child));
  }
  return std::nullopt;
}

// The leader elector, and the gate that runs the acting subtree while this replica leads.
void add_leadership(const runtime::config& cfg, caf::actor_system& sys, const std::shared_ptr<cluster_services>& svc,
                    const std::string& me, runtime::agent_plan& plan, runtime::metrics& m, runtime::readiness& ready) {
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
  gate.start = [gate_relay, verdicts, acting = acting_subtree(cfg, svc->running, m, ready),
                deadline = cfg.runtime.shutdown_timeout](caf::actor_system& s) {
    auto g = runtime::untyped(actors::spawn_leadership_gate(s, acting, deadline));
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
}

}  // namespace

std::variant<runtime::agent_plan, runtime::start_failure> build_agent(const runtime::config& cfg, settings& configured, caf::actor_system& sys,
                                                           runtime::metrics& m, runtime::readiness& ready,
                                                           const std::map<std::string, std::string>& env,
                                                           const runtime::clock& clock) {
  std::vector<modes::mode*> enabled;
  for (const auto& mode : configured.all())
    if (mode->enabled())
      enabled.push_back(mode.get());
  auto connected = cluster_connection(cfg);
  if (auto* failure = std::get_if<runtime::start_failure>(&connected))
    return std::move(*failure);
  const auto& conn = std::get<std::optional<k8s::connection>>(connected);
  if (!conn)
    return plan_without_cluster(cfg, configured, enabled, m, ready, env, clock);

  runtime::agent_plan plan;
  auto svc = make_cluster_services(cfg, *conn, m, clock);
  const std::string me = identity();
  // One Event writer for the process, outside the leader gate: it outlives the acting tree's
  // restarts, so series and rate limits carry over a lost and regained lease.
  svc->events = runtime::spawn_relay(sys, "event_recorder");
  plan.relays.push_back(svc->events);
  plan.children.push_back(event_recorder_child(svc->events, *svc->background_api, me, m));
  if (auto failure = prepare_modes(cfg, configured, enabled, *svc, plan, m, ready, env, clock))
    return std::move(*failure);
  plan.services = svc;
  if (!cfg.leader_election.enabled) {
    runtime::log::info("agent", "leader election disabled: acting at once");
    plan.children.push_back(acting_subtree(cfg, svc->running, m, ready));
    return plan;
  }
  add_leadership(cfg, sys, svc, me, plan, m, ready);
  return plan;
}

namespace {

// Lines at absolute depths into a box-drawn tree ("├── ", "│   ", "└── ").
std::string draw(const std::vector<modes::tree_line>& lines) {
  std::string out;
  auto has_later_sibling = [&lines](size_t i) {
    for (size_t j = i + 1; j < lines.size(); ++j) {
      if (lines[j].depth < lines[i].depth)
        return false;
      if (lines[j].depth == lines[i].depth)
        return true;
    }
    return false;
  };
  std::vector<bool> open;  // per depth: the ancestor there has a later sibling
  for (size_t i = 0; i < lines.size(); ++i) {
    const int d = lines[i].depth;
    open.resize(static_cast<size_t>(d) + 1);
    std::string prefix;
    for (int k = 1; k < d; ++k)
      prefix += open[static_cast<size_t>(k)] ? "│   " : "    ";
    if (d > 0)
      prefix += has_later_sibling(i) ? "├── " : "└── ";
    open[static_cast<size_t>(d)] = has_later_sibling(i);
    out += prefix + lines[i].text + "\n";
  }
  return out;
}

}  // namespace

std::string actor_tree(const settings& configured) {
  std::vector<modes::tree_line> lines{{0, "root (supervisor)"}, {1, "http"}, {1, "event_recorder"}};
  for (const auto& mode : configured.all())
    for (auto l : mode->every_replica_tree())
      lines.push_back({l.depth + 1, std::move(l.text)});
  lines.push_back({1, "leadership_gate"});
  lines.push_back({2, "acting (supervisor)"});
  for (const auto& mode : configured.all())
    for (auto l : mode->leader_only_tree())
      lines.push_back({l.depth + 3, std::move(l.text)});
  return draw(lines);
}

}  // namespace headroom::app
