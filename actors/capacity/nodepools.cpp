// Which Karpenter NodePools can make room for a scale set's placeholder pairs (pure).

#include <algorithm>
#include <charconv>

#include "actors/capacity/capacity.hpp"

namespace headroom::actors::capacity {

namespace {

std::optional<int64_t> as_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size())
    return std::nullopt;
  return v;
}

bool admits(const k8s::selector_requirement& r, const std::string& value) {
  const bool listed = std::find(r.values.begin(), r.values.end(), value) != r.values.end();
  if (r.op == "In")
    return listed;
  if (r.op == "NotIn")
    return !listed;
  if (r.op == "Exists")
    return true;
  if (r.op == "DoesNotExist")
    return false;
  if ((r.op == "Gt" || r.op == "Lt") && r.values.size() == 1) {
    auto v = as_int(value), bound = as_int(r.values[0]);
    return v && bound && (r.op == "Gt" ? *v > *bound : *v < *bound);
  }
  return false;
}

// Labels a Karpenter node gets without the pool naming them: the well-known ones and the cloud
// provider's, filled from the instance type it picks. A nodeSelector on such a key may match.
bool provider_label(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos)
    return false;
  const std::string_view domain{key.data(), slash};
  return domain == "kubernetes.io" || domain.ends_with(".kubernetes.io") || domain == "k8s.io" || domain.ends_with(".k8s.io") ||
         domain.find("karpenter") != std::string_view::npos;
}

bool tolerated(const k8s::taint& t, const std::vector<k8s::toleration>& tolerations) {
  if (t.effect == "PreferNoSchedule")
    return true;
  return std::any_of(tolerations.begin(), tolerations.end(), [&t](const k8s::toleration& tol) {
    if (!tol.effect.empty() && tol.effect != t.effect)
      return false;
    if (tol.key.empty())
      return tol.op == "Exists";
    return tol.key == t.key && (tol.op == "Exists" || tol.value == t.value);
  });
}

}  // namespace

std::string node_refuses_pods(const k8s::node* n, const std::vector<k8s::toleration>& tolerations) {
  if (n == nullptr)
    return "deleted";
  if (!n->meta.deletion_timestamp.empty())
    return "being deleted";
  if (n->unschedulable)
    return "cordoned";
  for (const auto& t : n->taints)
    if ((t.effect == "NoSchedule" || t.effect == "NoExecute") && !tolerated(t, tolerations))
      return "tainted " + t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect;
  return {};
}

bool nodepool_matches(const k8s::nodepool& pool, const scale_set_spec& s) {
  for (const auto& [key, value] : s.node_selector) {
    if (key == "karpenter.sh/nodepool") {
      if (value != pool.name)
        return false;
      continue;
    }
    bool constrained = false;
    for (const auto& [k, v] : pool.labels)
      if (k == key) {
        if (v != value)
          return false;
        constrained = true;
      }
    for (const auto& r : pool.requirements)
      if (r.key == key) {
        if (!admits(r, value))
          return false;
        constrained = true;
      }
    if (!constrained && !provider_label(key))
      return false;  // a label the pool never puts on its nodes
  }
  return std::all_of(pool.taints.begin(), pool.taints.end(), [&s](const k8s::taint& t) { return tolerated(t, s.tolerations); });
}

k8s::resource_list pair_requests(const scale_set_spec& s) {
  k8s::resource_list need = s.runner_requests;
  need.add_all(s.workflow_requests);
  need.add("pods", 2);
  return need;
}

bool nodepool_has_room(const k8s::nodepool& pool, const k8s::resource_list& pair) {
  if (!pool.limits)
    return true;
  for (const auto& [name, limit] : *pool.limits) {
    int64_t used = 0;
    for (const auto& [n, v] : pool.used)
      if (n == name)
        used = v;
    if (used > limit || pair.get(name) > limit - used)
      return false;
  }
  return true;
}

}  // namespace headroom::actors::capacity
