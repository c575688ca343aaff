// The capacity path on the cluster's real node (#56): placeholders and runner pods as real
// containers (tests/testenv/node: kubelet, containerd, runc), where kwok's nodes only pretend. A
// placeholder is a process that sleeps, the scheduler's preemption makes the kubelet kill it, and a
// placeholder whose headroom is gone ends by its own deadline.

#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "testenv/child_process.hpp"

#define HEADROOM_E2E_CLUSTER (cluster_options{.node = true})
#include "e2e/capacity_suite.hpp"

namespace headroom::e2e {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

double ms_since(steady::time_point from, steady::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// Every watch event of a namespace's pods as this test received it, stamped on arrival
// (kubectl's watch, each line stamped by a line-buffered stamper).
class pod_watch {
 public:
  struct event {
    double at_s = 0;  // the stamper's clock (CLOCK_REALTIME, seconds)
    std::string type, name, uid, role, phase, state;
  };
  pod_watch(const cluster* c, const std::string& ns, const std::string& dir) : log_(dir + "/pod-watch.log") {
    const std::string kubectl = std::string{std::getenv("HEADROOM_TESTENV_DIR")} + "/bin/kubectl";
    const std::string jsonpath =
        "{.type}|{.object.metadata.name}|{.object.metadata.uid}|{.object.metadata.labels.headroom\\.dev/role}|"
        "{.object.status.phase}|{.object.status.containerStatuses[0].state}{\"\\n\"}";
    proc_ = std::make_unique<testenv::child_process>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 "\"$0\" --kubeconfig \"$1\" -n \"$2\" get pods -w --output-watch-events -o jsonpath=\"$3\" | "
                                 "python3 -u -c 'import sys,time\nfor l in sys.stdin: print(\"%.6f %s\" % (time.time(), l), end=\"\")'",
                                 kubectl, c->kubeconfig(), ns, jsonpath},
        std::vector<std::string>{"PATH=/usr/bin:/bin"}, log_);
  }
  std::vector<event> events() const {
    std::vector<event> out;
    std::ifstream in{log_};
    for (std::string line; std::getline(in, line);) {
      const auto space = line.find(' ');
      if (space == std::string::npos)
        continue;
      event e;
      e.at_s = std::stod(line.substr(0, space));
      std::istringstream f{line.substr(space + 1)};
      std::getline(f, e.type, '|');
      std::getline(f, e.name, '|');
      std::getline(f, e.uid, '|');
      std::getline(f, e.role, '|');
      std::getline(f, e.phase, '|');
      std::getline(f, e.state);
      if (!e.uid.empty())
        out.push_back(std::move(e));
    }
    return out;
  }

 private:
  std::string log_;
  std::unique_ptr<testenv::child_process> proc_;
};

// When each pod's processes on the real node first ran and when the last of them was gone, read
// from the node's cgroups (pids hierarchy, the kubelet's cgroupfs layout under the node's
// cgroupRoot: kubepods[/class]/pod<uid>/<container>/cgroup.procs) every 10 ms.
class process_census {
 public:
  explicit process_census(std::string root) : root_(std::move(root)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        scan();
        std::this_thread::sleep_for(10ms);
      }
    });
  }
  ~process_census() {
    stop_ = true;
    thread_.join();
  }
  struct life {
    double first_s = 0, gone_s = 0;  // CLOCK_REALTIME seconds; gone 0: still running
  };
  std::map<std::string, life> lives() const {
    std::lock_guard lock{mu_};
    return lives_;
  }

 private:
  static double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
  static std::vector<std::string> subdirs(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = opendir(dir.c_str())) {
      while (auto* ent = readdir(d))
        if (ent->d_type == DT_DIR && ent->d_name[0] != '.')
          out.emplace_back(ent->d_name);
      closedir(d);
    }
    return out;
  }
  static int procs(const std::string& pod_dir) {
    int n = 0;
    for (const auto& c : subdirs(pod_dir)) {
      std::ifstream in{pod_dir + "/" + c + "/cgroup.procs"};
      for (std::string pid; in >> pid;)
        ++n;
    }
    return n;
  }
  void scan() {
    std::map<std::string, int> running;
    const std::string kubepods = root_ + "/kubepods";
    for (const std::string& parent : {kubepods, kubepods + "/burstable", kubepods + "/besteffort"})
      for (const auto& d : subdirs(parent))
        if (d.starts_with("pod"))
          running[d.substr(3)] = procs(parent + "/" + d);
    const double t = now_s();
    std::lock_guard lock{mu_};
    for (const auto& [uid, n] : running)
      if (n > 0 && lives_[uid].first_s == 0)
        lives_[uid].first_s = t;
    for (auto& [uid, l] : lives_)
      if (l.first_s != 0 && l.gone_s == 0 && running[uid] == 0)
        l.gone_s = t;
  }
  std::string root_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::map<std::string, life> lives_;
  std::thread thread_;
};

