// runner_provisioner: one per scale set. The service assigns jobs up to the advertised capacity;
// this actor gives each assigned job a runner, never more runners than min(assigned, advertised
// capacity, maxRunners).
//
// standalone (default): one ephemeral runner pod per needed runner. A JIT configuration is asked
// for first (it registers the runner); the pod refers to a Secret holding it; the Secret is made
// right after the pod and owned by it, so both go together. A pod that cannot be made has its
// GitHub runner removed (no orphan registrations). A runner whose job completed has its pod deleted.
// And a sweep: every max(healthCheck.interval, 30 s) the pool's runners are listed, and a runner of
// this scale set that has no pod, no job and no creation in flight at two sweeps in a row (a pod
// lost with the process that made it, a create whose answer never came) is removed from GitHub:
// a registration nothing will ever run would count as a runner of the set for good.
// The same sweep scales down: while more runner pods live than desired, a runner the service lists
// as idle, with no job started on it, seen so at two sweeps in a row, is removed from GitHub first
// and its pod deleted only once that succeeded, as ARC's scale-down does - the service refuses to
// remove a runner a job was assigned to meanwhile, and then the runner stays. Without it a runner
// made for a job another runner took (the statistics lag each job's end) stayed idle for good,
// and the pair handed to that job held its workflow room with it (found by the chaos suite).
//
// arc: merge-patches EphemeralRunnerSet.spec.replicas with an increasing spec.patchID, as ARC's
// own listener does; ARC's controller makes the pods.

#include <caf/all.hpp>

#include <ctime>
#include <map>
#include <set>
#include <simdjson.h>

#include "actors/capacity/capacity.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::capacity {

namespace {

constexpr std::string_view actor_name = "runner_provisioner";
constexpr uint32_t pods_buffer = 1;
const k8s::resource_kind ephemeral_runner_sets{"actions.github.com", "v1alpha1", "ephemeralrunnersets", true};

// The pool's runners, from the I/O thread (the sweep's answer).
struct runner_list {
  bool ok = false;
  std::vector<github::runner_ref> runners;
};

// An idle runner's removal from GitHub, answered (the scale-down's second step: its pod).
struct idle_runner_removed {
  std::string name;
  bool ok = false;
};

// A runner pod's delete, answered: done (deleted, or not there) or failed (tried again).
struct runner_pod_deleted {
  std::string name;
  bool done = false;
  std::string error;
};

}  // namespace
}  // namespace headroom::actors::capacity

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::runner_list)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::idle_runner_removed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::runner_pod_deleted)

