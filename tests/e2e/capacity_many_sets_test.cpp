// Many scale sets in one headroom (#38's CI version of the 1,000-scale-set benchmark): 50 scale
// sets in one namespace, each with a warm pool of one pair, on the real control plane with the
// chart's RBAC. Every scale set holds its session with the Actions Service peer and advertises the
// one pair the scheduler placed; no poll of any scale set ever advertised more than that (no job
// is queued, so one placed pair is all any of them may claim); and the 50 scale sets cost the API
// server one pod watch, not 50 (one informer per namespace, sliced by scale set). Each scale set
// has its own owner ConfigMap and runner PodDisruptionBudget, and an orderly stop releases each
// scale set's placeholders without disturbing the others'.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "e2e/capacity_suite.hpp"

namespace headroom::e2e {
namespace {

using namespace std::chrono_literals;

constexpr int sets = 50;

std::string set_name(int i) { return "many-" + std::string(i < 10 ? "0" : "") + std::to_string(i); }

// The API server's namespaced pod watches open now (apiserver_longrunning_requests).
int namespaced_pod_watches(const env& e) {
  auto text = e.c->kubectl({"get", "--raw", "/metrics"}).out;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    if (line.rfind("apiserver_longrunning_requests{", 0) == 0 && line.find("resource=\"pods\"") != std::string::npos &&
        line.find("scope=\"namespace\"") != std::string::npos && line.find("verb=\"WATCH\"") != std::string::npos &&
        line.find("subresource=\"\"") != std::string::npos)
      return std::stoi(line.substr(line.rfind(' ') + 1));
  return 0;
}

double rss_mib(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

TEST(capacity_e2e, fifty_scale_sets_in_one_headroom_hold_their_sessions_on_one_pod_watch) {
  REQUIRE_ENV(e);
  scenario sc;
  sc.name = "many-sets";
  sc.chart_install = true;  // this scenario writes its own values and configuration below
  world w{e, sc};
  REQUIRE_WORLD(w);
  e.c->kubectl({"apply", "-f", "-"}, "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + sc.name + "-node\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                  "  labels: {kubernetes.io/hostname: " + sc.name + "-node, type: kwok, pool: " + sc.name + "}\nstatus:\n"
                  "  allocatable: {cpu: \"200\", memory: 1000Gi, pods: \"500\"}\n  capacity: {cpu: \"200\", memory: 1000Gi, pods: \"500\"}\n");
  std::ostringstream values, config;
  values << "config:\n  github: {configUrl: " << e.peer->http_url() << "/headroom-org}\n  scaleSets:\n";
  for (int i = 0; i < sets; ++i) {
    values << "    - {name: " << set_name(i) << ", namespace: " << sc.name << "}\n";
    config << "  - name: " << set_name(i) << "\n    namespace: " << sc.name << "\n    maxRunners: 10\n"
           << "    runner: {image: runner:e2e, resources: {cpu: 500m, memory: 512Mi}, nodeSelector: {pool: " << sc.name << "}}\n"
           << "    capacityAware: {proactiveCapacity: 1, recalculateInterval: 2s, placeholderReadyTimeout: 10m, "
           << "workflowResources: {cpu: 500m, memory: 512Mi}}\n";
  }
  values << "github: {existingSecret: e2e-github}\n"
            "priorityClasses: {placeholderRunner: placeholder-runner, runner: arc-runner, placeholderWorkflow: placeholder-workflow, "
            "workflow: arc-workflow}\n";
  std::ofstream(w.dir + "/values.yaml") << values.str();
  auto id = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/chart-identity.sh", e.c->kubeconfig(),
                                  w.dir + "/values.yaml", "e2e-" + sc.name, "headroom-e2e", w.dir + "/chart.kubeconfig"});
  ASSERT_EQ(id.exit_code, 0) << id.err;
  const int watches_before = namespaced_pod_watches(e);
  w.headroom = std::make_unique<agent>(w.dir, "kubernetes:\n  kubeconfig: " + w.dir + "/chart.kubeconfig\n"
                                              "leaderElection:\n  enabled: false\ngithub:\n  configUrl: " + e.peer->http_url() +
                                              "/headroom-org\nscaleSets:\n" + config.str());

