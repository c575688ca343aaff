#include "modes/scale_sets/settings.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "modes/shared/declared.hpp"

namespace headroom::modes::scale_sets {

using runtime::check_listen_address;
using runtime::config_fail;
using runtime::config_section;
using runtime::yaml_kind;

namespace {

// "HH:MM" (00:00 to 24:00) → minutes of the day.
int read_clock(const config_section& s, const std::string& key, int fallback) {
  const auto v = s.read_string(key);
  if (!v)
    return fallback;
  const auto bad = [&] { config_fail(s.path(key), "expected a time of day \"HH:MM\" (UTC, 00:00 to 24:00), found '" + *v + "'"); };
  if (v->size() != 5 || (*v)[2] != ':' || !std::isdigit((*v)[0]) || !std::isdigit((*v)[1]) || !std::isdigit((*v)[3]) || !std::isdigit((*v)[4]))
    bad();
  const int h = std::stoi(v->substr(0, 2)), m = std::stoi(v->substr(3, 2));
  if (h > 24 || m > 59 || (h == 24 && m != 0))
    bad();
  return h * 60 + m;
}

// capacityAware.warmPool: schedule windows and followDemand.
void read_warm_pool(const config_section& cs, actors::capacity::warm_pool_policy& out) {
  auto wp = cs.get("warmPool");
  if (!wp)
    return;
  config_section ws{*wp, cs.path("warmPool"), {"schedule", "followDemand"}};
  if (auto sch = ws.get("schedule")) {
    if (!sch->IsSequence())
      config_fail(ws.path("schedule"), "expected a list of windows, found " + yaml_kind(*sch));
    for (size_t i = 0; i < sch->size(); ++i) {
      config_section w{(*sch)[i], ws.path("schedule") + "[" + std::to_string(i) + "]", {"days", "from", "to", "size"}};
      actors::capacity::warm_window window;
      if (w.get("days")) {
        static const std::vector<std::string> names{"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
        window.days = 0;
        for (const auto& d : w.read_strings("days")) {
          const auto at = std::find(names.begin(), names.end(), d);
          if (at == names.end())
            config_fail(w.path("days"), "expected days among mon, tue, wed, thu, fri, sat, sun, found '" + d + "'");
          window.days |= static_cast<uint8_t>(1u << (at - names.begin()));
        }
      }
      window.from_minute = read_clock(w, "from", 0);
      window.to_minute = read_clock(w, "to", 24 * 60);
      if (window.from_minute == window.to_minute)
        config_fail(w.path("to"), "the window is empty: from and to are the same time");
      uint32_t size = 0;
      w.read_uint("size", size, 0, 100'000);
      window.size = size;
      out.schedule.push_back(window);
    }
  }
  if (auto fd = ws.get("followDemand")) {
    config_section f{*fd, ws.path("followDemand"), {"percentile", "window", "max"}};
    out.follow_demand = true;
    uint32_t percentile = 90, max = 0;
    f.read_uint("percentile", percentile, 1, 100);
    f.read_duration("window", out.window, std::chrono::minutes{1}, std::chrono::hours{24 * 7});
    f.read_uint("max", max, 0, 100'000);
    out.percentile = percentile;
    out.max = max;
  }
}

// A Kubernetes label value (what selects ARC's runner pods by their AutoscalingRunnerSet).
bool valid_label_value(const std::string& v) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (v.empty() || v.size() > 63 || !alnum(v.front()) || !alnum(v.back()))
    return false;
  return std::all_of(v.begin(), v.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

scale_set_section parse_scale_set(const YAML::Node& node, const std::string& where) {
  scale_set_section out;
  config_section s{node, where,
            {"name", "namespace", "runnerGroup", "labels", "maxRunners", "mode", "autoscalingRunnerSet", "ephemeralRunnerSet", "runner",
             "capacityAware", "healthCheck"}};
  if (auto v = s.read_string("name"))
    out.name = *v;
  if (!valid_runner_name(out.name))
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
  if (auto v = s.read_string("autoscalingRunnerSet"))
    out.autoscaling_runner_set = *v;
  if (auto v = s.read_string("ephemeralRunnerSet"))
    out.ephemeral_runner_set = *v;
  if (out.mode != "arc" && (!out.autoscaling_runner_set.empty() || !out.ephemeral_runner_set.empty()))
    config_fail(s.path(!out.autoscaling_runner_set.empty() ? "autoscalingRunnerSet" : "ephemeralRunnerSet"), "only in arc mode");
  // ARC names its runner pods' label and its EphemeralRunnerSets after the AutoscalingRunnerSet,
  // whose default name is the scale set's (the Helm release's).
  if (out.mode == "arc" && out.autoscaling_runner_set.empty())
    out.autoscaling_runner_set = out.name;
  if (out.mode == "arc" && !valid_label_value(out.autoscaling_runner_set))
    config_fail(s.path("autoscalingRunnerSet"), "not a label value: '" + out.autoscaling_runner_set + "'");
  if (auto r = s.get("runner"))
    read_runner(*r, s.path("runner"), out.runner, false);
  if (auto c = s.get("capacityAware")) {
    config_section cs{*c, s.path("capacityAware"),
               {"enabled", "proactiveCapacity", "maxBurstCapacity", "recalculateInterval", "placeholderReadyTimeout", "placeholderTTL",
                "workflowResources", "placeholderImage", "placeholderCommand", "repollOnChange", "queueCheckInterval", "warmPool"}};
    auto& ca = out.capacity_aware;
    cs.read_bool("enabled", ca.enabled);
    cs.read_bool("repollOnChange", ca.repoll_on_change);
    cs.read_duration("queueCheckInterval", ca.queue_check_interval, millis{0}, millis{3'600'000});
    if (ca.queue_check_interval.count() != 0 && ca.queue_check_interval < millis{1'000})
      config_fail(cs.path("queueCheckInterval"), "must be 0 (only after each poll) or at least 1s");
    cs.read_uint("proactiveCapacity", ca.proactive_capacity, 0, 100'000);
    read_warm_pool(cs, ca.warm_pool);
    cs.read_uint("maxBurstCapacity", ca.max_burst_capacity, 0, 100'000);
    cs.read_duration("recalculateInterval", ca.recalculate_interval, millis{100}, millis{3'600'000});
    cs.read_duration("placeholderReadyTimeout", ca.placeholder_ready_timeout, millis{1'000}, millis{86'400'000});
    cs.read_duration("placeholderTTL", ca.placeholder_ttl, millis{0}, millis{7 * 86'400'000LL});
    if (ca.placeholder_ttl.count() != 0 && ca.placeholder_ttl < ca.placeholder_ready_timeout)
      config_fail(cs.path("placeholderTTL"), "must be 0 (off) or at least placeholderReadyTimeout, so a renewal can finish before the next");
    runtime::describe_config_key(cs.path("workflowResources"), {"quantities", "", "", ""});
    if (auto w = cs.get("workflowResources"))
      read_resources(*w, cs.path("workflowResources"), ca.workflow_cpu, ca.workflow_memory, ca.workflow_extended);
    if (auto v = cs.read_string("placeholderImage"))
      ca.placeholder_image = *v;
    if (auto cmd = cs.read_strings("placeholderCommand"); cs.get("placeholderCommand"))
      ca.placeholder_command = std::move(cmd);
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

std::vector<scale_set_section> read_scale_sets(const YAML::Node& node) {
  std::vector<scale_set_section> out;
  if (!node.IsSequence())
    config_fail("scaleSets", "expected a list, found " + yaml_kind(node));
  std::set<std::string> names;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string where = "scaleSets[" + std::to_string(i) + "]";
    auto set = parse_scale_set(node[i], where);
    if (!names.insert(set.name).second)
      config_fail(where + ".name", "'" + set.name + "' appears twice");
    out.push_back(std::move(set));
  }
  return out;
}

std::variant<declared_scale_set, std::string> read_scale_set_object(std::string_view object_json) {
  declared_scale_set out;
  declared_object meta;
  auto problem = read_declared(object_json, "ScaleSet", meta, [&](YAML::Node& node) -> std::optional<std::string> {
    for (const char* key : {"name", "namespace"})
      if (node[key])
        return std::string{"spec."} + key + ": set by the object's metadata." + key + ", not in its spec";
    node["name"] = meta.name;
    node["namespace"] = meta.ns;
    out.section = parse_scale_set(node, "spec");
    return std::nullopt;
  });
  if (problem)
    return *problem;
  out.uid = meta.uid;
  out.generation = meta.generation;
  return out;
}

scale_set_objects_section read_scale_set_objects(const YAML::Node& node) {
  config_section s{node, "scaleSetObjects", {"namespaces", "limits"}};
  scale_set_objects_section section;
  auto& out = section.namespaces;
  out = s.read_strings("namespaces");
  std::set<std::string> seen;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!valid_label_value(out[i]) || out[i].find_first_of("_.") != std::string::npos ||
        std::any_of(out[i].begin(), out[i].end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); }))
      config_fail(s.path("namespaces") + "[" + std::to_string(i) + "]", "not a namespace name: '" + out[i] + "'");
    if (!seen.insert(out[i]).second)
      config_fail(s.path("namespaces") + "[" + std::to_string(i) + "]", "'" + out[i] + "' appears twice");
  }
  if (auto l = s.get("limits")) {
    config_section ls{*l, s.path("limits"), {"maxRunners", "proactiveCapacity"}};
    ls.read_uint("maxRunners", section.max_runners, 0, 10'000'000);
    ls.read_uint("proactiveCapacity", section.proactive_capacity, 0, 10'000'000);
  }
  return section;
}

void read_hud(const YAML::Node& node, hud_section& out) {
  config_section s{node, "hud", {"url", "interval", "share"}};
  if (auto v = s.read_string("url"))
    out.url = *v;
  s.read_duration("interval", out.interval, millis{1'000}, millis{3'600'000});
  if (auto sh = s.get("share")) {
    config_section ss{*sh, s.path("share"), {"index", "count", "takeAllAfter"}};
    ss.read_uint("count", out.share_count, 1, 1'000);
    ss.read_uint("index", out.share_index, 0, 999);
    ss.read_duration("takeAllAfter", out.take_all_after, millis{0}, millis{86'400'000});
    if (out.share_index >= out.share_count)
      config_fail(ss.path("index"), "this cluster's place among `count` clusters: 0 to " + std::to_string(out.share_count - 1) +
                                        ", found " + std::to_string(out.share_index));
  }
}

void read_priority_classes(const YAML::Node& node, priority_classes_section& out) {
  config_section s{node, "priorityClasses", {"placeholderRunner", "runner", "placeholderWorkflow", "workflow"}};
  std::set<std::string> seen;
  for (auto [key, value] : {std::pair{"placeholderRunner", &out.placeholder_runner}, std::pair{"runner", &out.runner},
                            std::pair{"placeholderWorkflow", &out.placeholder_workflow}, std::pair{"workflow", &out.workflow}}) {
    if (auto v = s.read_string(key))
      *value = *v;
    // A PriorityClass's name is a DNS subdomain (RFC 1123): lower case, digits, '-' and '.', ≤ 253.
    const bool ok = !value->empty() && value->size() <= 253 && std::isalnum(static_cast<unsigned char>(value->front())) &&
                    std::isalnum(static_cast<unsigned char>(value->back())) &&
                    std::all_of(value->begin(), value->end(), [](char c) {
                      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
                    });
    if (!ok)
      config_fail(s.path(key), "a PriorityClass name: lower-case letters, digits, '-' and '.', at most 253 characters, found '" +
                                   *value + "'");
    if (!seen.insert(*value).second)
      config_fail(s.path(key), "'" + *value + "' names two rungs of the ladder; each needs its own PriorityClass");
  }
}

void read_burst_budget(const YAML::Node& node, burst_budget_section& out) {
  config_section s{node, "burstBudget", {"maxPendingPairs"}};
  s.read_uint("maxPendingPairs", out.max_pending_pairs, 0, 100'000);
}

}  // namespace headroom::modes::scale_sets