namespace headroom::actors::capacity {
namespace {

constexpr uint64_t reconcile_tick = 0, sweep_tick = 1;

struct creation {
  enum step { pod, secret } at = pod;
  std::string name;
  int64_t runner_id = 0;
  std::string jit;
};

struct provisioner_state {
  context_ptr ctx;
  scale_set_peers peers;
  std::unique_ptr<informer_feed<k8s::pod>> feed;
  int64_t cap = 0;  // the advertised capacity
  bool cap_known = false;
  int64_t scale_set_id = 0;
  msg::scale_set_statistics stats;
  int creating = 0;                     // JIT requested, pod not yet made
  // Pods made, not yet seen by the informer (when made): counted until seen, or for a minute at
  // most (a pod deleted before the watch showed it must not hold a runner's place forever).
  std::map<std::string, caf::actor_clock::time_point> made;
  std::set<std::string> seen_before_made;  // pods the watch showed before their create was answered
  // Runners whose job started and has not completed yet. Such a runner's pod counts until the
  // completion arrives even once it has ended: the service still counts its job as assigned, and
  // a pod that ends a moment before the completion message would otherwise be replaced by a runner
  // no job is left for (found by the chaos suite: 9 runners for 6 jobs after an API server
  // restart, 3 of them idle for good).
  std::set<std::string> busy;
  api_calls<creation> calls;
  int64_t arc_replicas = -1, arc_patch_id = 0;
  std::set<std::string> jit_pending;  // runners registered (JIT asked for), pod create not answered
  std::set<int64_t> podless;          // runner ids the last sweep found without a pod
  std::set<int64_t> idle_excess;      // runner ids the last sweep found idle while runners were in excess
  std::set<std::string> removing;     // idle runners being removed from GitHub (their pods still count)
  // Runner pods that must go (their job is done, their runner removed, their create failed):
  // deleted by name until the API server says deleted or not there (see delete_runner_pod).
  struct doomed_pod {
    caf::actor_clock::time_point since, last_try;
    bool in_flight = false;
  };
  std::map<std::string, doomed_pod> doomed;
  static inline const char* name = "headroom.runner_provisioner";
};

using provisioner_actor = caf::stateful_actor<provisioner_state>;

bool terminal(const k8s::pod& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

void remove_runner(provisioner_actor* self, int64_t runner_id, const std::string& why) {
  self->state.ctx->github->remove_runner(runner_id, [runner_id, why](github::actions_result<github::done> r) {
    if (auto* e = std::get_if<github::actions_error>(&r); e && e->what != github::actions_error::kind::runner_not_found)
      runtime::log::warn(actor_name, "could not remove a runner", {{"runner_id", runner_id}, {"why", why}, {"error", e->describe()}});
  });
}

int64_t live_runner_pods(provisioner_actor* self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  std::erase_if(st.made, [now](const auto& kv) { return now - kv.second > std::chrono::minutes(1); });
  int64_t n = 0;
  std::set<std::string> present;
  for (const auto& p : st.ctx->pods->list()) {
    const auto* r = p->meta.label(keys::role);
    if (r == nullptr || *r != role_label(role::runner))
      continue;
    st.made.erase(p->meta.name);
    present.insert(p->meta.name);
    if ((p->meta.deletion_timestamp.empty() && !terminal(*p)) || st.busy.count(p->meta.name) > 0)
      ++n;
  }
  // A busy runner whose pod is gone altogether died with its job: the service ends that job, and
  // it holds no runner's place.
  std::erase_if(st.busy, [&](const std::string& name) { return present.count(name) == 0 && st.made.count(name) == 0; });
  return n;
}

int64_t desired_runners(const provisioner_state& st) {
  return std::max<int64_t>(0, std::min({st.stats.total_assigned_jobs, st.cap, st.ctx->spec.max_runners}));
}

void delete_runner_pod(provisioner_actor* self, const std::string& name);

// Deletes not yet done are tried again every 2 s, for two minutes at most.
void retry_doomed(provisioner_actor* self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  std::vector<std::string> again;
  for (auto it = st.doomed.begin(); it != st.doomed.end();) {
    if (!it->second.in_flight && now - it->second.since > std::chrono::minutes(2)) {
      runtime::log::warn(actor_name, "giving up deleting a runner pod after 2 minutes", {{"pod", it->first}});
      it = st.doomed.erase(it);
      continue;
    }
    if (!it->second.in_flight && now - it->second.last_try >= std::chrono::seconds(2))
      again.push_back(it->first);
    ++it;
  }
  for (const auto& name : again)
    delete_runner_pod(self, name);
}

void reconcile(provisioner_actor* self) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  if (!st.doomed.empty())
    retry_doomed(self);
  if (!st.cap_known)
    return;
  const int64_t desired = desired_runners(st);
  st.ctx->metrics.set("gha_desired_runners", desired);
  if (!spec.standalone) {
    if (desired == st.arc_replicas)
      return;
    st.arc_replicas = desired;
    const std::string patch = "{\"spec\":{\"replicas\":" + std::to_string(desired) + ",\"patchID\":" +
                              std::to_string(++st.arc_patch_id) + "}}";
    auto* kube = st.ctx->kube;
    kube->merge_patch(ephemeral_runner_sets, spec.ns, spec.ephemeral_runner_set, patch,
                      [name = spec.ephemeral_runner_set, desired](k8s::api_result r) {
                        if (auto* e = std::get_if<k8s::api_error>(&r))
                          runtime::log::warn(actor_name, "EphemeralRunnerSet patch failed", {{"name", name}, {"error", e->describe()}});
                        else
                          runtime::log::info(actor_name, "EphemeralRunnerSet replicas", {{"name", name}, {"replicas", desired}});
                      });
    return;
  }
  if (st.scale_set_id == 0)
    return;
  const int64_t live = live_runner_pods(self);
  const int64_t have = live + st.creating + static_cast<int64_t>(st.made.size());
  if (have < desired)
    runtime::log::info(actor_name, "making runners",
                       {{"scale_set", spec.name}, {"count", desired - have}, {"assigned", st.stats.total_assigned_jobs},
                        {"capacity", st.cap}, {"live", live}, {"creating", st.creating},
                        {"made_unseen", static_cast<int64_t>(st.made.size())}, {"busy", static_cast<int64_t>(st.busy.size())}});
  for (int64_t i = have; i < desired; ++i) {
    ++st.creating;
    std::string name = spec.name + "-runner-" + new_slot_id();
    st.jit_pending.insert(name);
    caf::actor me = caf::actor_cast<caf::actor>(self);
    st.ctx->github->generate_jit_config(st.scale_set_id, name, "_work", [me, name](github::actions_result<github::jit_config> r) {
      msg::jit_reply out;
      out.name = name;
      if (auto* e = std::get_if<github::actions_error>(&r)) {
        out.error = e->describe();
      } else {
        auto& j = std::get<github::jit_config>(r);
        out.runner_id = j.runner.id;
        out.jit = std::move(j.encoded_jit_config);
      }
      caf::anon_send(me, std::move(out));
    });
  }
}

void start_call(provisioner_actor* self, creation c, const std::function<void(k8s::api_callback)>& start) {
  self->state.calls.start(caf::actor_cast<caf::actor>(self), std::move(c), start);
}

// A runner pod that must go is deleted by name, whether or not the informer shows it, and the
// delete is tried again until it is done. Both were found by the chaos suite, each leaving a pod
// whose runner GitHub had already removed (an ephemeral runner goes with its job) until the health
// check's registration timeout, with the pair handed to it holding its workflow room, and the
// warm pool back only 33-83 s after the fault:
// - a job completed while the pods watch was silent: the pod, made after the watch went quiet, was
//   not in the informer, and the delete was skipped;
// - a job completed during the API server's 429/5xx: the delete failed and was not tried again.
// The same holds for a create that failed without a clear "not made" (a 5xx after retries, no
// answer): the API server may have written the pod and lost the answer (a 504 after the write).
void delete_runner_pod(provisioner_actor* self, const std::string& name) {
  auto& st = self->state;
  const auto now = self->clock().now();
  auto [it, fresh] = st.doomed.try_emplace(name, provisioner_state::doomed_pod{now, now, false});
  if (it->second.in_flight)
    return;
  if (auto pod = st.ctx->pods->get(st.ctx->spec.ns, name); pod && !pod->meta.deletion_timestamp.empty()) {
    st.doomed.erase(it);  // already going
    return;
  }
  it->second.in_flight = true;
  it->second.last_try = now;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  st.ctx->kube->remove(k8s::kinds::pods, st.ctx->spec.ns, name, {}, [me, name](k8s::api_result r) {
    runner_pod_deleted out{name, true, {}};
    if (auto* e = std::get_if<k8s::api_error>(&r); e && e->what != k8s::api_error::kind::not_found) {
      out.done = false;
      out.error = e->describe();
    }
    caf::anon_send(me, std::move(out));
  });
}

std::chrono::milliseconds sweep_every(provisioner_actor* self) {
  return std::max<std::chrono::milliseconds>(self->state.ctx->spec.health_check.interval, std::chrono::seconds(30));
}

void sweep(provisioner_actor* self) {
  auto& st = self->state;
  if (!st.ctx->spec.standalone || st.scale_set_id == 0)
    return;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  st.ctx->github->list_runners([me](github::actions_result<std::vector<github::runner_ref>> r) {
    runner_list out;
    if (auto* list = std::get_if<std::vector<github::runner_ref>>(&r)) {
      out.ok = true;
      out.runners = std::move(*list);
    } else {
      runtime::log::warn(actor_name, "could not list the runners; sweeping at the next turn",
                         {{"error", std::get<github::actions_error>(r).describe()}});
    }
    caf::anon_send(me, std::move(out));
  });
}

// Idle runners beyond the desired count: see the header.
void scale_down(provisioner_actor* self, const std::vector<github::runner_ref>& runners) {
  auto& st = self->state;
  std::set<int64_t> idle;
  if (!st.cap_known) {
    st.idle_excess.clear();
    return;
  }
  const int64_t live = live_runner_pods(self), desired = desired_runners(st);
  int64_t excess = live + st.creating + static_cast<int64_t>(st.made.size()) - static_cast<int64_t>(st.removing.size()) - desired;
  for (const auto& rn : runners) {
    if (excess <= 0)
      break;
    if (rn.scale_set_id != st.scale_set_id || rn.busy || st.busy.count(rn.name) > 0 || st.removing.count(rn.name) > 0)
      continue;
    const auto pod = st.ctx->pods->get(st.ctx->spec.ns, rn.name);
    if (!pod || !pod->meta.deletion_timestamp.empty() || terminal(*pod))
      continue;
    idle.insert(rn.id);
    if (st.idle_excess.count(rn.id) == 0)
      continue;  // first sighting: a job may be on its way to it
    --excess;
    st.removing.insert(rn.name);
    runtime::log::info(actor_name, "idle runner beyond the desired count at two sweeps: removing it",
                       {{"scale_set", st.ctx->spec.name}, {"runner", rn.name}, {"runner_id", rn.id}, {"live", live},
                        {"desired", desired}});
    caf::actor me = caf::actor_cast<caf::actor>(self);
    st.ctx->github->remove_runner(rn.id, [me, name = rn.name](github::actions_result<github::done> r) {
      idle_runner_removed out{name, true};
      if (auto* e = std::get_if<github::actions_error>(&r); e && e->what != github::actions_error::kind::runner_not_found) {
        out.ok = false;
        runtime::log::info(actor_name, "idle runner not removed: keeping it", {{"runner", name}, {"error", e->describe()}});
      }
      caf::anon_send(me, std::move(out));
    });
  }
  st.idle_excess = std::move(idle);
}

void on_runner_list(provisioner_actor* self, const runner_list& l) {
  auto& st = self->state;
  if (!l.ok)
    return;
  std::set<std::string> pods;  // every runner pod in the cache, whatever its state
  for (const auto& p : st.ctx->pods->list())
    if (const auto* r = p->meta.label(keys::role); r != nullptr && *r == role_label(role::runner))
      pods.insert(p->meta.name);
  std::set<int64_t> podless;
  for (const auto& rn : l.runners) {
    if (rn.scale_set_id != st.scale_set_id || rn.busy || pods.count(rn.name) > 0 || st.made.count(rn.name) > 0 ||
        st.jit_pending.count(rn.name) > 0 || st.busy.count(rn.name) > 0)
      continue;
    podless.insert(rn.id);
    if (st.podless.count(rn.id) == 0)
      continue;  // first sighting: it may be a pod on its way
    runtime::log::warn(actor_name, "GitHub runner without a pod at two sweeps: removing it",
                       {{"scale_set", st.ctx->spec.name}, {"runner", rn.name}, {"runner_id", rn.id}});
    st.ctx->metrics.add("headroom_orphan_runners_removed_total", 1);
    remove_runner(self, rn.id, "no pod");
  }
  st.podless = std::move(podless);
  scale_down(self, l.runners);
}

// The listener's statistics (ARC's gauges) and job transitions: a completed job's runner pod goes.
void on_scale_set_update(provisioner_actor* self, const msg::scale_set_update& u) {
  auto& s = self->state;
  s.scale_set_id = u.scale_set_id;
  s.stats = u.stats;
  auto& m = s.ctx->metrics;
  m.set("gha_assigned_jobs", u.stats.total_assigned_jobs);
  m.set("gha_running_jobs", u.stats.total_running_jobs);
  m.set("gha_registered_runners", u.stats.total_registered_runners);
  m.set("gha_busy_runners", u.stats.total_busy_runners);
  m.set("gha_idle_runners", u.stats.total_idle_runners);
  for (const auto& j : u.jobs) {
    if (j.type == msg::job_transition::started) {
      if (!j.runner_name.empty())
        s.busy.insert(j.runner_name);
    } else if (j.type == msg::job_transition::completed) {
      s.busy.erase(j.runner_name);
      if (s.ctx->spec.standalone && !j.runner_name.empty())
        delete_runner_pod(self, j.runner_name);  // ephemeral: its job is done
    }
  }
  reconcile(self);
}

// A runner's JIT configuration: its pod is created next (a failure retries the reconcile in 5 s).
void on_jit(provisioner_actor* self, msg::jit_reply& r) {
  auto& s = self->state;
  if (!r.error.empty()) {
    --s.creating;
    s.jit_pending.erase(r.name);
    runtime::log::warn(actor_name, "could not get a runner's JIT configuration", {{"runner", r.name}, {"error", r.error}});
    self->delayed_send(self, std::chrono::seconds(5), msg::tick_atom_v, reconcile_tick);
    return;
  }
  auto* kube = s.ctx->kube;
  start_call(self, creation{creation::pod, r.name, r.runner_id, std::move(r.jit)},
             [kube, ns = s.ctx->spec.ns, body = runner_pod(s.ctx->spec, r.name, r.runner_id)](k8s::api_callback cb) {
               kube->create(k8s::kinds::pods, ns, body, std::move(cb));
             });
}

// A runner pod made: its JIT Secret next; a Secret refused: the pod and its runner go.
void on_reply(provisioner_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  auto found = s.calls.take(r);
  if (!found)
    return;
  auto c = std::move(*found);
  auto* kube = s.ctx->kube;
  const auto& ns = s.ctx->spec.ns;
  if (c.at == creation::pod) {
    --s.creating;
    s.jit_pending.erase(c.name);
    if (!r.ok) {
      s.seen_before_made.erase(c.name);
      runtime::log::warn(actor_name, "runner pod create failed", {{"pod", c.name}, {"error", r.error}});
      remove_runner(self, c.runner_id, "its pod could not be made");
      const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
      if (kind == k8s::api_error::kind::server || kind == k8s::api_error::kind::transport)
        delete_runner_pod(self, c.name);  // it may have been made after all
      self->delayed_send(self, std::chrono::seconds(5), msg::tick_atom_v, reconcile_tick);
      return;
    }
    // The watch can show the new pod before the create is answered; a pod seen (or already
    // deleted) before this point would otherwise count as made-not-seen for a minute and
    // hold back its replacement (a runner the health check removed was not replaced until
    // the service re-queued its job, 2 minutes on: found by capacity_e2e under load).
    const bool seen = s.seen_before_made.erase(c.name) > 0;
    if (!seen && !s.ctx->pods->get(ns, c.name))
      s.made.emplace(c.name, self->clock().now());
    runtime::log::info(actor_name, "runner pod created", {{"scale_set", s.ctx->spec.name}, {"pod", c.name}, {"runner_id", c.runner_id}});
    simdjson::dom::parser parser;
    std::string_view uid;
    if (parser.parse(r.body)["metadata"]["uid"].get(uid) != simdjson::SUCCESS)
      runtime::log::warn(actor_name, "runner pod create answered without a uid", {{"pod", c.name}});
    const std::string body = runner_secret(s.ctx->spec, c.name, std::string{uid}, c.jit);
    c.at = creation::secret;
    c.jit.clear();
    start_call(self, std::move(c), [kube, ns, body](k8s::api_callback cb) { kube->create(k8s::kinds::secrets, ns, body, std::move(cb)); });
    return;
  }
  if (!r.ok && static_cast<k8s::api_error::kind>(r.error_kind) != k8s::api_error::kind::already_exists) {
    runtime::log::warn(actor_name, "runner secret create failed: deleting the pod", {{"pod", c.name}, {"error", r.error}});
    delete_runner_pod(self, c.name);
    remove_runner(self, c.runner_id, "its JIT secret could not be made");
  }
}

// A runner pod delete answered: done, or tried again by the next reconcile.
void on_pod_deleted(provisioner_actor* self, const runner_pod_deleted& d) {
  auto& s = self->state;
  auto it = s.doomed.find(d.name);
  if (it == s.doomed.end())
    return;
  it->second.in_flight = false;
  if (d.done) {
    s.doomed.erase(it);
    return;
  }
  runtime::log::warn(actor_name, "runner pod delete failed; trying again", {{"pod", d.name}, {"error", d.error}});
  self->delayed_send(self, std::chrono::seconds(2), msg::tick_atom_v, reconcile_tick);
}

caf::behavior provisioner_behavior(provisioner_actor* self, context_ptr ctx, scale_set_peers peers) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.peers = std::move(peers);
  st.feed = std::make_unique<informer_feed<k8s::pod>>("runner_provisioner/" + st.ctx->spec.name,
                                                      caf::actor_cast<caf::actor>(self), pods_buffer);
  st.feed->attach(st.ctx->pods);
  // A restarted provisioner asks for what it missed: the newest capacity and the statistics.
  if (st.peers.monitor)
    self->send(st.peers.monitor, msg::capacity_atom_v);
  if (st.peers.listener)
    self->send(st.peers.listener, msg::update_atom_v);
  self->delayed_send(self, sweep_every(self), msg::tick_atom_v, sweep_tick);
  return {
      [self](msg::buffer_wakeup) {
        // A pod the informer has shown (even one already gone) is no longer "made, not yet seen".
        self->state.feed->drain([self](const msg::pod_event& e) {
          auto& s = self->state;
          const auto& name = e.object->meta.name;
          s.made.erase(name);
          if (s.jit_pending.count(name) > 0)
            s.seen_before_made.insert(name);
        });
        reconcile(self);
      },
      [self](const msg::set_max_capacity& a) {
        self->state.cap = a.capacity;
        self->state.cap_known = true;
        reconcile(self);
      },
      [self](const msg::scale_set_update& u) { on_scale_set_update(self, u); },
      [self](msg::jit_reply& r) { on_jit(self, r); },
      [self](msg::api_reply& r) { on_reply(self, r); },
      [self](msg::tick_atom, uint64_t what) {
        if (what == sweep_tick) {
          self->delayed_send(self, sweep_every(self), msg::tick_atom_v, sweep_tick);
          sweep(self);
          return;
        }
        reconcile(self);
      },
      [self](const runner_list& l) { on_runner_list(self, l); },
      [self](const idle_runner_removed& r) {
        auto& s = self->state;
        s.removing.erase(r.name);
        if (!r.ok)
          return;
        s.ctx->metrics.add("headroom_idle_runners_removed_total", 1);
        delete_runner_pod(self, r.name);
      },
      [self](const runner_pod_deleted& d) { on_pod_deleted(self, d); },
  };
}

}  // namespace

caf::actor spawn_runner_provisioner(caf::actor_system& sys, context_ptr ctx, scale_set_peers peers) {
  return sys.spawn(provisioner_behavior, std::move(ctx), std::move(peers));
}

}  // namespace headroom::actors::capacity
