#pragma once

// Reactive targets declared by ReactiveTarget objects (reactive.objects.namespaces): their
// informers, and the catalog that adds, replaces and stops each one's scaler while the reactive
// supervisor runs (actors/k8s/object_catalog.hpp). Wiring shared with mode.cpp.

#include <caf/actor.hpp>

#include <string>
#include <vector>

#include "modes/reactive/mode.hpp"

namespace headroom::k8s {
class informer_set;
}

namespace headroom::modes::reactive {

// The ReactiveTarget objects of each namespace served, watched (into svc.objects).
void watch_targets(k8s::informer_set& informers, const std::vector<std::string>& namespaces, reactive_services& svc);

// The catalog of ReactiveTarget objects, adding and removing scalers under `parent` (the reactive
// supervisor's relay) while it runs; each scaler is wired to the quota's and the reader's relays.
runtime::child_spec target_catalog_child(std::shared_ptr<reactive_services> svc, caf::actor parent, caf::actor quota_relay,
                                         caf::actor reader_relay, runtime::metrics& m);

// One scaler's child of the reactive supervisor.
runtime::child_spec scaler_child(actors::reactive::scaler_context_ptr ctx, caf::actor quota_relay, caf::actor reader_relay);

}  // namespace headroom::modes::reactive
