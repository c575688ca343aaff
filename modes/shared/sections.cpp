#include "modes/shared/sections.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "actors/runners/pods.hpp"
#include "adapters/k8s/quantity.hpp"
#include "runtime/yaml_json.hpp"

namespace headroom::modes {

using runtime::check_listen_address;
using runtime::config_fail;
using runtime::config_section;
using runtime::yaml_kind;

// A DNS-1123 label short enough that "<name>-ph-<slot>-workflow" stays a valid pod name.
bool valid_runner_name(const std::string& n) {
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

namespace {

// A mapping (`what` names it in the error) as JSON; a value JSON cannot hold fails naming its path.
std::string mapping_as_json(const YAML::Node& node, const std::string& where, const std::string& what) {
  if (!node.IsMap())
    config_fail(where, "expected " + what + ", found " + yaml_kind(node));
  auto json = runtime::yaml_to_json(node);
  if (auto* e = std::get_if<runtime::yaml_json_error>(&json))
    config_fail(where + (e->where.empty() ? "" : "." + e->where), e->message);
  return std::get<std::string>(json);
}

}  // namespace

std::string read_pod_template_json(const YAML::Node& node, const std::string& where) {
  return mapping_as_json(node, where, "a pod template (metadata, spec)");
}

// kubernetes mode's `work` volume claim (a PersistentVolumeClaimSpec) as JSON: what the API server
// would refuse in every runner pod (no access mode, no storage request) is refused here, by path.
std::string read_work_volume_claim(const YAML::Node& node, const std::string& where) {
  auto json = mapping_as_json(node, where, "a claim spec (accessModes, storageClassName, resources)");
  const auto modes = node["accessModes"];
  if (!modes || !modes.IsSequence() || modes.size() == 0)
    config_fail(where + ".accessModes", "required: a list, e.g. [ReadWriteOnce]");
  const auto storage = node["resources"] && node["resources"].IsMap() && node["resources"]["requests"] &&
                               node["resources"]["requests"].IsMap()
                           ? node["resources"]["requests"]["storage"]
                           : YAML::Node{};
  if (!storage || !storage.IsScalar())
    config_fail(where + ".resources.requests.storage", "required: the volume's size, e.g. 1Gi");
  return json;
}

namespace {

// A runner's tolerations (the short form's `tolerations`).
std::vector<toleration_section> read_tolerations(const YAML::Node& list, const std::string& where) {
  if (!list.IsSequence())
    config_fail(where, "expected a list, found " + yaml_kind(list));
  std::vector<toleration_section> out;
  for (size_t i = 0; i < list.size(); ++i) {
    config_section t{list[i], where + "[" + std::to_string(i) + "]", {"key", "operator", "value", "effect"}};
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
    out.push_back(std::move(tol));
  }
  return out;
}

}  // namespace

// A runner pod template (scale sets' `runner`, the scheduler's `runner`).
void read_runner(const YAML::Node& node, const std::string& where, runner_section& out, bool extended) {
  const std::set<std::string> short_form{"image", "command", "resources", "nodeSelector", "tolerations", "serviceAccountName"};
  std::set<std::string> keys{short_form};
  keys.insert({"containerMode", "hookTemplate", "workVolumeClaim"});
  if (extended)
    keys.insert({"slotResource", "activeDeadlineSeconds"});
  else
    keys.insert("template");
  config_section rs{node, where, keys};
  if (!extended)
    runtime::describe_config_key(rs.path("template"), {"pod-template", "", "", ""});
  const auto t = extended ? std::optional<YAML::Node>{} : rs.get("template");
  if (t) {
    for (const auto& k : short_form)
      if (rs.get(k))
        config_fail(rs.path(k), "give the runner's " + k + " in runner.template (a pod template), not beside it");
    out.template_json = read_pod_template_json(*t, rs.path("template"));
    auto r = actors::runners::read_runner_template(out.template_json);
    if (!r.facts)
      config_fail(rs.path("template"), r.error);
    out.template_facts = std::move(r.facts);
  }
  if (auto v = rs.read_string("image"))
    out.image = *v;
  if (auto cmd = rs.read_strings("command"); rs.get("command"))
    out.command = std::move(cmd);
  runtime::describe_config_key(rs.path("resources"), {"quantities", "", "", ""});
  if (auto res = rs.get("resources"))
    read_resources(*res, rs.path("resources"), out.cpu, out.memory, out.extended);
  out.node_selector = rs.read_string_map("nodeSelector");
  if (auto tl = rs.get("tolerations"))
    out.tolerations = read_tolerations(*tl, rs.path("tolerations"));
  if (auto v = rs.read_string("serviceAccountName"))
    out.service_account = *v;
  if (auto v = rs.read_string("containerMode")) {
    if (*v != "kubernetes-novolume" && *v != "kubernetes" && *v != "dind" && *v != "none")
      config_fail(rs.path("containerMode"), "expected kubernetes-novolume, kubernetes, dind or none, found '" + *v + "'");
    out.container_mode = *v;
  }
  if (out.container_mode == "dind" && !out.template_json.empty())
    if (auto clash = actors::runners::dind_name_clash(out.template_json))
      config_fail(rs.path("template") + "." + *clash, "containerMode dind makes this container, as ARC's chart does: leave it out, "
                                                     "or write the whole pod with containerMode none");
  runtime::describe_config_key(rs.path("workVolumeClaim"), {"claim-spec", "", "", ""});
  if (auto c = rs.get("workVolumeClaim")) {
    if (out.container_mode != "kubernetes")
      config_fail(rs.path("workVolumeClaim"), "only with containerMode kubernetes (the volume the runner shares with its workflow pod)");
    out.work_volume_claim = read_work_volume_claim(*c, rs.path("workVolumeClaim"));
  } else if (out.container_mode == "kubernetes") {
    config_fail(rs.path("workVolumeClaim"), "required with containerMode kubernetes: the `work` volume's claim, as ARC's "
                                            "containerMode.kubernetesModeWorkVolumeClaim (accessModes, storageClassName, "
                                            "resources.requests.storage)");
  }
  runtime::describe_config_key(rs.path("hookTemplate"), {"pod-template", "", "", ""});
  if (auto t = rs.get("hookTemplate")) {
    auto json = read_pod_template_json(*t, rs.path("hookTemplate"));
    if (auto problem = actors::runners::check_hook_template(json))
      config_fail(rs.path("hookTemplate"), *problem);
    out.hook_template = std::move(json);
  }
  if (extended) {
    if (auto v = rs.read_string("slotResource"))
      out.slot_resource = *v;
    uint32_t deadline = static_cast<uint32_t>(out.active_deadline_seconds);
    rs.read_uint("activeDeadlineSeconds", deadline, 0, 100'000'000);
    out.active_deadline_seconds = deadline;
  }
}

void shared_sections::read(const std::string& key, const YAML::Node& node) {
  if (key != "github")
    return;
  config_section s{node, "github", {"configUrl", "caFile"}};
  if (auto v = s.read_string("configUrl"))
    github.config_url = *v;
  if (auto v = s.read_string("caFile"))
    github.ca_file = *v;
}

}  // namespace headroom::modes
