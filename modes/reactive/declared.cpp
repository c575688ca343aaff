// Reactive targets declared by ReactiveTarget objects: see declared.hpp.

#include "modes/reactive/declared.hpp"

#include <caf/all.hpp>
#include <prometheus/counter.h>

#include "actors/k8s/object_catalog.hpp"
#include "adapters/k8s/fields.hpp"
#include "adapters/k8s/informer_set.hpp"
#include "runtime/metrics.hpp"
#include "runtime/relay.hpp"

namespace headroom::modes::reactive {

using namespace actors::reactive;

namespace {

const k8s::resource_kind reactive_targets{"headroom.dev", "v1alpha1", "reactivetargets", true};

// A declared target's scaler, or what in its spec cannot run.
std::variant<actors::catalog_build, std::string> build_target(const std::shared_ptr<reactive_services>& svc, caf::actor quota_relay,
                                                              caf::actor reader_relay, runtime::metrics& m, const std::string& json) {
  auto read = read_reactive_target_object(json, svc->declared.defaults);
  if (auto* e = std::get_if<std::string>(&read))
    return *e;
  const auto& d = std::get<declared_target>(read);
  auto ctx = make_context(d.section, *svc->kube, svc->events, m);
  actors::catalog_build out;
  out.generation = d.generation;
  out.asks = {{"spec.maxReplicas", static_cast<int64_t>(d.section.max_replicas)}};
  out.subtree = scaler_child(std::move(ctx), std::move(quota_relay), std::move(reader_relay));
  return out;
}

}  // namespace

void watch_targets(k8s::informer_set& informers, const std::vector<std::string>& namespaces, reactive_services& svc) {
  for (const auto& ns : namespaces) {
    k8s::informer<k8s::unstructured>::options o;
    o.kind = reactive_targets;
    o.ns = ns;
    svc.declared.objects.push_back(informers.get<k8s::unstructured>(o));
  }
  for (auto& o : svc.declared.objects)
    o->start();
}

runtime::child_spec scaler_child(scaler_context_ptr ctx, caf::actor quota_relay, caf::actor reader_relay) {
  runtime::child_spec scaler;
  scaler.name = "reactive_scaler/" + ctx->spec.target.id();
  scaler.start = [ctx, quota_relay, reader_relay](caf::actor_system& s) {
    return runtime::untyped(spawn_reactive_scaler(s, ctx, runtime::relay_as<quota_actor>(quota_relay),
                                                  runtime::relay_as<runtime::watched_relay<metric_reader_actor>>(reader_relay)));
  };
  return scaler;
}

runtime::child_spec target_catalog_child(std::shared_ptr<reactive_services> svc, caf::actor parent, caf::actor quota_relay,
                                         caf::actor reader_relay, runtime::metrics& m) {
  auto opts = std::make_shared<actors::catalog_options>();
  opts->kind = actors::condition_kind(reactive_targets, "ReactiveTarget", "reactive_target_catalog", "reactive target",
                                      "reactive_target_objects", "Scaling", "its workload is scaled on its metrics");
  opts->objects = svc->declared.objects;
  // One scaler per workload: two would step it against each other.
  opts->claim_of = [](const k8s::unstructured& o) {
    auto kind = k8s::string_at(o.raw, {"spec", "scaleTargetRef", "kind"});
    const auto name = k8s::string_at(o.raw, {"spec", "scaleTargetRef", "name"});
    if (kind.empty())
      kind = "Deployment";
    const auto id = target_ref{"", kind, o.meta.ns, name}.id();
    return actors::catalog_claim{name.empty() ? std::string{} : id, "spec.scaleTargetRef", "the workload " + id};
  };
  for (const auto& t : svc->targets)
    opts->file_claims.insert(t->spec.target.id());
  opts->parent = runtime::relay_as<runtime::supervisor_actor>(parent);
  opts->kube = svc->kube;
  opts->events = svc->events;
  opts->memo = std::make_shared<actors::catalog_memo>();
  opts->limits = {{"spec.maxReplicas", "reactive.objects.limits.maxReplicas", static_cast<int64_t>(svc->declared.max_replicas)}};
  auto& family = prometheus::BuildCounter()
                     .Name("headroom_reactive_target_objects_total")
                     .Help("ReactiveTarget objects acted on, by outcome: started, replaced (a new spec), stopped (deleted), refused")
                     .Register(m.registry());
  opts->count = [&family](const std::string& outcome) { family.Add({{"outcome", outcome}}).Increment(); };
  opts->build = [svc, quota_relay, reader_relay, mp = &m](caf::actor_system&, const std::string& json) {
    return build_target(svc, quota_relay, reader_relay, *mp, json);
  };
  return actors::catalog_child_spec(opts);
}

}  // namespace headroom::modes::reactive
