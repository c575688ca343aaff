#include "modes/reactive/settings.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "modes/shared/declared.hpp"

namespace headroom::modes::reactive {

using runtime::check_listen_address;
using runtime::config_fail;
using runtime::config_section;
using runtime::yaml_kind;

namespace {

const std::set<std::string> rule_keys{"evaluationInterval", "scaleUpWindow", "scaleDownWindow", "scaleDownThreshold",
                                      "cooldown", "resolution", "scaleWrite"};

void read_rules(const config_section& s, reactive_rules_section& r) {
  s.read_duration("evaluationInterval", r.evaluation_interval, millis{100}, millis{86'400'000});
  s.read_duration("scaleUpWindow", r.scale_up_window, millis{0}, millis{86'400'000});
  s.read_duration("scaleDownWindow", r.scale_down_window, millis{0}, millis{86'400'000});
  s.read_double("scaleDownThreshold", r.scale_down_threshold, 0.0, 1.0);
  s.read_duration("cooldown", r.cooldown, millis{0}, millis{86'400'000});
  s.read_duration("resolution", r.resolution, millis{1'000}, millis{3'600'000});
  if (auto v = s.read_string("scaleWrite")) {
    if (*v != "object" && *v != "subresource")
      config_fail(s.path("scaleWrite"), "expected object or subresource, found '" + *v + "'");
    r.subresource_writes = *v == "subresource";
  }
}

std::set<std::string> with_rules(std::set<std::string> keys) {
  keys.insert(rule_keys.begin(), rule_keys.end());
  return keys;
}

// A Kubernetes object name (DNS subdomain) or namespace (DNS label): lowercase, digits, '-', '.'.
bool valid_object_name(const std::string& n, bool dots) {
  if (n.empty() || n.size() > 253 || !std::isalnum(static_cast<unsigned char>(n.front())) ||
      !std::isalnum(static_cast<unsigned char>(n.back())))
    return false;
  return std::all_of(n.begin(), n.end(), [dots](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (dots && c == '.');
  });
}

// One metric: its PromQL (under `query_key`), target, activation threshold and what an absent
// series means.
reactive_metric_section read_metric(config_section& s, const char* query_key) {
  reactive_metric_section m;
  if (auto v = s.read_string(query_key))
    m.query = *v;
  if (m.query.empty())
    config_fail(s.path(query_key), "required: PromQL selecting one series, e.g. queue_depth{job=\"my-inference\"}");
  if (!s.get("target"))
    config_fail(s.path("target"), "required: the metric's target value");
  s.read_double("target", m.target, -1e300, 1e300);
  m.activation_set = s.get("activationThreshold").has_value();
  s.read_double("activationThreshold", m.activation, -1e300, 1e300);
  if (auto v = s.read_string("ifAbsent")) {
    if (*v != "noMetric" && *v != "zero")
      config_fail(s.path("ifAbsent"), "expected noMetric (no series: not scaling) or zero (no series: the value is 0), found '" + *v + "'");
    m.absent_zero = *v == "zero";
  }
  return m;
}

reactive_target_section parse_reactive_target(const YAML::Node& node, const std::string& where,
                                              const reactive_rules_section& defaults) {
  reactive_target_section t;
  t.rules = defaults;
  config_section s{node, where,
                   with_rules({"scaleTargetRef", "minReplicas", "maxReplicas", "metric", "target", "activationThreshold", "ifAbsent",
                               "metrics", "tenant"})};
  auto ref = s.get("scaleTargetRef");
  if (!ref)
    config_fail(s.path("scaleTargetRef"), "required: {apiVersion, kind, namespace, name} of a workload with a /scale subresource");
  config_section r{*ref, s.path("scaleTargetRef"), {"apiVersion", "kind", "namespace", "name"}};
  if (auto v = r.read_string("apiVersion"))
    t.api_version = *v;
  if (auto v = r.read_string("kind"))
    t.kind = *v;
  if (auto v = r.read_string("namespace"))
    t.ns = *v;
  if (auto v = r.read_string("name"))
    t.name = *v;
  if (t.api_version.empty() || t.api_version.front() == '/' || t.api_version.back() == '/' ||
      std::count(t.api_version.begin(), t.api_version.end(), '/') > 1)
    config_fail(r.path("apiVersion"), "expected group/version or v1, found '" + t.api_version + "'");
  if (t.kind.empty() || !std::isupper(static_cast<unsigned char>(t.kind.front())))
    config_fail(r.path("kind"), "expected a kind such as Deployment, found '" + t.kind + "'");
  if (!valid_object_name(t.ns, false))
    config_fail(r.path("namespace"), "not a namespace name: '" + t.ns + "'");
  if (!valid_object_name(t.name, true))
    config_fail(r.path("name"), t.name.empty() ? "required" : "not an object name: '" + t.name + "'");
  s.read_uint("minReplicas", t.min_replicas, 0, 100'000);
  s.read_uint("maxReplicas", t.max_replicas, 1, 100'000);
  if (t.max_replicas < t.min_replicas)
    config_fail(s.path("maxReplicas"), "must be at least minReplicas (" + std::to_string(t.min_replicas) + ")");
  if (auto list = s.get("metrics")) {
    if (s.get("metric") || s.get("target") || s.get("activationThreshold") || s.get("ifAbsent"))
      config_fail(s.path("metrics"), "give either metric and target (one metric) or metrics (several), not both");
    if (!list->IsSequence() || list->size() == 0)
      config_fail(s.path("metrics"), "expected a non-empty list of {query, target, activationThreshold, ifAbsent}, found " +
                                         yaml_kind(*list));
    if (list->size() > 10)
      config_fail(s.path("metrics"), "at most 10 metrics per target, found " + std::to_string(list->size()));
    for (size_t i = 0; i < list->size(); ++i) {
      config_section ms{(*list)[i], s.path("metrics") + "[" + std::to_string(i) + "]", {"query", "target", "activationThreshold", "ifAbsent"}};
      t.metrics.push_back(read_metric(ms, "query"));
    }
  } else {
    t.metrics.push_back(read_metric(s, "metric"));
  }
  if (t.min_replicas > 0)
    for (size_t i = 0; i < t.metrics.size(); ++i)
      if (t.metrics[i].activation_set)
        config_fail(s.get("metrics") ? s.path("metrics") + "[" + std::to_string(i) + "].activationThreshold" : s.path("activationThreshold"),
                    "only with minReplicas: 0 (it decides 0 → 1 and 1 → 0)");
  if (auto v = s.read_string("tenant"))
    t.tenant = *v;
  read_rules(s, t.rules);
  return t;
}

void read_objects(const config_section& s, reactive_objects_section& out) {
  out.namespaces = s.read_strings("namespaces");
  std::set<std::string> seen;
  for (size_t i = 0; i < out.namespaces.size(); ++i) {
    const auto at = s.path("namespaces") + "[" + std::to_string(i) + "]";
    if (!valid_object_name(out.namespaces[i], false))
      config_fail(at, "not a namespace name: '" + out.namespaces[i] + "'");
    if (!seen.insert(out.namespaces[i]).second)
      config_fail(at, "'" + out.namespaces[i] + "' appears twice");
  }
  if (auto l = s.get("limits")) {
    config_section ls{*l, s.path("limits"), {"maxReplicas"}};
    ls.read_uint("maxReplicas", out.max_replicas, 0, 10'000'000);
  }
}

}  // namespace

void read_section(const YAML::Node& node, reactive_section& out) {
  config_section s{node, "reactive", {"prometheus", "defaults", "quotas", "quotaReloadInterval", "targets", "objects"}};
  auto& r = out;
  if (auto p = s.get("prometheus")) {
    config_section ps{*p, "reactive.prometheus", {"url", "username", "caFile", "timeout"}};
    if (auto v = ps.read_string("url"))
      r.prometheus.url = *v;
    if (r.prometheus.url.rfind("http://", 0) != 0 && r.prometheus.url.rfind("https://", 0) != 0)
      config_fail("reactive.prometheus.url", "expected an http:// or https:// URL, found '" + r.prometheus.url + "'");
    if (auto v = ps.read_string("username"))
      r.prometheus.username = *v;
    if (auto v = ps.read_string("caFile"))
      r.prometheus.ca_file = *v;
    ps.read_duration("timeout", r.prometheus.timeout, millis{100}, millis{300'000});
  }
  if (auto d = s.get("defaults"))
    read_rules(config_section{*d, "reactive.defaults", rule_keys}, r.defaults);
  s.read_duration("quotaReloadInterval", r.quota_reload_interval, millis{100}, millis{3'600'000});
  runtime::describe_config_key("reactive.quotas", {"integer-map", "0", "10000000", ""});
  r.quotas = read_quotas(node);
  if (auto t = s.get("targets")) {
    if (!t->IsSequence())
      config_fail("reactive.targets", "expected a list, found " + yaml_kind(*t));
    std::set<std::string> seen;
    for (size_t i = 0; i < t->size(); ++i) {
      const std::string where = "reactive.targets[" + std::to_string(i) + "]";
      auto target = parse_reactive_target((*t)[i], where, r.defaults);
      const std::string id = target.ns + "/" + target.kind + "/" + target.name;
      if (!seen.insert(id).second)
        config_fail(where + ".scaleTargetRef", id + " is scaled by another target already");
      if (!target.tenant.empty() &&
          std::none_of(r.quotas.begin(), r.quotas.end(), [&](const auto& q) { return q.first == target.tenant; }))
        config_fail(where + ".tenant", "'" + target.tenant + "' has no entry in reactive.quotas");
      r.targets.push_back(std::move(target));
    }
  }
  if (auto o = s.get("objects"))
    read_objects(config_section{*o, "reactive.objects", {"namespaces", "limits"}}, r.objects);
}

std::variant<declared_target, std::string> read_reactive_target_object(std::string_view object_json, const reactive_rules_section& defaults) {
  declared_target out;
  declared_object meta;
  auto problem = read_declared(object_json, "ReactiveTarget", meta, [&](YAML::Node& node) -> std::optional<std::string> {
    if (node["tenant"])
      return std::string{"spec.tenant: a ReactiveTarget is bounded by its namespace (reactive.objects.limits), not by a tenant's quota"};
    if (auto ref = node["scaleTargetRef"]; ref && ref.IsMap()) {
      if (ref["namespace"])
        return std::string{"spec.scaleTargetRef.namespace: the object's own (metadata.namespace), not in its spec"};
      ref["namespace"] = meta.ns;
    }
    out.section = parse_reactive_target(node, "spec", defaults);
    return std::nullopt;
  });
  if (problem)
    return *problem;
  out.uid = meta.uid;
  out.generation = meta.generation;
  return out;
}

std::vector<std::pair<std::string, uint32_t>> read_quotas(const YAML::Node& reactive) {
  std::vector<std::pair<std::string, uint32_t>> out;
  const auto q = reactive["quotas"];
  if (!q || q.IsNull())
    return out;
  if (!q.IsMap())
    config_fail("reactive.quotas", "expected a mapping of tenant: maxReplicas, found " + yaml_kind(q));
  std::set<std::string> known;
  for (const auto& kv : q)
    known.insert(kv.first.as<std::string>());
  config_section qs{q, "reactive.quotas", known};
  for (const auto& name : known) {
    uint32_t cap = 0;
    qs.read_uint(name, cap, 0, 10'000'000);
    out.emplace_back(name, cap);
  }
  return out;
}

}  // namespace headroom::modes::reactive
