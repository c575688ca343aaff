#pragma once

// Interning decoded values (see shared.hpp): a structural hash of each shareable part of an
// object, and `share`, which returns the one live copy equal to a decoded scratch value. Kept apart
// from the decoder, which only calls `share`; header-only so the decoder's hot path inlines it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/k8s/objects.hpp"
#include "adapters/k8s/shared.hpp"

namespace headroom::k8s::interning {

inline void mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }
inline void hash_into(size_t& h, std::string_view s) { mix(h, std::hash<std::string_view>{}(s)); }
inline void hash_into(size_t& h, int64_t v) { mix(h, static_cast<size_t>(v)); }
inline void hash_into(size_t& h, const std::optional<int64_t>& v) { mix(h, v ? static_cast<size_t>(*v) * 31 + 1 : 0); }
inline void hash_into(size_t& h, const owner_reference& o);
inline void hash_into(size_t& h, const selector_requirement& r);
inline void hash_into(size_t& h, const node_selector_term& t);
inline void hash_into(size_t& h, const label_selector& s);
inline void hash_into(size_t& h, const pod_affinity_term& t);
inline void hash_into(size_t& h, const toleration& t);
inline void hash_into(size_t& h, const topology_spread_constraint& t);
inline void hash_into(size_t& h, const condition& x);
inline void hash_into(size_t& h, const container_status& s);
inline void hash_into(size_t& h, const resource_list& r);

template <class A, class B>
inline void hash_into(size_t& h, const std::pair<A, B>& p) {
  hash_into(h, p.first);
  hash_into(h, p.second);
}
template <class T>
inline void hash_into(size_t& h, const std::vector<T>& v) {
  mix(h, v.size());
  for (const auto& x : v)
    hash_into(h, x);
}

inline void hash_into(size_t& h, const owner_reference& o) {
  hash_into(h, o.api_version);
  hash_into(h, o.kind);
  hash_into(h, o.name);
  hash_into(h, o.uid);
  mix(h, o.controller);
}
inline void hash_into(size_t& h, const selector_requirement& r) {
  hash_into(h, r.key);
  hash_into(h, r.op);
  hash_into(h, r.values);
}
inline void hash_into(size_t& h, const node_selector_term& t) {
  hash_into(h, t.match_expressions);
  hash_into(h, t.match_fields);
}
inline void hash_into(size_t& h, const label_selector& s) {
  hash_into(h, s.match_labels);
  hash_into(h, s.match_expressions);
}
inline void hash_into(size_t& h, const pod_affinity_term& t) {
  hash_into(h, t.selector);
  hash_into(h, t.topology_key);
  hash_into(h, t.namespaces);
}
inline void hash_into(size_t& h, const toleration& t) {
  hash_into(h, t.key);
  hash_into(h, t.op);
  hash_into(h, t.value);
  hash_into(h, t.effect);
  hash_into(h, t.toleration_seconds);
}
inline void hash_into(size_t& h, const topology_spread_constraint& t) {
  mix(h, static_cast<size_t>(t.max_skew));
  hash_into(h, t.topology_key);
  hash_into(h, t.when_unsatisfiable);
  hash_into(h, t.selector);
}
inline void hash_into(size_t& h, const condition& x) {
  hash_into(h, x.type);
  hash_into(h, x.status);
  hash_into(h, x.reason);
  hash_into(h, x.message);
}
inline void hash_into(size_t& h, const container_status& s) {
  hash_into(h, s.name);
  mix(h, s.ready);
  mix(h, static_cast<size_t>(s.restart_count));
  hash_into(h, s.state);
  hash_into(h, s.reason);
}
inline void hash_into(size_t& h, const resource_list& r) {
  hash_into(h, r.cpu_milli);
  hash_into(h, r.memory);
  hash_into(h, r.ephemeral_storage);
  hash_into(h, r.pods);
  hash_into(h, r.extended);
}
inline void hash_into(size_t& h, const pod_spec& s) {
  hash_into(h, s.priority_class_name);
  hash_into(h, s.preemption_policy);
  hash_into(h, s.scheduler_name);
  hash_into(h, s.scheduling_gates);
  hash_into(h, s.node_selector);
  hash_into(h, s.required_node_affinity);
  hash_into(h, s.required_pod_affinity);
  hash_into(h, s.required_pod_anti_affinity);
  hash_into(h, s.tolerations);
  hash_into(h, s.topology_spread);
  hash_into(h, s.requests);
}

// The shared copy of a scratch value; an empty one needs no table. Consecutive objects usually
// come from one template, so the value this thread returned last is tried first: equal, it is
// returned without hashing or taking the table's lock.
template <class T>
shared<T> share(const T& scratch) {
  if constexpr (requires { scratch.empty(); }) {
    if (scratch.empty())
      return {};
  }
  thread_local std::shared_ptr<const T> last;
  if (last && *last == scratch)
    return shared<T>{last};
  size_t h = 0;
  hash_into(h, scratch);
  last = intern(scratch, h);
  return shared<T>{last};
}

}  // namespace headroom::k8s::interning
