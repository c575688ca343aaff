#pragma once

// Messages that carry Kubernetes results and objects into actors. They hold shared pointers to
// immutable cached objects and never leave the process, so they are registered as local-only
// (CAF_ALLOW_UNSAFE_MESSAGE_TYPE in type_ids.hpp) instead of being made serializable. The object
// types are only named here: an actor that looks inside one includes the adapter's objects.hpp.

#include <caf/meta/type_name.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace headroom::k8s {
struct pod;
struct node;
}  // namespace headroom::k8s

namespace headroom::msg {

enum class object_change : uint8_t { added, modified, deleted, resync };

/// The path of one watch event through headroom, on the steady clock (CLOCK_MONOTONIC, the same
/// for every process on the machine): when the informer read it, when the actor that owns it
/// drained it, when a decision was taken on it. Unset (epoch) where a hop was not taken: a resync,
/// a timer, a change that came from elsewhere. `resource_version` is the watch event's own (for a
/// deletion, the deletion's), so it can be matched with another watch of the same object.
struct hop_trace {
  using time_point = std::chrono::steady_clock::time_point;
  std::string resource_version;
  time_point received{}, woken{}, judged{};
  bool from_watch() const { return received != time_point{}; }
};

/// An informer's view of one object changed (the latest state per object: see informer_feed).
template <class T>
struct object_event {
  object_change change = object_change::added;
  std::shared_ptr<const T> object;
  hop_trace trace{};
};

using pod_event = object_event<k8s::pod>;
using node_event = object_event<k8s::node>;

/// The result of one API call an actor started, matched by the actor's `correlation` number.
struct api_reply {
  uint64_t correlation = 0;
  bool ok = false;
  std::string body;        // ok: the response body
  int32_t error_kind = 0;  // !ok: k8s::api_error::kind as a number
  int32_t status = 0;
  std::string error;       // !ok: api_error::describe()
};

/// An actor → the event_recorder: record a Kubernetes Event about an object (best effort:
/// deduplicated into series and rate-limited per object, see adapters/k8s/events.hpp).
struct k8s_event {
  std::string api_version, kind, ns, name, uid;  // the object it is about (ns empty: cluster-scoped)
  std::string type;                              // Normal | Warning
  std::string reason, action, note;
};

/// The leader elector's verdict: lead (start the acting actors) or follow (stop them).
struct leadership {
  bool leading = false;
  std::string holder;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, api_reply& x) {
  return f(caf::meta::type_name("api_reply"), x.correlation, x.ok, x.body, x.error_kind, x.status, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, k8s_event& x) {
  return f(caf::meta::type_name("k8s_event"), x.api_version, x.kind, x.ns, x.name, x.uid, x.type, x.reason, x.action,
           x.note);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, leadership& x) {
  return f(caf::meta::type_name("leadership"), x.leading, x.holder);
}

}  // namespace headroom::msg
