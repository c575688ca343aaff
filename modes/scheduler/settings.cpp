#include "modes/scheduler/settings.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace headroom::modes::scheduler {

using runtime::check_listen_address;
using runtime::config_fail;
using runtime::config_section;
using runtime::yaml_kind;

void read_section(const YAML::Node& node, scheduler_section& out) {
  config_section s{node, "scheduler",
                   {"enabled", "listen", "dashboardListen", "threads", "maxBody", "githubUrl", "store", "namespace", "runnerGroup", "namePrefix",
                    "runnerLabels", "runner", "maxWorkers", "pollInterval", "jobSyncInterval", "jobStuckQueued", "healthCheck",
                    "podDeleteGrace", "killGrace"}};
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
  if (auto v = s.read_string("namePrefix"))
    c.name_prefix = *v;
  c.runner_labels = s.read_strings("runnerLabels");
  for (size_t i = 0; i < c.runner_labels.size(); ++i)
    if (c.runner_labels[i].empty() || c.runner_labels[i].size() > 256 || c.runner_labels[i].find(',') != std::string::npos)
      config_fail("scheduler.runnerLabels[" + std::to_string(i) + "]", "a label of 1 to 256 characters without ',', found '" +
                                                                      c.runner_labels[i].substr(0, 64) + "'");
  if (!valid_runner_name(c.name_prefix))
    config_fail("scheduler.namePrefix", "lower-case letters, digits and '-', at most 40 characters, found '" + c.name_prefix + "'");
  if (auto r = s.get("runner"))
    read_runner(*r, "scheduler.runner", c.runner, true);
  if (auto m = s.get("maxWorkers")) {
    config_section ms{*m, "scheduler.maxWorkers", {"default", "entities"}};
    ms.read_uint("default", c.default_max_workers, 0, 100'000);
    runtime::describe_config_key("scheduler.maxWorkers.entities", {"integer-map", "0", "100000", ""});
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

}  // namespace headroom::modes::scheduler
