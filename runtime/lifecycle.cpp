#include "runtime/lifecycle.hpp"

#include <caf/all.hpp>

#include <csignal>
#include <pthread.h>
#include <thread>
#include <unistd.h>

#include "runtime/fault_hooks.hpp"
#include "runtime/messages.hpp"
#include "runtime/http_endpoint.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"
#include "runtime/relay.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::runtime {

namespace {

sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// Waits for SIGTERM/SIGINT on its own thread and turns the first into a message; a second one
// means the user does not want to wait for the orderly stop.
void start_signal_thread(caf::actor main_actor) {
  std::thread([main_actor] {
    const sigset_t set = shutdown_signals();
    for (int count = 0;; ++count) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0)
        return;
      if (count == 0) {
        log::info("main", "shutdown signal received", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
        caf::anon_send(main_actor, msg::shutdown_atom_v);
      } else {
        log::warn("main", "second shutdown signal, exiting without waiting");
        std::_Exit(1);
      }
    }
  }).detach();
}

}  // namespace

void block_shutdown_signals() {
  const sigset_t set = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a scraper hanging up must not kill the agent
}

void configure_actor_system(caf::actor_system_config& caf_cfg, const config& cfg) {
  const size_t threads = cfg.runtime.scheduler_threads != 0 ? cfg.runtime.scheduler_threads
                                                            : std::max(2u, std::thread::hardware_concurrency());
  caf_cfg.set("scheduler.max-threads", threads);
  caf_cfg.set("scheduler.max-throughput", static_cast<size_t>(cfg.runtime.max_throughput));
  // An idle worker polls its queue before it sleeps on its condition variable (which a message
  // from outside the scheduler wakes at once). CAF's default polls 500 times with a 50 µs sleep
  // between: 25 ms of context switches after every burst, which at headroom's steady trickle of
  // events (ticks, I/O answers) kept both workers switching thousands of times a second and cost a
  // quarter of a core doing nothing (reactive_scaling_bench, perf: finish_task_switch). A few
  // polls keep a burst's follow-up messages cheap; then the worker sleeps.
  caf_cfg.set("work-stealing.moderate-poll-attempts", size_t{0});
}

int run_agent(const config& cfg, const plan_builder& plan) {
  logger::global().set_level(cfg.logging.level);
  metrics m;
  readiness ready;
  caf::actor_system_config caf_cfg;
  configure_actor_system(caf_cfg, cfg);
  caf::actor_system sys{caf_cfg};

  const auto root_opts = supervisor_options_from(cfg, "root", &m, &ready);

  // Children start in this order and stop in reverse: http comes first so /healthz answers while
  // everything else starts, and last on the way down so /readyz reports the shutdown throughout.
  std::vector<child_spec> children;
  children.push_back(child_spec{"http", [&](caf::actor_system& s) { return untyped(spawn_http_endpoint(s, cfg.http.listen, m, ready)); },
                                restart_mode::permanent, {}});
  agent_plan extra;
  if (plan) {
    auto built = plan(cfg, sys, m, ready);
    if (auto* why = std::get_if<start_failure>(&built)) {
      log::error("main", "cannot start", {{"error", why->message}});
      return why->exit_code;
    }
    extra = std::move(std::get<agent_plan>(built));
    for (auto& c : extra.children)
      children.push_back(std::move(c));
  }

  log::info("main", "starting", {{"config", cfg.source.empty() ? "(defaults)" : cfg.source},
                                 {"listen", cfg.http.listen},
                                 {"log_level", to_string(cfg.logging.level)}});
  caf::scoped_actor self{sys};
  // Test-only; an invalid handle unless HEADROOM_TEST_FAULTS=1. Stopped on every way out, or the
  // actor system would wait for it.
  struct broker_guard {
    caf::actor_system& sys;
    fault_broker_actor broker;
    ~broker_guard() { stop_fault_broker(sys, broker); }
  } faults{sys, spawn_fault_broker(sys)};
  auto root = untyped(spawn_supervisor(sys, root_opts, std::move(children)));
  for (const auto& r : extra.relays)
    own_relay(r, root);
  self->monitor(root);
  start_signal_thread(caf::actor_cast<caf::actor>(self));

  bool root_down = false;
  self->receive([&](caf::down_msg& down) {
                  root_down = true;
                  log::error("main", "root supervisor exited: nothing left to do the work, exiting",
                             {{"reason", exit_reason_label(sys, down.reason)}, {"error", exit_reason_detail(down.reason)}});
                },
                [&](msg::shutdown_atom) {});
  if (root_down)
    return 1;

  ready.begin_shutdown();
  if (extra.before_stop)
    extra.before_stop();
  self->send_exit(root, caf::exit_reason::user_shutdown);
  // Each child has its own deadline; this bound only catches a supervisor that itself hangs.
  const auto bound = cfg.runtime.shutdown_timeout * 4 + std::chrono::seconds(5);
  int code = 0;
  self->receive([&](caf::down_msg&) {
                  if (!a_child_was_killed()) {
                    log::info("main", "stopped cleanly");
                    return;
                  }
                  // A killed child's own children may still run (a kill reaches no further), with
                  // the clients and I/O threads main would now destroy under them: exit as is.
                  log::warn("main", "stopped; a child that missed its stop deadline was killed, exiting without tearing down");
                  std::_Exit(0);
                },
                caf::after(bound) >> [&] {
                  log::error("main", "shutdown did not finish in time", {{"bound_ms", static_cast<int64_t>(bound.count())}});
                  code = 1;
                });
  if (code != 0)
    std::_Exit(code);  // the actor system would wait forever for the stuck actor
  return code;
}

}  // namespace headroom::runtime
