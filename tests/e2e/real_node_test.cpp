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
    std::string type, name, uid, role, phase, disruption, node, state;
  };
  pod_watch(const cluster* c, const std::string& ns, const std::string& dir) : log_(dir + "/pod-watch.log") {
    const std::string kubectl = std::string{std::getenv("HEADROOM_TESTENV_DIR")} + "/bin/kubectl";
    const std::string jsonpath =
        "{.type}|{.object.metadata.name}|{.object.metadata.uid}|{.object.metadata.labels.headroom\\.dev/role}|"
        "{.object.status.phase}|{.object.status.conditions[?(@.type==\"DisruptionTarget\")].reason}|{.object.spec.nodeName}|"
        "{.object.status.containerStatuses[0].state}{\"\\n\"}";
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
      std::getline(f, e.disruption, '|');
      std::getline(f, e.node, '|');
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

// When each pod's processes on the real node first ran and when the last of them was gone (its
// sandbox's `pause` aside), read
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
  // The pod's own processes: its sandbox's `pause` (which the kubelet stops after the containers,
  // on a later sync) is not one.
  static int procs(const std::string& pod_dir) {
    int n = 0;
    for (const auto& c : subdirs(pod_dir)) {
      std::ifstream in{pod_dir + "/" + c + "/cgroup.procs"};
      for (std::string pid; in >> pid;) {
        std::string comm;
        std::getline(std::ifstream{"/proc/" + pid + "/comm"}, comm);
        n += comm != "pause" ? 1 : 0;
      }
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
      if (n > 0) {
        auto& l = lives_[uid];
        l.first_s = l.first_s == 0 ? t : l.first_s;
        l.gone_s = 0;  // a scan can miss a pod's directory for a moment (seen while the kubelet made another's)
      }
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

// The hand-off's steps, seconds after the runner pod's create as this test's watch saw it.
struct handoff {
  double deleted = 0;  // the runner placeholder deleted (the scheduler's preemption)
  double gone = 0;     // its process gone (the real node's cgroups; 0 on kwok)
  double ran = 0;      // the runner's first process (0 on kwok)
  double running = 0;  // the runner container reported running
};

// One scale set whose warm pair fills its node (`selector`: the real node or a kwok node of the
// same size): a job's runner pod preempts the runner placeholder and starts in its room. On the
// real node the placeholders are processes of the unprivileged user the restricted profile asks for.
handoff hand_off(env& e, const std::string& name, const std::string& selector, bool real) {
  const std::string img = e.c->node_images();
  scenario sc{name, 2, 1, "60s", "5s"};
  sc.container_mode = "none";  // the job runs in the runner pod: no workflow pod (its image is the hook's)
  sc.node_selector = selector;
  sc.runner_image = img + "/busybox:1.36";
  sc.runner_command = "sleep, \"20\"";  // an ephemeral runner: it exits after its job
  // The node has 2 CPUs: a pair of 800m + 800m leaves no room for a runner pod beside it.
  sc.runner_resources = "{cpu: 800m, memory: 256Mi}";
  sc.workflow_resources = "{cpu: 800m, memory: 256Mi}";
  sc.placeholder_image = img + "/busybox:1.36";
  sc.exit_runner_pods = !real;  // on kwok the simulator ends the runner pod; on the node its process does
  world w{e, sc};
  EXPECT_TRUE(w.sim != nullptr && w.identity) << w.why;
  if (!w.sim || !w.identity)
    return {};
  // The runners' namespace enforces Pod Security "baseline" (what a runner without the Docker
  // daemon's privileges needs): every pod headroom makes there is admitted.
  EXPECT_EQ(e.c->kubectl({"label", "namespace", name, "pod-security.kubernetes.io/enforce=baseline"}).exit_code, 0);
  const auto root = node_cgroup_root(e.c);
  EXPECT_FALSE(root.empty()) << "no node network in " << e.c->dir();
  process_census census{root};
  pod_watch watch{e.c, sc.name, w.dir};
  w.start();
  int64_t set = 0;
  if (!eventually([&] { return (set = w.scale_set_id()) != 0 && w.latest_capacity(set) == 1; }, 90s)) {
    ADD_FAILURE() << "the pair placed on its node is advertised\n" << w.headroom->log()
                  << e.c->kubectl({"-n", sc.name, "get", "pods", "-o", "wide"}).out;
    return {};
  }
  std::string runner_ph, node, runner_ph_uid;
  std::istringstream{e.c->kubectl({"-n", sc.name, "get", "pods", "-l", "headroom.dev/role=runner-placeholder", "-o",
                                   "jsonpath={.items[0].metadata.name} {.items[0].spec.nodeName} {.items[0].metadata.uid}"}).out} >>
      runner_ph >> node >> runner_ph_uid;
  if (real) {
    // Real processes, as the unprivileged user, on the real node.
    EXPECT_EQ(node, e.c->node_name());
    const auto id = e.c->kubectl({"-n", sc.name, "exec", runner_ph, "--", "id", "-u"});
    EXPECT_EQ(id.out, "65534\n") << id.err;
    // Admitted where Pod Security "restricted" is enforced: each placeholder's spec, as headroom
    // made it, created (dry run) in such a namespace.
    e.c->kubectl({"create", "namespace", "real-node-restricted"});
    e.c->kubectl({"label", "namespace", "real-node-restricted", "pod-security.kubernetes.io/enforce=restricted"});
    for (const std::string role : {"runner-placeholder", "workflow-placeholder"}) {
      const auto spec = e.c->kubectl({"-n", sc.name, "get", "pods", "-l", "headroom.dev/role=" + role, "-o", "jsonpath={.items[0].spec}"}).out;
      const auto admitted = e.c->kubectl({"-n", "real-node-restricted", "create", "--dry-run=server", "-f", "-"},
                                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"probe\"},\"spec\":" + spec + "}");
      EXPECT_EQ(admitted.exit_code, 0) << role << " under the restricted profile: " << admitted.err;
    }
    e.c->kubectl({"delete", "namespace", "real-node-restricted", "--wait=false"});
  }

  w.post_jobs(1);
  if (!eventually([&] { return w.job_states()["completed"] == 1; }, 120s)) {
    ADD_FAILURE() << w.stuck_report() << w.headroom->log();
    return {};
  }
  double created = 0;
  handoff h;
  std::string runner_uid, disruption;
  for (const auto& ev : watch.events()) {
    if (ev.role == "runner" && ev.type == "ADDED" && created == 0)
      created = ev.at_s, runner_uid = ev.uid;
    if (ev.uid == runner_ph_uid && ev.type == "DELETED" && h.deleted == 0)
      h.deleted = ev.at_s, disruption = ev.disruption;
    if (!runner_uid.empty() && ev.uid == runner_uid && h.running == 0 && ev.state.find("\"running\"") != std::string::npos)
      h.running = ev.at_s;
  }
  EXPECT_GT(created, 0) << "no runner pod seen";
  EXPECT_GT(h.deleted, 0) << "the runner placeholder was not deleted";
  EXPECT_GT(h.running, 0) << "the runner container was never seen running";
  // The scheduler marks its victims before it deletes them.
  EXPECT_EQ(disruption, "PreemptionByScheduler") << "the runner placeholder went, not preempted by the scheduler";
  if (real) {
    const auto lives = census.lives();
    EXPECT_TRUE(lives.contains(runner_ph_uid) && lives.at(runner_ph_uid).gone_s > 0) << "the runner placeholder's process is still there";
    EXPECT_TRUE(lives.contains(runner_uid)) << "the runner pod never ran a process on the node";
    if (lives.contains(runner_ph_uid) && lives.contains(runner_uid)) {
      h.gone = lives.at(runner_ph_uid).gone_s - created;
      h.ran = lives.at(runner_uid).first_s - created;
    }
    // The kubelet admits the runner as soon as the API server has the placeholder deleted; it does
    // not wait for the placeholder's process. That process ends on the kubelet's SIGTERM at once (a
    // bare `sleep` as PID 1 would hold on until SIGKILL, after the 2 s minimum grace: 1.5 s leaves a
    // loaded machine its margin and still tells the two apart).
    EXPECT_LT(h.gone - (h.deleted - created), 1.5) << "the placeholder's process outlived its pod by " << h.gone - (h.deleted - created) << " s";
  }
  h.deleted -= created;
  h.running -= created;
  // The runner exits after its job; its room goes back to the warm pair.
  EXPECT_TRUE(eventually([&] { return w.ready_pairs() == 1; }, 90s)) << "the warm pair is back\n" << w.headroom->log();
  return h;
}

// The hand-off on the real node, and the same scenario on a kwok node of the same size (no
// process: kwok marks the pod Running), side by side.
TEST(real_node, placeholders_are_processes_that_runner_pods_preempt) {
  REQUIRE_ENV(e);
  const auto real = hand_off(e, "real-node", "headroom.dev/testenv-node: real", true);
  e.c->kubectl({"apply", "-f", "-"}, "apiVersion: v1\nkind: Node\nmetadata:\n  name: kwok-handoff\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                                   "  labels: {kubernetes.io/hostname: kwok-handoff, type: kwok, headroom.dev/testenv-node: kwok}\nstatus:\n"
                                   "  allocatable: {cpu: \"2\", memory: 8Gi, pods: \"110\"}\n  capacity: {cpu: \"2\", memory: 8Gi, pods: \"110\"}\n");
  const auto kwok = hand_off(e, "kwok-node", "headroom.dev/testenv-node: kwok", false);
  e.c->kubectl({"delete", "node", "kwok-handoff", "--wait=false"});
  std::printf("[real-node] hand-off after the runner pod's create, real node: placeholder deleted %.0f ms, its process gone %.0f ms, "
              "runner process started %.0f ms, runner container seen running %.0f ms\n",
              1000 * real.deleted, 1000 * real.gone, 1000 * real.ran, 1000 * real.running);
  std::printf("[real-node] hand-off after the runner pod's create, kwok node: placeholder deleted %.0f ms, runner seen running %.0f ms\n",
              1000 * kwok.deleted, 1000 * kwok.running);
}

// The runner as a real runner runs (#56): the runner image's own process (the runner simulator's
// `runner` mode, tests/peers/runner-sim/inpod.go, pushed as localhost:5000/actions-runner) in the
// runner container on the real node. It has only its pod: the kubelet's env (the JIT configuration
// from the runner's Secret; the server it names, reached over the pod network), the hook's file in
// its image, the hook template headroom mounts, and the ServiceAccount token the kubelet mounted,
// with which the container hook (kubernetes-novolume) checks its permissions, makes the workflow pod
// (its fs-init container run with the runner image), runs the job's steps in it through the exec
// subresource, and deletes it. The workflow pod preempts its workflow placeholder on the same node.
TEST(real_node, the_runner_runs_in_its_pod_and_its_hook_runs_the_job_in_the_workflow_pod) {
  REQUIRE_ENV(e);
  const std::string img = e.c->node_images();
  const auto pushed = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/node", "push-runner", e.c->dir(),
                                           e.c->dir() + "/runner-image"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string runner_image = pushed.out.substr(0, pushed.out.find('\n'));
  ASSERT_TRUE(runner_image.starts_with(img + "/actions-runner@sha256:")) << pushed.out;
  scenario sc{"real-node-runner", 2, 1, "60s", "3s"};
  sc.node_selector = "headroom.dev/testenv-node: real";
  sc.runner_image = runner_image;  // its command: the default, the runner image's /home/runner/run.sh
  // The node has 2 CPUs: the pair fills it, so the runner pod and the workflow pod each get their
  // room only by preempting their placeholder.
  sc.runner_resources = "{cpu: 800m, memory: 256Mi}";
  sc.workflow_resources = "{cpu: 800m, memory: 256Mi}";
  sc.placeholder_image = img + "/busybox:1.36";
  sc.runners_in_pods = true;
  world w{e, sc};
  REQUIRE_WORLD(w);
  EXPECT_EQ(e.c->kubectl({"label", "namespace", sc.name, "pod-security.kubernetes.io/enforce=baseline"}).exit_code, 0);
  pod_watch watch{e.c, sc.name, w.dir};
  w.start();
  int64_t set = 0;
  ASSERT_TRUE(eventually([&] { return (set = w.scale_set_id()) != 0 && w.latest_capacity(set) == 1; }, 90s))
      << w.headroom->log() << e.c->kubectl({"-n", sc.name, "get", "pods", "-o", "wide"}).out;
  // The workflow's job: its container from the node's registry, and steps the hook runs in it.
  e.peer->control("/jobs", "{\"labels\":[\"" + sc.name + "\"],\"container\":\"" + img +
                               "/busybox:1.36\",\"steps\":[\"echo step ran as $(id -u) in $(hostname)\",\"test -d /__w && test -d /github\"]}");
  std::string result;
  const bool done = eventually([&] {
    simdjson::dom::parser p;
    for (auto j : p.parse(e.peer->control("/state").body)["jobs"].get_array())  // the peer's: every test's jobs
      for (auto l : j["labels"].get_array())
        if (std::string_view(l) == sc.name && std::string_view(j["state"]) == "completed")
          result = std::string{std::string_view(j["result"])};
    return !result.empty();
  }, 180s);
  std::string runner_pod;
  for (const auto& ev : watch.events())
    if (ev.role == "runner" && runner_pod.empty())
      runner_pod = ev.name;
  const auto logs = e.c->kubectl({"-n", sc.name, "logs", runner_pod, "-c", "runner"});
  ASSERT_TRUE(done) << w.stuck_report() << "\nthe runner's log:\n" << logs.out << logs.err << w.headroom->log();
  EXPECT_EQ(result, "succeeded") << "the runner's log:\n" << logs.out;
  // What the runner's own log says it did, in its pod; when it says nothing, what its pods went
  // through (the watch) and what the kubelet and the scheduler said (the namespace's Events).
  if (logs.out.find("Connected to GitHub") == std::string::npos) {
    std::string timeline;
    for (const auto& ev : watch.events())
      if (ev.role == "runner" || ev.role.ends_with("placeholder"))
        timeline += std::to_string(ev.at_s) + " " + ev.type + " " + ev.name + " " + ev.phase + " " + ev.node + " " + ev.state + "\n";
    ADD_FAILURE() << "the first runner's log has nothing of its job\n" << timeline
                  << e.c->kubectl({"-n", sc.name, "get", "events", "--sort-by=.lastTimestamp"}).out;
  }
  for (const std::string& line : std::vector<std::string>{"Connected to GitHub", "prepare_job: the workflow pod runs on " + e.c->node_name(),
                                 "step | step ran as 0 in " + runner_pod.substr(0, 63 - 9) + "-workflow", "Job completed with result: succeeded"})
    EXPECT_NE(logs.out.find(line), std::string::npos) << "no \"" << line << "\" in the runner's log:\n" << logs.out;
  // The runner process exits after its one job: the pod Succeeded, its container's exit code 0, as
  // the watch saw it. headroom leaves it to exit (it once deleted the pod at the job's completion:
  // CI found the runner killed while finishing, its log and its exit gone).
  std::string ended;
  EXPECT_TRUE(eventually([&] {
    for (const auto& ev : watch.events())
      if (ev.name == runner_pod && ev.phase == "Succeeded")
        ended = ev.phase + " " + ev.node + " " + ev.state;
    return !ended.empty();
  }, 60s)) << "the runner pod never seen Succeeded";
  EXPECT_TRUE(ended.starts_with("Succeeded " + e.c->node_name() + " ")) << ended;
  EXPECT_NE(ended.find("\"exitCode\":0"), std::string::npos) << ended;
  // The workflow pod: made by the hook (with the runner's token), deleted by the hook's cleanup.
  // It preempts nothing (its PriorityClass's preemptionPolicy is Never): headroom nominates it to
  // the node of the hand-off's workflow placeholder and deletes that placeholder. No placeholder
  // waiting for room (the new pair's, Pending on the full node) may take that room first: each
  // placeholder first Running while the workflow pod waited was put where the workflow pod's room
  // was (before headroom nominated workflow pods, the new pair's took it, and the workflow pod
  // waited 60 s for that pair to time out).
  double wf_created = 0, wf_running = 0, wf_deleted = 0;
  std::map<std::string, double> placeholder_first_running;
  std::string seen;  // the workflow side's events, for a failure's message
  for (const auto& ev : watch.events()) {
    if (ev.role.starts_with("workflow"))
      seen += std::to_string(ev.at_s) + " " + ev.type + " " + ev.name + " " + ev.phase + " " + ev.disruption + "\n";
    if (ev.role == "workflow" && ev.type == "ADDED" && wf_created == 0)
      wf_created = ev.at_s;
    if (ev.role == "workflow" && ev.phase == "Running" && wf_running == 0)
      wf_running = ev.at_s;
    if (ev.role == "workflow" && ev.type == "DELETED")
      wf_deleted = ev.at_s;
    if (ev.role == "workflow-placeholder" && ev.phase == "Running" && !placeholder_first_running.contains(ev.name))
      placeholder_first_running[ev.name] = ev.at_s;
  }
  ASSERT_TRUE(wf_created > 0 && wf_running > 0 && wf_deleted > 0) << "the workflow pod was not made, run and cleaned up\n" << seen;
  for (const auto& [name, at] : placeholder_first_running)
    EXPECT_FALSE(at > wf_created && at < wf_running) << name << " took the room freed for the workflow pod\n" << seen;
  std::printf("[real-node] the workflow pod Running %.0f ms after the hook made it (its room given by headroom)\n",
              1000 * (wf_running - wf_created));
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
