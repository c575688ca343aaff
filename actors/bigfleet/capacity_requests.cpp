// capacity_requests (the unschedulable-pod controller): one CapacityRequest per Pod, so that the
// roll-up is the cluster's total desired capacity. The CR is owner-referenced to its Pod (deleting
// the Pod garbage-collects it) and labelled with the Pod's UID; creation is idempotent
// (AlreadyExists tolerated) and stamps status.phase=Pending. A terminal Pod (Succeeded/Failed)
// holds no capacity: its CR is deleted at once and none is ever created for it. A create or delete
// that failed for the API server's load or absence (429, 5xx, no answer) is tried again for that
// Pod alone, after 0.5 s doubling to at most 5 s (a workqueue's rate-limited requeue, capped low
// so the roll-up has every CR within seconds of an outage's end); any other refusal (invalid,
// forbidden) waits for the 5-minute resync rather than repeat what will be refused again.

#include <caf/all.hpp>

#include <unordered_map>
#include <unordered_set>

#include "actors/bigfleet/bigfleet.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "adapters/k8s/decode.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/json_writer.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::bigfleet {

namespace {

constexpr std::string_view actor_name = "capacity_requests";
constexpr uint32_t pods_buffer = 1;
constexpr std::chrono::minutes resync_every{5};

struct pending_call {
  enum kind { create, stamp, remove } what;
  std::string ns, name;
};

// A Pod's create or delete to try again (local: never leaves the process).
struct cr_retry {
  std::string ns, name;
};

}  // namespace
}  // namespace headroom::actors::bigfleet

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::bigfleet::cr_retry)

