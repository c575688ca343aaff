#pragma once

// The rollup actor's pure model (actors/bigfleet/rollup.cpp): the cluster's complete desired state
// for its shard, rebuilt from every CapacityRequest each time (full replacement, never a delta).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/bigfleet/capacity_request.hpp"

namespace headroom::actors::bigfleet {


// Aggregates by profile (requirements, priority, spread, penalty buckets) and co-location group:
// aggregate_resources summed, min_unit maxed per resource; a co-location group gets a Same
// requirement on its topology key (once, however often it is built). Needs come out in a canonical
// order (by profile key), so the same CRs in any order give the same bytes.
headroom::bigfleet::pb::ClusterCapacityNeeds build_rollup(std::string_view cluster_id, const std::vector<const headroom::bigfleet::capacity_request*>& crs,
                                      int64_t timestamp_unix_nanos);

// Deterministic bytes (protobuf maps otherwise serialize in hash order): for comparisons, sizes
// and benchmarks.
std::string encode_deterministic(const google::protobuf::Message& m);

}  // namespace headroom::actors::bigfleet
