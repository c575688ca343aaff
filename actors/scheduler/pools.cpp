// pool_holder (scheduler.hpp): a pool a RunnerPool object declares, in the registry the reconciler
// reads for as long as this actor lives. Its catalog starts it when the object's spec runs and
// stops it when the object changes or goes.

#include <caf/all.hpp>

#include "actors/scheduler/scheduler.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::scheduler {

namespace {

pool_holder_actor::behavior_type pool_holder(pool_holder_actor::pointer self, std::shared_ptr<pool_registry> registry, pool_options pool) {
  const auto id = self->id();
  const auto name = pool.name;
  registry->update([&](auto& all) { all[name] = declared_pool_entry{id, std::move(pool)}; });
  runtime::log::info("pool_holder", "runner pool declared", {{"pool", name}});
  self->attach_functor([registry, name, id] {
    registry->update([&](auto& all) {
      if (auto it = all.find(name); it != all.end() && it->second.holder == id)
        all.erase(it);
    });
  });
  return {[name](caf::get_atom) { return name; }};
}

}  // namespace

pool_holder_actor spawn_pool_holder(caf::actor_system& sys, std::shared_ptr<pool_registry> registry, pool_options pool) {
  return sys.spawn(pool_holder, std::move(registry), std::move(pool));
}

}  // namespace headroom::actors::scheduler