namespace headroom::actors::bigfleet {
namespace {

constexpr std::chrono::milliseconds retry_first{500}, retry_most{5'000};

bool transient(k8s::api_error::kind k) {
  using kind = k8s::api_error::kind;
  return k == kind::transport || k == kind::too_many_requests || k == kind::server;
}

struct upc_state {
  operator_deps deps;
  operator_options opts;
  std::unique_ptr<informer_feed<k8s::pod>> feed;
  std::unordered_set<std::string> in_flight;  // ns/name with a create or delete running
  // CRs this actor created (ns/name → Pod UID): the CR informer may not show them yet, and
  // asking again would only meet AlreadyExists.
  std::unordered_map<std::string, std::string> ours;
  api_calls<pending_call> calls;
  std::unordered_map<std::string, int> failures;  // ns/name → calls refused in a row
  std::unordered_set<std::string> retrying;        // ns/name with a cr_retry on its way
  uint64_t created = 0, deleted = 0;
  static inline const char* name = "headroom.capacity_requests";
};

// Its own timer and retries, and the API server's answers.
using upc_impl = capacity_requests_actor::extend<caf::reacts_to<msg::resync_atom>, caf::reacts_to<cr_retry>,
                                                 caf::reacts_to<msg::api_reply>>;
using upc_actor = upc_impl::stateful_base<upc_state>;

bool terminal(const k8s::pod& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

void start_call(upc_actor* self, pending_call call, const std::function<void(k8s::api_callback)>& start) {
  self->state.calls.start(self, std::move(call), start);
}

// The Pod's call was refused: try it again after its backoff (one retry on its way per Pod).
void retry_later(upc_actor* self, const std::string& ns, const std::string& name) {
  auto& st = self->state;
  const std::string key = ns + "/" + name;
  const int n = ++st.failures[key];
  if (!st.retrying.insert(key).second)
    return;
  const auto delay = std::min<std::chrono::milliseconds>(retry_most, retry_first * (1 << std::min(n - 1, 4)));
  self->delayed_send(self, delay, cr_retry{ns, name});
}

void reconcile(upc_actor* self, const msg::pod_event& e) {
  auto& st = self->state;
  const auto& pod = *e.object;
  const std::string key = pod.meta.ns + "/" + pod.meta.name;
  if (st.in_flight.count(key) > 0)
    return;  // the running call's result re-checks
  auto cr = st.deps.capacity_requests->get(pod.meta.ns, headroom::bigfleet::capacity_request_name(pod));
  const std::string* owner = cr ? cr->meta.label(headroom::bigfleet::pod_uid_label) : nullptr;
  auto mine = st.ours.find(key);
  const bool ours = (owner && *owner == pod.meta.uid) || (mine != st.ours.end() && mine->second == pod.meta.uid);
  auto& client = *st.deps.client;
  if (e.change == msg::object_change::deleted || terminal(pod)) {
    if (!ours)
      return;
    st.in_flight.insert(key);
    st.ours.erase(key);
    const std::string name = headroom::bigfleet::capacity_request_name(pod);
    start_call(self, {pending_call::remove, pod.meta.ns, name}, [&client, ns = pod.meta.ns, name](k8s::api_callback cb) {
      client.remove(kinds::capacity_requests, ns, name, {}, std::move(cb));
    });
    return;
  }
  if (cr || mine != st.ours.end())
    return;  // exists (ours, or a previous Pod's that garbage collection is about to remove)
  st.in_flight.insert(key);
  const std::string body = headroom::bigfleet::capacity_request_object(pod, st.opts.penalties);
  start_call(self, {pending_call::create, pod.meta.ns, headroom::bigfleet::capacity_request_name(pod)},
             [&client, ns = pod.meta.ns, body](k8s::api_callback cb) { client.create(kinds::capacity_requests, ns, body, std::move(cb)); });
}

// A call answered: a create is stamped Pending, a transient failure retried after its backoff, and
// the Pod's latest state reconciled again.
void on_reply(upc_actor* self, const msg::api_reply& r) {
  auto& s = self->state;
  auto found = s.calls.take(r);
  if (!found)
    return;
  auto call = std::move(*found);
  const std::string key = call.ns + "/" + call.name;
  const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
  switch (call.what) {
    case pending_call::create:
      if (r.ok || kind == k8s::api_error::kind::already_exists) {
        if (auto pod = s.deps.pods->get(call.ns, call.name))
          s.ours[key] = pod->meta.uid;
        // Stamp Pending (the status subresource is not set by a create), on the version
        // the create made only: the roll-up may have acknowledged the CR already (it
        // acknowledges one with no phase too), and a later Pending would undo that for
        // good. A CR that already existed was stamped or acknowledged before.
        auto made = r.ok ? k8s::decode_unstructured(r.body) : k8s::decoded<k8s::unstructured>{k8s::decode_error{}};
        auto* cr = std::get_if<k8s::unstructured>(&made);
        if (!r.ok || cr == nullptr || cr->meta.resource_version.empty())
          break;
        ++s.created;
        auto& client = *s.deps.client;
        runtime::json_writer w;
        w.begin_object().key("metadata").begin_object().field("resourceVersion", cr->meta.resource_version).end_object();
        w.key("status").begin_object().field("phase", "Pending").end_object().end_object();
        const std::string patch = w.take();
        start_call(self, {pending_call::stamp, call.ns, call.name}, [&client, call, patch](k8s::api_callback cb) {
          client.merge_patch(kinds::capacity_requests, call.ns, call.name, patch, std::move(cb), "status");
        });
        return;  // still in flight until stamped
      }
      runtime::log::warn(actor_name, "CapacityRequest create failed", {{"pod", key}, {"error", r.error}});
      break;
    case pending_call::stamp:
      // A conflict: the CR moved on (acknowledged) before the stamp, which then has no place.
      if (!r.ok && kind != k8s::api_error::kind::not_found && kind != k8s::api_error::kind::conflict)
        runtime::log::warn(actor_name, "CapacityRequest Pending stamp failed", {{"cr", key}, {"error", r.error}});
      break;
    case pending_call::remove:
      if (r.ok)
        ++s.deleted;
      else if (kind != k8s::api_error::kind::not_found && kind != k8s::api_error::kind::conflict)
        runtime::log::warn(actor_name, "CapacityRequest delete failed", {{"cr", key}, {"error", r.error}});
      break;
  }
  s.in_flight.erase(key);
  if (!r.ok && transient(kind) && call.what != pending_call::stamp) {
    // The Pod's key (a CR is named after its Pod): tried again after its backoff, never
    // in a hot loop. (A failed stamp needs nothing: the roll-up acknowledges a CR with no
    // phase as it does a Pending one.)
    if (call.what == pending_call::remove) {
      // Still ours until it is gone: the retry deletes it (the Pod may be gone by then too,
      // and garbage collection through the owner reference then removes the CR).
      if (auto pod = s.deps.pods->get(call.ns, call.name))
        s.ours[key] = pod->meta.uid;
    }
    retry_later(self, call.ns, call.name);
    return;
  }
  s.failures.erase(key);
  if (call.what == pending_call::create && !r.ok && kind != k8s::api_error::kind::already_exists)
    return;  // refused for what it is: the periodic resync tries again, no hot loop
  // Re-check the Pod's latest state: it may have changed while the call ran.
  if (auto pod = s.deps.pods->get(call.ns, call.name))
    reconcile(self, msg::pod_event{msg::object_change::resync, pod});
}

upc_impl::behavior_type upc_behavior(upc_actor* self, operator_deps deps, operator_options opts) {
  auto& st = self->state;
  st.deps = std::move(deps);
  st.opts = std::move(opts);
  st.feed = std::make_unique<informer_feed<k8s::pod>>("capacity_requests_pods", self, pods_buffer);
  st.feed->attach(st.deps.pods);
  if (st.deps.track_buffer)
    st.deps.track_buffer(st.feed->stats());
  // What the informer holds already (it synced before this actor started, or before a restart):
  // its events went to no one, and waiting for the resync would leave those Pods without a CR for
  // up to 5 minutes. Subscribed first, so nothing falls between; a Pod seen twice is one call.
  for (const auto& p : st.deps.pods->list())
    reconcile(self, msg::pod_event{msg::object_change::resync, p});
  self->delayed_send(self, resync_every, msg::resync_atom_v);
  return {
      [self](msg::buffer_wakeup) { self->state.feed->drain([self](const msg::pod_event& e) { reconcile(self, e); }); },
      [self](msg::resync_atom) {
        // Level-based catch-up: every Pod again (e.g. a CR created for a Pod's predecessor of
        // the same name has since been garbage-collected).
        for (const auto& p : self->state.deps.pods->list())
          reconcile(self, msg::pod_event{msg::object_change::resync, p});
        self->delayed_send(self, resync_every, msg::resync_atom_v);
      },
      [self](const cr_retry& r) {
        auto& s = self->state;
        s.retrying.erase(r.ns + "/" + r.name);
        if (auto pod = s.deps.pods->get(r.ns, r.name))
          reconcile(self, msg::pod_event{msg::object_change::resync, pod});
        else
          s.failures.erase(r.ns + "/" + r.name);  // gone: its CR goes with it (owner reference)
      },
      [self](msg::api_reply& r) { on_reply(self, r); },
  };
}

}  // namespace

capacity_requests_actor spawn_capacity_requests(caf::actor_system& sys, operator_deps deps, operator_options opts) {
  return sys.spawn(upc_behavior, std::move(deps), std::move(opts));
}

}  // namespace headroom::actors::bigfleet
