#include "adapters/bigfleet/node_state.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "runtime/json_writer.hpp"

namespace headroom::bigfleet {

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
void write_map(runtime::json_writer& w, const Map& m) {
  std::map<std::string, std::string> sorted(m.begin(), m.end());  // stable bytes: compare-before-write
  w.begin_object();
  for (const auto& [k, v] : sorted)
    w.field(k, v);
  w.end_object();
}

void write_requirements(runtime::json_writer& w, const google::protobuf::RepeatedPtrField<pb::NodeSelectorRequirement>& rs) {
  static const char* ops[] = {"", "In", "NotIn", "Exists", "DoesNotExist", "Same"};
  w.begin_array();
  for (const auto& r : rs) {
    const int op = r.operator_();
    w.begin_object().field("key", r.key()).field("operator", op >= 0 && op <= 5 ? ops[op] : "");
    if (r.values_size() > 0) {
      w.key("values").begin_array();
      for (const auto& v : r.values())
        w.value(v);
      w.end_array();
    }
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string upcoming_node_spec(const pb::NodeStateUpdate& u) {
  runtime::json_writer w;
  w.begin_object().key("labels");
  write_map(w, u.labels());
  w.key("resources");
  write_map(w, u.resources().resources());
  w.key("taints").begin_array();
  for (const auto& t : u.taints()) {
    w.begin_object().field("key", t.key()).field("effect", t.effect());
    if (!t.value().empty())
      w.field("value", t.value());
    w.end_object();
  }
  w.end_array().end_object();
  return w.take();
}

std::string upcoming_node_status(const pb::NodeStateUpdate& u, std::string_view phase,
                                 std::string_view provisioning_start_time) {
  runtime::json_writer w;
  w.begin_object().field("phase", phase);
  if (!u.node_name().empty())
    w.key("nodeRef").begin_object().field("name", u.node_name()).end_object();
  if (!u.provider_id().empty())
    w.field("providerID", u.provider_id());
  w.field("lastError", u.last_error());
  if (!provisioning_start_time.empty())
    w.field("provisioningStartTime", provisioning_start_time);
  w.end_object();
  return w.take();
}

std::string_view available_capacity_fingerprint(std::string_view key) {
  constexpr std::string_view prefix = "available:";
  if (key.substr(0, prefix.size()) == prefix)
    key.remove_prefix(prefix.size());
  return key;
}

std::string available_capacity_name(std::string_view key) { return "ac-" + sha256_hex(available_capacity_fingerprint(key)); }

std::string available_capacity_spec(const pb::AvailableCapacityUpdate& u) {
  static const char* levels[] = {"None", "None", "Low", "Medium", "High"};
  const int c = u.confidence();
  char cost[64];
  std::snprintf(cost, sizeof cost, "%.6g", u.cost_per_hour());
  runtime::json_writer w;
  // The fingerprint round-trips through the spec: the name is only its hash (the design's
  // upcoming.go), and a reader needs the profile it describes.
  w.begin_object().field("fingerprint", available_capacity_fingerprint(u.supersedes_key()));
  w.field("availability", c >= 0 && c <= 4 ? levels[c] : "None");
  w.field("availableCount", u.available_count()).field("cost", std::string_view{cost});
  w.key("resources");
  write_map(w, u.resources().resources());
  w.key("requirements");
  write_requirements(w, u.requirements());
  w.end_object();
  return w.take();
}

}  // namespace headroom::bigfleet
