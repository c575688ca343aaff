// The capacity-aware listener end to end: the headroom binary on the real control plane (kube-
// scheduler, Karpenter's kwok provider with an 8-CPU NodePool), the Actions Service peer, and the
// runner simulator (tests/peers/runner-sim) playing each runner and its workflow pod.
//
// Every scenario ends with the same audit of every poll the peer logged for its scale set:
//   advertised ≤ maxRunners, and
//   advertised ≤ jobs the scale set held when the poll arrived + pairs whose two placeholders the
//                simulator saw Running within the propagation window before it + jobs that
//                completed within that window (headroom learns of a completion one message later).

#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fcntl.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <fstream>
#include <iostream>
#include <thread>

#include "testenv/actions_peer.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/peer_process.hpp"

extern char** environ;

namespace headroom {
namespace {

using namespace std::chrono_literals;
using testenv::cluster;
using testenv::cluster_options;
using testenv::eventually;
using clock_type = std::chrono::system_clock;

constexpr auto window = 2s;  // propagation allowance between the cluster and a poll
const std::string pat = "ghp_e2e_capacity_token";

struct env {
  cluster* c = nullptr;
  std::unique_ptr<testpeer::actions_peer> peer;
  std::string why;
};

env& shared() {
  static env e = [] {
    env out;
    out.c = cluster::shared(cluster_options{.karpenter = true});
    if (!out.c) {
      out.why = cluster::unavailable_reason();
      return out;
    }
    testpeer::actions_peer::options o;
    o.pat = pat;
    o.poll_hold = "20s";
    out.peer = testpeer::actions_peer::start(o, out.why);
    return out;
  }();
  return e;
}

struct env_teardown : ::testing::Environment {
  void TearDown() override { shared().peer.reset(); }
};
const auto* const teardown = ::testing::AddGlobalTestEnvironment(new env_teardown);

#define REQUIRE_ENV(var)                                                          \
  auto& var = shared();                                                           \
  HEADROOM_REQUIRE_READY(var.c != nullptr && var.peer, "the control plane and the Actions Service peer", var.why)

clock_type::time_point parse_time(std::string_view t) {
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

// The headroom binary as a child process with a config file; SIGTERM on stop().
class agent {
 public:
  agent(const std::string& dir, const std::string& yaml) : dir_(dir) {
    std::ofstream(dir + "/headroom.yaml") << yaml;
    const std::string log = dir + "/agent.log";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<std::string> args{HEADROOM_BINARY, "--config", dir + "/headroom.yaml", "--metrics-addr", "127.0.0.1:0"};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> envs{"HEADROOM_GITHUB_TOKEN=" + pat, "PATH=/usr/bin:/bin"};
    std::vector<char*> envp;
    for (auto& e : envs)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn(&pid_, HEADROOM_BINARY, &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
  }
  ~agent() { stop(SIGKILL); }
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
  std::string log() const {
    std::ifstream in{dir_ + "/agent.log"};
    std::stringstream ss;
    ss << in.rdbuf();
    auto s = ss.str();
    return s.size() > 6000 ? s.substr(s.size() - 6000) : s;
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

struct scenario {
  std::string name;    // scale set name = namespace = job label
  int max_runners = 4;
  int proactive = 2;
  std::string timeout = "5m";
  std::string job_duration = "4s";
};

std::string config_for(const env& e, const scenario& s, bool capacity_aware = true) {
  return "kubernetes:\n  kubeconfig: " + e.c->kubeconfig() +
         "\nleaderElection:\n  enabled: false\ngithub:\n  configUrl: " + e.peer->http_url() +
         "/headroom-org\nscaleSets:\n  - name: " + s.name + "\n    namespace: " + s.name +
         "\n    maxRunners: " + std::to_string(s.max_runners) +
         "\n    runner:\n      image: runner:e2e\n      resources: {cpu: 500m, memory: 512Mi}\n"
         "    capacityAware:\n      enabled: " + (capacity_aware ? "true" : "false") +
         "\n      proactiveCapacity: " + std::to_string(s.proactive) +
         "\n      recalculateInterval: 2s\n      placeholderReadyTimeout: " + s.timeout +
         "\n      workflowResources: {cpu: 500m, memory: 512Mi}\n"
         "    healthCheck: {interval: 5s, registrationTimeout: 60s}\n";
}

// A test's world: its namespace, the runner simulator in it, and headroom.
struct world {
  env& e;
  scenario s;
  std::string dir;
  std::unique_ptr<testpeer::peer_process> sim;
  std::unique_ptr<agent> headroom;
  std::string why;

  world(env& env_, scenario sc) : e(env_), s(std::move(sc)) {
    dir = e.c->dir() + "/e2e-" + s.name;
    std::filesystem::create_directories(dir);
    e.c->kubectl({"create", "namespace", s.name});
    sim = testpeer::peer_process::start("tests/peers/runner-sim/build.sh",
                                        {"--kubeconfig", e.c->kubeconfig(), "--namespace", s.name, "--peer",
                                         e.peer->http_url(), "--job-duration", s.job_duration, "--workflow-cpu", "500m",
                                         "--workflow-memory", "512Mi"},
                                        why);
  }
  void start(bool capacity_aware = true) { headroom = std::make_unique<agent>(dir, config_for(e, s, capacity_aware)); }

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
  int placeholder_pods() const {
    auto r = e.c->kubectl({"-n", s.name, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)",
                           "-o", "name"});
    return static_cast<int>(std::count(r.out.begin(), r.out.end(), '\n'));
  }

  // The audit of every poll of `set` (see the top of this file). Returns the number of polls checked.
  int audit(int64_t set) const {
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
    int checked = 0;
    for (auto poll : peer["polls"].get_array()) {
      if (int64_t(poll["scaleSetId"]) != set)
        continue;
      const auto at = parse_time(std::string_view(poll["at"]));
      const int64_t cap = int64_t(poll["capacity"]), held = int64_t(poll["heldAtStart"]);
      int64_t max_ready = 0;
      for (size_t i = 0; i < ready.size(); ++i) {
        const auto until = i + 1 < ready.size() ? ready[i + 1].first : clock_type::time_point::max();
        if (ready[i].first <= at && until >= at - window)
          max_ready = std::max(max_ready, ready[i].second);
      }
      int64_t recent = 0;
      for (auto c : completions)
        recent += (c <= at && c >= at - window) ? 1 : 0;
      EXPECT_LE(cap, s.max_runners) << "poll " << int64_t(poll["seq"]);
      EXPECT_LE(cap, held + max_ready + recent)
          << "poll " << int64_t(poll["seq"]) << " advertised " << cap << " with " << held << " jobs held, " << max_ready
          << " pairs placed, " << recent << " jobs just completed";
      ++checked;
    }
    std::cout << "[audit] " << s.name << ": " << checked << " polls checked against the cluster\n";
    return checked;
  }
};

#define REQUIRE_WORLD(w) HEADROOM_REQUIRE_READY(w.sim != nullptr, "the runner simulator", w.why)

// A warm pool of proactiveCapacity pairs is placed and advertised; a burst of jobs larger than the
// pool runs to completion through runner pods and workflow pods that preempt the placeholders.
TEST(capacity_e2e, capacity_warm_pool_and_burst) {
  REQUIRE_ENV(e);
  world w{e, {"capacity-burst", 4, 2, "5m", "3s"}};
  REQUIRE_WORLD(w);
  w.start();
  int64_t set = 0;
  ASSERT_TRUE(eventually([&] { return (set = w.scale_set_id()) != 0; }, 60s)) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.latest_capacity(set) == 2; }, 120s))
      << "a warm pool of 2 placed pairs advertises 2\n" << w.headroom->log();
  EXPECT_EQ(w.placeholders_running(), 4);

  w.post_jobs(6);
  ASSERT_TRUE(eventually([&] { return w.job_states()["completed"] == 6; }, 240s))
      << "all 6 jobs complete through the 4-runner scale set\n" << w.headroom->log() << "\n" << w.sim->log();
  // Back to the warm pool afterwards.
  EXPECT_TRUE(eventually([&] { return w.latest_capacity(set) == 2; }, 120s)) << w.headroom->log();
  EXPECT_GT(w.audit(set), 3);

  EXPECT_EQ(WIFEXITED(w.headroom->stop()), true);
  // SIGTERM: the session is deleted and the placeholders go with it.
  simdjson::dom::parser p;
  bool session_left = false;
  for (auto se : p.parse(e.peer->control("/state").body)["sessions"].get_array())
    session_left |= int64_t(se["scaleSetId"]) == set;
  EXPECT_FALSE(session_left) << "SIGTERM deletes the session";
  EXPECT_TRUE(eventually([&] { return w.placeholder_pods() == 0; }, 60s)) << "SIGTERM deletes the placeholders";
}

// proactiveCapacity 0 and no demand: no pairs, and the scale set advertises only its running jobs
// (none): a queued job is not claimed.
TEST(capacity_e2e, capacity_scale_to_zero) {
  REQUIRE_ENV(e);
  world w{e, {"capacity-zero", 4, 0, "5m", "3s"}};
  REQUIRE_WORLD(w);
  w.start();
  int64_t set = 0;
  ASSERT_TRUE(eventually([&] { return (set = w.scale_set_id()) != 0; }, 60s)) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.latest_capacity(set) == 0; }, 60s)) << w.headroom->log();
  w.post_jobs(1);
  std::this_thread::sleep_for(8s);
  EXPECT_EQ(w.job_states()["queued"], 1) << "a scale set with no placed capacity must not claim the job";
  EXPECT_EQ(w.placeholder_pods(), 0);
  EXPECT_GT(w.audit(set), 0);
}

