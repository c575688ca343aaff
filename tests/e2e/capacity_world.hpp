#pragma once

// The world of a capacity end-to-end run, shared by tests/e2e/capacity_e2e_test.cpp and
// bench/capacity_propagation_bench.cpp: the headroom binary as a child process, a scale set's
// namespace with the runner simulator in it, and the audit of every poll the Actions Service peer
// logged against what the simulator saw the scheduler place.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <stdexcept>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testenv/actions_peer.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/dashboard.hpp"
#include "testenv/peer_process.hpp"

namespace headroom::e2e {

using namespace std::chrono_literals;
using testenv::cluster;
using testenv::cluster_options;
using testenv::eventually;
using clock_type = std::chrono::system_clock;

inline constexpr auto window = 2s;  // propagation allowance between the cluster and a poll
// headroom and the simulator are two watchers of the same events: either may see one first by a
// few ms, so a placement the simulator records up to `skew` after a poll counts for that poll.
inline constexpr auto skew = std::chrono::milliseconds(250);
inline const std::string pat = "ghp_e2e_capacity_token";

struct env {
  cluster* c = nullptr;
  std::unique_ptr<testpeer::actions_peer> peer;
  std::string app_private_key;  // the peer also takes this GitHub App (id 12345, installation 42)
  std::string why;
};

inline clock_type::time_point parse_time(std::string_view t) {
  std::tm tm{};
  const std::string s{t};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr)
    return {};
  double frac = 0;
  if (*rest == '.') {
    double scale = 0.1;
    for (++rest; *rest >= '0' && *rest <= '9'; ++rest, scale /= 10)
      frac += (*rest - '0') * scale;
  }
  return clock_type::from_time_t(timegm(&tm)) + std::chrono::microseconds(static_cast<int64_t>(frac * 1e6));
}

// headroom-faults, the build with the test fault hooks (runtime/fault_hooks.hpp): the test
// binaries get its path; the benchmarks, which fail no actor, do not.
#ifdef HEADROOM_FAULTS_BINARY
inline constexpr const char* faults_binary = HEADROOM_FAULTS_BINARY;
#else
inline constexpr const char* faults_binary = nullptr;
#endif

