#pragma once

// The BigFleet operator: headroom as the demand edge of a fleet autoscaler (seed 004). Actors:
//
//   shard_session      the only connection to the shard (reconnects 500 ms → 30 s); receives
//                      through a bounded dispatcher (32 in flight; BootstrapRequest on the bypass
//                      lane) and a keyed coalescer per machine (NodeStateUpdate → UpcomingNode)
//   rollup             every rollupInterval and at once on connect: CapacityRequests → roll-up,
//                      sent to the session for the send queue's coalescing slot; then
//                      acknowledges Pending CRs
//   reclaim_drain      one per ReclaimInstruction: cordon, ack, drain on its own deadline
//   capacity_requests  one CapacityRequest per Pod (the unschedulable-pod controller)

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <variant>

#include "actors/k8s/event_recorder.hpp"
#include "adapters/bigfleet/capacity_request.hpp"
#include "adapters/bigfleet/shard_stream.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer.hpp"
#include "messages/type_ids.hpp"
#include "runtime/text_template.hpp"

namespace headroom::actors::bigfleet {

namespace kinds {
inline const k8s::resource_kind capacity_requests{"bigfleet.lucy.sh", "v1alpha1", "capacityrequests", true};
inline const k8s::resource_kind upcoming_nodes{"bigfleet.lucy.sh", "v1alpha1", "upcomingnodes", false};
inline const k8s::resource_kind available_capacities{"bigfleet.lucy.sh", "v1alpha1", "availablecapacities", false};
}  // namespace kinds

// The shard_session's own messages, from its stream's threads and its write callbacks. Local:
// never serialized.
// The shard stream of `generation` opened (Hello sent) or closed.
struct shard_link {
  uint64_t generation = 0;
  bool up = false;
  std::string reason;  // closed: why
};
// An UpcomingNode / AvailableCapacity write for one key (a machine, a profile) finished.
struct object_written {
  std::string key;
  bool ok = false;
  std::string error;
  std::string phase;  // UpcomingNode: the phase now recorded ("" when the object was deleted)
  std::string spec, status;  // what was written, to skip identical writes next time
};

// What goes to the shard. The shard_session is the one writer of the send queue (the stream's
// writer thread reads it); the rollup and the reclaim drains send it these. Local-only: protocol
// objects, never serialized.
struct outbox_rollup {
  ::bigfleet::v1alpha1::ClusterCapacityNeeds rollup;  // replaces an unsent one (coalescing slot)
};
struct outbox_message {
  ::bigfleet::v1alpha1::OperatorMessage message;  // the bounded outbox; dropped (and logged) when full
};
using shard_outbox = caf::typed_actor<caf::reacts_to<outbox_rollup>, caf::reacts_to<outbox_message>>;

}  // namespace headroom::actors::bigfleet

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::bigfleet::shard_link)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::bigfleet::object_written)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::bigfleet::outbox_rollup)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::bigfleet::outbox_message)

