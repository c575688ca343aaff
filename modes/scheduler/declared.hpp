#pragma once

// Runner pools declared by RunnerPool objects (scheduler.poolObjects): their informer, the labels
// every replica's webhook intake serves, and the catalog that adds, replaces and stops each one's
// pool_holder under the scheduler's supervisor (actors/k8s/object_catalog.hpp). Wiring shared
// with mode.cpp.

#include <caf/actor.hpp>

#include <functional>
#include <string>
#include <vector>

#include "modes/scheduler/mode.hpp"

namespace headroom::k8s {
class informer_set;
}

namespace headroom::modes::scheduler {

// The RunnerPool objects of `ns`, watched (into svc.declared.objects); answers the labels of each
// pool they declare, as this replica's cache has them (the intake's: whose jobs are the
// scheduler's).
std::function<std::vector<std::vector<std::string>>()> watch_pools(k8s::informer_set& informers, const std::string& ns,
                                                                   scheduler_services& svc);

// The catalog of RunnerPool objects, adding and removing pools under `parent` (the scheduler
// supervisor's relay) while it runs.
runtime::child_spec pool_catalog_child(std::shared_ptr<scheduler_services> svc, caf::actor parent, runtime::metrics& m);

}  // namespace headroom::modes::scheduler
