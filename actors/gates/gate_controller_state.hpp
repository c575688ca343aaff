#pragma once

// The gate controller's state and the helpers its files share (gate_controller.cpp: the actor,
// its planning and its reactions; gate_writes.cpp: its writes). Private to actors/gates.

#include <caf/all.hpp>

#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "actors/gates/gates.hpp"
#include "actors/gates/queue_book.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/event_recorder.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "adapters/k8s/admission.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/queue.hpp"
#include "messages/type_ids.hpp"
#include "runtime/json_writer.hpp"
#include "runtime/log.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::gates {

namespace ctl {

constexpr std::string_view actor_name = "gate_controller";
constexpr uint32_t pods_buffer = 1;
constexpr uint32_t queues_buffer = 2;
// Condition writes in flight at most: a burst of gated pods does not turn into a backlog in
// the client's rate limiter (the rest are written as replies come back; conditions are levels).
constexpr size_t max_bulk_in_flight = 16;

// The controller's timers: messages it sends only itself.
struct resync_timer {};  // every Queue planned again
struct expiry_timer {    // the earliest reservation's expiry; a later-armed one supersedes it
  uint64_t generation = 0;
};

}  // namespace ctl
}  // namespace headroom::actors::gates

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::gates::ctl::resync_timer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::gates::ctl::expiry_timer)

namespace headroom::actors::gates {
namespace ctl {

struct call_info {
  enum kind { ungate, condition, status } what;
  std::string queue, ns, name;
  caf::timespan started{};
  std::string resource_version;  // ungate: the one the patch tested
  caf::timespan sent{};          // ungate: when the decision sent the patch
  bool group = false;            // ungate: a gang's member
};

struct queue_entry {
  std::optional<queue_rules> rules;  // nullopt: the Queue cannot be read (error logged)
  std::optional<queue_book> book;    // with the rules: its pods, booked
  std::optional<k8s::queue_status> written;  // the status last written
  bool status_in_flight = false;
  std::optional<bool> active;  // the Active condition as last written, and since when
  std::string active_since;
};

struct controller_state {
  controller_context_ptr ctx;
  std::unique_ptr<informer_feed<k8s::pod>> pod_feed;
  std::unique_ptr<informer_feed<k8s::unstructured>> queue_feed;
  std::map<std::string, queue_entry> queues;
  std::set<std::string> dirty;
  std::set<std::string> full;  // dirty queues to judge whole (the resync)
  // Condition writes held back by max_bulk_in_flight, in order (queue, ns/name): written from the
  // book as it then stands when a write comes back. Queues with no book are planned again instead.
  std::deque<std::pair<std::string, std::string>> held_conditions;
  std::unordered_set<std::string> held_keys;
  std::set<std::string> deferred;
  std::map<std::string, std::set<std::string>> in_flight;  // queue → ns/name being ungated
  // ns/name → the resourceVersion an ungating was refused at (its test failed) while the cache
  // still showed that version: held as in flight until a newer one shows, so it is not retried
  // against the same stale view.
  std::unordered_map<std::string, std::string> awaiting_newer;
  std::unordered_set<std::string> condition_in_flight;      // ns/name
  std::unordered_map<std::string, std::string> reason_told;  // ns/name → the reason its last Event told
  std::unordered_set<std::string> expiry_told;               // ns/name/uid whose expiry was reported
  std::unordered_map<std::string, std::string> queue_of;     // ns/name → its queue label, for deletions
  api_calls<call_info> calls;
  size_t bulk_in_flight = 0;  // condition writes
  caf::timespan woke{};  // when the change being planned arrived
  uint64_t expiry_generation = 0;
  std::optional<wall_time> expiry_due;
  static inline const char* name = "headroom.gate_controller";
};
// Its own timers, and the API server's answers.
using controller_impl = gate_controller_actor::extend<caf::reacts_to<resync_timer>, caf::reacts_to<expiry_timer>,
                                                     caf::reacts_to<msg::api_reply>>;
using controller_self = controller_impl::stateful_base<controller_state>;

inline caf::timespan now_of(controller_self* self) { return self->clock().now().time_since_epoch(); }

inline std::string key_of(const k8s::pod& p) { return p.meta.ns + "/" + p.meta.name; }

inline const std::string* queue_label(const k8s::pod& p) { return p.meta.label(k8s::admission::queue_label); }

inline void start_call(controller_self* self, call_info info, const std::function<void(k8s::api_callback)>& start) {
  self->state.calls.start(self, std::move(info), start);
}

inline void record_event(controller_self* self, const std::string& ns, const std::string& name, const std::string& uid,
                  const char* type, const char* reason, const std::string& message) {
  tell_event(self->state.ctx->events, {"v1", "Pod", ns, name, uid, type, reason, "Admit", message});
}

// gate_writes.cpp: the controller's writes to the API server.
void write_condition(controller_self* self, const std::string& queue, const condition_write& c, const std::string& uid);
void write_held_conditions(controller_self* self);
void ungate_pod(controller_self* self, const std::string& queue, const ungate& u, const k8s::pod& p);
void write_status(controller_self* self, const std::string& queue, queue_entry& e, k8s::queue_status status);

}  // namespace ctl
}  // namespace headroom::actors::gates
