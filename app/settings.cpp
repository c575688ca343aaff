#include "app/settings.hpp"

#include <algorithm>
#include <set>

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
  if (auto r = s.get("runner")) {
    config_section rs{*r, s.path("runner"), {"image", "command", "resources", "nodeSelector", "tolerations", "serviceAccountName"}};
    if (auto v = rs.read_string("image"))
      out.runner.image = *v;
    if (rs.get("command"))
      out.runner.command = rs.read_strings("command");
    if (auto res = rs.get("resources")) {
      config_section q{*res, rs.path("resources"), {"cpu", "memory"}};
      if (auto v = q.read_string("cpu"))
        out.runner.cpu = *v;
      if (auto v = q.read_string("memory"))
        out.runner.memory = *v;
    }
    out.runner.node_selector = rs.read_string_map("nodeSelector");
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
        out.runner.tolerations.push_back(std::move(tol));
      }
    }
    if (auto v = rs.read_string("serviceAccountName"))
      out.runner.service_account = *v;
  }
  if (auto c = s.get("capacityAware")) {
    config_section cs{*c, s.path("capacityAware"),
               {"enabled", "proactiveCapacity", "recalculateInterval", "placeholderReadyTimeout", "workflowResources",
                "placeholderImage", "placeholderCommand", "repollOnChange"}};
    auto& ca = out.capacity_aware;
    cs.read_bool("enabled", ca.enabled);
    cs.read_bool("repollOnChange", ca.repoll_on_change);
    cs.read_uint("proactiveCapacity", ca.proactive_capacity, 0, 100'000);
    cs.read_duration("recalculateInterval", ca.recalculate_interval, millis{100}, millis{3'600'000});
    cs.read_duration("placeholderReadyTimeout", ca.placeholder_ready_timeout, millis{1'000}, millis{86'400'000});
    if (auto w = cs.get("workflowResources")) {
      config_section q{*w, cs.path("workflowResources"), {"cpu", "memory"}};
      if (auto v = q.read_string("cpu"))
        ca.workflow_cpu = *v;
      if (auto v = q.read_string("memory"))
        ca.workflow_memory = *v;
    }
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

}  // namespace

std::vector<std::string> settings::keys() const { return {"bigfleet", "github", "hud", "scaleSets"}; }

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

void settings::check() {
  if (!scale_sets.empty() && github.config_url.empty())
    config_fail("github.configUrl", "required when scaleSets are configured");
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
