#pragma once

// object_catalog: what users declare as objects of one kind (a ScaleSet, a ReactiveTarget), each
// run as its own subtree under its mode's supervisor and changed live:
//
// - an object created (or first seen) starts its subtree;
// - a new generation of its spec replaces that subtree, and only it (a scale set's new subtree
//   adopts the placed pairs the old one left, the same owner); every other object's keeps running;
// - an object deleted stops its subtree for good and removes what it leaves behind (a scale set's
//   owner ConfigMap, whose placeholders the garbage collector then removes);
// - a spec headroom cannot run (what it serves — a scale set's name, a workload — already served
//   by the configuration file or by another object; a value the schema let through and the reader
//   refuses; more than its namespace may ask for) is refused with its field's path: in the
//   object's status (Ready False) when nothing runs for it, else in a Warning Event while the
//   generation before it keeps running (status.observedGeneration says which).
//
// Objects labelled app.kubernetes.io/managed-by=headroom are status objects headroom made for the
// file's entries: not declarations, never acted on here.

#include <caf/actor.hpp>
#include <caf/typed_actor.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "actors/k8s/event_recorder.hpp"
#include "adapters/k8s/informer.hpp"
#include "runtime/memo.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::k8s {
class client;
}

namespace headroom::actors {

// An object in the declaration's namespace, deleted once its subtree has stopped for good.
struct catalog_leftover {
  k8s::resource_kind kind;
  std::string name;
};

// What the wiring makes of one object's spec.
struct catalog_build {
  int64_t generation = 0;        // of the spec it was built from
  runtime::child_spec subtree;   // stopped by its name
  std::optional<catalog_leftover> leftover;
  // Before the subtree stops: true when a new spec's subtree replaces it (a listener leaves its
  // session to the next one), false when the object is deleted.
  std::function<void(bool)> hand_over;
  // What it asks of its namespace's bounds, by the limit's field (catalog_limit::field).
  std::map<std::string, int64_t> asks;
  // Told true once the subtree runs and false before it stops (a scale set's HUD demand, say).
  std::function<void(bool)> running;
  // The subtree's relays (stable across its restarts): ended once it has stopped for good.
  std::vector<caf::actor> relays;
};

// What all the objects declared in one namespace may ask for together: the cluster admin's bound
// on each team (scaleSetObjects.limits.maxRunners: field "spec.maxRunners").
struct catalog_limit {
  std::string field;   // the spec's field, as the refusal names it
  std::string key;     // the configuration key that sets the bound
  int64_t limit = 0;   // 0: no bound
};

// What runs, per object ("namespace/name"), kept across the catalog's own restarts.
struct catalog_running {
  std::string ns, name, token;  // token: "uid/generation" of the spec running
  int64_t generation = 0;
  std::string claim, child;
  std::optional<catalog_leftover> leftover;
  std::function<void(bool)> hand_over, running;
  std::map<std::string, int64_t> asks;
  std::vector<caf::actor> relays;
};
using catalog_memo = runtime::memo<std::map<std::string, catalog_running>>;

// The kind of object a catalog serves.
struct catalog_kind {
  k8s::resource_kind resource;     // {"headroom.dev", "v1alpha1", "scalesets", true}
  std::string api_version, kind;   // of its Events: "headroom.dev/v1alpha1", "ScaleSet"
  std::string actor_name;          // in the logs: "scale_set_catalog"
  std::string what;                // in the logs: "scale set"
  std::string feed;                // its informer feed's buffer: "scale_set_objects"
  // The status patch of a refused generation nothing runs for: (generation, reason, message, now).
  std::function<std::string(int64_t, const std::string&, const std::string&, const std::string&)> refused_patch;
  // The status patch once a generation runs ((generation, now)); unset when the subtree writes
  // its own status (a scale set's status actor).
  std::function<std::string(int64_t, const std::string&)> ready_patch;
};

// What one object at a time may serve (a scale set's name, a target's workload), read from the
// object before anything is built for it, and how a refusal names it.
struct catalog_claim {
  std::string claim;  // "" when the object names none (its build then says why)
  std::string field;  // "metadata.name"
  std::string text;   // "the scale set 'x'"
};

struct catalog_options {
  catalog_kind kind;
  // The objects of each namespace served.
  std::vector<std::shared_ptr<k8s::informer<k8s::unstructured>>> objects;
  std::function<catalog_claim(const k8s::unstructured&)> claim_of;
  // What the configuration file serves already: claims a declaration cannot have.
  std::set<std::string> file_claims;
  // Builds one object's subtree, or says what in its spec cannot run ("spec.maxRunners: …").
  std::function<std::variant<catalog_build, std::string>(caf::actor_system& sys, const std::string& object_json)> build;
  runtime::supervisor_actor parent;  // the mode's supervisor (its relay)
  k8s::client* kube = nullptr;       // refused objects' status, the leftovers
  event_sink events;
  // Counts each outcome: started, replaced, stopped, refused.
  std::function<void(const std::string& outcome)> count;
  std::shared_ptr<catalog_memo> memo;  // owned by the wiring, outlives the catalog's restarts
  std::vector<catalog_limit> limits;
};

// A status patch with one condition, Ready, as the API conventions put it.
std::string ready_condition_patch(int64_t generation, bool ready, const std::string& reason, const std::string& message,
                                  const std::string& now);

// A kind whose status the catalog writes whole: Ready False with the reason when refused, Ready True
// with `ready_reason` and `ready_message` once a generation runs.
catalog_kind condition_kind(k8s::resource_kind resource, std::string kind, std::string actor_name, std::string what, std::string feed,
                            std::string ready_reason, std::string ready_message);

using catalog_actor = caf::typed_actor<caf::reacts_to<msg::buffer_wakeup>>;

catalog_actor spawn_object_catalog(caf::actor_system& sys, std::shared_ptr<const catalog_options> opts);

// The catalog as a permanent child of its mode's supervisor (named by its kind's actor_name).
runtime::child_spec catalog_child_spec(std::shared_ptr<const catalog_options> opts);

}  // namespace headroom::actors
