#include "actors/agent/agent.hpp"

#include <caf/all.hpp>
#include <unistd.h>

#include <future>
#include <mutex>
#include <random>

#include "actors/leadership/leadership_gate.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/leader_election.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"

namespace headroom::actors {

namespace {

// Everything the tree uses that is not an actor, alive until the actor system is gone.
struct cluster_services {
  std::unique_ptr<k8s::transport> io;
  std::unique_ptr<k8s::client> api;
  std::shared_ptr<k8s::leader_elector> elector;
  // The current gate (a restarted gate is a new actor) and the elector's latest verdict.
  std::mutex m;
  caf::actor gate;
  msg::leadership verdict;
};

std::string identity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0')
    return pod;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  return std::string{host} + "_" + std::to_string(getpid()) + "_" + std::to_string(rd() % 100000);
}

runtime::child_spec acting_subtree(const runtime::config& cfg, runtime::metrics& m, runtime::readiness& ready) {
  return runtime::supervisor_child(runtime::supervisor_options_from(cfg, "acting", &m, &ready), {});
}

}  // namespace

std::variant<runtime::agent_plan, std::string> build_agent(const runtime::config& cfg, caf::actor_system&,
                                                           runtime::metrics& m, runtime::readiness& ready) {
  runtime::agent_plan plan;
  std::optional<k8s::connection> conn;
  if (!cfg.kubernetes.kubeconfig.empty()) {
    auto loaded = k8s::load_kubeconfig(cfg.kubernetes.kubeconfig, cfg.kubernetes.context);
    if (auto* e = std::get_if<k8s::connection_error>(&loaded))
      return e->message;
    conn = std::get<k8s::connection>(std::move(loaded));
  } else if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    std::map<std::string, std::string> k8s_env;
    for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"})
      if (const char* v = std::getenv(name))
        k8s_env[name] = v;
    auto loaded = k8s::in_cluster(k8s_env);
    if (auto* e = std::get_if<k8s::connection_error>(&loaded))
      return e->message;
    conn = std::get<k8s::connection>(std::move(loaded));
  }

  if (!conn || !cfg.leader_election.enabled) {
    runtime::log::info("agent", conn ? "leader election disabled: acting at once" : "no cluster configured",
                       {{"hint", conn ? "" : "set kubernetes.kubeconfig, --kubeconfig or run in a Pod"}});
    plan.children.push_back(acting_subtree(cfg, m, ready));
    return plan;
  }

  auto svc = std::make_shared<cluster_services>();
  k8s::transport::options topts;
  topts.qps = cfg.kubernetes.qps;
  topts.burst = cfg.kubernetes.burst;
  svc->io = std::make_unique<k8s::transport>(topts);
  svc->api = std::make_unique<k8s::client>(*conn, *svc->io);
  runtime::log::info("agent", "cluster", {{"server", conn->server}});

  k8s::leader_elector::options le;
  le.ns = cfg.leader_election.ns;
  le.name = cfg.leader_election.name;
  le.identity = identity();
  le.lease_duration = std::chrono::duration_cast<std::chrono::seconds>(cfg.leader_election.lease_duration);
  le.renew_deadline = std::chrono::duration_cast<std::chrono::seconds>(cfg.leader_election.renew_deadline);
  le.retry_period = std::chrono::duration_cast<std::chrono::seconds>(cfg.leader_election.retry_period);
  std::weak_ptr<cluster_services> weak = svc;
  auto tell = [weak](bool leading) {
    auto s = weak.lock();
    if (!s)
      return;
    std::lock_guard<std::mutex> g{s->m};
    s->verdict.leading = leading;
    if (s->gate)
      caf::anon_send(s->gate, s->verdict);
  };
  le.on_started_leading = [tell] { tell(true); };
  le.on_stopped_leading = [tell] { tell(false); };
  le.on_new_leader = [weak](const std::string& holder) {
    if (auto s = weak.lock()) {
      std::lock_guard<std::mutex> g{s->m};
      s->verdict.holder = holder;
    }
    runtime::log::info("agent", "leader", {{"holder", holder.empty() ? "(none)" : holder}});
  };
  svc->elector = k8s::leader_elector::make(*svc->api, le);
  ready.set("leader_election", true, "");

  runtime::child_spec gate;
  gate.name = "leadership_gate";
  gate.restart = runtime::restart_mode::permanent;
  gate.start = [svc, acting = acting_subtree(cfg, m, ready), deadline = cfg.runtime.shutdown_timeout](caf::actor_system& s) {
    auto g = spawn_leadership_gate(s, acting, deadline);
    std::lock_guard<std::mutex> lock{svc->m};
    svc->gate = g;
    if (svc->verdict.leading)  // a restarted gate resumes where the old one was
      caf::anon_send(g, svc->verdict);
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
  plan.services = svc;
  return plan;
}

}  // namespace headroom::actors
