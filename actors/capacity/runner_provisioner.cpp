// runner_provisioner: one per scale set. The service assigns jobs up to the advertised capacity;
// this actor gives each assigned job a runner, never more runners than min(assigned, advertised
// capacity, maxRunners).
//
// standalone (default): one ephemeral runner pod per needed runner. A JIT configuration is asked
// for first (it registers the runner); the pod refers to a Secret holding it; the Secret is made
// right after the pod and owned by it, so both go together. A pod that cannot be made has its
// GitHub runner removed (no orphan registrations). A runner whose job completed exits by itself; its
// pod is deleted if it still runs job_end_grace later.
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
// arc: sets ARC's EphemeralRunnerSet's replicas as ARC's own listener does (provisioner_arc.cpp);
// ARC's controller makes the runners.

#include "actors/capacity/provisioner.hpp"
#include "adapters/k8s/fields.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::capacity {

namespace provisioner {

void remove_runner(provisioner_self* self, int64_t runner_id, const std::string& why) {
  self->state.ctx->github->remove_runner(runner_id, [runner_id, why](github::actions_result<github::done> r) {
    if (auto* e = std::get_if<github::actions_error>(&r); e && e->what != github::actions_error::kind::runner_not_found)
      runtime::log::warn(actor_name, "could not remove a runner", {{"runner_id", runner_id}, {"why", why}, {"error", e->describe()}});
  });
}

// Runner pods not finished and not being deleted, and busy runners' pods whatever their state:
// O(made + busy) per reconcile, from the running count (pod_census), not a walk over the pods.
int64_t live_runner_pods(provisioner_self* self) {
  auto& st = self->state;
  if (!st.census.built())
    st.census.rebuild(st.ctx->pods->list());
  const auto now = self->clock().now();
  std::erase_if(st.made, [&](const auto& kv) { return now - kv.second > std::chrono::minutes(1) || st.census.runner(kv.first) != nullptr; });
  int64_t n = st.census.runners().going;
  for (const auto& name : st.busy)
    if (const auto* m = st.census.runner(name); m != nullptr && !m->going)
      ++n;
  for (const auto& [name, since] : st.finishing)  // its job done, its runner exiting: takes no other
    if (const auto* m = st.census.runner(name); m != nullptr && m->going && st.busy.count(name) == 0)
      --n;
  // A busy runner whose pod is gone altogether died with its job: the service ends that job, and
  // it holds no runner's place.
  std::erase_if(st.busy, [&](const std::string& name) { return st.census.runner(name) == nullptr && st.made.count(name) == 0; });
  return n;
}

int64_t desired_runners(const provisioner_state& st) {
  return std::max<int64_t>(0, std::min({st.stats.total_assigned_jobs, st.cap, st.ctx->spec.max_runners}));
}

void delete_runner_pod(provisioner_self* self, const std::string& name);

void reconcile(provisioner_self* self) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  if (!st.finishing.empty())
    end_finishing(self);
  if (!st.doomed.empty())
    retry_doomed(self);
  if (!st.cap_known)
    return;
  const int64_t desired = desired_runners(st);
  st.ctx->metrics.set("gha_desired_runners", desired);
  if (!spec.standalone) {
    reconcile_arc(self, desired);
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
    const auto me = runtime::handle_of(self);
    st.ctx->github->generate_jit_config(st.scale_set_id, name, "_work", [me, name](github::actions_result<github::jit_config> r) {
      jit_reply out;
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

void start_call(provisioner_self* self, creation c, const std::function<void(k8s::api_callback)>& start) {
  self->state.calls.start(self, std::move(c), start);
}

// The listener's statistics (ARC's gauges) and job transitions: a completed job's runner pod goes.
void on_scale_set_update(provisioner_self* self, const msg::scale_set_update& u) {
  auto& s = self->state;
  s.scale_set_id = u.scale_set_id;
  s.stats = u.stats;
  auto& m = s.ctx->metrics;
  m.set("gha_assigned_jobs", u.stats.total_assigned_jobs);
  m.set("gha_running_jobs", u.stats.total_running_jobs);
  m.set("gha_registered_runners", u.stats.total_registered_runners);
  m.set("gha_busy_runners", u.stats.total_busy_runners);
  m.set("gha_idle_runners", u.stats.total_idle_runners);
  s.arc.dirty = s.arc.dirty || !u.jobs.empty();
  for (const auto& j : u.jobs) {
    if (j.type == msg::job_transition::started) {
      if (!j.runner_name.empty())
        s.busy.insert(j.runner_name);
    } else if (j.type == msg::job_transition::completed) {
      s.busy.erase(j.runner_name);
      if (s.ctx->spec.standalone && !j.runner_name.empty() && s.finishing.try_emplace(j.runner_name, self->clock().now()).second)
        self->delayed_send(self, job_end_grace + std::chrono::seconds(1), msg::reconcile_atom_v);  // its runner exits by itself
    }
  }
  reconcile(self);
}

// kubernetes mode: the node of a pair's workflow placeholder (Running) that no runner pod is pinned
// to yet, a pair already handed to a job first (its runner placeholder gone: the runner fits there
// at once), else a ready one (its runner placeholder Running: the runner preempts it there, usually
// before the monitor hands that pair over; one still Pending holds no room, and a runner pinned to
// it waited while that pair timed out); nullopt when every workflow room is claimed (the runner then
// waits for one: on_jit).
std::optional<runners::workflow_room> free_workflow_room(provisioner_self* self) {
  auto& s = self->state;
  if (s.ctx->spec.mode != runners::runner_spec::container_mode::kubernetes || !s.ctx->pods)
    return std::nullopt;
  const auto now = self->clock().now();
  for (auto it = s.rooms_claimed.begin(); it != s.rooms_claimed.end();)
    it = now - it->second > std::chrono::minutes(1) ? s.rooms_claimed.erase(it) : std::next(it);
  std::map<std::string, std::string> rooms;  // slot → node of its Running workflow placeholder
  std::set<std::string> ready, claimed;      // slots whose runner placeholder stays; slots a runner holds
  std::set<std::string> unplaced;            // slots whose runner placeholder is not Running yet
  for (const auto& p : s.ctx->pods->list()) {
    const auto* role = p->meta.label(runners::keys::role);
    const auto* slot = p->meta.label(runners::keys::slot);
    if (role && slot && *role == "workflow-placeholder" && p->meta.deletion_timestamp.empty() && p->phase == "Running" &&
        !p->node_name.empty())
      rooms.emplace(*slot, p->node_name);
    else if (role && slot && *role == "runner-placeholder" && p->meta.deletion_timestamp.empty()) {
      // A pair whose runner placeholder is not Running holds no runner room yet (and may time
      // out, both its placeholders deleted): no room to pin a runner to, handed over or not.
      (p->phase == "Running" && !p->node_name.empty() ? ready : unplaced).insert(*slot);
    }
    else if (const auto* room = p->meta.annotation(runners::keys::workflow_room)) {
      claimed.insert(*room);
      s.rooms_claimed.erase(*room);  // the cache has it now
    }
  }
  for (const bool handed_off : {true, false})
    for (const auto& [slot, node] : rooms)
      if (ready.count(slot) != handed_off && !unplaced.count(slot) && !claimed.count(slot) && !s.rooms_claimed.count(slot)) {
        s.rooms_claimed.emplace(slot, now);
        return runners::workflow_room{node, slot};
      }
  return std::nullopt;
}

// The runner's pod, pinned to `room` (kubernetes mode) when there is one.
void create_runner_pod(provisioner_self* self, jit_reply& r, std::optional<runners::workflow_room> room) {
  auto& s = self->state;
  auto* kube = s.ctx->kube;
  auto body = runner_pod(s.ctx->spec, r.name, r.runner_id);
  if (room) {
    body = runners::pinned_to_workflow_room(body, *room);
    runtime::log::info(actor_name, "runner pinned to the node of the pair handed to its job",
                       {{"scale_set", s.ctx->spec.name}, {"pod", r.name}, {"slot", room->slot}, {"node", room->node}});
  }
  start_call(self, creation{creation::pod, r.name, r.runner_id, std::move(r.jit)},
             [kube, ns = s.ctx->spec.ns, body = std::move(body)](k8s::api_callback cb) {
               kube->create(k8s::kinds::pods, ns, body, std::move(cb));
             });
}

// kubernetes mode: a registered runner waits for a workflow room as long as that takes. Its
// workflow pod must run on its node (the `work` volume is ReadWriteOnce; the hook pins the pod by
// hostname); made where no workflow placeholder held room for it, that pod waited for good (it
// preempts nothing, and Karpenter does not provision for a pod pinned by hostname: the migration
// e2e's job "running" until the test gave up). The monitor keeps a pair for every assigned job whose
// runner is not placed (monitor_recompute.cpp, spawn_target); that pair's probe is unpinned, so it
// is what the scheduler, or Karpenter, finds room for. Told once when a runner starts waiting, and
// reminded each minute while any waits; the gauge counts them.
constexpr auto room_reminder = std::chrono::minutes(1);

void note_awaiting(provisioner_self* self) {
  auto& s = self->state;
  s.ctx->metrics.set("headroom_runners_awaiting_workflow_room", static_cast<int64_t>(s.awaiting_room.size()));
  if (s.awaiting_room.empty())
    return;
  const auto now = self->clock().now();
  const auto oldest = s.awaiting_room.front().second;
  if (now - oldest < room_reminder || now - s.room_reminded < room_reminder)
    return;
  s.room_reminded = now;
  runtime::log::warn(actor_name, "runners still wait for a workflow room: no pair of this scale set is placed and free",
                     {{"scale_set", s.ctx->spec.name}, {"waiting", static_cast<int64_t>(s.awaiting_room.size())},
                      {"oldest_waited_s", static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(now - oldest).count())}});
}

// Runners waiting for a workflow room: made, in the order they came, once one is free.
void place_awaiting_runners(provisioner_self* self) {
  auto& s = self->state;
  if (s.awaiting_room.empty())
    return;
  std::vector<std::pair<jit_reply, caf::actor_clock::time_point>> still;
  for (auto& [r, since] : s.awaiting_room) {
    auto room = still.empty() ? free_workflow_room(self) : std::nullopt;
    if (room)
      create_runner_pod(self, r, room);
    else
      still.emplace_back(std::move(r), since);
  }
  s.awaiting_room = std::move(still);
  note_awaiting(self);
  if (!s.awaiting_room.empty())
    self->delayed_send(self, std::chrono::seconds(1), msg::reconcile_atom_v);
}

// kubernetes mode with placeholder pairs: a runner goes only into a pair's room (see above).
bool runners_need_rooms(const provisioner_state& s) { return runners_pinned_to_pairs(s.ctx->spec) && s.ctx->pods; }

// A runner's JIT configuration: its pod is created next (a failure retries the reconcile in 5 s).
void on_jit(provisioner_self* self, jit_reply& r) {
  auto& s = self->state;
  if (!r.error.empty()) {
    --s.creating;
    s.jit_pending.erase(r.name);
    runtime::log::warn(actor_name, "could not get a runner's JIT configuration", {{"runner", r.name}, {"error", r.error}});
    self->delayed_send(self, std::chrono::seconds(5), msg::reconcile_atom_v);
    return;
  }
  auto room = s.awaiting_room.empty() ? free_workflow_room(self) : std::nullopt;
  if (!room && runners_need_rooms(s)) {
    runtime::log::info(actor_name, "runner waits for a workflow room: every pair's is taken or not placed yet",
                       {{"scale_set", s.ctx->spec.name}, {"pod", r.name}});
    s.awaiting_room.emplace_back(std::move(r), self->clock().now());
    note_awaiting(self);
    self->delayed_send(self, std::chrono::seconds(1), msg::reconcile_atom_v);
    return;
  }
  create_runner_pod(self, r, room);
}

// A runner pod made: its JIT Secret next; a Secret refused: the pod and its runner go.
void on_reply(provisioner_self* self, const msg::api_reply& r) {
  auto& s = self->state;
  auto found = s.calls.take(r);
  if (!found)
    return;
  auto c = std::move(*found);
  if (c.at == creation::arc_find || c.at == creation::arc_patch) {
    on_arc_reply(self, c, r);
    return;
  }
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
      self->delayed_send(self, std::chrono::seconds(5), msg::reconcile_atom_v);
      return;
    }
    // The watch can show the new pod before the create is answered; a pod seen (or already
    // deleted) before this point would otherwise count as made-not-seen for a minute and
    // hold back its replacement (a runner the health check removed was not replaced until
    // the service re-queued its job, 2 minutes on: found by capacity_e2e under load).
    const bool seen = s.seen_before_made.erase(c.name) > 0;
    if (!seen && s.census.runner(c.name) == nullptr)  // the count live_runner_pods reads, not the cache (which may be ahead of it)
      s.made.emplace(c.name, self->clock().now());
    runtime::log::info(actor_name, "runner pod created", {{"scale_set", s.ctx->spec.name}, {"pod", c.name}, {"runner_id", c.runner_id}});
    const std::string uid = k8s::uid_of(r.body);
    if (uid.empty())
      runtime::log::warn(actor_name, "runner pod create answered without a uid", {{"pod", c.name}});
    const std::string body = runner_secret(s.ctx->spec, c.name, uid, c.jit);
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

provisioner_impl::behavior_type provisioner_behavior(provisioner_self* self, context_ptr ctx, scale_set_peers peers) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.peers = std::move(peers);
  st.census = pod_census{st.ctx->spec.ns};
  st.feed = std::make_unique<informer_feed<k8s::pod>>("runner_provisioner/" + st.ctx->spec.name,
                                                      self, pods_buffer);
  st.feed->attach(st.ctx->pods);
  // A restarted provisioner asks for what it missed: the newest capacity and the statistics.
  if (st.peers.monitor)
    self->send(st.peers.monitor, msg::capacity_atom_v);
  if (st.peers.listener)
    self->send(st.peers.listener, msg::update_atom_v);
  self->delayed_send(self, sweep_every(self), msg::sweep_atom_v);
  return {
      [self](msg::buffer_wakeup) {
        // A pod the informer has shown (even one already gone) is no longer "made, not yet seen".
        self->state.feed->drain([self](const msg::pod_event& e) {
          auto& s = self->state;
          s.census.apply(e.change, e.object);
          const auto& name = e.object->meta.name;
          s.made.erase(name);
          if (s.jit_pending.count(name) > 0)
            s.seen_before_made.insert(name);
        });
        auto& s = self->state;
        s.census.mend(s.feed->stats()->dropped.load(std::memory_order_relaxed), [&] { return s.ctx->pods->list(); });
        place_awaiting_runners(self);  // a pair placed frees a workflow room
        reconcile(self);
      },
      [self](const msg::set_max_capacity& a) {
        self->state.cap = a.capacity;
        self->state.cap_known = true;
        reconcile(self);
      },
      [self](const msg::scale_set_update& u) { on_scale_set_update(self, u); },
      [self](jit_reply& r) { on_jit(self, r); },
      [self](msg::api_reply& r) { on_reply(self, r); },
      [self](msg::sweep_atom) {
        self->delayed_send(self, sweep_every(self), msg::sweep_atom_v);
        self->state.census.rebuild(self->state.ctx->pods->list());
        sweep(self);
      },
      [self](msg::reconcile_atom) {
        place_awaiting_runners(self);
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

}  // namespace provisioner


provisioner_actor spawn_runner_provisioner(caf::actor_system& sys, context_ptr ctx, scale_set_peers peers) {
  return sys.spawn(provisioner::provisioner_behavior, std::move(ctx), std::move(peers));
}

}  // namespace headroom::actors::capacity
