#pragma once

// The BigFleet operator: headroom as the demand edge of a fleet autoscaler (seed 004). Actors:
//
//   shard_session      the only connection to the shard (reconnects 500 ms → 30 s); receives
//                      through a bounded dispatcher (32 in flight; BootstrapRequest on the bypass
//                      lane) and a keyed coalescer per machine (NodeStateUpdate → UpcomingNode)
//   rollup             every rollupInterval and at once on connect: CapacityRequests → roll-up
//                      into the send queue's coalescing slot; then acknowledges Pending CRs
//   reclaim_drain      one per ReclaimInstruction: cordon, ack, drain on its own deadline
//   capacity_requests  one CapacityRequest per Pod (the unschedulable-pod controller)

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "adapters/bigfleet/capacity_request.hpp"
#include "adapters/bigfleet/shard_stream.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer.hpp"

namespace headroom::actors::bigfleet {

namespace kinds {
inline const k8s::resource_kind capacity_requests{"bigfleet.lucy.sh", "v1alpha1", "capacityrequests", true};
inline const k8s::resource_kind upcoming_nodes{"bigfleet.lucy.sh", "v1alpha1", "upcomingnodes", false};
inline const k8s::resource_kind available_capacities{"bigfleet.lucy.sh", "v1alpha1", "availablecapacities", false};
}  // namespace kinds

// What the operator actors share. The informers are started (and synced) by whoever owns them.
struct operator_deps {
  k8s::client* client = nullptr;
  std::shared_ptr<k8s::informer<k8s::unstructured>> capacity_requests;  // all namespaces
  std::shared_ptr<k8s::informer<k8s::unstructured>> upcoming_nodes;
  std::shared_ptr<k8s::informer<k8s::pod>> pods;  // with the "node" index (spec.nodeName)
  std::shared_ptr<headroom::bigfleet::send_queue> queue;
  // Registers a policy buffer's counters for /metrics (depth, drops, coalesced, …); may be empty.
  std::function<void(const runtime::buffer_stats_ptr&)> track_buffer;
  caf::actor events;  // the event_recorder's relay (actors/k8s/event_recorder.hpp); may be null
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
  std::string bootstrap_template;  // text read once at start-up; "" = a minimal cloud-config
  headroom::bigfleet::penalty_defaults penalties;
};

// The rollup actor first (the session tells it when the stream opens).
caf::actor spawn_rollup(caf::actor_system& sys, operator_deps deps, operator_options opts);
caf::actor spawn_shard_session(caf::actor_system& sys, operator_deps deps, operator_options opts, caf::actor rollup);
caf::actor spawn_capacity_requests(caf::actor_system& sys, operator_deps deps, operator_options opts);

// One drain; it acks through the send queue, reports per node through UpcomingNodes, and quits.
caf::actor spawn_reclaim_drain(caf::actor_system& sys, operator_deps deps, ::bigfleet::v1alpha1::ReclaimInstruction instruction);

// Renders the bootstrap template for a request: {{cluster_id}}, {{request_id}} and
// {{#requirements}}…{{key}} {{operator}} {{values}}…{{/requirements}}. A render error (an unknown
// placeholder, an unclosed section) is returned as the response's `error`.
::bigfleet::v1alpha1::BootstrapBlobResponse render_bootstrap(const std::string& template_text,
                                                              const std::string& cluster_id,
                                                              const ::bigfleet::v1alpha1::BootstrapRequest& request);

// status.phase of an UpcomingNode / CapacityRequest's raw JSON ("" when absent or unreadable).
std::string status_phase(const std::string& raw);
// status.nodeRef.name of an UpcomingNode's raw JSON.
std::string status_node_name(const std::string& raw);

}  // namespace headroom::actors::bigfleet
