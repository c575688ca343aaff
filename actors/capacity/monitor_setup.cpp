// capacity_monitor's start-up (see capacity_monitor.cpp): the PriorityClass ladder (read; made
// when missing; a class with another value stops the monitor), the scale set's owner ConfigMap
// (made, or found as an earlier process left it), and owners no configured scale set has deleted;
// a round the API server could not answer is tried again.

#include <caf/all.hpp>

#include <algorithm>

#include "actors/capacity/monitor.hpp"
#include "adapters/k8s/fields.hpp"
#include "runtime/clock.hpp"
#include "runtime/json_writer.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::capacity::monitor {

namespace {

// The hook template the scale set's runner pods mount (kubernetes-novolume): the workflow pod the
// runner's container hook makes gets the ladder's workflow PriorityClass and the workflow's
// resources from it, so it preempts its workflow placeholder and takes the room that held. Created,
// or brought up to date when an earlier process (or another spec) wrote it: it is not the process's
// (not owned by the owner ConfigMap), since runner pods of an earlier process still read it.
std::string hook_template_text(const scale_set_spec& s) {
  return runners::hook_template(s, s.priority_classes.of(rung::workflow), s.workflow_cpu, s.workflow_memory, s.workflow_extended);
}

void write_hook_template(monitor_self* self) {
  auto& st = self->state;
  const auto& spec = st.ctx->spec;
  if (spec.hook_template_configmap.empty())
    return;
  start_call(self, {call_kind::hook_template, spec.hook_template_configmap, 0},
             [kube = st.ctx->kube, ns = spec.ns, body = runners::hook_template_configmap(spec, spec.hook_template_configmap, hook_template_text(spec))](
                 k8s::api_callback cb) { kube->create(k8s::kinds::configmaps, ns, body, std::move(cb)); });
}

void finish_setup_step(monitor_self* self) {
  auto& st = self->state;
  if (--st.setup_pending > 0)
    return;
  if (st.setup_failed) {
    const auto v = st.setup_outage.failed(ms_now(self));
    if (v.log != runtime::outage::note::none)
      runtime::log::warn(actor_name,
                         v.log == runtime::outage::note::went_down ? "cannot reach the API server to start; retrying with backoff"
                                                                   : "still cannot reach the API server to start",
                         {{"scale_set", st.ctx->spec.name}, {"error", st.setup_error}, {"retry_in_ms", v.retry_in.count()},
                          {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
    self->delayed_send(self, v.retry_in, setup_retry_timer{});
    return;
  }
  if (st.owner.empty())
    return;
  if (const auto v = st.setup_outage.succeeded(ms_now(self)); v.log == runtime::outage::note::came_back)
    runtime::log::info(actor_name, "reached the API server", {{"scale_set", st.ctx->spec.name}, {"down_for_ms", v.down_for_ms}});
  st.acting = true;
  runtime::log::info(actor_name, "acting", {{"scale_set", st.ctx->spec.name}, {"owner", st.owner.name}});
  // The ladder lets a workflow pod (20) preempt a runner pod (0) as readily as a workflow
  // placeholder (10), and the scheduler even prefers the lower-priority victim: a workflow pod
  // that found no room on its node killed another job's running runner (found by the chaos
  // suite) although a workflow placeholder held room for it elsewhere. The scheduler avoids
  // victims whose PodDisruptionBudget allows no disruption, picking a placeholder whenever one
  // makes the room; with none it may still preempt (PDBs are best effort there). Standalone only:
  // in arc mode ARC makes the runner pods.
  if (st.ctx->spec.standalone && st.ctx->spec.capacity_aware) {
    auto* kube = st.ctx->kube;
    start_call(self, {call_kind::runner_pdb, runner_pdb_name(st.owner), 0},
               [kube, ns = st.ctx->spec.ns, body = runner_pdb(st.ctx->spec, st.owner)](k8s::api_callback cb) {
                 kube->create(k8s::kinds::pod_disruption_budgets, ns, body, std::move(cb));
               });
    start_call(self, {call_kind::runner_pdb, runner_placeholder_pdb_name(st.owner), 0},
               [kube, ns = st.ctx->spec.ns, body = runner_placeholder_pdb(st.ctx->spec, st.owner)](k8s::api_callback cb) {
                 kube->create(k8s::kinds::pod_disruption_budgets, ns, body, std::move(cb));
               });
  }
  write_hook_template(self);
  recompute(self);
}

std::string owner_object(monitor_self* self) {
  auto& st = self->state;
  const auto& ns = st.ctx->spec.ns;
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "v1").field("kind", "ConfigMap");
  w.key("metadata").begin_object().field("name", st.ctx->owner_configmap).field("namespace", ns);
  w.key("labels").begin_object().field(keys::owner, "true").field(keys::scale_set, st.ctx->spec.name);
  if (!st.ctx->instance.empty())
    w.field(keys::instance, st.ctx->instance);
  if (st.ctx->spec.declared)
    w.field(keys::declared, "true");
  w.end_object();
  // A declared scale set's owner is owned by its ScaleSet object: deleting the object removes
  // the owner and its placeholders even while no headroom runs.
  if (st.ctx->spec.declared && !st.ctx->spec.object_uid.empty()) {
    w.key("ownerReferences").begin_array().begin_object();
    w.field("apiVersion", "headroom.dev/v1alpha1").field("kind", "ScaleSet").field("name", st.ctx->spec.name);
    w.field("uid", st.ctx->spec.object_uid);
    w.end_object().end_array();
  }
  w.end_object();
  w.key("data")
      .begin_object()
      .field("purpose", "owns the placeholder pods of headroom's scale set " + st.ctx->spec.name +
                            " (deleting it deletes them; each headroom process adopts them)")
      .end_object()
      .end_object();
  return w.take();
}

void create_owner(monitor_self* self) {
  auto& st = self->state;
  start_call(self, {call_kind::owner_create, st.ctx->owner_configmap, 0},
             [kube = st.ctx->kube, ns = st.ctx->spec.ns, body = owner_object(self)](k8s::api_callback cb) {
               kube->create(k8s::kinds::configmaps, ns, body, std::move(cb));
             });
}

// The owner: found in the namespace's list of owners (one list for all its scale sets, as an
// earlier process left them), made when missing. One monitor in the namespace also lists
// them to delete those no configured scale set has (one monitor per namespace: sweeps_owners).
// Returns the number of setup steps started.
int ensure_owner(monitor_self* self) {
  auto& st = self->state;
  auto* kube = st.ctx->kube;
  const auto& ns = st.ctx->spec.ns;
  const std::string selector = std::string{keys::owner} + "=true";
  if (st.ctx->reads)
    start_call(self, {call_kind::owner_find, st.ctx->owner_configmap, 0},
               [reads = st.ctx->reads, ns, selector, name = st.ctx->owner_configmap](k8s::api_callback cb) {
                 reads->find_in_list(k8s::kinds::configmaps, ns, selector, name, std::move(cb));
               });
  else
    create_owner(self);
  if (!st.ctx->sweeps_owners)
    return 1;  // another scale set's monitor in this namespace sweeps them
  k8s::list_options lo;
  lo.label_selector = selector;
  start_call(self, {call_kind::owner_list, "", 0}, [kube, ns, lo](k8s::api_callback cb) {
    kube->list(k8s::kinds::configmaps, ns, lo, std::move(cb));
  });
  return 2;
}

// An answer that says nothing about the request (no answer, 5xx, 429 after the client's own
// retries): worth asking again later.
bool unanswered(const msg::api_reply& r) {
  const auto kind = static_cast<api_kind>(r.error_kind);
  return !r.ok && (kind == api_kind::transport || kind == api_kind::server || kind == api_kind::too_many_requests ||
                   kind == api_kind::unexpected);
}

// A class made before the workflow rung stopped preempting (preemptionPolicy is immutable, so it
// stays as it was made): its workflow pods may still preempt a running runner as the scheduler's
// last resort. Said once by each scale set's monitor at start; headroom still gives those pods
// their rooms (monitor_workflow_rooms.cpp), so most never need to preempt.
void note_preemption_policy(const scale_set_spec& spec, const call_info& call, std::string_view body) {
  const auto* pc = std::find_if(std::begin(priority_ladder), std::end(priority_ladder),
                                [&](const priority_class_spec& p) { return call.expected_value == p.value; });
  if (pc == std::end(priority_ladder) || pc->of != rung::workflow || k8s::string_at(body, {"preemptionPolicy"}) == "Never")
    return;
  runtime::log::warn(actor_name,
                     "PriorityClass " + call.name + " lets workflow pods preempt: made before headroom gave them their rooms, "
                     "they may still preempt a running runner when no placeholder holds room; delete it while no workflow pod "
                     "starts, and headroom (or the chart) makes it again with preemptionPolicy Never",
                     {{"scale_set", spec.name}, {"priority_class", call.name}});
}

// The seed's PriorityClasses: created (or read first, as the chart may have made them); an
// existing class must have our value.
void on_priority_class_reply(monitor_self* self, const call_info& call, const msg::api_reply& r) {
  const auto kind = static_cast<api_kind>(r.error_kind);
  auto* kube = self->state.ctx->kube;
  switch (call.kind) {
    case call_kind::priority_class: {
      if (!r.ok && kind != api_kind::already_exists) {
        self->quit(caf::make_error(caf::sec::runtime_error, "PriorityClass " + call.name + ": " + r.error));
        return;
      }
      if (r.ok) {
        finish_setup_step(self);
        return;
      }
      start_call(self, {call_kind::priority_class_get, call.name, call.expected_value},
                 [kube, name = call.name](k8s::api_callback cb) { kube->get(priority_classes, "", name, std::move(cb)); });
      return;
    }
    case call_kind::priority_class_get: {
      // Missing: made now (the chart makes them when it may; then headroom needs no create right).
      if (!r.ok && kind == api_kind::not_found) {
        const auto* pc = std::find_if(std::begin(priority_ladder), std::end(priority_ladder),
                                      [&](const priority_class_spec& p) { return call.expected_value == p.value; });
        start_call(self, {call_kind::priority_class, call.name, call.expected_value},
                   [kube, body = priority_class_object(*pc, call.name)](k8s::api_callback cb) {
                     kube->create(priority_classes, "", body, std::move(cb));
                   });
        return;
      }
      // An existing class: its value must be ours.
      const auto value = r.ok ? k8s::int_at(r.body, {"value"}) : std::nullopt;
      std::string problem;
      if (!r.ok)
        problem = "PriorityClass " + call.name + ": " + r.error;
      else if (value != call.expected_value)
        problem = "PriorityClass " + call.name + " exists with value " + (value ? std::to_string(*value) : "(none)") + ", headroom needs " +
                  std::to_string(call.expected_value) + " (delete it or give it that value)";
      if (!problem.empty()) {
        runtime::log::error(actor_name, problem);
        self->quit(caf::make_error(caf::sec::runtime_error, problem));
        return;
      }
      note_preemption_policy(self->state.ctx->spec, call, r.body);
      finish_setup_step(self);
      return;
    }
    default:
      return;
  }
}

// The scale set's owner ConfigMap (the placeholders' owner), and owners no configured scale set has.
void on_owner_reply(monitor_self* self, const call_info& call, const msg::api_reply& r) {
  auto& st = self->state;
  const auto kind = static_cast<api_kind>(r.error_kind);
  auto* kube = st.ctx->kube;
  const auto& ns = st.ctx->spec.ns;
  switch (call.kind) {
    case call_kind::owner_find:
      if (r.ok) {  // as an earlier process (or a restart of this monitor) left it
        st.owner = owner_ref{"v1", "ConfigMap", call.name, k8s::uid_of(r.body)};
        finish_setup_step(self);
      } else if (kind == api_kind::not_found) {
        create_owner(self);
      } else {
        self->quit(caf::make_error(caf::sec::runtime_error, "owner ConfigMaps in " + ns + ": " + r.error));
      }
      return;
    case call_kind::owner_create:
      if (!r.ok && kind != api_kind::already_exists) {
        self->quit(caf::make_error(caf::sec::runtime_error, "owner ConfigMap " + ns + "/" + call.name + ": " + r.error));
        return;
      }
      if (r.ok) {
        st.owner = owner_ref{"v1", "ConfigMap", call.name, k8s::uid_of(r.body)};
        finish_setup_step(self);
        return;
      }
      start_call(self, {call_kind::owner_get, call.name, 0}, [kube, ns, name = call.name](k8s::api_callback cb) {
        kube->get(k8s::kinds::configmaps, ns, name, std::move(cb));
      });
      return;
    case call_kind::owner_get:
      if (!r.ok) {
        self->quit(caf::make_error(caf::sec::runtime_error, "owner ConfigMap " + ns + "/" + call.name + ": " + r.error));
        return;
      }
      st.owner = owner_ref{"v1", "ConfigMap", call.name, k8s::uid_of(r.body)};
      finish_setup_step(self);
      return;
    case call_kind::owner_list: {
      // Owners of scale sets no longer configured here, and an earlier version's per-process
      // owners: deleting one garbage-collects its placeholders. Only this install's (its instance
      // label) and unlabelled ones (a headroom before the label, or an install without leader
      // election, which has no instance): another install's owners, and the placeholders they
      // hold, are its own (#61: two installs in one namespace).
      if (r.ok) {
        auto earlier = k8s::item_names_labelled(r.body, keys::instance, st.ctx->instance);
        if (!st.ctx->instance.empty())
          for (auto& name : k8s::item_names_labelled(r.body, keys::instance, ""))
            earlier.push_back(std::move(name));
        // Declared scale sets' owners are their objects' (removed with them), never swept here.
        const auto declared = k8s::item_names_labelled(r.body, keys::declared, "true");
        for (const auto& name : earlier) {
          if (name == st.ctx->owner_configmap || (st.ctx->owners_kept && st.ctx->owners_kept->count(name) > 0) ||
              std::find(declared.begin(), declared.end(), name) != declared.end())
            continue;  // a configured scale set's
          runtime::log::info(actor_name, "deleting an owner ConfigMap no configured scale set has: its placeholders go with it",
                             {{"configmap", name}});
          start_call(self, {call_kind::owner_delete, name, 0}, [kube, ns, n = name](k8s::api_callback cb) {
            kube->remove(k8s::kinds::configmaps, ns, n, {}, std::move(cb));
          });
        }
      } else {
        runtime::log::warn(actor_name, "could not list earlier owner ConfigMaps", {{"error", r.error}});
      }
      finish_setup_step(self);
      return;
    }
    default:
      return;
  }
}

}  // namespace

void on_setup_reply(monitor_self* self, const call_info& call, msg::api_reply& r) {
  auto& st = self->state;
  const auto kind = static_cast<api_kind>(r.error_kind);
  const bool setup_call = call.kind == call_kind::priority_class || call.kind == call_kind::priority_class_get ||
                          call.kind == call_kind::owner_find || call.kind == call_kind::owner_create || call.kind == call_kind::owner_get ||
                          call.kind == call_kind::owner_list;
  if (setup_call && unanswered(r)) {
    st.setup_failed = true;
    st.setup_error = r.error;
    finish_setup_step(self);
    return;
  }
  switch (call.kind) {
    case call_kind::priority_class:
    case call_kind::priority_class_get:
      return on_priority_class_reply(self, call, r);
    case call_kind::owner_find:
    case call_kind::owner_create:
    case call_kind::owner_get:
    case call_kind::owner_list:
      return on_owner_reply(self, call, r);
    case call_kind::runner_pdb:
      if (!r.ok && kind != api_kind::already_exists)
        runtime::log::warn(actor_name, "could not create a PodDisruptionBudget (runner pods or runner placeholders): a workflow pod may preempt a running runner",
                           {{"name", call.name}, {"error", r.error}});
      else
        runtime::log::info(actor_name, "PodDisruptionBudget in place", {{"name", call.name}});
      return;
    case call_kind::hook_template:
    case call_kind::hook_template_patch:
      if (call.kind == call_kind::hook_template && kind == api_kind::already_exists) {
        runtime::json_writer w;
        w.begin_object().key("data").begin_object().field(runners::hook_template_key, hook_template_text(st.ctx->spec)).end_object().end_object();
        start_call(self, {call_kind::hook_template_patch, call.name, 0},
                   [kube = st.ctx->kube, ns = st.ctx->spec.ns, name = call.name, body = w.take()](k8s::api_callback cb) {
                     kube->merge_patch(k8s::kinds::configmaps, ns, name, body, std::move(cb));
                   });
      } else if (!r.ok) {
        runtime::log::warn(actor_name, "could not write the runner pods' hook template: their workflow pods get no PriorityClass or resources",
                           {{"name", call.name}, {"error", r.error}});
      } else {
        runtime::log::info(actor_name, "hook template in place", {{"name", call.name}});
      }
      return;
    case call_kind::workflow_nominate:
      return on_workflow_nominated(self, call, r);
    case call_kind::workflow_pin:
      return on_workflow_pinned(self, call, r);
    case call_kind::owner_delete:
      if (!r.ok && kind != api_kind::not_found)
        runtime::log::warn(actor_name, "delete failed", {{"name", call.name}, {"error", r.error}});
      return;
    case call_kind::pod_delete:
      // Out of `deleting`, a placeholder still there is judged again (and deleted) at the next
      // recompute: a refusal (an API server restarting, its RBAC caches still empty) is retried.
      if (!r.ok && kind != api_kind::not_found)
        runtime::log::warn(actor_name, "placeholder delete failed; the next recompute tries again",
                           {{"name", call.name}, {"error", r.error}});
      st.deleting.erase(call.name);
      return;
  }
}

// Start-up: the four PriorityClasses (read; made when missing) and the owner (again after a round
// the API server could not answer).
void begin_setup(monitor_self* self) {
  auto& st = self->state;
  st.setup_failed = false;
  st.setup_error.clear();
  auto* kube = st.ctx->kube;
  // Counted before any call starts (an answer may come before the last one is started).
  st.setup_pending = static_cast<int>(std::size(priority_ladder)) + 2;  // + the owner and the sweep of earlier owners
  for (const auto& pc : priority_ladder)
    start_call(self, {call_kind::priority_class_get, st.ctx->spec.priority_classes.of(pc.of), pc.value},
               [kube, reads = st.ctx->reads, name = st.ctx->spec.priority_classes.of(pc.of)](k8s::api_callback cb) {
                 if (reads)  // one read for every scale set asking at about the same time
                   reads->get(priority_classes, "", name, std::move(cb));
                 else
                   kube->get(priority_classes, "", name, std::move(cb));
               });
  if (ensure_owner(self) == 1)
    finish_setup_step(self);  // no sweep here: its step is done
}

}  // namespace headroom::actors::capacity::monitor
