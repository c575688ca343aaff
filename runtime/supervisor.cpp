#include "runtime/supervisor.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <optional>

#include "runtime/messages.hpp"
#include "runtime/clock.hpp"
#include "runtime/config.hpp"
#include "runtime/fault_hooks.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"

namespace headroom::runtime {

namespace {

std::atomic<bool> killed_any{false};

struct child_state {
  child_spec spec;
  caf::actor handle;            // invalid while down
  uint64_t generation = 0;      // bumps on every start and stop: stale timers are ignored
  clock::time_point started;    // of the current (or last) incarnation
  uint32_t restarts = 0;
  std::string last_exit;
  std::string last_error;       // the exit's message, when it had one
  std::optional<restart_policy> policy;
  bool gone = false;            // finished (transient, normal exit) or given up during stop
  // Being stopped for good (stop_child_atom): answered once down; the slot then stays, gone, and a
  // child added later under its name reuses it (timers carry the generation, which keeps counting).
  std::optional<caf::typed_response_promise<bool>> removing;
};

struct supervisor_state {
  supervisor_options opts;
  std::vector<child_state> children;
  std::optional<actor_system_clock> clock;
  bool stopping = false;
  caf::error final_reason;
  size_t stop_cursor = 0;       // children [0, stop_cursor) still to stop, last first
  static inline const char* name = "headroom.supervisor";
};

// Its own timers: a child's backoff is over, a child's stop deadline has passed (index, generation).
using supervisor_impl = supervisor_actor::extend<caf::reacts_to<msg::restart_atom, uint32_t, uint64_t>,
                                                 caf::reacts_to<msg::deadline_atom, uint32_t, uint64_t>>;
using supervisor_self = supervisor_impl::stateful_base<supervisor_state>;

std::string actor_name(const supervisor_state& st) { return "supervisor/" + st.opts.name; }

void report_readiness(supervisor_self* self) {
  auto& st = self->state;
  if (st.opts.ready == nullptr)
    return;
  std::string waiting;
  for (const auto& c : st.children)
    if (!c.gone && !c.handle)
      waiting += (waiting.empty() ? "" : ", ") + c.spec.name;
  st.opts.ready->set(actor_name(st), waiting.empty() && !st.stopping,
                     st.stopping ? "stopping" : waiting.empty() ? "" : "restarting " + waiting);
}

void start_child(supervisor_self* self, size_t index);

void schedule_restart(supervisor_self* self, size_t index);

void stop_next(supervisor_self* self) {
  auto& st = self->state;
  while (st.stop_cursor > 0) {
    auto& c = st.children[st.stop_cursor - 1];
    if (!st.opts.parallel_stop)
      ++c.generation;  // cancels a pending restart of this child (in parallel: done at begin_stop)
    if (c.handle) {
      if (!st.opts.parallel_stop) {  // (in parallel, every child was asked at begin_stop)
        log::info(actor_name(st), "stopping child", {{"child", c.spec.name}});
        self->send_exit(c.handle, caf::exit_reason::user_shutdown);
        self->delayed_send(self, st.opts.stop_deadline, msg::deadline_atom_v,
                           static_cast<uint32_t>(st.stop_cursor - 1), c.generation);
      }
      return;  // wait for its down message or its deadline
    }
    --st.stop_cursor;
  }
  if (st.opts.ready != nullptr)
    st.opts.ready->remove(actor_name(st));
  log::info(actor_name(st), "all children stopped",
            {{"reason", exit_reason_label(self->system(), st.final_reason)}});
  self->quit(st.final_reason);
}

void begin_stop(supervisor_self* self, caf::error reason) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  st.final_reason = std::move(reason);
  st.stop_cursor = st.children.size();
  report_readiness(self);
  if (st.opts.parallel_stop) {
    log::info(actor_name(st), "stopping every child at once", {{"children", static_cast<uint64_t>(st.children.size())}});
    for (size_t i = 0; i < st.children.size(); ++i) {
      auto& c = st.children[i];
      ++c.generation;  // cancels a pending restart
      if (!c.handle)
        continue;
      self->send_exit(c.handle, caf::exit_reason::user_shutdown);
      self->delayed_send(self, st.opts.stop_deadline, msg::deadline_atom_v, static_cast<uint32_t>(i), c.generation);
    }
  }
  stop_next(self);
}

void start_child(supervisor_self* self, size_t index) {
  auto& st = self->state;
  auto& c = st.children[index];
  ++c.generation;
  c.started = st.clock->now();
  try {
    c.handle = c.spec.start(self->system());
  } catch (const std::exception& e) {
    log::error(actor_name(st), "child factory failed", {{"child", c.spec.name}, {"error", e.what()}});
    c.handle = caf::actor{};
  }
  if (!c.handle) {
    c.last_exit = "start_failed";
    if (st.opts.metrics != nullptr)
      st.opts.metrics->child_exited(st.opts.name, c.spec.name, c.last_exit);
    schedule_restart(self, index);
    return;
  }
  self->monitor(c.handle);
  if (c.spec.relay)
    caf::anon_send(c.spec.relay, msg::relay_target{c.handle});
  if (st.opts.metrics != nullptr)
    st.opts.metrics->child_started(st.opts.name, c.spec.name);
  log::debug(actor_name(st), "child started", {{"child", c.spec.name}, {"generation", c.generation}});
  report_readiness(self);
}

void schedule_restart(supervisor_self* self, size_t index) {
  auto& st = self->state;
  auto& c = st.children[index];
  const auto now = st.clock->now();
  auto delay = c.policy->on_exit(now, now - c.started);
  if (!delay) {
    log::error(actor_name(st), "child restarts too often, giving up",
               {{"child", c.spec.name},
                {"max_restarts", st.opts.restart.max_restarts},
                {"window_ms", static_cast<int64_t>(st.opts.restart.window.count())},
                {"last_exit", c.last_exit},
                {"error", c.last_error}});
    c.gone = true;
    if (st.opts.metrics != nullptr)
      st.opts.metrics->escalated(st.opts.name);
    // The cause travels up: the parent's log (and main's, when the root gives up) names it too.
    const auto cause = c.last_error.empty() ? c.last_exit : c.last_error;
    begin_stop(self, caf::make_error(caf::sec::runtime_error,
                                     "supervisor " + st.opts.name + " gave up on child " + c.spec.name + ": " + cause));
    return;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*delay);
  log::warn(actor_name(st), "restarting child after backoff",
            {{"child", c.spec.name}, {"backoff_ms", static_cast<int64_t>(ms.count())}, {"last_exit", c.last_exit}});
  self->delayed_send(self, *delay, msg::restart_atom_v, static_cast<uint32_t>(index), c.generation);
  report_readiness(self);
}

void on_child_down(supervisor_self* self, const caf::down_msg& down) {
  auto& st = self->state;
  for (size_t i = 0; i < st.children.size(); ++i) {
    auto& c = st.children[i];
    if (!c.handle || c.handle.address() != down.source)
      continue;
    c.handle = caf::actor{};
    if (c.spec.relay)
      caf::anon_send(c.spec.relay, msg::relay_target{});
    c.last_exit = exit_reason_label(self->system(), down.reason);
    c.last_error = exit_reason_detail(down.reason);
    if (st.opts.metrics != nullptr)
      st.opts.metrics->child_exited(st.opts.name, c.spec.name, c.last_exit);
    if (c.removing) {
      log::info(actor_name(st), "child stopped for good", {{"child", c.spec.name}, {"reason", c.last_exit}});
      c.gone = true;
      c.removing->deliver(true);
      c.removing.reset();
      if (!st.stopping) {
        report_readiness(self);
        return;
      }
    }
    if (st.stopping) {
      if (i + 1 == st.stop_cursor) {
        --st.stop_cursor;
        stop_next(self);
      }
      return;
    }
    const bool requested = !down.reason || down.reason == caf::exit_reason::user_shutdown;
    if (requested && c.spec.restart == restart_mode::transient) {
      log::info(actor_name(st), "child finished", {{"child", c.spec.name}, {"reason", c.last_exit}});
      c.gone = true;
      report_readiness(self);
      return;
    }
    log::warn(actor_name(st), "child exited", {{"child", c.spec.name}, {"reason", c.last_exit}, {"error", c.last_error}});
    schedule_restart(self, i);
    return;
  }
}

// A child added while the supervisor runs: started at once, supervised like the others.
bool add_child(supervisor_self* self, child_spec spec) {
  auto& st = self->state;
  if (st.stopping)
    return false;
  size_t index = st.children.size();
  for (size_t i = 0; i < st.children.size(); ++i) {
    if (st.children[i].spec.name != spec.name)
      continue;
    if (!st.children[i].gone)
      return false;
    index = i;  // a child of this name was stopped for good: its slot is reused
  }
  if (index == st.children.size())
    st.children.emplace_back();
  auto& c = st.children[index];
  c.spec = std::move(spec);
  c.gone = false;
  c.restarts = 0;
  c.last_exit.clear();
  c.last_error.clear();
  c.policy.emplace(st.opts.restart, st.opts.jitter_seed == 0 ? std::random_device{}() : st.opts.jitter_seed + index);
  log::info(actor_name(st), "child added", {{"child", c.spec.name}});
  start_child(self, index);
  return true;
}

// A child stopped for good: asked to exit, killed after stop_deadline, never restarted.
caf::typed_response_promise<bool> remove_child(supervisor_self* self, const std::string& name) {
  auto& st = self->state;
  auto answer = self->make_response_promise<bool>();
  for (size_t i = 0; i < st.children.size(); ++i) {
    auto& c = st.children[i];
    if (c.spec.name != name || c.gone || c.removing || st.stopping)
      continue;
    ++c.generation;  // a pending restart is cancelled
    if (!c.handle) {  // down, waiting for its backoff
      c.gone = true;
      report_readiness(self);
      answer.deliver(true);
      return answer;
    }
    c.removing = answer;
    log::info(actor_name(st), "stopping child for good", {{"child", c.spec.name}});
    self->send_exit(c.handle, caf::exit_reason::user_shutdown);
    self->delayed_send(self, st.opts.stop_deadline, msg::deadline_atom_v, static_cast<uint32_t>(i), c.generation);
    return answer;
  }
  answer.deliver(false);
  return answer;
}

void kill_removed(supervisor_self* self, size_t index) {
  auto& st = self->state;
  auto& c = st.children[index];
  if (!c.handle)
    return;
  log::warn(actor_name(st), "child missed its stop deadline, killing it",
            {{"child", c.spec.name}, {"deadline_ms", static_cast<int64_t>(st.opts.stop_deadline.count())}});
  self->send_exit(c.handle, caf::exit_reason::kill);  // its down message finishes the removal
  killed_any = true;
}

supervisor_impl::behavior_type supervisor_behavior(supervisor_self* self, supervisor_options opts, std::vector<child_spec> specs) {
  auto& st = self->state;
  st.opts = std::move(opts);
  st.clock.emplace(self->system().clock());
  uint64_t seed = st.opts.jitter_seed;
  st.children.reserve(specs.size());
  for (auto& spec : specs) {
    child_state c;
    c.spec = std::move(spec);
    c.policy.emplace(st.opts.restart, seed == 0 ? std::random_device{}() : seed++);
    st.children.push_back(std::move(c));
  }
  self->set_down_handler([self](caf::down_msg& down) { on_child_down(self, down); });
  self->set_exit_handler([self](caf::exit_msg& exit) { begin_stop(self, std::move(exit.reason)); });
  for (size_t i = 0; i < st.children.size(); ++i)
    start_child(self, i);
  log::info(actor_name(st), "started", {{"children", static_cast<uint64_t>(st.children.size())}});
  join_fault_broker(self);
  return {
      [self](msg::restart_atom, uint32_t index, uint64_t generation) {
        auto& st = self->state;
        if (st.stopping || index >= st.children.size() || st.children[index].generation != generation)
          return;
        ++st.children[index].restarts;
        if (st.opts.metrics != nullptr)
          st.opts.metrics->child_restarted(st.opts.name, st.children[index].spec.name);
        start_child(self, index);
      },
      [self](msg::deadline_atom, uint32_t index, uint64_t generation) {
        auto& st = self->state;
        if (!st.stopping && index < st.children.size() && st.children[index].removing &&
            st.children[index].generation == generation) {
          kill_removed(self, index);
          return;
        }
        const bool in_turn = st.opts.parallel_stop ? index < st.stop_cursor : index + 1 == st.stop_cursor;
        if (!st.stopping || !in_turn || st.children[index].generation != generation)
          return;
        auto& c = st.children[index];
        log::warn(actor_name(st), "child missed its stop deadline, killing it",
                  {{"child", c.spec.name}, {"deadline_ms", static_cast<int64_t>(st.opts.stop_deadline.count())}});
        if (c.handle) {
          self->demonitor(c.handle);
          self->send_exit(c.handle, caf::exit_reason::kill);
          c.handle = caf::actor{};
          if (c.spec.relay)
            caf::anon_send(c.spec.relay, msg::relay_target{});
          c.last_exit = "kill";
          killed_any = true;
        }
        if (!st.opts.parallel_stop)
          --st.stop_cursor;
        stop_next(self);  // (in parallel: on from the last child still running)
      },
      [self](msg::fault_atom, const std::string& child) {  // test-only (runtime/fault_hooks.hpp)
        auto& st = self->state;
        int64_t hit = 0;
        for (auto& c : st.children)
          if (c.spec.name == child && c.handle) {
            log::warn(actor_name(st), "test fault hook: failing child", {{"child", c.spec.name}});
            self->send_exit(c.handle, caf::exit_reason::kill);
            ++hit;
          }
        return hit;
      },
      [self](child_spec& spec) { return add_child(self, std::move(spec)); },
      [self](msg::stop_child_atom, const std::string& name) { return remove_child(self, name); },
      [self](caf::get_atom) {
        auto& st = self->state;
        msg::supervisor_status out{st.opts.name, st.stopping, {}};
        for (const auto& c : st.children)
          out.children.push_back(msg::child_status{c.spec.name, static_cast<bool>(c.handle), c.restarts, c.last_exit});
        return out;
      },
  };
}

}  // namespace