namespace headroom::actors::bigfleet {

// What the operator actors share. The informers are started (and synced) by whoever owns them.
struct operator_deps {
  k8s::client* client = nullptr;
  std::shared_ptr<k8s::informer<k8s::unstructured>> capacity_requests;  // all namespaces
  std::shared_ptr<k8s::informer<k8s::unstructured>> upcoming_nodes;
  std::shared_ptr<k8s::informer<k8s::pod>> pods;  // with the "node" index (spec.nodeName)
  // The stream's send queue: written by the shard_session alone, read by the stream's writer.
  std::shared_ptr<headroom::bigfleet::send_queue> queue;
  // The shard_session's relay, which the rollup and the reclaim drains send to (may be null: then
  // what they send is dropped, as while the session restarts).
  shard_outbox outbox;
  // Registers a policy buffer's counters for /metrics (depth, drops, coalesced, …); may be empty.
  std::function<void(const runtime::buffer_stats_ptr&)> track_buffer;
  actors::event_sink events;  // the event_recorder's relay (actors/k8s/event_recorder.hpp); may be null
};

// The bootstrap template: Go text/template over the reference renderer's input ({{ .ClusterID }},
// {{ range .Requirements }}{{ .Key }} {{ .Operator }} {{ .Values }}{{ end }}), as its operator
// parses it; or headroom's older syntax ({{cluster_id}}, {{#requirements}}{{key}}…{{/requirements}}),
// `legacy`, deprecated.
struct bootstrap_template {
  std::string text;  // "" = none: a minimal cloud-config comment
  bool legacy = false;
  std::shared_ptr<const runtime::text_template::parsed> go;
};

struct operator_options {
  headroom::bigfleet::shard_endpoint endpoint;
  std::chrono::milliseconds rollup_interval{10'000};
  std::chrono::milliseconds reconnect_initial{500}, reconnect_max{30'000};
  size_t dispatch_in_flight = 32;
  size_t ack_parallelism = 16;
  // Benchmarks only: false writes every NodeStateUpdate (one key per update) instead of the latest
  // state per machine, to measure what coalescing saves.
  bool coalesce_node_state = true;
  bootstrap_template bootstrap;  // read and parsed once at start-up; no text = a minimal cloud-config
  headroom::bigfleet::penalty_defaults penalties;
};

// ---- the contracts --------------------------------------------------------------------------------
// Each names what reaches the actor from outside itself: a peer's message, or what an adapter's
// thread hands it (the stream's link state, a policy buffer's wake-up). Timers an actor sets for
// itself, and the API server's answers to its own calls (sent to its own typed handle), are added
// beside its behavior, except where that would leave a contract empty (CAF refuses an empty typed
// handle: capacity_requests, reclaim_drain).

// rollup: the session says the stream just opened (send a roll-up now).
using rollup_actor = caf::typed_actor<caf::reacts_to<msg::rollup_atom>>;
// shard_session: what goes to the shard (the outbox), the stream's link state, and its
// dispatcher's and coalescer's wake-ups.
using shard_session_actor = shard_outbox::extend<caf::reacts_to<shard_link>, caf::reacts_to<msg::buffer_wakeup>>;
// capacity_requests: its pod feed's wake-ups.
using capacity_requests_actor = caf::typed_actor<caf::reacts_to<msg::buffer_wakeup>>;
// reclaim_drain takes no message from a peer: it acts on the answers to its own calls, and CAF
// has no empty contract, so its contract is those answers (its timers are added beside it).
using reclaim_drain_actor = caf::typed_actor<caf::reacts_to<msg::api_reply>>;

// The rollup actor first (the session tells it when the stream opens).
rollup_actor spawn_rollup(caf::actor_system& sys, operator_deps deps, operator_options opts);
shard_session_actor spawn_shard_session(caf::actor_system& sys, operator_deps deps, operator_options opts, rollup_actor rollup);
capacity_requests_actor spawn_capacity_requests(caf::actor_system& sys, operator_deps deps, operator_options opts);

// One drain; it acks through the send queue, reports per node through UpcomingNodes, and quits.
reclaim_drain_actor spawn_reclaim_drain(caf::actor_system& sys, operator_deps deps, ::bigfleet::v1alpha1::ReclaimInstruction instruction);

// Parses the bootstrap template once, at start-up: Go's text/template error for a template that
// does not parse ("template: bootstrap:3: function "x" not defined").
std::variant<bootstrap_template, std::string> parse_bootstrap_template(std::string text);

// Renders the bootstrap template for a request (bootstrap.cpp). A render error (a field the input
// does not have, an unknown placeholder of the older syntax) is returned as the response's `error`.
::bigfleet::v1alpha1::BootstrapBlobResponse render_bootstrap(const bootstrap_template& t, const std::string& cluster_id,
                                                              const ::bigfleet::v1alpha1::BootstrapRequest& request);

// status.phase of an UpcomingNode / CapacityRequest's raw JSON ("" when absent or unreadable).
std::string status_phase(const std::string& raw);
// status.nodeRef.name of an UpcomingNode's raw JSON.
std::string status_node_name(const std::string& raw);

}  // namespace headroom::actors::bigfleet