// The NodePool's 8 CPUs cannot hold the pairs asked for: the ones without a node time out, are
// deleted, and the advertised capacity never counts them.
TEST(capacity_e2e, capacity_exhausted_pairs_time_out) {
  REQUIRE_ENV(e);
  world w{e, {"capacity-full", 20, 12, "20s", "3s"}};
  REQUIRE_WORLD(w);
  w.start();
  int64_t set = 0;
  ASSERT_TRUE(eventually([&] { return (set = w.scale_set_id()) != 0; }, 60s)) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.headroom->log().find("pair timed out") != std::string::npos; }, 120s))
      << w.headroom->log();
  const int64_t cap = w.latest_capacity(set);
  EXPECT_LT(cap, 12) << "12 pairs of 1 CPU cannot all be placed in an 8-CPU pool";
  EXPECT_GT(w.audit(set), 0);
}

// headroom killed (SIGKILL) mid-burst and started again: the first process's placeholders are
// deleted, not counted; the jobs still complete; no poll ever over-advertises.
TEST(capacity_e2e, capacity_restart_mid_burst) {
  REQUIRE_ENV(e);
  world w{e, {"capacity-restart", 3, 2, "5m", "6s"}};
  REQUIRE_WORLD(w);
  w.start();
  int64_t set = 0;
  ASSERT_TRUE(eventually([&] { return (set = w.scale_set_id()) != 0; }, 60s)) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.latest_capacity(set) == 2; }, 120s)) << w.headroom->log();
  w.post_jobs(4);
  ASSERT_TRUE(eventually([&] { return w.job_states()["running"] >= 1; }, 120s)) << w.headroom->log();
  w.headroom->stop(SIGKILL);
  w.start();  // the old session is still held: the new process waits it out (409 retries)
  e.peer->control("/expire", R"({"what":"sessions"})");
  ASSERT_TRUE(eventually([&] { return w.job_states()["completed"] == 4; }, 240s)) << w.headroom->log() << w.sim->log();
  EXPECT_GT(w.audit(set), 3);
}

}  // namespace
}  // namespace headroom
