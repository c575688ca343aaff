#include "app/settings.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "adapters/k8s/quantity.hpp"

namespace headroom::app {

using runtime::check_listen_address;
using runtime::config_fail;
using runtime::config_section;
using runtime::yaml_kind;

namespace {

// A DNS-1123 label short enough that "<name>-ph-<slot>-workflow" stays a valid pod name.
bool valid_scale_set_name(const std::string& n) {
  if (n.empty() || n.size() > 40 || n.front() == '-' || n.back() == '-')
    return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// A pod's resources: cpu and memory, and any extended resource (a device plugin's, such as
// nvidia.com/gpu) by its fully qualified name. Kubernetes accepts an extended resource only as a
// whole number outside the kubernetes.io domain, with request = limit; checked here so a typo
// stops headroom instead of every placeholder create failing.
void read_resources(const YAML::Node& node, const std::string& where, std::string& cpu, std::string& memory,
                    std::vector<std::pair<std::string, std::string>>& extended) {
  if (!node.IsMap())
    config_fail(where, "expected a mapping, found " + yaml_kind(node));
  extended.clear();
  for (const auto& kv : node) {
    const auto name = kv.first.as<std::string>();
    const std::string at = where + "." + name;
    if (!kv.second.IsScalar())
      config_fail(at, "expected a quantity, found " + yaml_kind(kv.second));
    const auto value = kv.second.as<std::string>();
    if (name == "cpu") {
      cpu = value;
      continue;
    }
    if (name == "memory") {
      memory = value;
      continue;
    }
    const auto slash = name.find('/');
    const auto domain = slash == std::string::npos ? std::string{} : name.substr(0, slash);
    if (slash == std::string::npos || slash + 1 == name.size() || domain == "kubernetes.io" ||
        (domain.size() > 14 && domain.ends_with(".kubernetes.io")) || domain.rfind("requests.", 0) == 0)
      config_fail(at, "expected cpu, memory or an extended resource named <domain>/<name> outside kubernetes.io "
                      "(such as nvidia.com/gpu)");
    auto q = k8s::parse_quantity(value);
    if (auto* e = std::get_if<k8s::quantity_error>(&q))
      config_fail(at, e->message);
    const auto& v = std::get<k8s::quantity>(q);
    if (v.milli <= 0 || v.milli % 1000 != 0)
      config_fail(at, "an extended resource is a positive whole number, found '" + value + "'");
    extended.emplace_back(name, value);
  }
}

// A runner pod template (scale sets' `runner`, the scheduler's `runner`).
void read_runner(const YAML::Node& node, const std::string& where, runner_section& out, bool extended) {
  std::set<std::string> keys{"image", "command", "resources", "nodeSelector", "tolerations", "serviceAccountName"};
  if (extended)
    keys.insert({"slotResource", "activeDeadlineSeconds"});
  config_section rs{node, where, keys};
  if (auto v = rs.read_string("image"))
    out.image = *v;
  if (rs.get("command"))
    out.command = rs.read_strings("command");
  if (auto res = rs.get("resources"))
    read_resources(*res, rs.path("resources"), out.cpu, out.memory, out.extended);
  out.node_selector = rs.read_string_map("nodeSelector");
  if (auto tl = rs.get("tolerations")) {
    if (!tl->IsSequence())
      config_fail(rs.path("tolerations"), "expected a list, found " + yaml_kind(*tl));
    for (size_t i = 0; i < tl->size(); ++i) {
      config_section t{(*tl)[i], rs.path("tolerations") + "[" + std::to_string(i) + "]", {"key", "operator", "value", "effect"}};
      toleration_section tol;
      if (auto v = t.read_string("key"))
        tol.key = *v;
      if (auto v = t.read_string("operator"))
        tol.op = *v;
      if (tol.op != "Equal" && tol.op != "Exists")
        config_fail(t.path("operator"), "expected Equal or Exists, found '" + tol.op + "'");
      if (auto v = t.read_string("value"))
        tol.value = *v;
      if (auto v = t.read_string("effect"))
        tol.effect = *v;
      out.tolerations.push_back(std::move(tol));
    }
  }
  if (auto v = rs.read_string("serviceAccountName"))
    out.service_account = *v;
  if (extended) {
    if (auto v = rs.read_string("slotResource"))
      out.slot_resource = *v;
    uint32_t deadline = static_cast<uint32_t>(out.active_deadline_seconds);
    rs.read_uint("activeDeadlineSeconds", deadline, 0, 100'000'000);
    out.active_deadline_seconds = deadline;
  }
}

scale_set_section parse_scale_set(const YAML::Node& node, const std::string& where) {
  scale_set_section out;
  config_section s{node, where,
            {"name", "namespace", "runnerGroup", "labels", "maxRunners", "mode", "ephemeralRunnerSet", "runner",
             "capacityAware", "healthCheck"}};
  if (auto v = s.read_string("name"))
    out.name = *v;
  if (!valid_scale_set_name(out.name))
    config_fail(s.path("name"), "required: lower-case letters, digits and '-', at most 40 characters, found '" + out.name + "'");
  if (auto v = s.read_string("namespace"))
    out.ns = *v;
  if (auto v = s.read_string("runnerGroup"))
    out.runner_group = *v;
  out.labels = s.read_strings("labels");
  s.read_uint("maxRunners", out.max_runners, 0, 100'000);
  if (auto v = s.read_string("mode")) {
    if (*v != "standalone" && *v != "arc")
      config_fail(s.path("mode"), "expected standalone or arc, found '" + *v + "'");
    out.mode = *v;
  }
  if (auto v = s.read_string("ephemeralRunnerSet"))
    out.ephemeral_runner_set = *v;
  if (out.mode == "arc" && out.ephemeral_runner_set.empty())
    config_fail(s.path("ephemeralRunnerSet"), "required in arc mode");
  if (auto r = s.get("runner"))
    read_runner(*r, s.path("runner"), out.runner, false);
  if (auto c = s.get("capacityAware")) {
    config_section cs{*c, s.path("capacityAware"),
               {"enabled", "proactiveCapacity", "recalculateInterval", "placeholderReadyTimeout", "placeholderTTL", "workflowResources",
                "placeholderImage", "placeholderCommand", "repollOnChange"}};
    auto& ca = out.capacity_aware;
    cs.read_bool("enabled", ca.enabled);
    cs.read_bool("repollOnChange", ca.repoll_on_change);
    cs.read_uint("proactiveCapacity", ca.proactive_capacity, 0, 100'000);
    cs.read_duration("recalculateInterval", ca.recalculate_interval, millis{100}, millis{3'600'000});
    cs.read_duration("placeholderReadyTimeout", ca.placeholder_ready_timeout, millis{1'000}, millis{86'400'000});
    cs.read_duration("placeholderTTL", ca.placeholder_ttl, millis{0}, millis{7 * 86'400'000LL});
    if (ca.placeholder_ttl.count() != 0 && ca.placeholder_ttl < ca.placeholder_ready_timeout)
      config_fail(cs.path("placeholderTTL"), "must be 0 (off) or at least placeholderReadyTimeout, so a renewal can finish before the next");
    if (auto w = cs.get("workflowResources"))
      read_resources(*w, cs.path("workflowResources"), ca.workflow_cpu, ca.workflow_memory, ca.workflow_extended);
    if (auto v = cs.read_string("placeholderImage"))
      ca.placeholder_image = *v;
    if (cs.get("placeholderCommand"))
      ca.placeholder_command = cs.read_strings("placeholderCommand");
  }
  if (auto h = s.get("healthCheck")) {
    config_section hs{*h, s.path("healthCheck"),
               {"interval", "registrationTimeout", "pendingTimeout", "idleTimeout", "terminalGrace"}};
    auto& hc = out.health;
    hs.read_duration("interval", hc.interval, millis{100}, millis{3'600'000});
    hs.read_duration("registrationTimeout", hc.registration_timeout, millis{1'000}, millis{86'400'000});
    hs.read_duration("pendingTimeout", hc.pending_timeout, millis{1'000}, millis{86'400'000});
    hs.read_duration("idleTimeout", hc.idle_timeout, millis{1'000}, millis{86'400'000});
    hs.read_duration("terminalGrace", hc.terminal_grace, millis{0}, millis{86'400'000});
  }
  return out;
}

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

reactive_target_section parse_reactive_target(const YAML::Node& node, const std::string& where,
                                              const reactive_rules_section& defaults) {
  reactive_target_section t;
  t.rules = defaults;
  config_section s{node, where, with_rules({"scaleTargetRef", "minReplicas", "maxReplicas", "metric", "target", "tenant"})};
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
  if (auto v = s.read_string("metric"))
    t.metric = *v;
  if (t.metric.empty())
    config_fail(s.path("metric"), "required: PromQL selecting one series, e.g. queue_depth{job=\"my-inference\"}");
  if (!s.get("target"))
    config_fail(s.path("target"), "required: the metric's target value");
  s.read_double("target", t.target, -1e300, 1e300);
  if (auto v = s.read_string("tenant"))
    t.tenant = *v;
  read_rules(s, t.rules);
  return t;
}

}  // namespace

std::vector<std::string> settings::keys() const { return {"bigfleet", "github", "hud", "scaleSets", "reactive", "gates", "scheduler"}; }

void settings::read(const std::string& key, const YAML::Node& n) {
  const auto node = std::optional<YAML::Node>{n};
  if (key == "bigfleet") {
    config_section s{*node, "bigfleet",
              {"enabled", "clusterId", "shard", "tls", "rollupInterval", "bootstrapTemplateFile",
               "penaltyDefaultsFile", "capacityRequests"}};
    auto& b = bigfleet;
    s.read_bool("enabled", b.enabled);
    s.read_bool("capacityRequests", b.capacity_requests);
    if (auto v = s.read_string("clusterId"))
      b.cluster_id = *v;
    if (auto v = s.read_string("shard"))
      b.shard = *v;
    if (auto v = s.read_string("bootstrapTemplateFile"))
      b.bootstrap_template_file = *v;
    if (auto v = s.read_string("penaltyDefaultsFile"))
      b.penalty_defaults_file = *v;
    s.read_duration("rollupInterval", b.rollup_interval, millis{100}, millis{3'600'000});
    if (auto tls = s.get("tls")) {
      config_section t{*tls, "bigfleet.tls", {"caFile", "certFile", "keyFile", "serverName"}};
      if (auto v = t.read_string("caFile"))
        b.tls_ca_file = *v;
      if (auto v = t.read_string("certFile"))
        b.tls_cert_file = *v;
      if (auto v = t.read_string("keyFile"))
        b.tls_key_file = *v;
      if (auto v = t.read_string("serverName"))
        b.tls_server_name = *v;
      const int given = !b.tls_ca_file.empty() + !b.tls_cert_file.empty() + !b.tls_key_file.empty();
      if (given != 0 && given != 3)
        config_fail("bigfleet.tls", "mTLS needs caFile, certFile and keyFile together");
    }
    if (b.enabled && b.cluster_id.empty())
      config_fail("bigfleet.clusterId", "required when bigfleet.enabled is true");
    if (b.enabled) {
      if (auto problem = check_listen_address(b.shard))
        config_fail("bigfleet.shard", *problem);
    }
  } else if (key == "github") {
    config_section s{*node, "github", {"configUrl", "caFile"}};
    if (auto v = s.read_string("configUrl"))
      github.config_url = *v;
    if (auto v = s.read_string("caFile"))
      github.ca_file = *v;
  } else if (key == "hud") {
    config_section s{*node, "hud", {"url", "interval"}};
    if (auto v = s.read_string("url"))
      hud.url = *v;
    s.read_duration("interval", hud.interval, millis{1'000}, millis{3'600'000});
  } else if (key == "reactive") {
    read_reactive(*node);
  } else if (key == "gates") {
    config_section s{*node, "gates", {"enabled", "webhook", "reservationTimeout", "resyncInterval"}};
    auto& g = gates;
    s.read_bool("enabled", g.enabled);
    s.read_duration("reservationTimeout", g.reservation_timeout, millis{1'000}, millis{7 * 86'400'000LL});
    s.read_duration("resyncInterval", g.resync_interval, millis{1'000}, millis{3'600'000});
    if (auto w = s.get("webhook")) {
      config_section ws{*w, "gates.webhook", {"enabled", "listen", "certFile", "keyFile", "certReloadInterval", "threads"}};
      ws.read_bool("enabled", g.webhook.enabled);
      if (auto v = ws.read_string("listen"))
        g.webhook.listen = *v;
      if (auto v = ws.read_string("certFile"))
        g.webhook.cert_file = *v;
      if (auto v = ws.read_string("keyFile"))
        g.webhook.key_file = *v;
      ws.read_duration("certReloadInterval", g.webhook.cert_reload_interval, millis{100}, millis{3'600'000});
      ws.read_uint("threads", g.webhook.threads, 1, 64);
    }
    if (g.enabled && g.webhook.enabled && (g.webhook.cert_file.empty() || g.webhook.key_file.empty()))
      config_fail(g.webhook.cert_file.empty() ? "gates.webhook.certFile" : "gates.webhook.keyFile",
                  "required: the API server calls the webhook over TLS only");
  } else if (key == "scheduler") {
    read_scheduler(*node);
  } else if (key == "scaleSets") {
    if (!node->IsSequence())
      config_fail("scaleSets", "expected a list, found " + yaml_kind(*node));
    std::set<std::string> names;
    for (size_t i = 0; i < node->size(); ++i) {
      const std::string where = "scaleSets[" + std::to_string(i) + "]";
      auto set = parse_scale_set((*node)[i], where);
      if (!names.insert(set.name).second)
        config_fail(where + ".name", "'" + set.name + "' appears twice");
      scale_sets.push_back(std::move(set));
    }
  }
}

void settings::read_scheduler(const YAML::Node& node) {
  config_section s{node, "scheduler",
                   {"enabled", "listen", "threads", "maxBody", "githubUrl", "store", "namespace", "runnerGroup", "namePrefix",
                    "runnerLabels", "runner", "maxWorkers", "pollInterval", "jobSyncInterval", "jobStuckQueued", "healthCheck",
                    "podDeleteGrace", "killGrace"}};
  auto& c = scheduler;
  s.read_bool("enabled", c.enabled);
  if (auto v = s.read_string("listen"))
    c.listen = *v;
  if (auto problem = check_listen_address(c.listen))
    config_fail("scheduler.listen", *problem);
  s.read_uint("threads", c.threads, 1, 256);
  s.read_uint("maxBody", c.max_body, 1024, 25u << 20);
  if (auto v = s.read_string("githubUrl"))
    c.github_url = *v;
  if (c.github_url.rfind("https://", 0) != 0 && c.github_url.rfind("http://", 0) != 0)
    config_fail("scheduler.githubUrl", "expected an https:// URL, found '" + c.github_url + "'");
  if (auto st = s.get("store")) {
    config_section ss{*st, "scheduler.store", {"sqlitePath", "postgres", "pool", "retention"}};
    if (auto v = ss.read_string("sqlitePath"))
      c.store.sqlite_path = *v;
    ss.read_bool("postgres", c.store.postgres);
    ss.read_uint("pool", c.store.pool, 1, 200);
    // At least GitHub's redelivery window (3 days): a delivery forgotten before that would be
    // recorded again when redelivered, and its job come back from the dead as pending.
    ss.read_duration("retention", c.store.retention, millis{0}, millis{10 * 365 * 86'400'000LL});
    if (c.store.retention.count() > 0 && c.store.retention < millis{72 * 3'600'000LL})
      config_fail("scheduler.store.retention",
                  "0 (keep every job) or at least 72h: GitHub redelivers a delivery up to 3 days old, and the store must "
                  "remember it that long to know it; found " + runtime::format_duration(c.store.retention));
  }
  if (auto v = s.read_string("namespace"))
    c.ns = *v;
  if (auto v = s.read_string("runnerGroup"))
    c.runner_group = *v;
  if (auto v = s.read_string("namePrefix"))
    c.name_prefix = *v;
  c.runner_labels = s.read_strings("runnerLabels");
  for (size_t i = 0; i < c.runner_labels.size(); ++i)
    if (c.runner_labels[i].empty() || c.runner_labels[i].size() > 256 || c.runner_labels[i].find(',') != std::string::npos)
      config_fail("scheduler.runnerLabels[" + std::to_string(i) + "]", "a label of 1 to 256 characters without ',', found '" +
                                                                      c.runner_labels[i].substr(0, 64) + "'");
  if (!valid_scale_set_name(c.name_prefix))
    config_fail("scheduler.namePrefix", "lower-case letters, digits and '-', at most 40 characters, found '" + c.name_prefix + "'");
  if (auto r = s.get("runner"))
    read_runner(*r, "scheduler.runner", c.runner, true);
  if (auto m = s.get("maxWorkers")) {
    config_section ms{*m, "scheduler.maxWorkers", {"default", "entities"}};
    ms.read_uint("default", c.default_max_workers, 0, 100'000);
    if (auto e = ms.get("entities")) {
      if (!e->IsMap())
        config_fail("scheduler.maxWorkers.entities", "expected a map of entity → count, found " + yaml_kind(*e));
      for (const auto& kv : *e) {
        const auto entity = kv.first.as<std::string>();
        const std::string where = "scheduler.maxWorkers.entities." + entity;
        int64_t cap = -1;
        try {
          cap = kv.second.as<int64_t>();
        } catch (const std::exception&) {
        }
        if (cap < 0 || cap > 100'000)
          config_fail(where, "expected a count from 0 to 100000");
        c.max_workers.emplace_back(entity, static_cast<uint32_t>(cap));
      }
    }
  }
  const millis day{86'400'000};
  s.read_duration("pollInterval", c.poll_interval, millis{100}, millis{3'600'000});
  s.read_duration("jobSyncInterval", c.job_sync_interval, millis{100}, millis{3'600'000});
  s.read_duration("jobStuckQueued", c.job_stuck_queued, millis{1'000}, day);
  s.read_duration("podDeleteGrace", c.pod_delete_grace, millis{0}, 7 * day);
  s.read_duration("killGrace", c.kill_grace, millis{100}, day);
  if (auto h = s.get("healthCheck")) {
    config_section hs{*h, "scheduler.healthCheck", {"registrationTimeout", "pendingTimeout", "idleTimeout"}};
    hs.read_duration("registrationTimeout", c.registration_timeout, millis{100}, day);
    hs.read_duration("pendingTimeout", c.pending_timeout, millis{100}, day);
    hs.read_duration("idleTimeout", c.idle_timeout, millis{100}, day);
  }
}

void settings::read_reactive(const YAML::Node& node) {
  config_section s{node, "reactive", {"prometheus", "defaults", "quotas", "quotaReloadInterval", "targets"}};
  auto& r = reactive;
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

void settings::check() {
  if (!scale_sets.empty() && github.config_url.empty())
    config_fail("github.configUrl", "required when scaleSets are configured");
  for (const auto& set : scale_sets)
    if (scheduler.enabled && set.name == scheduler.name_prefix && set.ns == scheduler.ns)
      config_fail("scheduler.namePrefix", "'" + set.name + "' is also a scale set's name in namespace " + set.ns +
                                              ": their runner pods would mix");
}

std::variant<parsed_config, runtime::config_error> parse_config_yaml(std::string_view yaml, std::string_view origin) {
  parsed_config out;
  auto r = runtime::parse_config_yaml(yaml, origin, &out.modes);
  if (auto* e = std::get_if<runtime::config_error>(&r))
    return *e;
  out.runtime = std::get<runtime::config>(std::move(r));
  return out;
}

}  // namespace headroom::app
