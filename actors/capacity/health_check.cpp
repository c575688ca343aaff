// health_check: one per scale set, every healthCheck.interval over the scale set's runner pods.
//
//   runner_never_registered  Running longer than registrationTimeout (counted from Running) and
//                            GitHub has never seen the runner online → replaced
//   pod_stuck_pending        Pending longer than pendingTimeout → replaced
//   runner_idle              online, not busy, for longer than idleTimeout → removed
//   (these three are decided by actors/runners/health, which the webhook scheduler shares)
//   node_unreachable         on a node tainted node.kubernetes.io/unreachable → force-deleted
//   terminal                 Succeeded/Failed → deleted after terminalGrace
//
// "Replaced" and "removed" remove the GitHub-side runner first and delete the pod only when that
// worked (or the runner is already gone): when GitHub says the runner's job is still running, the
// worker is left alone. The provisioner makes the replacement if the job still needs one.

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "actors/k8s/event_recorder.hpp"
#include "actors/capacity/capacity.hpp"
#include "actors/runners/health.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::capacity {

namespace {

// The health check's own GitHub lookups, its answers to itself: what GitHub says of a runner
// pod's runner, and the end of one of its removals ("removal_done"), so a removal in flight is
// never issued twice. Local: never leaves the process.
struct runner_status {
  std::string pod;
  std::string status;  // online-busy | online-idle | offline | absent | "" (lookup failed) | removal_done
};

}  // namespace
}  // namespace headroom::actors::capacity

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::runner_status)