bool a_child_was_killed() { return killed_any; }
void note_child_killed() { killed_any = true; }

supervisor_actor spawn_supervisor(caf::actor_system& sys, supervisor_options opts, std::vector<child_spec> children) {
  return sys.spawn(supervisor_behavior, std::move(opts), std::move(children));
}

supervisor_options supervisor_options_from(const config& cfg, std::string name, metrics* m, readiness* ready) {
  supervisor_options o;
  o.name = std::move(name);
  o.restart.initial = cfg.supervision.backoff_initial;
  o.restart.max = cfg.supervision.backoff_max;
  o.restart.max_restarts = cfg.supervision.max_restarts;
  o.restart.window = cfg.supervision.restart_window;
  o.restart.healthy_after = 10 * cfg.supervision.restart_window;
  o.stop_deadline = cfg.runtime.shutdown_timeout;
  o.metrics = m != nullptr ? &m->supervision() : nullptr;
  o.ready = ready;
  return o;
}

child_spec supervisor_child(supervisor_options opts, std::vector<child_spec> children) {
  child_spec spec;
  spec.name = opts.name;
  spec.start = [opts, children](caf::actor_system& sys) { return untyped(spawn_supervisor(sys, opts, children)); };
  return spec;
}

std::string exit_reason_label(const caf::actor_system& sys, const caf::error& reason) {
  if (!reason)
    return "normal";
  if (reason.category() == caf::atom("exit"))
    return caf::to_string(static_cast<caf::exit_reason>(reason.code()));
  if (reason.category() == caf::atom("system"))
    return caf::to_string(static_cast<caf::sec>(reason.code()));
  return sys.render(reason);
}

std::string exit_reason_detail(const caf::error& reason) {
  if (!reason)
    return {};
  const auto& context = reason.context();
  if (context.empty())
    return {};
  if (context.size() == 1 && context.match_element<std::string>(0))
    return context.get_as<std::string>(0);
  return caf::to_string(context);
}

}  // namespace headroom::runtime
