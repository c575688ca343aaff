// runner_provisioner (see runner_provisioner.cpp): the sweep every max(healthCheck.interval, 30 s)
// (runners with no pod, idle runners beyond the desired count) and the runner pods that must go,
// deleted by name until the API server says they are gone.

#include "actors/capacity/provisioner.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::capacity::provisioner {

// Deletes not yet done are tried again every 2 s, for two minutes at most.
void retry_doomed(provisioner_self* self) {
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

// Runners whose job completed (see finishing): forgotten once their pod ended or is going (the
// health check deletes an ended one after terminalGrace); deleted when still running (or not seen:
// a pod the watch has not shown yet is deleted by name) job_end_grace after the completion.
void end_finishing(provisioner_self* self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  for (auto it = st.finishing.begin(); it != st.finishing.end();) {
    const auto pod = st.ctx->pods->get(st.ctx->spec.ns, it->first);
    if (pod && (terminal(*pod) || !pod->meta.deletion_timestamp.empty())) {
      it = st.finishing.erase(it);
      continue;
    }
    if (now - it->second < job_end_grace) {
      ++it;
      continue;
    }
    if (pod)
      runtime::log::info(actor_name, "runner pod still running after its job completed: deleting it",
                         {{"pod", it->first}, {"grace_s", static_cast<int64_t>(job_end_grace.count())}});
    delete_runner_pod(self, it->first);
    it = st.finishing.erase(it);
  }
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
void delete_runner_pod(provisioner_self* self, const std::string& name) {
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
  const auto me = runtime::handle_of(self);
  st.ctx->kube->remove(k8s::kinds::pods, st.ctx->spec.ns, name, {}, [me, name](k8s::api_result r) {
    runner_pod_deleted out{name, true, {}};
    if (auto* e = std::get_if<k8s::api_error>(&r); e && e->what != k8s::api_error::kind::not_found) {
      out.done = false;
      out.error = e->describe();
    }
    caf::anon_send(me, std::move(out));
  });
}

std::chrono::milliseconds sweep_every(provisioner_self* self) {
  return std::max<std::chrono::milliseconds>(self->state.ctx->spec.health_check.interval, std::chrono::seconds(30));
}

void sweep(provisioner_self* self) {
  auto& st = self->state;
  if (!st.ctx->spec.standalone || st.scale_set_id == 0)
    return;
  const auto me = runtime::handle_of(self);
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
void scale_down(provisioner_self* self, const std::vector<github::runner_ref>& runners) {
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
    const auto me = runtime::handle_of(self);
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

void on_runner_list(provisioner_self* self, const runner_list& l) {
  auto& st = self->state;
  if (!l.ok)
    return;
  std::set<int64_t> podless;
  for (const auto& rn : l.runners) {  // a runner pod in the count, whatever its state, has its runner
    if (rn.scale_set_id != st.scale_set_id || rn.busy || st.census.runner(rn.name) != nullptr || st.made.count(rn.name) > 0 ||
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

// A runner pod delete answered: done, or tried again by the next reconcile.
void on_pod_deleted(provisioner_self* self, const runner_pod_deleted& d) {
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
  self->delayed_send(self, std::chrono::seconds(2), msg::reconcile_atom_v);
}

}  // namespace headroom::actors::capacity::provisioner
