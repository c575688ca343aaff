#pragma once

// What the shard says about machines, as Kubernetes objects: UpcomingNode (one per machine,
// cluster-scoped) and AvailableCapacity (one per profile the shard could procure).

#include <string>
#include <string_view>

#include "bigfleet/v1alpha1/shard.pb.h"

namespace headroom::bigfleet {

namespace pb = ::bigfleet::v1alpha1;

struct phase_decision {
  enum class action { upsert, remove, ignore } what = action::ignore;
  std::string_view phase;  // for upsert (and the last phase before a remove)
};

// MachineState → UpcomingNode phase: Speculative, Creating → Provisioning; Idle → Launched;
// Configuring → Registered; Configured → Ready; Draining → Draining; Failed → Failed. Drained has no
// MachineState: Idle while the node is Draining means Drained, and the UpcomingNode is then deleted
// (stale Drained records once grew apiserver load linearly). Deleting removes it too.
phase_decision next_phase(pb::MachineState state, std::string_view current_phase);

// A DNS-1123 name for a machine id ("m-" + hex sha256 prefix when the id itself is not one).
std::string upcoming_node_name(std::string_view machine_id);

// spec {labels, resources, taints} and status {phase, nodeRef, providerID, lastError} as JSON.
std::string upcoming_node_spec(const pb::NodeStateUpdate& u);
std::string upcoming_node_status(const pb::NodeStateUpdate& u, std::string_view phase,
                                 std::string_view provisioning_start_time = {});

// The profile fingerprint: the supersedes key after "available:".
std::string_view available_capacity_fingerprint(std::string_view supersedes_key);
// "ac-" + hex sha256 of the profile fingerprint.
std::string available_capacity_name(std::string_view supersedes_key);
// spec {fingerprint, availability, availableCount, cost, resources, requirements} as JSON.
std::string available_capacity_spec(const pb::AvailableCapacityUpdate& u);

std::string sha256_hex(std::string_view data);

}  // namespace headroom::bigfleet
