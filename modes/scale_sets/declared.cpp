// Scale sets declared by ScaleSet objects: see declared.hpp.

#include "modes/scale_sets/declared.hpp"

#include <algorithm>
#include <caf/all.hpp>
#include <prometheus/counter.h>

#include "actors/capacity/scale_set_status.hpp"
#include "actors/k8s/object_catalog.hpp"
#include "actors/listener/listener_session.hpp"
#include "messages/type_ids.hpp"
#include "runtime/metrics.hpp"
#include "runtime/relay.hpp"

namespace headroom::modes::scale_sets {

using namespace actors::capacity;
using actors::catalog_build;
using actors::listener_actor;

// The ScaleSet objects of each namespace served, and the pods of the scale sets they declare (by
// the label's existence: which scale sets there are changes while the watch runs).
void watch_objects(k8s::informer_set& informers, const std::vector<std::string>& namespaces, scale_set_services& out) {
  for (const auto& ns : namespaces) {
    k8s::informer<k8s::unstructured>::options o;
    o.kind = k8s::resource_kind{"headroom.dev", "v1alpha1", "scalesets", true};
    o.ns = ns;
    out.objects.push_back(informers.get<k8s::unstructured>(o));
    for (const bool arc : {false, true}) {
      k8s::informer<k8s::pod>::options pod_opts;
      pod_opts.kind = k8s::kinds::pods;
      pod_opts.ns = ns;
      pod_opts.label_selector = arc ? keys::arc_scale_set_name : keys::scale_set;
      (arc ? out.declared_arc_pods : out.declared_pods)[ns] =
          k8s::label_router<k8s::pod>::make(informers.get<k8s::pod>(pod_opts), pod_opts.label_selector);
    }
  }
  for (auto* routers : {&out.declared_pods, &out.declared_arc_pods})
    for (auto& [ns, r] : *routers)
      r->source()->start();
  for (auto& o : out.objects)
    o->start();
}

namespace {

// What every declared scale set's subtree is wired with.
struct declared_wiring {
  runtime::config cfg;
  scale_sets_config modes;
  std::shared_ptr<scale_set_services> svc;
  burst_budget_actor budget;
  caf::actor parent;  // the scale sets' supervisor's relay: the relays below live no longer
  std::shared_ptr<hud_target_registry> hud_targets;  // null without a HUD
  runtime::metrics* m = nullptr;
  runtime::readiness* ready = nullptr;
};

// A scale set declared by a ScaleSet object: its subtree as a child added while the scale sets'
// supervisor runs. Its relays are made with it and outlive its restarts (the catalog ends them
// once it has stopped for good), like a configured scale set's.
runtime::child_spec declared_subtree(const declared_wiring& w, context_ptr ctx, const scale_set_peers& peers,
                                     scale_set_services::declared_session session) {
  runtime::child_spec out;
  out.name = "scale_set/" + ctx->spec.name;
  out.start = [w, ctx, peers, session](caf::actor_system& sys) {
    return scale_set_subtree(w.cfg, ctx, peers, *w.m, *w.ready, session.memo, session.hand_over).start(sys);
  };
  return out;
}

// The context of a declared scale set, as make_contexts makes a configured one's.
std::variant<context_ptr, std::string> declared_context(const declared_wiring& w, const declared_scale_set& d) {
  auto spec = make_spec(d.section, "spec", w.modes.priority_classes);
  if (auto* e = std::get_if<std::string>(&spec))
    return *e;
  const auto budget_pairs = static_cast<int64_t>(w.modes.burst_budget.max_pending_pairs);
  if (budget_pairs > 0 && std::get<scale_set_spec>(spec).max_burst_capacity > budget_pairs)
    return "spec.capacityAware.maxBurstCapacity: " + std::to_string(std::get<scale_set_spec>(spec).max_burst_capacity) +
           " pending pairs, over the cluster's whole burstBudget.maxPendingPairs (" + std::to_string(budget_pairs) + ")";
  const auto& svc = w.svc;
  auto ctx = std::make_shared<scale_set_context>();
  ctx->spec = std::get<scale_set_spec>(std::move(spec));
  ctx->spec.declared = true;
  ctx->spec.generation = d.generation;
  ctx->spec.object_uid = d.uid;
  ctx->spec.queue_share = queue_share_of(w.modes.hud);
  ctx->kube = svc->kube;
  ctx->status_kube = svc->status_kube;
  ctx->github = svc->github;
  ctx->nodes = svc->nodes;
  ctx->nodepools = svc->nodepools;
  ctx->metrics = make_metrics(*w.m, ctx->spec, svc->where);
  ctx->events = svc->events;
  ctx->owner_process = svc->owner_process;
  ctx->owner_configmap = svc->owner_prefix + ctx->spec.name;
  ctx->sweeps_owners = false;  // the file's scale sets sweep; a declared owner is its object's
  ctx->reads = svc->reads;
  ctx->instance = svc->instance;
  const bool arc = !ctx->spec.arc_set.empty();
  auto& routers = arc ? svc->declared_arc_pods : svc->declared_pods;
  auto router = routers.find(ctx->spec.ns);
  if (router == routers.end())
    return "metadata.namespace: '" + ctx->spec.ns + "' is not one of scaleSetObjects.namespaces";
  ctx->pods = router->second->slice(arc ? ctx->spec.arc_set : ctx->spec.name);
  return ctx;
}

// Builds a declared scale set's subtree from its object.
std::variant<catalog_build, std::string> build_declared(const declared_wiring& w, caf::actor_system& sys, const std::string& object_json) {
  auto read = read_scale_set_object(object_json);
  if (auto* e = std::get_if<std::string>(&read))
    return *e;
  const auto& d = std::get<declared_scale_set>(read);
  auto made = declared_context(w, d);
  if (auto* e = std::get_if<std::string>(&made))
    return *e;
  const auto ctx = std::get<context_ptr>(std::move(made));
  catalog_build out;
  out.generation = d.generation;
  out.leftover = actors::catalog_leftover{k8s::resource_kind{"", "v1", "configmaps", true}, ctx->owner_configmap};
  // The warm pool asked for is the largest it can be: warmPool's windows and followDemand.max
  // count against scaleSetObjects.limits.proactiveCapacity as proactiveCapacity does.
  // (above maxRunners a warm pool is never made).
  int64_t warmest = 0;
  for (const auto& w : ctx->spec.warm_pool.schedule)
    warmest = std::max(warmest, w.size);
  if (ctx->spec.warm_pool.follow_demand)
    warmest = std::max(warmest, ctx->spec.warm_pool.max);
  warmest = std::max(ctx->spec.proactive_capacity, std::min(warmest, ctx->spec.max_runners));
  out.asks = {{"spec.maxRunners", ctx->spec.max_runners}, {"spec.capacityAware.proactiveCapacity", warmest}};
  using runtime::relay_as;
  const std::string at = ctx->spec.name + "/";
  for (const char* child : {"capacity_monitor", "listener_session", "runner_provisioner", "scale_set_status"}) {
    out.relays.push_back(runtime::spawn_relay(sys, at + child));
    runtime::own_relay(out.relays.back(), w.parent);
  }
  const scale_set_peers peers{relay_as<monitor_actor>(out.relays[0]), relay_as<listener_actor>(out.relays[1]),
                              relay_as<provisioner_actor>(out.relays[2]), relay_as<status_actor>(out.relays[3]), w.budget};
  if (w.hud_targets) {  // the HUD's demand for its labels, while it runs
    auto labels = d.section.labels;
    labels.push_back(d.section.name);
    out.running = [registry = w.hud_targets, name = ctx->spec.name, target = hud_target{labels, peers.monitor, ctx->spec.queue_share}](bool on) {
      auto all = registry->get();
      if (on)
        all[name] = target;
      else
        all.erase(name);
      registry->set(std::move(all));
    };
  }
  // The session of the subtree this one replaces (if any) is adopted, not opened anew.
  auto& session = w.svc->declared_sessions[ctx->spec.name];
  if (!session.memo) {
    session.memo = std::make_shared<runtime::memo<msg::session_held>>();
    session.hand_over = std::make_shared<runtime::memo<bool>>();
  }
  session.hand_over->set(false);
  out.hand_over = [flag = session.hand_over](bool v) { flag->set(v); };
  out.subtree = declared_subtree(w, ctx, peers, session);
  return out;
}

}  // namespace

runtime::child_spec catalog_child(const runtime::config& cfg, const scale_sets_config& modes, std::shared_ptr<scale_set_services> svc,
                                  burst_budget_actor budget, runtime::supervisor_actor parent,
                                  std::shared_ptr<hud_target_registry> hud_targets, runtime::metrics& m, runtime::readiness& ready) {
  auto opts = std::make_shared<actors::catalog_options>();
  opts->kind = actors::catalog_kind{k8s::resource_kind{"headroom.dev", "v1alpha1", "scalesets", true},
                                    "headroom.dev/v1alpha1",
                                    "ScaleSet",
                                    "scale_set_catalog",
                                    "scale set",
                                    "scale_set_objects",
                                    scale_set_refused_patch,
                                    nullptr};  // Ready is the status actor's
  opts->objects = svc->objects;
  // A scale set's name is one per headroom (its owner, its runners' labels, its session's name).
  opts->claim_of = [](const k8s::unstructured& o) {
    return actors::catalog_claim{o.meta.name, "metadata.name", "the scale set '" + o.meta.name + "'"};
  };
  for (const auto& set : modes.sets)
    opts->file_claims.insert(set.name);
  opts->parent = parent;
  opts->kube = svc->kube;
  opts->events = svc->events;
  opts->memo = std::make_shared<actors::catalog_memo>();
  opts->limits = {{"spec.maxRunners", "scaleSetObjects.limits.maxRunners", static_cast<int64_t>(modes.objects.max_runners)},
                  {"spec.capacityAware.proactiveCapacity", "scaleSetObjects.limits.proactiveCapacity",
                   static_cast<int64_t>(modes.objects.proactive_capacity)}};
  auto& family = prometheus::BuildCounter()
                     .Name("headroom_scale_set_objects_total")
                     .Help("ScaleSet objects acted on, by outcome: started, replaced (a new spec), stopped (deleted), refused")
                     .Register(m.registry());
  opts->count = [&family](const std::string& outcome) { family.Add({{"outcome", outcome}}).Increment(); };
  declared_wiring w{cfg, modes, svc, budget, runtime::untyped(parent), std::move(hud_targets), &m, &ready};
  opts->build = [w](caf::actor_system& sys, const std::string& object_json) { return build_declared(w, sys, object_json); };
  return actors::catalog_child_spec(opts);
}


}  // namespace headroom::modes::scale_sets
