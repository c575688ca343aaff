#pragma once

// scale_set_catalog: the scale sets declared by ScaleSet objects (headroom.dev/v1alpha1, with a
// spec), each run as its own subtree under the scale sets' supervisor and changed live:
//
// - an object created (or first seen) starts its scale set's subtree;
// - a new generation of its spec replaces that subtree, and only it: the new one adopts the placed
//   pairs the old one left (the same owner), every other scale set keeps its session, its pairs
//   and its poll;
// - an object deleted stops its subtree for good (its session is deleted by the listener) and
//   removes its owner ConfigMap, whose placeholders the garbage collector then removes;
// - a spec headroom cannot run (a name the configuration file or another object already serves, a
//   value the schema let through and the reader refuses, more than its namespace may ask for) is
//   refused with its field's path: in the
//   object's status (Ready False) when nothing runs for it, else in a Warning Event while the
//   generation before it keeps running (status.observedGeneration says which).
//
// Objects labelled app.kubernetes.io/managed-by=headroom are the status objects of the file's
// scale sets: not declarations, never acted on here.

#include <caf/actor.hpp>
#include <caf/typed_actor.hpp>

#include <functional>
#include <map>
#include <memory>
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

namespace headroom::actors::capacity {

// What the wiring makes of one object's spec.
struct catalog_build {
  std::string name;              // the scale set's (metadata.name)
  int64_t generation = 0;        // of the spec it was built from
  runtime::child_spec subtree;   // named "scale_set/<name>"
  std::string owner_configmap;   // removed when the object is deleted (its pairs go with it)
  // Before the subtree stops: true when a new spec's subtree replaces it (its listener leaves the
  // session to the next one), false when the object is deleted (the session is deleted).
  std::function<void(bool)> hand_over;
  // What it asks of its namespace's bounds (catalog_options::limits).
  int64_t max_runners = 0, proactive_capacity = 0;
  // Told true once the subtree runs and false before it stops (its HUD demand, say).
  std::function<void(bool)> running;
  // The subtree's relays (stable across its restarts): ended once it has stopped for good.
  std::vector<caf::actor> relays;
};

// What all the scale sets declared in one namespace may ask for together (0: no bound): the
// cluster admin's bound on each team (scaleSetObjects.limits).
struct namespace_limits {
  int64_t max_runners = 0, proactive_capacity = 0;
};

// What runs, per object ("namespace/name"), kept across the catalog's own restarts.
struct catalog_running {
  std::string ns, name, token;  // token: "uid/generation" of the spec running
  int64_t generation = 0;
  std::string owner_configmap;
  std::function<void(bool)> hand_over, running;
  int64_t max_runners = 0, proactive_capacity = 0;
  std::vector<caf::actor> relays;
};
using catalog_memo = runtime::memo<std::map<std::string, catalog_running>>;

struct catalog_options {
  // The ScaleSet objects of each namespace served (scaleSetObjects.namespaces).
  std::vector<std::shared_ptr<k8s::informer<k8s::unstructured>>> objects;
  std::set<std::string> file_names;  // the scale sets the configuration file serves
  // Builds one object's subtree, or says what in its spec cannot run ("spec.maxRunners: …").
  std::function<std::variant<catalog_build, std::string>(caf::actor_system& sys, const std::string& object_json)> build;
  runtime::supervisor_actor parent;  // the scale sets' supervisor (its relay)
  k8s::client* kube = nullptr;       // refused objects' status, the owner ConfigMaps
  event_sink events;
  // Counts each outcome: started, replaced, stopped, refused.
  std::function<void(const std::string& outcome)> count;
  std::shared_ptr<catalog_memo> memo;  // owned by the wiring, outlives the catalog's restarts
  namespace_limits limits;
};

using catalog_actor = caf::typed_actor<caf::reacts_to<msg::buffer_wakeup>>;

catalog_actor spawn_scale_set_catalog(caf::actor_system& sys, std::shared_ptr<const catalog_options> opts);

}  // namespace headroom::actors::capacity
