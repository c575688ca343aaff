#pragma once

// The scale sets declared by ScaleSet objects (scaleSetObjects.namespaces): their informers, and
// the catalog that adds, replaces and stops each one's subtree while the scale sets' supervisor
// runs (actors/k8s/object_catalog.hpp). Wiring shared with mode.cpp.

#include <string>
#include <vector>

#include "actors/capacity/burst_budget.hpp"
#include "actors/listener/listener_session.hpp"
#include "modes/scale_sets/mode.hpp"

namespace headroom::modes::scale_sets {

// One scale set: its five actors under a supervisor, each reachable by its relay. `memo` (made
// here when null) keeps the listener's session across its restarts; `hand_over`, see
// listener_options.
runtime::child_spec scale_set_subtree(const runtime::config& cfg, const context_ptr& ctx, const actors::capacity::scale_set_peers& peers,
                                      runtime::metrics& m, runtime::readiness& ready, std::shared_ptr<actors::session_memo> memo = nullptr,
                                      std::shared_ptr<runtime::memo<bool>> hand_over = nullptr);

// hud.share as the monitors and the HUD poller take it.
hud::queue_share queue_share_of(const hud_section& h);

// The ScaleSet objects of each namespace, and the pods of the scale sets they declare, watched.
void watch_objects(k8s::informer_set& informers, const std::vector<std::string>& namespaces, scale_set_services& out);

// The catalog of ScaleSet objects, adding and removing scale sets under `parent` while it runs.
runtime::child_spec catalog_child(const runtime::config& cfg, const scale_sets_config& modes, std::shared_ptr<scale_set_services> svc,
                                  actors::capacity::burst_budget_actor budget, runtime::supervisor_actor parent,
                                  std::shared_ptr<actors::capacity::hud_target_registry> hud_targets, runtime::metrics& m,
                                  runtime::readiness& ready);

}  // namespace headroom::modes::scale_sets
