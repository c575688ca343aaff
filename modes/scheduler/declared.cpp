// Runner pools declared by RunnerPool objects: see declared.hpp.

#include "modes/scheduler/declared.hpp"

#include <caf/all.hpp>
#include <prometheus/counter.h>

#include "actors/k8s/object_catalog.hpp"
#include "adapters/k8s/fields.hpp"
#include "adapters/k8s/informer_set.hpp"
#include "runtime/metrics.hpp"
#include "runtime/relay.hpp"

namespace headroom::modes::scheduler {

namespace {

const k8s::resource_kind runner_pools{"headroom.dev", "v1alpha1", "runnerpools", true};

// A declared pool's holder, or what in its spec cannot run.
std::variant<actors::catalog_build, std::string> build_pool(const std::shared_ptr<scheduler_services>& svc, const std::string& json) {
  auto read = read_runner_pool_object(json, svc->declared.runner);
  if (auto* e = std::get_if<std::string>(&read))
    return *e;
  const auto& d = std::get<declared_pool>(read);
  auto pool = pool_of(d.section, svc->reconciler->opts.pool);
  actors::catalog_build out;
  out.generation = d.generation;
  out.asks = {{"spec.maxWorkers", static_cast<int64_t>(d.section.max_workers)}};
  out.subtree.name = "runner_pool/" + pool.name;
  out.subtree.start = [registry = svc->declared.registry, pool](caf::actor_system& sys) {
    return runtime::untyped(actors::scheduler::spawn_pool_holder(sys, registry, pool));
  };
  return out;
}

// A pool's labels from its object, when they read as the reader would take them; none otherwise
// (the object is refused, or will be).
std::optional<std::vector<std::string>> labels_of(const k8s::unstructured& o) {
  const auto json = k8s::json_at(o.raw, {"spec", "labels"});
  if (!json)
    return std::nullopt;
  try {
    const auto node = YAML::Load(*json);
    if (!node.IsSequence() || node.size() == 0)
      return std::nullopt;
    std::vector<std::string> out;
    for (const auto& l : node)
      out.push_back(l.as<std::string>());
    return out;
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::function<std::vector<std::vector<std::string>>()> watch_pools(k8s::informer_set& informers, const std::string& ns,
                                                                   scheduler_services& svc) {
  k8s::informer<k8s::unstructured>::options o;
  o.kind = runner_pools;
  o.ns = ns;
  svc.declared.objects = informers.get<k8s::unstructured>(o);
  svc.declared.objects->start();
  return [objects = svc.declared.objects] {
    std::vector<std::vector<std::string>> out;
    for (const auto& obj : objects->list())
      if (auto labels = labels_of(*obj))
        out.push_back(std::move(*labels));
    return out;
  };
}

runtime::child_spec pool_catalog_child(std::shared_ptr<scheduler_services> svc, caf::actor parent, runtime::metrics& m) {
  auto opts = std::make_shared<actors::catalog_options>();
  opts->kind = actors::condition_kind(runner_pools, "RunnerPool", "runner_pool_catalog", "runner pool", "runner_pool_objects", "Serving",
                                      "the scheduler gives its jobs this pool's runners");
  opts->objects = {svc->declared.objects};
  // A pool's name is one per scheduler: it labels the pool's pods (headroom.dev/pool).
  opts->claim_of = [](const k8s::unstructured& o) {
    return actors::catalog_claim{o.meta.name, "metadata.name", "the pool '" + o.meta.name + "'"};
  };
  opts->file_claims = svc->declared.file;
  opts->parent = runtime::relay_as<runtime::supervisor_actor>(parent);
  opts->kube = svc->kube;
  opts->events = svc->events;
  opts->memo = std::make_shared<actors::catalog_memo>();
  opts->limits = {{"spec.maxWorkers", "scheduler.poolObjects.limits.maxWorkers", static_cast<int64_t>(svc->declared.max_workers)}};
  auto& family = prometheus::BuildCounter()
                     .Name("headroom_runner_pool_objects_total")
                     .Help("RunnerPool objects acted on, by outcome: started, replaced (a new spec), stopped (deleted), refused")
                     .Register(m.registry());
  opts->count = [&family](const std::string& outcome) { family.Add({{"outcome", outcome}}).Increment(); };
  opts->build = [svc](caf::actor_system&, const std::string& json) { return build_pool(svc, json); };
  return actors::catalog_child_spec(opts);
}

}  // namespace headroom::modes::scheduler