// The headroom binary as a child process with a config file; SIGTERM on stop().
class agent {
 public:
  // `env`: extra NAME=value entries (the webhook secret, a DSN); the GitHub token is always set.
  agent(const std::string& dir, const std::string& yaml, std::vector<std::string> env = {}) : dir_(dir) {
    std::ofstream(dir + "/headroom.yaml") << yaml;
    // The peer's PAT, unless the test gives headroom a GitHub App instead.
    const bool app = std::any_of(env.begin(), env.end(), [](const std::string& e) { return e.rfind("HEADROOM_GITHUB_APP_ID=", 0) == 0; });
    std::vector<std::string> envs{"PATH=/usr/bin:/bin"};
    if (!app)
      envs.push_back("HEADROOM_GITHUB_TOKEN=" + pat);
    envs.insert(envs.end(), env.begin(), env.end());
    // The test fault hooks live only in headroom-faults (runtime/fault_hooks.hpp).
    const bool faults = std::find(envs.begin(), envs.end(), "HEADROOM_TEST_FAULTS=1") != envs.end();
    if (faults && faults_binary == nullptr)
      throw std::logic_error("fault hooks asked of a program built without headroom-faults' path");
    spawn({faults ? faults_binary : HEADROOM_BINARY, "--config", dir + "/headroom.yaml", "--metrics-addr", "127.0.0.1:0"},
          std::move(envs));
  }
  // Any command line that runs headroom (tests/testenv/follow-pod.sh: the chart's pod on the real node), with exactly `env`.
  struct command_line {
    std::vector<std::string> argv, env;
  };
  agent(const std::string& dir, command_line cmd) : dir_(dir) { spawn(std::move(cmd.argv), std::move(cmd.env)); }
  ~agent() {
    stop(SIGKILL);
    keep_log_of_a_failed_test();
  }
  // Returns the exit status (or -1 when it was not running).
  int stop(int sig = SIGTERM) {
    if (pid_ <= 0)
      return -1;
    kill(pid_, sig);
    int status = 0;
    for (int i = 0; i < 300 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(100ms);
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    return status;
  }
  bool alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  pid_t pid() const { return pid_; }
  // The log's last 6000 bytes (for failure messages); full_log() for what a test searches.
  std::string log() const {
    auto s = full_log();
    return s.size() > 6000 ? s.substr(s.size() - 6000) : s;
  }
  std::string full_log() const {
    std::ifstream in{dir_ + "/agent.log"};
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // A failed test's whole agent log, kept for its reader (failure messages carry only the tail, and
  // the cluster's directory goes with the test): $HEADROOM_TEST_OUTPUT (or ./test-output)/<suite>.<test>/
  // agent-<pid>.log.
  void keep_log_of_a_failed_test() const {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    if (info == nullptr || !::testing::Test::HasFailure() || !std::filesystem::exists(dir_ + "/agent.log"))
      return;
    const char* env = std::getenv("HEADROOM_TEST_OUTPUT");
    const auto to = std::filesystem::absolute(env && *env ? env : "test-output") /
                    (std::string{info->test_suite_name()} + "." + info->name());
    std::error_code ec;
    std::filesystem::create_directories(to, ec);
    std::filesystem::copy_file(dir_ + "/agent.log", to / ("agent-" + std::to_string(pid_started_) + ".log"),
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (!ec)
      std::cerr << "the agent's whole log: " << (to / ("agent-" + std::to_string(pid_started_) + ".log")).string() << "\n";
  }
  // The running agent's /metrics text (its port from the "serving /metrics" log line); empty
  // when it does not serve them (yet).
  std::string metrics() const {
    const auto port = http_port();
    if (port.empty())
      return {};
    auto r = testenv::run_command({"curl", "-sf", "http://127.0.0.1:" + port + "/metrics"});
    return r.exit_code == 0 ? r.out : std::string{};
  }
  // POST to the running agent's HTTP endpoint (the test fault hook); the body, empty on failure.
  std::string post(const std::string& path_and_query) const {
    const auto port = http_port();
    if (port.empty())
      return {};
    auto r = testenv::run_command({"curl", "-sf", "-X", "POST", "-d", "", "http://127.0.0.1:" + port + path_and_query});
    return r.exit_code == 0 ? r.out : std::string{};
  }
  // The HTTP endpoint's port from the last "serving /metrics" log line; empty before it.
  std::string http_port() const {
    const auto log = full_log();
    const auto at = log.rfind("\"msg\":\"serving /metrics");
    if (at == std::string::npos)
      return {};
    const auto port_at = log.find("\"port\":", at) + 7;
    return log.substr(port_at, log.find_first_not_of("0123456789", port_at) - port_at);
  }
  // The sum of the samples of `selector`, `name{label="value",…}`: every line of that name whose
  // labels include each given pair (a job series has more: job_name, event_name, …); -1 when none.
  double sample(const std::string& selector) const {
    const auto brace = selector.find('{');
    const std::string name = selector.substr(0, brace);
    std::vector<std::string> pairs;
    if (brace != std::string::npos) {
      const std::string inner = selector.substr(brace + 1, selector.size() - brace - 2);
      size_t from = 0;
      while (from < inner.size()) {
        size_t end = inner.find("\",", from);
        end = end == std::string::npos ? inner.size() : end + 1;
        pairs.push_back(inner.substr(from, end - from));
        from = end + 1;
      }
    }
    const std::string text = metrics();
    double sum = 0;
    bool found = false;
    size_t at = 0;
    while (at < text.size()) {
      size_t eol = text.find('\n', at);
      if (eol == std::string::npos)
        eol = text.size();
      const std::string line = text.substr(at, eol - at);
      at = eol + 1;
      if (line.empty() || line[0] == '#' || line.compare(0, name.size(), name) != 0)
        continue;
      const char after = line.size() > name.size() ? line[name.size()] : '\0';
      if (after != '{' && after != ' ')
        continue;
      const auto space = line.rfind(' ');
      const std::string labels = after == '{' ? line.substr(name.size(), line.rfind('}') + 1 - name.size()) : "{}";
      bool all = true;
      for (const auto& p : pairs)
        all = all && (labels.find("{" + p + ",") != std::string::npos || labels.find("," + p + ",") != std::string::npos ||
                      labels.find("{" + p + "}") != std::string::npos || labels.find("," + p + "}") != std::string::npos);
      if (!all)
        continue;
      sum += std::stod(line.substr(space + 1));
      found = true;
    }
    return found ? sum : -1.0;
  }

 private:
  void spawn(std::vector<std::string> args, std::vector<std::string> envs) {
    const std::string log = dir_ + "/agent.log";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<char*> argv, envp;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : envs)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn(&pid_, args[0].c_str(), &fa, nullptr, argv.data(), envp.data());
    pid_started_ = pid_;
    posix_spawn_file_actions_destroy(&fa);
  }
  std::string dir_;
  pid_t pid_ = -1, pid_started_ = -1;
};

struct scenario {
  std::string name;    // scale set name = namespace = job label
  int max_runners = 4;
  int proactive = 2;
  std::string timeout = "5m";
  std::string job_duration = "4s";
  bool repoll = true;
  std::string workflow_delay = "0s";  // the runner's setup time before its workflow pod
  // arc mode: headroom scales ARC's EphemeralRunnerSet of the AutoscalingRunnerSet named as the
  // scale set, and the simulator plays ARC's controller (tests/peers/runner-sim/arc.go)
  bool arc = false;
  std::string health = "{interval: 5s, registrationTimeout: 60s}";
  int skip_runners = 0;               // the simulator leaves the first N runner pods alone
  std::string labels;         // extra runner labels, YAML flow list items: "shared-ci"
  std::string node_selector;  // YAML flow mapping items for the runner template: "pool: nowhere"
  std::string ttl;            // placeholderTTL; empty: the default (15m)
  bool hud = false;           // demand from the peer's fake HUD (1 s interval)
  std::string hud_share;      // hud.share, a YAML flow mapping: "{index: 0, count: 2}"
  std::string hud_token_env = "HEADROOM_HUD_TOKEN";  // or the design's HUD_API_TOKEN
  std::string tolerations;    // YAML flow list items for the runner template
  std::string workflow_resources = "{cpu: 500m, memory: 512Mi}";
  bool fault_hooks = false;   // HEADROOM_TEST_FAULTS=1 (runtime/fault_hooks.hpp)
  std::string watch_stall;    // kubernetes.watchStallTimeout; empty: the default (90s)
  bool exit_runner_pods = true;  // a runner pod goes Succeeded after its job, as an ephemeral runner's does
  bool chart_install = false;     // the test installs the chart itself (no chart-identity.sh, no start())
  int max_burst = 0;              // capacityAware.maxBurstCapacity (0: none)
  std::string warm_pool;          // capacityAware.warmPool, a YAML flow mapping; empty: none
  // The runner as a pod template (runner.template, as ARC's `template:`) with a label, a security
  // context, an env entry and a sidecar of the user's, instead of the short form.
  bool runner_template = false;
  // runner.containerMode; "" the default (kubernetes-novolume). "kubernetes" adds the work volume's
  // claim, of the simulator's StorageClass (tests/peers/runner-sim/volumes.go).
  std::string container_mode;
  // The short form's runner image, command (YAML flow list items; empty: the default) and
  // resources, and the placeholders' image (empty: the default): a real node pulls what it runs.
  std::string runner_image = "runner:e2e";
  std::string runner_command;
  std::string runner_resources = "{cpu: 500m, memory: 512Mi}";
  std::string placeholder_image;
  // The runners run in their own containers on the real node (the runner image's `runner-sim
  // runner`, tests/testenv/node push-runner): the simulator only watches.
  bool runners_in_pods = false;

  scenario() = default;
  scenario(std::string n, int max, int pool, std::string ready_timeout, std::string job)
      : name(std::move(n)), max_runners(max), proactive(pool), timeout(std::move(ready_timeout)), job_duration(std::move(job)) {}
};

// `kubeconfig`: the identity headroom runs as (the chart's ServiceAccount, see world).
// The placeholder pairs of namespace `ns`, by scale set: how many, and how many are not placed. A
// pair starts as a probe beside its workflow placeholder and gets its runner placeholder once both
// are placed (actors/capacity/placeholder_pair.cpp), so a slot with a probe or a runner placeholder
// is a pair, placed when its runner and workflow placeholders both run; a workflow placeholder
// alone is a hand-off, not a pair. Terminating pods are not counted.
struct pair_count {
  std::map<std::string, int> pairs, pending;
  int total_pending = 0;
};
inline pair_count count_pairs(const cluster* c, const std::string& ns) {
  auto r = c->kubectl({"-n", ns, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder,pair-probe)", "-o",
                       "jsonpath={range .items[*]}{.metadata.labels.headroom\\.dev/scale-set}{\" \"}{.metadata.labels.headroom\\.dev/slot}"
                       "{\" \"}{.metadata.labels.headroom\\.dev/role}{\" \"}{.status.phase}{\" \"}{.metadata.deletionTimestamp}{\"\\n\"}{end}"});
  struct slot_pods {
    bool pair = false, runner_running = false, workflow_running = false;
  };
  std::map<std::pair<std::string, std::string>, slot_pods> slots;
  std::istringstream in{r.out};
  for (std::string line; std::getline(in, line);) {
    std::istringstream f{line};
    std::string set, slot, role, phase, deleting;
    f >> set >> slot >> role >> phase >> deleting;
    if (set.empty() || !deleting.empty())
      continue;
    auto& p = slots[{set, slot}];
    p.pair = p.pair || role != "workflow-placeholder";
    p.runner_running = p.runner_running || (role == "runner-placeholder" && phase == "Running");
    p.workflow_running = p.workflow_running || (role == "workflow-placeholder" && phase == "Running");
  }
  pair_count out;
  for (const auto& [key, p] : slots) {
    if (!p.pair)
      continue;
    ++out.pairs[key.first];
    if (!(p.runner_running && p.workflow_running)) {
      ++out.pending[key.first];
      ++out.total_pending;
    }
  }
  return out;
}

inline const std::string hud_token = "hud-e2e-token-0123456789";

// The runner pods' ServiceAccount the chart makes in the scale set's namespace (release e2e-<name>,
// templates/rbac.yaml): what the runner's container hook may do there, with that account's token.
inline std::string runner_account(const scenario& s) { return "e2e-" + s.name + "-headroom-runner"; }

inline std::string config_for(const env& e, const scenario& s, const std::string& kubeconfig, bool capacity_aware = true) {
  return "kubernetes:\n  kubeconfig: " + kubeconfig + (s.watch_stall.empty() ? std::string{} : "\n  watchStallTimeout: " + s.watch_stall) +
         (s.hud ? "\nhud:\n  url: " + e.peer->http_url() + "/api/clickhouse/queued_jobs_aggregate\n  interval: 1s" +
                      (s.hud_share.empty() ? std::string{} : "\n  share: " + s.hud_share)
                : std::string{}) +
         "\nleaderElection:\n  enabled: false\ngithub:\n  configUrl: " + e.peer->http_url() +
         "/headroom-org\nscaleSets:\n  - name: " + s.name + "\n    namespace: " + s.name +
         "\n    maxRunners: " + std::to_string(s.max_runners) + "\n    labels: [" + s.labels + "]" +
         (s.arc ? "\n    mode: arc" : "") +
         (s.runner_template
              ? "\n    runner:\n      template:\n        metadata: {labels: {e2e-template: \"yes\"}}\n        spec:\n"
                "          serviceAccountName: " + runner_account(s) + "\n          nodeSelector: {" + s.node_selector +
                    "}\n          tolerations: [" + s.tolerations + "]\n          securityContext: {fsGroup: 1001}\n"
                    "          containers:\n            - name: runner\n              image: runner:e2e\n"
                    "              env: [{name: E2E_TEMPLATE, value: \"1\"}]\n"
                    "              resources: {requests: {cpu: 500m, memory: 512Mi}, limits: {memory: 1Gi}}\n"
                    "            - {name: sidecar, image: sidecar:e2e}\n"
              : "\n    runner:\n      image: " + s.runner_image + "\n      resources: " + s.runner_resources + "\n" +
                    (s.runner_command.empty() ? std::string{} : "      command: [" + s.runner_command + "]\n") +
                    // dind and none runners need no API access (ARC's no-permission account): the chart makes none
                    (s.container_mode == "dind" || s.container_mode == "none" ? std::string{} : "      serviceAccountName: " + runner_account(s) + "\n") +
                    "      nodeSelector: {" + s.node_selector + "}\n      tolerations: [" + s.tolerations + "]\n") +
         (s.container_mode.empty() ? std::string{} : "      containerMode: " + s.container_mode + "\n") +
         (s.container_mode != "kubernetes" ? std::string{}
                                           : "      workVolumeClaim: {accessModes: [ReadWriteOnce], storageClassName: e2e-work, "
                                             "resources: {requests: {storage: 1Gi}}}\n") +
         "    capacityAware:\n      enabled: " + (capacity_aware ? "true" : "false") +
         "\n      proactiveCapacity: " + std::to_string(s.proactive) + "\n      maxBurstCapacity: " + std::to_string(s.max_burst) +
         (s.warm_pool.empty() ? std::string{} : "\n      warmPool: " + s.warm_pool) +
         "\n      recalculateInterval: 2s\n      repollOnChange: " + (s.repoll ? "true" : "false") +
         "\n      placeholderReadyTimeout: " + s.timeout + (s.ttl.empty() ? std::string{} : "\n      placeholderTTL: " + s.ttl) +
         "\n      workflowResources: " + s.workflow_resources + "\n" +
         (s.placeholder_image.empty() ? std::string{} : "      placeholderImage: " + s.placeholder_image + "\n") +
         "    healthCheck: " + s.health + "\n";
}

// A test's world: its namespace, the runner simulator in it, and headroom.
struct world {
  env& e;
  scenario s;
  std::string dir;
  std::unique_ptr<testpeer::peer_process> sim;
  std::unique_ptr<agent> headroom;
  std::string kubeconfig;  // the chart's ServiceAccount for this scale set
  bool identity = false;   // the kubeconfig was made
  bool apiserver_restarted = false;  // a chaos scenario restarted kube-apiserver under headroom
  std::string why;

