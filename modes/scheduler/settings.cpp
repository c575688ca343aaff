#include "modes/scheduler/settings.hpp"

#include "actors/runners/pods.hpp"
#include "modes/shared/declared.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace headroom::modes::scheduler {

using runtime::check_listen_address;
using runtime::config_fail;
using runtime::config_section;
using runtime::yaml_kind;

namespace {

void check_labels(const std::vector<std::string>& labels, const std::string& where) {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i].empty() || labels[i].size() > 256 || labels[i].find(',') != std::string::npos)
      config_fail(where + "[" + std::to_string(i) + "]", "a label of 1 to 256 characters without ',', found '" + labels[i].substr(0, 64) + "'");
}

// {default, entities: {entity: count}}: a cap per entity.
void read_entity_caps(const YAML::Node& node, const std::string& where, uint32_t& default_cap,
                      std::vector<std::pair<std::string, uint32_t>>& caps) {
  config_section ms{node, where, {"default", "entities"}};
  ms.read_uint("default", default_cap, 0, 100'000);
  runtime::describe_config_key(where + ".entities", {"integer-map", "0", "100000", ""});
  auto e = ms.get("entities");
  if (!e)
    return;
  if (!e->IsMap())
    config_fail(where + ".entities", "expected a map of entity → count, found " + yaml_kind(*e));
  for (const auto& kv : *e) {
    const auto entity = kv.first.as<std::string>();
    int64_t cap = -1;
    try {
      cap = kv.second.as<int64_t>();
    } catch (const std::exception&) {
    }
    if (cap < 0 || cap > 100'000)
      config_fail(where + ".entities." + entity, "expected a count from 0 to 100000");
    caps.emplace_back(entity, static_cast<uint32_t>(cap));
  }
}

bool valid_pool_name(const std::string& n) {
  if (n.empty() || n.size() > 20 || n.front() == '-' || n.back() == '-')
    return false;
  return std::all_of(n.begin(), n.end(), [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-'; });
}

// `runner`: the section's runner pod, whose slot resource and deadline are a pool's defaults (and
// whose pod a pool without a template makes).
pool_section read_pool(const YAML::Node& node, const std::string& where, const runner_section& runner) {
  config_section s{node, where, {"name", "labels", "template", "slotResource", "activeDeadlineSeconds", "maxWorkers", "maxWorkersPerEntity"}};
  pool_section p;
  p.slot_resource = runner.slot_resource;
  p.active_deadline_seconds = runner.active_deadline_seconds;
  if (auto v = s.read_string("name"))
    p.name = *v;
  if (!valid_pool_name(p.name))
    config_fail(s.path("name"), "lower-case letters, digits and '-', 1 to 20 characters, found '" + p.name.substr(0, 64) + "'");
  p.labels = s.read_strings("labels");
  if (p.labels.empty())
    config_fail(s.path("labels"), "at least one label: the jobs this pool serves ask for no label it lacks (self-hosted is implied)");
  check_labels(p.labels, s.path("labels"));
  runtime::describe_config_key(s.path("template"), {"pod-template", "", "", ""});
  if (auto t = s.get("template")) {
    p.pod_template = read_pod_template_json(*t, s.path("template"));
    actors::runners::pod_template_facts facts;
    if (auto problem = actors::runners::check_pod_template(p.pod_template, &facts))
      config_fail(s.path("template"), *problem);
    p.node_selector = facts.node_selector;
  } else {
    p.node_selector = runner.node_selector;
  }
  if (auto v = s.read_string("slotResource"))
    p.slot_resource = *v;
  uint32_t deadline = static_cast<uint32_t>(p.active_deadline_seconds);
  s.read_uint("activeDeadlineSeconds", deadline, 0, 100'000'000);
  p.active_deadline_seconds = deadline;
  s.read_uint("maxWorkers", p.max_workers, 0, 100'000);
  if (auto m = s.get("maxWorkersPerEntity")) {
    p.own_entity_caps = true;
    read_entity_caps(*m, s.path("maxWorkersPerEntity"), p.default_max_workers, p.entity_caps);
  }
  return p;
}

void read_pools(const config_section& s, scheduler_section& c) {
  auto pools = s.get("pools");
  if (!pools)
    return;
  if (!pools->IsSequence())
    config_fail("scheduler.pools", "expected a list of pools, found " + yaml_kind(*pools));
  if (!c.runner_labels.empty())
    config_fail("scheduler.pools", "with pools, each pool has its labels: scheduler.runnerLabels is for a configuration without pools");
  std::set<std::string> names;
  for (size_t i = 0; i < pools->size(); ++i) {
    const std::string where = "scheduler.pools[" + std::to_string(i) + "]";
    auto p = read_pool((*pools)[i], where, c.runner);
    if (!names.insert(p.name).second)
      config_fail(where + ".name", "pool '" + p.name + "' is named twice");
    c.pools.push_back(std::move(p));
  }
}

void read_pool_objects(const config_section& s, scheduler_section& c) {
  auto o = s.get("poolObjects");
  if (!o)
    return;
  config_section os{*o, "scheduler.poolObjects", {"enabled", "limits"}};
  os.read_bool("enabled", c.pool_objects.enabled);
  if (auto l = os.get("limits")) {
    config_section ls{*l, os.path("limits"), {"maxWorkers"}};
    ls.read_uint("maxWorkers", c.pool_objects.max_workers, 0, 10'000'000);
  }
}

}  // namespace

void read_section(const YAML::Node& node, scheduler_section& out) {
  config_section s{node, "scheduler",
                   {"enabled", "listen", "dashboardListen", "threads", "maxBody", "githubUrl", "store", "namespace", "runnerGroup", "runnerGroupRepositories", "enterprise", "namePrefix",
                    "runnerLabels", "runner", "pools", "maxWorkers", "pollInterval", "provisioningConcurrency", "jobSyncInterval", "jobStuckQueued", "healthCheck",
                    "podDeleteGrace", "killGrace", "poolObjects"}};
  auto& c = out;
  s.read_bool("enabled", c.enabled);
  if (auto v = s.read_string("listen"))
    c.listen = *v;
  if (auto problem = check_listen_address(c.listen))
    config_fail("scheduler.listen", *problem);
  if (auto v = s.read_string("dashboardListen"))
    c.dashboard_listen = *v;
  if (!c.dashboard_listen.empty()) {
    if (auto problem = check_listen_address(c.dashboard_listen))
      config_fail("scheduler.dashboardListen", *problem);
    if (c.dashboard_listen == c.listen)
      config_fail("scheduler.dashboardListen", "must differ from scheduler.listen: the dashboards are not served on the "
                                               "webhook's public port (\"\" serves none)");
  }
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
  if (auto v = s.read_string("enterprise"))
    c.enterprise = *v;
  if (c.enterprise.find('/') != std::string::npos || c.enterprise.size() > 100)
    config_fail("scheduler.enterprise", "an enterprise's slug (as in github.com/enterprises/<slug>), found '" + c.enterprise.substr(0, 100) + "'");
  c.runner_group_repositories = s.read_strings("runnerGroupRepositories");
  for (size_t i = 0; i < c.runner_group_repositories.size(); ++i) {
    const auto& repo = c.runner_group_repositories[i];
    const auto slash = repo.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == repo.size() || repo.find('/', slash + 1) != std::string::npos)
      config_fail("scheduler.runnerGroupRepositories[" + std::to_string(i) + "]", "expected owner/repo, found '" + repo.substr(0, 100) + "'");
  }
  if (auto v = s.read_string("namePrefix"))
    c.name_prefix = *v;
  c.runner_labels = s.read_strings("runnerLabels");
  check_labels(c.runner_labels, "scheduler.runnerLabels");
  if (!valid_runner_name(c.name_prefix))
    config_fail("scheduler.namePrefix", "lower-case letters, digits and '-', at most 40 characters, found '" + c.name_prefix + "'");
  if (auto r = s.get("runner"))
    read_runner(*r, "scheduler.runner", c.runner, true);
  if (auto m = s.get("maxWorkers"))
    read_entity_caps(*m, "scheduler.maxWorkers", c.default_max_workers, c.max_workers);
  read_pools(s, c);
  read_pool_objects(s, c);
  const millis day{86'400'000};
  s.read_duration("pollInterval", c.poll_interval, millis{100}, millis{3'600'000});
  s.read_uint("provisioningConcurrency", c.provisioning_concurrency, 1, 256);
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

std::variant<declared_pool, std::string> read_runner_pool_object(std::string_view object_json, const runner_section& runner) {
  declared_pool out;
  declared_object meta;
  auto problem = read_declared(object_json, "RunnerPool", meta, [&](YAML::Node& node) -> std::optional<std::string> {
    if (node["name"])
      return std::string{"spec.name: set by the object's metadata.name, not in its spec"};
    node["name"] = meta.name;
    out.section = read_pool(node, "spec", runner);
    return std::nullopt;
  });
  if (problem)
    return *problem;
  out.ns = meta.ns;
  out.uid = meta.uid;
  out.generation = meta.generation;
  return out;
}

}  // namespace headroom::modes::scheduler
