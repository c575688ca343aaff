#include "actors/bigfleet/model.hpp"

#include <algorithm>
#include <unordered_map>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

namespace headroom::actors::bigfleet {

using namespace headroom::bigfleet;  // the adapter: CapacityRequests and the wire types

namespace {

pb::NodeSelectorRequirement::Operator to_operator(std::string_view op) {
  if (op == "In")
    return pb::NodeSelectorRequirement::OPERATOR_IN;
  if (op == "NotIn")
    return pb::NodeSelectorRequirement::OPERATOR_NOT_IN;
  if (op == "Exists")
    return pb::NodeSelectorRequirement::OPERATOR_EXISTS;
  if (op == "DoesNotExist")
    return pb::NodeSelectorRequirement::OPERATOR_DOES_NOT_EXIST;
  return pb::NodeSelectorRequirement::OPERATOR_UNSPECIFIED;  // Gt/Lt: no wire form
}

struct group {
  const capacity_request* first = nullptr;
  std::vector<resource_amount> sum;       // sorted by name, like every CR's resources
  std::vector<resource_amount> min_unit;  // the largest single CR per resource
};

// Merges a CR's sorted resources into a group's sorted sums and maxima.
void accumulate(group& g, const std::vector<resource_amount>& rs) {
  if (g.sum.size() == rs.size()) {  // the common case: same resource names in the same order
    bool same = true;
    for (size_t i = 0; i < rs.size() && same; ++i)
      same = g.sum[i].name == rs[i].name;
    if (same) {
      for (size_t i = 0; i < rs.size(); ++i) {
        g.sum[i].amount += rs[i].amount;
        g.min_unit[i].amount = std::max(g.min_unit[i].amount, rs[i].amount);
      }
      return;
    }
  }
  for (const auto& r : rs) {
    auto it = std::lower_bound(g.sum.begin(), g.sum.end(), r.name,
                               [](const resource_amount& a, const std::string& n) { return a.name < n; });
    const auto at = static_cast<size_t>(it - g.sum.begin());
    if (it == g.sum.end() || it->name != r.name) {
      g.sum.insert(it, r);
      g.min_unit.insert(g.min_unit.begin() + static_cast<std::ptrdiff_t>(at), r);
    } else {
      it->amount += r.amount;
      g.min_unit[at].amount = std::max(g.min_unit[at].amount, r.amount);
    }
  }
}

}  // namespace

pb::ClusterCapacityNeeds build_rollup(std::string_view cluster_id, const std::vector<const capacity_request*>& crs,
                                      int64_t timestamp_unix_nanos) {
  std::unordered_map<uint64_t, size_t> index;
  std::vector<group> groups;
  index.reserve(64);
  for (const auto* cr : crs) {
    auto [it, fresh] = index.try_emplace(cr->profile_hash, groups.size());
    if (fresh) {
      groups.push_back({cr, cr->resources, cr->resources});
      continue;
    }
    accumulate(groups[it->second], cr->resources);
  }
  std::sort(groups.begin(), groups.end(),
            [](const group& a, const group& b) { return a.first->profile_key < b.first->profile_key; });

  pb::ClusterCapacityNeeds out;
  out.set_cluster_id(std::string{cluster_id});
  out.set_timestamp_unix_nanos(timestamp_unix_nanos);
  out.mutable_needs()->Reserve(static_cast<int>(groups.size()));
  for (const auto& g : groups) {
    const auto& cr = *g.first;
    auto* need = out.add_needs();
    for (const auto& r : cr.requirements) {
      auto* req = need->add_requirements();
      req->set_key(r.key);
      req->set_operator_(to_operator(r.op));
      for (const auto& v : r.values)
        req->add_values(v);
    }
    if (cr.colocation) {
      const auto& key = cr.colocation->topology_key;
      const bool present = std::any_of(need->requirements().begin(), need->requirements().end(), [&](const auto& r) {
        return r.key() == key && r.operator_() == pb::NodeSelectorRequirement::OPERATOR_SAME;
      });
      if (!present) {
        auto* same = need->add_requirements();
        same->set_key(key);
        same->set_operator_(pb::NodeSelectorRequirement::OPERATOR_SAME);
      }
    }
    need->set_priority(cr.priority);
    for (const auto& s : cr.topology_spread) {
      auto* sp = need->add_spread();
      sp->set_topology_key(s.topology_key);
      sp->set_max_skew(s.max_skew);
      sp->set_when_unsatisfiable(pb::TopologySpread::WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE);
    }
    need->set_interruption_penalty_bucket(cr.interruption_bucket);
    need->set_reclamation_penalty_bucket(cr.reclamation_bucket);
    auto& sums = *need->mutable_aggregate_resources();
    for (const auto& r : g.sum)
      sums[r.name] = format_units(r.name, r.amount);
    auto& unit = *need->mutable_min_unit();
    for (const auto& r : g.min_unit)
      unit[r.name] = format_units(r.name, r.amount);
  }
  return out;
}

std::string encode_deterministic(const google::protobuf::Message& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace headroom::actors::bigfleet