std::string node_cgroup_root(const cluster* c) {
  std::ifstream in{c->dir() + "/node/net.env"};
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("NODE_NETNS="))
      return "/sys/fs/cgroup/pids/" + line.substr(11);
  return {};
}

// One scale set whose warm pair is placed on the real node, which it fills: its placeholders run
// as processes of the unprivileged user the restricted profile asks for, and a job's runner pod
// preempts the runner placeholder (the kubelet kills its process) and starts in its room.
TEST(real_node, placeholders_are_processes_that_runner_pods_preempt) {
  REQUIRE_ENV(e);
  const std::string img = e.c->node_images();
  scenario sc{"real-node", 2, 1, "60s", "5s"};
  sc.container_mode = "none";  // the job runs in the runner pod: no workflow pod (its image is the hook's)
  sc.node_selector = "headroom.dev/testenv-node: real";
  sc.runner_image = img + "/busybox:1.36";
  sc.runner_command = "sleep, \"20\"";  // an ephemeral runner: it exits after its job
  // The node has 2 CPUs: a pair of 800m + 800m leaves no room for a runner pod beside it.
  sc.runner_resources = "{cpu: 800m, memory: 256Mi}";
  sc.workflow_resources = "{cpu: 800m, memory: 256Mi}";
  sc.placeholder_image = img + "/busybox:1.36";
  world w{e, sc};
  REQUIRE_WORLD(w);
  const auto root = node_cgroup_root(e.c);
  ASSERT_FALSE(root.empty()) << "no node network in " << e.c->dir();
  process_census census{root};
  pod_watch watch{e.c, sc.name, w.dir};
  w.start();
  int64_t set = 0;
  ASSERT_TRUE(eventually([&] { return (set = w.scale_set_id()) != 0; }, 60s)) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.latest_capacity(set) == 1; }, 90s))
      << "the pair placed on the real node is advertised\n" << w.headroom->log() << e.c->kubectl({"-n", sc.name, "get", "pods", "-o", "wide"}).out;

  // Real processes, as the unprivileged user, on the real node.
  std::string runner_ph, node, runner_ph_uid;
  std::istringstream{e.c->kubectl({"-n", sc.name, "get", "pods", "-l", "headroom.dev/role=runner-placeholder", "-o",
                                   "jsonpath={.items[0].metadata.name} {.items[0].spec.nodeName} {.items[0].metadata.uid}"}).out} >>
      runner_ph >> node >> runner_ph_uid;
  EXPECT_EQ(node, e.c->node_name());
  const auto id = e.c->kubectl({"-n", sc.name, "exec", runner_ph, "--", "id", "-u"});
  EXPECT_EQ(id.out, "65534\n") << id.err;
  // Admitted where Pod Security "restricted" is enforced: each placeholder's spec, as headroom made
  // it, created (dry run) in such a namespace.
  e.c->kubectl({"create", "namespace", "real-node-restricted"});
  e.c->kubectl({"label", "namespace", "real-node-restricted", "pod-security.kubernetes.io/enforce=restricted"});
  for (const std::string role : {"runner-placeholder", "workflow-placeholder"}) {
    const auto spec = e.c->kubectl({"-n", sc.name, "get", "pods", "-l", "headroom.dev/role=" + role, "-o", "jsonpath={.items[0].spec}"}).out;
    const auto admitted = e.c->kubectl({"-n", "real-node-restricted", "create", "--dry-run=server", "-f", "-"},
                                       "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"probe\"},\"spec\":" + spec + "}");
    EXPECT_EQ(admitted.exit_code, 0) << role << " under the restricted profile: " << admitted.err;
  }
  e.c->kubectl({"delete", "namespace", "real-node-restricted", "--wait=false"});

  // The hand-off: runner pod created → the runner placeholder's process gone → the runner's
  // process started, on the real node.
  w.post_jobs(1);
  ASSERT_TRUE(eventually([&] { return w.job_states()["completed"] == 1; }, 120s)) << w.stuck_report() << w.headroom->log();
  double created = 0, deleted = 0, started = 0;
  std::string runner_uid;
  for (const auto& ev : watch.events()) {
    if (ev.role == "runner" && ev.type == "ADDED" && created == 0)
      created = ev.at_s, runner_uid = ev.uid;
    if (ev.uid == runner_ph_uid && ev.type == "DELETED" && deleted == 0)
      deleted = ev.at_s;
    if (!runner_uid.empty() && ev.uid == runner_uid && started == 0 && ev.state.find("\"running\"") != std::string::npos)
      started = ev.at_s;
  }
  const auto lives = census.lives();
  ASSERT_GT(created, 0) << "no runner pod seen";
  ASSERT_GT(deleted, 0) << "the runner placeholder was not deleted";
  ASSERT_TRUE(lives.contains(runner_ph_uid)) << "the runner placeholder never ran a process";
  const double gone = lives.at(runner_ph_uid).gone_s;
  ASSERT_GT(gone, 0) << "the runner placeholder's process is still there";
  ASSERT_TRUE(lives.contains(runner_uid)) << "the runner pod never ran a process on the node";
  const double ran = lives.at(runner_uid).first_s;
  ASSERT_GT(started, 0) << "the runner container was never seen running";
  // The kubelet admits the runner as soon as the API server has the placeholder deleted; it does
  // not wait for the placeholder's process. That process ends on the kubelet's SIGTERM at once (a
  // bare `sleep` as PID 1 would hold on until SIGKILL, after the 2 s minimum grace).
  EXPECT_LT(gone - deleted, 1.0) << "the placeholder's process outlived its pod by " << gone - deleted << " s";
  const auto preempted = e.c->kubectl({"-n", sc.name, "get", "events", "--field-selector", "involvedObject.uid=" + runner_ph_uid,
                                       "-o", "jsonpath={.items[*].reason}"});
  EXPECT_NE(preempted.out.find("Preempted"), std::string::npos) << "the scheduler preempted the runner placeholder: " << preempted.out;
  std::printf("[real-node] hand-off: runner pod created → placeholder deleted %.0f ms → its process gone %.0f ms → "
              "runner process started %.0f ms → runner container seen running %.0f ms\n",
              1000 * (deleted - created), 1000 * (gone - created), 1000 * (ran - created), 1000 * (started - created));
  // The runner exits after its job; its room goes back to the warm pair.
  EXPECT_TRUE(eventually([&] { return w.ready_pairs() == 1; }, 90s)) << "the warm pair is back\n" << w.headroom->log();
}

