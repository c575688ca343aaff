#include "adapters/bigfleet/node_state.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "runtime/log.hpp"

namespace headroom::bigfleet {

using runtime::json_escape;

phase_decision next_phase(pb::MachineState state, std::string_view current) {
  using A = phase_decision::action;
  switch (state) {
    case pb::MACHINE_STATE_SPECULATIVE:
    case pb::MACHINE_STATE_CREATING:
      return {A::upsert, "Provisioning"};
    case pb::MACHINE_STATE_IDLE:
      if (current == "Draining" || current == "Drained")
        return {A::remove, "Drained"};
      return {A::upsert, "Launched"};
    case pb::MACHINE_STATE_CONFIGURING:
      return {A::upsert, "Registered"};
    case pb::MACHINE_STATE_CONFIGURED:
      return {A::upsert, "Ready"};
    case pb::MACHINE_STATE_DRAINING:
      return {A::upsert, "Draining"};
    case pb::MACHINE_STATE_FAILED:
      return {A::upsert, "Failed"};
    case pb::MACHINE_STATE_DELETING:
      return {A::remove, current};
    default:
      return {A::ignore, {}};
  }
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  std::string out;
  char buf[3];
  for (unsigned char b : digest) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    out += buf;
  }
  return out;
}

std::string upcoming_node_name(std::string_view id) {
  const bool valid = !id.empty() && id.size() <= 253 &&
                     std::all_of(id.begin(), id.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
                     }) &&
                     std::isalnum(static_cast<unsigned char>(id.front())) &&
                     std::isalnum(static_cast<unsigned char>(id.back()));
  return valid ? std::string{id} : "m-" + sha256_hex(id).substr(0, 40);
}

namespace {

template <class Map>
std::string json_map(const Map& m) {
  std::map<std::string, std::string> sorted(m.begin(), m.end());  // stable bytes: compare-before-write
  std::string out = "{";
  for (const auto& [k, v] : sorted) {
    out += out.size() > 1 ? "," : "";
    out += json_escape(k) + ":" + json_escape(v);
  }
  return out + "}";
}

std::string json_requirements(const google::protobuf::RepeatedPtrField<pb::NodeSelectorRequirement>& rs) {
  static const char* ops[] = {"", "In", "NotIn", "Exists", "DoesNotExist", "Same"};
  std::string out = "[";
  for (int i = 0; i < rs.size(); ++i) {
    const auto& r = rs[i];
    const int op = r.operator_();
    out += i ? "," : "";
    out += "{\"key\":" + json_escape(r.key()) + ",\"operator\":" + json_escape(op >= 0 && op <= 5 ? ops[op] : "");
    if (r.values_size() > 0) {
      out += ",\"values\":[";
      for (int j = 0; j < r.values_size(); ++j)
        out += (j ? "," : "") + json_escape(r.values(j));
      out += "]";
    }
    out += "}";
  }
  return out + "]";
}

}  // namespace

std::string upcoming_node_spec(const pb::NodeStateUpdate& u) {
  std::string out = "{\"labels\":" + json_map(u.labels()) + ",\"resources\":" + json_map(u.resources().resources()) +
                    ",\"taints\":[";
  for (int i = 0; i < u.taints_size(); ++i) {
    const auto& t = u.taints(i);
    out += i ? "," : "";
    out += "{\"key\":" + json_escape(t.key()) + ",\"effect\":" + json_escape(t.effect());
    if (!t.value().empty())
      out += ",\"value\":" + json_escape(t.value());
    out += "}";
  }
  return out + "]}";
}

std::string upcoming_node_status(const pb::NodeStateUpdate& u, std::string_view phase) {
  std::string out = "{\"phase\":" + json_escape(phase);
  if (!u.node_name().empty())
    out += ",\"nodeRef\":{\"name\":" + json_escape(u.node_name()) + "}";
  if (!u.provider_id().empty())
    out += ",\"providerID\":" + json_escape(u.provider_id());
  out += ",\"lastError\":" + json_escape(u.last_error());
  return out + "}";
}

std::string available_capacity_name(std::string_view key) {
  constexpr std::string_view prefix = "available:";
  if (key.substr(0, prefix.size()) == prefix)
    key.remove_prefix(prefix.size());
  return "ac-" + sha256_hex(key);
}

std::string available_capacity_spec(const pb::AvailableCapacityUpdate& u) {
  static const char* levels[] = {"None", "None", "Low", "Medium", "High"};
  const int c = u.confidence();
  char cost[64];
  std::snprintf(cost, sizeof cost, "%.6g", u.cost_per_hour());
  return "{\"availability\":" + json_escape(c >= 0 && c <= 4 ? levels[c] : "None") +
         ",\"availableCount\":" + std::to_string(u.available_count()) + ",\"cost\":" + json_escape(cost) +
         ",\"resources\":" + json_map(u.resources().resources()) + ",\"requirements\":" +
         json_requirements(u.requirements()) + "}";
}

}  // namespace headroom::bigfleet