  // The peer's view: each scale set's id, its sessions, its polls' capacities.
  struct view {
    std::map<std::string, int64_t> ids;      // name → id
    std::map<int64_t, int> sessions;          // id → sessions
    std::map<int64_t, int64_t> latest, most;  // id → the latest poll's capacity, the largest ever
    int polls = 0;
  };
  auto look = [&] {
    view v;
    simdjson::dom::parser p;
    auto st = p.parse(e.peer->control("/state").body);
    std::map<int64_t, std::string> names;
    for (auto s : st["scaleSets"].get_array()) {
      const std::string name{std::string_view(s["name"])};
      if (name.rfind("many-", 0) == 0) {
        v.ids[name] = int64_t(s["id"]);
        names[int64_t(s["id"])] = name;
      }
    }
    for (auto s : st["sessions"].get_array())
      if (names.count(int64_t(s["scaleSetId"])))
        ++v.sessions[int64_t(s["scaleSetId"])];
    for (auto poll : st["polls"].get_array()) {
      const int64_t set = int64_t(poll["scaleSetId"]);
      if (!names.count(set))
        continue;
      ++v.polls;
      v.latest[set] = int64_t(poll["capacity"]);
      v.most[set] = std::max(v.most[set], int64_t(poll["capacity"]));
    }
    return v;
  };
  view now;
  auto all_advertise_their_pair = [&] {
    now = look();
    if (static_cast<int>(now.ids.size()) != sets)
      return false;
    for (const auto& [name, set] : now.ids)
      if (now.sessions[set] != 1 || now.latest[set] != 1)
        return false;
    return true;
  };
  ASSERT_TRUE(eventually(all_advertise_their_pair, 240s)) << [&] {
    std::string out = std::to_string(now.ids.size()) + " scale sets at the peer;";
    for (const auto& [name, set] : now.ids)
      out += " " + name + "(sessions " + std::to_string(now.sessions[set]) + ", capacity " + std::to_string(now.latest[set]) + ")";
    return out + "\n" + w.headroom->log();
  }();
  // The runner placeholders: one placed pair per scale set.
  auto r = e.c->kubectl({"-n", sc.name, "get", "pods", "-l", "headroom.dev/role=runner-placeholder", "-o",
                         "jsonpath={range .items[?(@.status.phase==\"Running\")]}{.metadata.labels.headroom\\.dev/scale-set}{\"\\n\"}{end}"});
  std::map<std::string, int> running;
  std::istringstream in{r.out};
  for (std::string set; std::getline(in, set);)
    ++running[set];
  EXPECT_EQ(static_cast<int>(running.size()), sets);
  for (const auto& [set, n] : running)
    EXPECT_EQ(n, 1) << set;
  // A few more rounds of polls, then the audit: nobody ever advertised more than its one pair.
  std::this_thread::sleep_for(5s);
  now = look();
  EXPECT_GE(now.polls, sets);
  for (const auto& [name, set] : now.ids)
    EXPECT_LE(now.most[set], 1) << name << " advertised more than the one pair it had";
  EXPECT_EQ(namespaced_pod_watches(e) - watches_before, 1) << "one pod watch for the namespace's 50 scale sets";
  std::cout << "[many sets] " << sets << " scale sets: " << now.polls << " polls audited, " << namespaced_pod_watches(e) - watches_before
            << " pod watch, agent RSS " << rss_mib(w.headroom->pid()) << " MiB\n";
  // Each scale set has its own owner, so each has its own runner PodDisruptionBudget (one shared
  // owner gave the namespace one budget, for the first scale set only).
  auto pdbs = e.c->kubectl({"-n", sc.name, "get", "pdb", "-o", "name"}).out;
  EXPECT_EQ(std::count(pdbs.begin(), pdbs.end(), '\n'), sets) << pdbs;
  // An orderly stop: each scale set releases only its own placeholders. (With one owner for the
  // namespace, the first scale set to stop deleted every scale set's placeholders; the others
  // made new pairs while they waited their turn to stop: thousands of pairs and log lines.)
  EXPECT_EQ(w.headroom->stop(SIGTERM), 0);
  const auto log = w.headroom->full_log();
  const auto stop_at = log.find("shutdown signal received");
  ASSERT_NE(stop_at, std::string::npos);
  const auto after = log.substr(stop_at);
  EXPECT_EQ(after.find("pair lost"), std::string::npos) << after.substr(0, 4000);
  EXPECT_EQ(after.find("unhandled exception"), std::string::npos) << after.substr(0, 4000);
  EXPECT_NE(after.find("stopped cleanly"), std::string::npos);
  e.c->kubectl({"delete", "node", sc.name + "-node", "--wait=false"});
}

}  // namespace
}  // namespace headroom::e2e