  world(env& env_, scenario sc) : e(env_), s(std::move(sc)) {
    dir = e.c->dir() + "/e2e-" + s.name;
    std::filesystem::create_directories(dir);
    e.c->kubectl({"create", "namespace", s.name});
    sim = testpeer::peer_process::start("tests/peers/runner-sim/build.sh",
                                        {"--kubeconfig", e.c->kubeconfig(), "--namespace", s.name, "--peer",
                                         e.peer->http_url(), "--job-duration", s.job_duration, "--workflow-delay", s.workflow_delay,
                                         "--skip-runners", std::to_string(s.skip_runners),
                                         s.exit_runner_pods ? "--exit-runner-pods" : "--exit-runner-pods=false",
                                         s.arc ? "--arc-controller" : "--arc-controller=false",
                                         s.runners_in_pods ? "--runners-in-pods" : "--runners-in-pods=false"},
                                        why);
    if (s.chart_install) {
      identity = true;
      return;
    }
    // headroom runs as the Helm chart's ServiceAccount with the chart's RBAC for this scale set
    // (a TokenRequest token), so a permission the chart forgot fails the scenario.
    std::ofstream(dir + "/values.yaml") << "config:\n  github: {configUrl: " << e.peer->http_url()
                                        << "/headroom-org}\n  scaleSets:\n    - {name: " << s.name << ", namespace: " << s.name
                                        << (s.arc ? ", mode: arc" : "")
                                        << (s.container_mode.empty() ? "" : ", runner: {containerMode: " + s.container_mode + "}")
                                        << "}\ngithub: {existingSecret: e2e-github}\n"
                                        // the seed's class names (the config's defaults), shared by the scenarios
                                        << "priorityClasses: {placeholderRunner: placeholder-runner, runner: arc-runner, "
                                           "placeholderWorkflow: placeholder-workflow, workflow: arc-workflow}\n";
    auto id = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/chart-identity.sh", e.c->kubeconfig(),
                                    dir + "/values.yaml", "e2e-" + s.name, "headroom-e2e", dir + "/chart.kubeconfig"});
    identity = id.exit_code == 0;
    if (!identity)
      why += "the chart's identity: " + id.err;
    kubeconfig = dir + "/chart.kubeconfig";
  }
  // The cluster is shared by the scenarios of one run and the NodePool is small: each world gives
  // its room back (headroom stopped in order, the namespace and every pod in it deleted).
  ~world() {
    if (headroom) {
      // No object headroom made beside its pods (the runners' PodDisruptionBudget, the owner
      // ConfigMap, the runners' Secrets) drew a Warning from a controller (#61: the budget's
      // UnmanagedPods, on every sync). Pods draw the scheduler's FailedScheduling by design.
      const auto warnings = e.c->kubectl({"-n", s.name, "get", "events", "--field-selector", "type=Warning", "-o",
                                          "jsonpath={range .items[*]}{.involvedObject.kind}/{.involvedObject.name} {.reason}: "
                                          "{.message}{\"\\n\"}{end}"});
      std::istringstream lines{warnings.out};
      for (std::string line; std::getline(lines, line);)
        if (line.starts_with("PodDisruptionBudget/") || line.starts_with("ConfigMap/") || line.starts_with("Secret/"))
          ADD_FAILURE() << s.name << ": a Warning about an object headroom made: " << line;
      headroom->stop(SIGTERM);
      // Anything the chart's RBAC refused (an Event, a cleanup) is a missing permission, even
      // when the scenario got by without it.
      // (A restarted API server answers 403 for a moment, until its RBAC caches are filled: a
      // watch that met one then and reconnected, a runner pod or placeholder delete tried again,
      // a runner pod create followed by one that succeeded (the provisioner makes the runner
      // again: seen once in CI), a placeholder create that lost its pair (the monitor makes
      // another: the chaos scenario asserts the warm pool's return), a workflow pod's nomination or
      // ungating followed by one that succeeded, or a ScaleSet status write that was written again
      // afterwards, is not a missing permission. Nor is any refusal that names a role or cluster
      // role RBAC could not find ("RBAC: … not found"): the chart's roles exist, so that is the
      // restarted server's empty cache; a permission missing from a role is refused without it.)
      const auto log = headroom->full_log();
      for (auto at = log.find("403 Forbidden"); at != std::string::npos; at = log.find("403 Forbidden", at + 1)) {
        const auto start = log.rfind('\n', at) + 1, end = log.find('\n', at);
        const auto line = log.substr(start, end == std::string::npos ? std::string::npos : end - start);
        const auto rbac = line.find("RBAC: ");
        if (apiserver_restarted && ((rbac != std::string::npos && line.find(" not found", rbac) != std::string::npos) ||
                                    line.find("watch failed, reconnecting") != std::string::npos ||
                                    line.find("runner pod delete failed; trying again") != std::string::npos ||
                                    line.find("placeholder delete failed; the next recompute tries again") != std::string::npos ||
                                    (line.find("\"pair lost\"") != std::string::npos && line.find("failed: create pods") != std::string::npos) ||
                                    (line.find("could not nominate a workflow pod") != std::string::npos &&
                                     log.find("workflow pods are nominated to their rooms again", at) != std::string::npos) ||
                                    (line.find("could not ungate a workflow pod") != std::string::npos &&
                                     log.find("workflow pods are ungated again", at) != std::string::npos) ||
                                    (line.find("runner pod create failed") != std::string::npos &&
                                     log.find("\"runner pod created\"", at) != std::string::npos) ||
                                    (line.find("could not write the ScaleSet status") != std::string::npos &&
                                     log.find("ScaleSet status written again", at) != std::string::npos)))
          continue;
        ADD_FAILURE() << s.name << ": the API server refused headroom something the chart should grant: " << line;
        break;
      }
    }
    sim.reset();
    e.c->kubectl({"delete", "namespace", s.name, "--timeout=90s"});
  }
  world(const world&) = delete;
  world& operator=(const world&) = delete;

  void start(bool capacity_aware = true) {
    std::vector<std::string> env;
    if (s.hud)
      env.push_back(s.hud_token_env + "=" + hud_token);
    if (s.fault_hooks)
      env.push_back("HEADROOM_TEST_FAULTS=1");
    headroom = std::make_unique<agent>(dir, config_for(e, s, kubeconfig, capacity_aware), env);
  }

  int64_t scale_set_id() const {
    simdjson::dom::parser p;
    for (auto ss : p.parse(e.peer->control("/state").body)["scaleSets"].get_array())
      if (std::string_view(ss["name"]) == s.name)
        return int64_t(ss["id"]);
    return 0;
  }

  std::string post_jobs(int n) const {
    return e.peer->control("/jobs", "{\"labels\":[\"" + s.name + "\"],\"count\":" + std::to_string(n) + "}").body;
  }

  std::map<std::string, int> job_states() const {
    simdjson::dom::parser p;
    std::map<std::string, int> out;
    for (auto j : p.parse(e.peer->control("/state").body)["jobs"].get_array()) {
      bool ours = false;
      for (auto l : j["labels"].get_array())
        ours |= std::string_view(l) == s.name;
      if (ours)
        ++out[std::string{std::string_view(j["state"])}];
    }
    return out;
  }

  // For a failure message when jobs do not finish: where each job and runner stands, and the pods.
  std::string stuck_report() const {
    std::string out = "[" + s.name + "] jobs:";
    for (const auto& [state, n] : job_states())
      out += " " + state + "=" + std::to_string(n);
    out += "\n[" + s.name + "] simulator: " + testpeer::http_call(sim->ready("http") + "/state").body.substr(0, 4000) + "\n";
    out += e.c->kubectl({"-n", s.name, "get", "pods,pvc", "-o", "wide"}).out;
    // Who took whose room: the scheduler's preemptions and the deletions of the runners' pods.
    out += e.c->kubectl({"-n", s.name, "get", "events", "--sort-by=.lastTimestamp", "-o",
                         "custom-columns=AT:.lastTimestamp,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message"})
               .out;
    return out;
  }

  int64_t latest_capacity(int64_t set) const {
    simdjson::dom::parser p;
    int64_t cap = -1;
    for (auto poll : p.parse(e.peer->control("/state").body)["polls"].get_array())
      if (int64_t(poll["scaleSetId"]) == set)
        cap = int64_t(poll["capacity"]);
    return cap;
  }

  int placeholders_running() const {
    auto r = e.c->kubectl({"-n", s.name, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)",
                           "-o", "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}"});
    int n = 0;
    for (size_t i = r.out.find("Running"); i != std::string::npos; i = r.out.find("Running", i + 1))
      ++n;
    return n;
  }
  // Slots whose runner and workflow placeholders are both Running (a consumed pair's workflow
  // placeholder alone, still holding its workflow's room, is not a pair).
  int ready_pairs() const {
    auto r = e.c->kubectl({"-n", s.name, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)",
                           "-o", "jsonpath={range .items[?(@.status.phase==\"Running\")]}{.metadata.labels.headroom\\.dev/slot}{\"\\n\"}{end}"});
    std::map<std::string, int> per_slot;
    std::istringstream in{r.out};
    for (std::string slot; std::getline(in, slot);)
      if (!slot.empty())
        ++per_slot[slot];
    return static_cast<int>(std::count_if(per_slot.begin(), per_slot.end(), [](const auto& p) { return p.second == 2; }));
  }
  // The placed pairs (slots with a Running placeholder) and those whose placeholders are on two
  // nodes ("slot slot …"), for the modes that keep a pair on one node.
  std::pair<size_t, std::string> split_pairs() const {
    auto r = e.c->kubectl({"-n", s.name, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)", "-o",
                           "jsonpath={range .items[?(@.status.phase==\"Running\")]}{.metadata.labels.headroom\\.dev/slot} "
                           "{.spec.nodeName}{\"\\n\"}{end}"});
    std::map<std::string, std::set<std::string>> nodes;
    std::istringstream in{r.out};
    for (std::string slot, node; in >> slot >> node;)
      nodes[slot].insert(node);
    std::string split;
    for (const auto& [slot, on] : nodes)
      if (on.size() > 1)
        split += slot + " ";
    return {nodes.size(), split};
  }
  int placeholder_pods() const {
    auto r = e.c->kubectl({"-n", s.name, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)",
                           "-o", "name"});
    return static_cast<int>(std::count(r.out.begin(), r.out.end(), '\n'));
  }

  // What the simulator's runners did with their jobs (#54): through the container hook (a workflow
  // pod made with the runner pod's own ServiceAccount token), in the runner container (no hook), or
  // failed, with the reasons a runner's log would give.
  struct runner_outcomes {
    int hook = 0, in_runner = 0;
    int dind = 0;  // in the runner container, the job's containers through the pod's Docker daemon
    std::string errors;
    int errored = 0;  // runners whose job failed (the error lines above)
    int workflow_elsewhere = 0;  // workflow pods Running on another node than their runner pod's
    double slowest_workflow_s = 0;  // the longest from a workflow pod's create to its Running
    std::vector<double> workflow_waits;  // each workflow pod's create to Running, seconds
    // When each job's work began (its workflow pod Running, or the job started in the runner
    // container), by the runner request id the runner took: when, since the epoch.
    std::map<int64_t, std::chrono::system_clock::time_point> work_began;
    int lost = 0;  // runner pods that went (preempted, evicted) while their job ran: the job dies with a real runner
    std::string lost_why;
  };
  runner_outcomes outcomes() const {
    simdjson::dom::parser p;
    runner_outcomes out;
    for (auto r : p.parse(testpeer::http_call(sim->ready("http") + "/state").body)["runners"].get_array()) {
      std::string_view error, created;
      bool in_runner = false;
      if (r["error"].get(error) == simdjson::SUCCESS && !error.empty() && error.rfind("skipped", 0) != 0) {
        const std::string pod{std::string_view(r["pod"])};
        ++out.errored;
        // What the cluster said about the pod (a preemption, an eviction, a node gone), for the reader.
        out.errors += pod + ": " + std::string{error} + "\n" +
                      e.c->kubectl({"-n", s.name, "get", "events", "--field-selector", "involvedObject.name=" + pod}).out;
      }
      std::string_view lost;
      if (r["lostMidJob"].get(lost) == simdjson::SUCCESS && !lost.empty()) {
        ++out.lost;
        out.lost_why += std::string{std::string_view(r["pod"])} + ": " + std::string{lost} + "\n";
      }
      std::string_view node, wf_node, running;
      bool dind = false;
      if (r["dind"].get(dind) == simdjson::SUCCESS && dind)
        ++out.dind;
      if (r["inRunner"].get(in_runner) == simdjson::SUCCESS && in_runner)
        ++out.in_runner;
      else if (r["workflowCreatedAt"].get(created) == simdjson::SUCCESS && created.rfind("0001-", 0) != 0)
        ++out.hook;
      if (r["workflowNode"].get(wf_node) == simdjson::SUCCESS && r["node"].get(node) == simdjson::SUCCESS && !wf_node.empty())
        out.workflow_elsewhere += wf_node != node;
      if (!created.empty() && created.rfind("0001-", 0) != 0 && r["workflowRunningAt"].get(running) == simdjson::SUCCESS &&
          running.rfind("0001-", 0) != 0)
      {
        out.workflow_waits.push_back(std::chrono::duration<double>(parse_time(running) - parse_time(created)).count());
        out.slowest_workflow_s = std::max(out.slowest_workflow_s, out.workflow_waits.back());
      }
      int64_t request = 0;
      if (r["jobRequestId"].get(request) == simdjson::SUCCESS && request != 0 && r["workflowRunningAt"].get(running) == simdjson::SUCCESS &&
          running.rfind("0001-", 0) != 0)
        out.work_began[request] = parse_time(running);
    }
    return out;
  }

  // The audit of every poll of `set`: advertised ≤ maxRunners, and advertised ≤ jobs held when the
  // service read the poll + pairs placed within `window` before it arrived (or `skew` after it was
  // read) + jobs completed in that span. (A poll arrives and is read at once, unless a fault
  // holds it: then the span runs from its arrival, when headroom decided what it carries.)
  struct audit_result {
    int checked = 0;
    std::vector<std::string> violations;
  };
  audit_result audit(int64_t set) const {
    simdjson::dom::parser p1, p2;
    auto peer = p1.parse(e.peer->control("/state").body);
    auto simst = p2.parse(testpeer::http_call(sim->ready("http") + "/state").body);
    std::vector<std::pair<clock_type::time_point, int64_t>> ready;
    for (auto t : simst["timeline"].get_array())
      ready.emplace_back(parse_time(std::string_view(t["at"])), int64_t(t["readyPairs"]));
    std::vector<clock_type::time_point> completions;
    for (auto j : peer["jobs"].get_array())
      if (int64_t(j["scaleSetId"]) == set && std::string_view(j["state"]) == "completed")
        completions.push_back(parse_time(std::string_view(j["finishTime"])));
    audit_result out;
    for (auto poll : peer["polls"].get_array()) {
      if (int64_t(poll["scaleSetId"]) != set)
        continue;
      const auto at = parse_time(std::string_view(poll["at"]));
      // A poll a fault held before the service looked carries the capacity headroom decided when
      // it sent it: judged against the cluster anywhere from then to when the service read it.
      std::string_view arrived_text;
      const auto arrived = poll["arrivedAt"].get(arrived_text) == simdjson::SUCCESS ? std::min(at, parse_time(arrived_text)) : at;
      const int64_t cap = int64_t(poll["capacity"]), held = int64_t(poll["heldAtStart"]);
      int64_t max_ready = 0;
      for (size_t i = 0; i < ready.size(); ++i) {
        const auto until = i + 1 < ready.size() ? ready[i + 1].first : clock_type::time_point::max();
        if (ready[i].first <= at + skew && until >= arrived - window)
          max_ready = std::max(max_ready, ready[i].second);
      }
      int64_t recent = 0;
      for (auto c : completions)
        recent += (c <= at && c >= arrived - window) ? 1 : 0;
      const auto seq = std::to_string(int64_t(poll["seq"]));
      if (cap > s.max_runners)
        out.violations.push_back("poll " + seq + " advertised " + std::to_string(cap) + " > maxRunners");
      if (cap > held + max_ready + recent)
        out.violations.push_back("poll " + seq + " advertised " + std::to_string(cap) + " with " + std::to_string(held) +
                                 " jobs held, " + std::to_string(max_ready) + " pairs placed, " + std::to_string(recent) +
                                 " jobs just completed");
      ++out.checked;
    }
    return out;
  }
};

// A benchmark's world: the control plane with Karpenter and the Actions Service peer holding each
// poll 50 s as the service does. False, with the reason on stderr, when either cannot start.
inline bool bench_env(env& e, const char* bench) {
  e.c = cluster::shared(cluster_options{.karpenter = true});
  if (!e.c) {
    std::cerr << bench << " needs the test control plane: " << cluster::unavailable_reason() << "\n";
    return false;
  }
  testpeer::actions_peer::options o;
  o.pat = pat;
  o.poll_hold = "50s";
  e.peer = testpeer::actions_peer::start(o, e.why);
  if (!e.peer) {
    std::cerr << "Actions Service peer: " << e.why << "\n";
    return false;
  }
  return true;
}

}  // namespace headroom::e2e