namespace headroom::actors::capacity {

namespace {

constexpr std::string_view actor_name = "health_check";
using clock_type = caf::actor_clock;  // the actor system's clock: tests drive it

struct health_state {
  context_ptr ctx;
  std::map<std::string, clock_type::time_point> terminal_since;
  runners::health_memory health{{}};  // per pod: Running since, registered, idle since
  std::set<std::string> acting_on;    // pods with a removal in flight
  static inline const char* name = "headroom.health_check";
};

// Its timer (0: check), and what GitHub says of a runner pod's runner.
using health_impl = health_check_actor::extend<caf::reacts_to<runner_status>>;
using health_self = health_impl::stateful_base<health_state>;

// Pod ages come from creationTimestamp, a wall-clock time, so the checks count in wall-clock ms.
int64_t wall_ms(health_self* self) { return runtime::actor_system_clock{self->clock()}.wall_ms(); }

runners::runner_seen seen_of(const std::string& status) {
  if (status == "absent")
    return runners::runner_seen::absent;
  if (status == "online-idle")
    return runners::runner_seen::idle;
  if (status == "online-busy")
    return runners::runner_seen::busy;
  return status == "offline" ? runners::runner_seen::offline : runners::runner_seen::unknown;
}

int64_t runner_id_of(const k8s::pod& p) {
  const auto* v = p.meta.annotation(keys::runner_id);
  if (v == nullptr)
    return 0;
  try {
    return std::stoll(*v);
  } catch (...) {
    return 0;
  }
}

void delete_pod(health_self* self, const std::string& name, bool force) {
  k8s::delete_options o;
  if (force)
    o.grace_period_seconds = 0;
  self->state.ctx->kube->remove(k8s::kinds::pods, self->state.ctx->spec.ns, name, o, [name](k8s::api_result r) {
    if (auto* e = std::get_if<k8s::api_error>(&r); e && e->what != k8s::api_error::kind::not_found)
      runtime::log::warn(actor_name, "pod delete failed", {{"pod", name}, {"error", e->describe()}});
  });
}

// Removes the GitHub runner, then (unless its job still runs) deletes the pod.
void replace(health_self* self, const k8s::pod& p, const char* check, bool force) {
  auto& st = self->state;
  if (!st.acting_on.insert(p.meta.name).second)
    return;
  runtime::log::warn(actor_name, "unhealthy runner", {{"scale_set", st.ctx->spec.name}, {"pod", p.meta.name}, {"check", check}});
  tell_event(st.ctx->events, {"v1", "Pod", p.meta.ns, p.meta.name, p.meta.uid, "Warning", "RunnerReplaced", "HealthCheck",
                              std::string{"failed the "} + check + " health check: removing the runner from GitHub, then the pod"});
  st.ctx->metrics.add("headroom_runner_health_actions_total", 1);
  const int64_t id = runner_id_of(p);
  const auto me = runtime::handle_of(self);
  auto* kube = st.ctx->kube;
  const std::string ns = st.ctx->spec.ns, name = p.meta.name;
  auto finish = [me, kube, ns, name, force](bool remove_pod) {
    if (remove_pod) {
      k8s::delete_options o;
      if (force)
        o.grace_period_seconds = 0;
      kube->remove(k8s::kinds::pods, ns, name, o, [](k8s::api_result) {});
    }
    caf::anon_send(me, runner_status{name, "removal_done"});  // the pod leaves acting_on
  };
  if (id == 0) {
    finish(true);
    return;
  }
  st.ctx->github->remove_runner(id, [finish, name](github::actions_result<github::done> r) {
    auto* e = std::get_if<github::actions_error>(&r);
    if (e && e->what == github::actions_error::kind::job_still_running) {
      runtime::log::info(actor_name, "GitHub says the runner's job is still running: leaving it alone", {{"pod", name}});
      finish(false);
      return;
    }
    if (e && e->what != github::actions_error::kind::runner_not_found) {
      runtime::log::warn(actor_name, "could not remove the runner; will retry", {{"pod", name}, {"error", e->describe()}});
      finish(false);
      return;
    }
    finish(true);
  });
}

// The pod's own node, looked up in the shared node cache: O(runner pods) per check, not O(nodes)
// (a scan of every node per scale set per interval was 166,000 node visits a second for 1,000
// scale sets on 5,000 nodes).
bool on_unreachable_node(const health_state& st, const k8s::pod& p) {
  if (!st.ctx->nodes || p.node_name.empty())
    return false;
  const auto n = st.ctx->nodes->get("", p.node_name);
  return n && std::any_of(n->taints.begin(), n->taints.end(), [](const auto& t) { return t.key == "node.kubernetes.io/unreachable"; });
}

void check(health_self* self) {
  auto& st = self->state;
  const auto& h = st.ctx->spec.health_check;
  const auto now = self->clock().now();
  std::set<std::string> live;
  for (const auto& p : st.ctx->pods->list()) {
    const auto* r = p->meta.label(keys::role);
    if (r == nullptr || *r != role_label(role::runner) || p->meta.ns != st.ctx->spec.ns)
      continue;
    live.insert(p->meta.name);
    if (on_unreachable_node(st, *p)) {
      replace(self, *p, "node_unreachable", true);
      continue;
    }
    if (!p->meta.deletion_timestamp.empty())
      continue;
    if (p->phase == "Succeeded" || p->phase == "Failed") {
      auto [it, fresh] = st.terminal_since.emplace(p->meta.name, now);
      if (now - it->second >= h.terminal_grace)
        delete_pod(self, p->meta.name, false);
      continue;
    }
    const int64_t now_ms = wall_ms(self);
    const auto v = st.health.observe(*p, now_ms, runners::runner_seen::unknown);
    if (v == runners::verdict::pod_stuck_pending) {
      replace(self, *p, runners::to_string(v), false);
      continue;
    }
    // Running: ask GitHub once its answer can matter (registered: idle; else past the timeout).
    const int64_t id = runner_id_of(*p);
    if (id == 0 || !st.health.worth_asking(p->meta.name, now_ms))
      continue;
    const auto me = runtime::handle_of(self);
    st.ctx->github->get_runner(id, [me, pod = p->meta.name](github::actions_result<github::runner_ref> res) {
      runner_status out;
      out.pod = pod;
      if (auto* e = std::get_if<github::actions_error>(&res))
        out.status = e->what == github::actions_error::kind::runner_not_found ? "absent" : "";
      else
        out.status = std::get<github::runner_ref>(res).status == "online"
                         ? (std::get<github::runner_ref>(res).busy ? "online-busy" : "online-idle")
                         : "offline";
      caf::anon_send(me, std::move(out));
    });
  }
  std::erase_if(st.terminal_since, [&](const auto& kv) { return live.count(kv.first) == 0; });
  st.health.keep_only(live);
  std::erase_if(st.acting_on, [&](const auto& n) { return live.count(n) == 0; });
}

health_impl::behavior_type health_behavior(health_self* self, context_ptr ctx) {
  self->state.ctx = std::move(ctx);
  const auto& h = self->state.ctx->spec.health_check;
  self->state.health = runners::health_memory{{h.registration_timeout, h.pending_timeout, h.idle_timeout}};
  self->delayed_send(self, self->state.ctx->spec.health_check.interval, msg::check_atom_v);
  return {
      [self](msg::check_atom) {
        check(self);
        self->delayed_send(self, self->state.ctx->spec.health_check.interval, msg::check_atom_v);
      },
      [self](runner_status& r) {  // what GitHub says of a runner pod's runner
        auto& s = self->state;
        if (r.status == "removal_done") {  // a replace() finished, whatever its outcome: the next tick may act again
          s.acting_on.erase(r.pod);
          return;
        }
        auto pod = s.ctx->pods->get(s.ctx->spec.ns, r.pod);
        if (!pod || r.status.empty() || !pod->meta.deletion_timestamp.empty())
          return;
        const auto seen = seen_of(r.status);
        if (seen == runners::runner_seen::absent) {  // orphan: GitHub has no runner for this pod
          runtime::log::warn(actor_name, "runner pod without a GitHub runner: deleting", {{"pod", r.pod}});
          delete_pod(self, r.pod, false);
          return;
        }
        const auto v = s.health.observe(*pod, wall_ms(self), seen);
        if (v != runners::verdict::healthy)
          replace(self, *pod, runners::to_string(v), false);
      },
  };
}

}  // namespace

health_check_actor spawn_health_check(caf::actor_system& sys, context_ptr ctx) { return sys.spawn(health_behavior, std::move(ctx)); }

}  // namespace headroom::actors::capacity