// With headroom gone without a clean-up (SIGKILL), its placeholders end by their own deadline
// (activeDeadlineSeconds: TTL + 2 × ready timeout): the kubelet kills their processes.
TEST(real_node, placeholders_end_by_their_deadline_when_headroom_is_gone) {
  REQUIRE_ENV(e);
  const std::string img = e.c->node_images();
  scenario sc{"real-node-deadline", 2, 1, "10s", "5s"};
  sc.container_mode = "none";
  sc.node_selector = "headroom.dev/testenv-node: real";
  sc.runner_resources = "{cpu: 100m, memory: 64Mi}";
  sc.workflow_resources = "{cpu: 100m, memory: 64Mi}";
  sc.placeholder_image = img + "/busybox:1.36";
  sc.ttl = "20s";  // a deadline of 20 + 2 × 10 = 40 s
  world w{e, sc};
  REQUIRE_WORLD(w);
  const auto root = node_cgroup_root(e.c);
  ASSERT_FALSE(root.empty()) << "no node network in " << e.c->dir();
  process_census census{root};
  w.start();
  ASSERT_TRUE(eventually([&] { return w.ready_pairs() == 1; }, 60s)) << w.headroom->log();
  const auto left = e.c->kubectl({"-n", sc.name, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)",
                                  "-o", "jsonpath={range .items[*]}{.metadata.uid} {.spec.activeDeadlineSeconds}{\"\\n\"}{end}"});
  w.headroom->stop(SIGKILL);
  const auto killed_at = steady::now();
  std::istringstream in{left.out};
  int ended = 0;
  for (std::string uid, deadline; in >> uid >> deadline;) {
    EXPECT_EQ(deadline, "40");
    ASSERT_TRUE(eventually([&] { auto l = census.lives(); return l.contains(uid) && l.at(uid).gone_s > 0; }, 75s))
        << "placeholder " << uid << " still runs past its deadline\n" << e.c->kubectl({"-n", sc.name, "get", "pods", "-o", "wide"}).out;
    ++ended;
  }
  EXPECT_EQ(ended, 2);
  testenv::command_result reasons;
  EXPECT_TRUE(eventually([&] {  // the kubelet's status follows the process's end
    reasons = e.c->kubectl({"-n", sc.name, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)",
                            "-o", "jsonpath={range .items[*]}{.status.phase}/{.status.reason} {end}"});
    return reasons.out.find("Running") == std::string::npos && reasons.out.find("Pending") == std::string::npos;
  }, 30s)) << reasons.out;
  // The kubelet's deadline (Failed/DeadlineExceeded) or the placeholder's own `sleep`, sized to the
  // same deadline (Succeeded): whichever came first, nothing else ended them.
  std::istringstream each{reasons.out};
  for (std::string r; each >> r;)
    EXPECT_TRUE(r == "Failed/DeadlineExceeded" || r == "Succeeded/") << reasons.out;
  std::printf("[real-node] placeholders gone %.0f s after headroom was killed: %s\n", ms_since(killed_at, steady::now()) / 1000,
              reasons.out.c_str());
}

}  // namespace
}  // namespace headroom::e2e
