// Job outcomes under a capacity shortage (#59): the same job trace against the same cluster, one
// system after the other, and what the jobs' owners see.
//
// Systems (each on a NodePool of its own with the same limit, so none inherits another's nodes):
//   arc      ARC's listener (tests/peers/scaleset-listener/arc: github.com/actions/scaleset's
//            `listener`, advertising maxRunners, with ARC's scaler patching an EphemeralRunnerSet)
//            and ARC's EphemeralRunnerSet/EphemeralRunner controllers (played by the runner
//            simulator, tests/peers/runner-sim/arc.go) making a runner pod per runner;
//   off      headroom with capacityAware.enabled false (advertises maxRunners, no pairs);
//   pool0    headroom as shipped with no warm pool (pairs for the queue the service reports);
//   pool<N>  headroom as shipped with a warm pool of N pairs (pool0: none);
//   follow<N> headroom with no fixed warm pool, its warmPool following the demand it saw
//            (followDemand: the 90th percentile of each minute's largest queue over
//            --follow-window, at most N pairs);
//   sched<N> (day only) warmPool.schedule of N pairs from the day's --sched-from (6) to --sched-to
//            (18) o'clock, followDemand
//            (at most N) beside it.
// Runners are ephemeral (the pod ends with its job), each requesting --runner-cpu. In
// --container-mode kubernetes-novolume (the default, the scale sets' default) the runner
// simulator's runner runs the job through the container hook: it makes a workflow pod of 100m with
// the runner pod's token, as ARC's chart renders the mode (for ARC, a hook template with the same
// room and node selector, and no PriorityClass); headroom's pairs hold that room with a workflow
// placeholder. In none the job runs in the runner's own pod.
//
// Scenarios (jobs posted within 5 s, arrival offsets drawn from --seed, each --duration long;
// Karpenter's kwok provider buys nodes at once, from tests/testenv/instance-types.json):
//   burst-over-limit  --jobs jobs on one cluster whose NodePool (--limit-cpu) holds fewer runners;
//   pool-stops        the same, and the NodePool stops buying nodes once half are posted (limit 0;
//                     its nodes stay), then buys again 60 s later;
//   two-clusters      2 × --jobs jobs for a label two clusters serve; the first (offered jobs first)
//                     loses its capacity once half are posted (nodes cordoned, NodePool limit 0),
//                     the second has room for all. Also: jobs the first claimed after its loss, and
//                     where the jobs completed;
//   day               a day compressed (see day() below): a morning ramp and two bursts of --jobs,
//                     nodes that take --node-start to boot and go back once empty for 30 s.
//
// Outcomes per system, from the Actions Service peer's record of each job (queued, claimed by a
// scale set, given to a runner, finished) and the cluster sampled every second:
//   claimed_stuck      jobs claimed that waited more than 10 s for a runner to start (their runner
//                      pod had no room: the job sat claimed, where another cluster could have run it)
//   claimed_wait_min   job-minutes between claim and runner start, summed over all jobs
//   start p50/p95/max  queued → runner start, seconds, of the jobs that started
//   canceled           jobs the service gave up (claimed, no runner, re-queued 3 times)
//   completed          jobs completed successfully in the run (it ends when every job has ended,
//                      or after --timeout)
//   requeued           claims the service took back (a claimed job with no runner for 120 s)
//   nodes, node_min    NodeClaims the system's NodePool made, and their node-minutes in the run
//   node_cpu_min       their CPU-minutes (a node-minute of an 8-CPU node costs four of a 2-CPU one)
//   preempted_runners  runner pods preempted (a Preempted Event on a pod that was a runner)
//   work p50/p95/max   queued → the job's work beginning (its workflow pod Running; in none, the
//                      runner starting it), seconds, from the runner simulator's record
//   hook_jobs          jobs whose workflow pod the container hook made
//   runner_errors      jobs that failed in the runner (a workflow pod that never ran in the hook's
//                      10 minutes, a permission the hook lacked)
//   lost_mid_job       runner pods that went (preempted, evicted) while their job ran
//   workflow_wait      a workflow pod's create → Running, p95 and max
//
//   HEADROOM_TESTENV_DIR=… build/release/bench/job_outcomes [--systems arc,off,pool0,pool2]
//       [--scenarios burst-over-limit,pool-stops,two-clusters] [--jobs 12] [--duration 30s] [--limit-cpu 4]
//       [--runner-cpu 1] [--seed 1] [--timeout 600] [--hour 20] [--node-start 45] [--follow-window 5m]
//       [--sched-from 6] [--sched-to 18] [--container-mode kubernetes-novolume|none]
//
// Prints one {"mode":"job_outcomes",…} line per system. HEADROOM_BENCH_LOGS=<dir> keeps each
// member's headroom and runner simulator logs there; HEADROOM_BENCH_NODE_TRACE=1 prints each change
// of a member's NodeClaims with its pods.

#include <algorithm>
#include <array>
#include <fstream>
#include <functional>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "e2e/capacity_world.hpp"
#include "testenv/child_process.hpp"

using namespace headroom;
using namespace headroom::e2e;
using namespace std::chrono_literals;

namespace {

struct options {
  std::vector<std::string> systems = {"arc", "off", "pool0", "pool2"};
  std::vector<std::string> scenarios = {"burst-over-limit", "pool-stops", "two-clusters"};
  int jobs = 12, timeout_s = 600;
  std::string duration = "30s", limit_cpu = "4", runner_cpu = "1";
  unsigned seed = 1;
  // day: the length of one of its hours, a node's boot, followDemand's window
  double hour_s = 20, node_start_s = 45;
  int sched_from = 6, sched_to = 18;  // sched<N>'s window, hours of the day
  std::string follow_window = "5m";
  // The runners' container mode: kubernetes-novolume (the scale sets' default: the runner's
  // container hook makes a workflow pod for the job) or none (the job runs in the runner pod).
  std::string container_mode = "kubernetes-novolume";
};

// A node's boot: kwok's nodes are Ready at once, so the day's NodePool gives them this startup taint
// (Karpenter expects a node agent to lift such a taint and launches no other node meanwhile), and
// the bench lifts it --node-start after the NodeClaim was made.
constexpr const char* booting_taint = "bench.headroom.dev/booting";

// A NodePool of the system's own, labelled pool=<name>, deleted with its nodes at the end.
struct nodepool {
  cluster* c;
  std::string name;
  // `booting`: its nodes start with the taint booting_taint (lifted by the bench once they have
  // booted) and an empty node goes back after 30 s; else nodes stay for the run.
  nodepool(cluster* cl, std::string n, const std::string& cpu, bool booting = false) : c(cl), name(std::move(n)) {
    c->kubectl({"apply", "-f", "-"},
               "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: " + name + "}\nspec:\n  limits: {cpu: \"" + cpu +
                   "\"}\n  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: " + (booting ? "30s" : "Never") + "}\n"
                   "  template:\n    metadata: {labels: {pool: " + name + "}}\n    spec:\n" +
                   (booting ? std::string{"      startupTaints: [{key: "} + booting_taint + ", effect: NoSchedule}]\n" : std::string{}) +
                   "      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}\n"
                   "      expireAfter: Never\n      requirements:\n"
                   "      - {key: kubernetes.io/arch, operator: In, values: [amd64]}\n"
                   "      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n");
  }
  ~nodepool() { c->kubectl({"delete", "nodepool", name, "--timeout=60s"}); }
  nodepool(const nodepool&) = delete;
  nodepool& operator=(const nodepool&) = delete;
};

struct job_record {
  double queued = 0, claimed = 0, started = 0, finished = 0;  // seconds since the epoch; 0: not yet
  std::string state, result;
  int64_t requeues = 0;
  int64_t set = 0;  // the scale set that holds (or last held) it; 0: never offered
  int64_t request = 0;  // the runner request id a runner takes it by
};

double seconds_of(std::string_view t) {
  if (t.empty() || t.starts_with("0001"))
    return 0;
  return std::chrono::duration<double>(parse_time(t).time_since_epoch()).count();
}

std::vector<job_record> jobs_of(const env& e, const std::string& label) {
  simdjson::dom::parser p;
  std::vector<job_record> out;
  for (auto j : p.parse(e.peer->control("/state").body)["jobs"].get_array()) {
    bool ours = false;
    for (auto l : j["labels"].get_array())
      ours |= std::string_view(l) == label;
    if (!ours)
      continue;
    job_record r;
    r.queued = seconds_of(std::string_view(j["queueTime"]));
    r.claimed = seconds_of(std::string_view(j["assignTime"]));
    r.started = seconds_of(std::string_view(j["runnerTime"]));
    r.finished = seconds_of(std::string_view(j["finishTime"]));
    r.state = std::string{std::string_view(j["state"])};
    std::string_view result;
    if (j["result"].get(result) == simdjson::SUCCESS)
      r.result = std::string{result};
    int64_t requeues = 0;
    if (j["requeues"].get(requeues) == simdjson::SUCCESS)
      r.requeues = requeues;
    int64_t set = 0;
    if (j["scaleSetId"].get(set) == simdjson::SUCCESS)
      r.set = set;
    int64_t request = 0;
    if (j["runnerRequestId"].get(request) == simdjson::SUCCESS)
      r.request = request;
    out.push_back(std::move(r));
  }
  return out;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())) - 1))];
}

double wall_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// ARC's CRDs, applied once.
bool arc_crds(env& e) {
  const std::string crds = std::string{HEADROOM_SOURCE_DIR} + "/tests/e2e/fixtures/arc-0.14-crds.yaml";
  if (e.c->kubectl({"apply", "--server-side", "-f", crds}).exit_code != 0)
    return false;
  for (const char* crd : {"crd/ephemeralrunnersets.actions.github.com", "crd/ephemeralrunners.actions.github.com"})
    if (!eventually([&] { return e.c->kubectl({"wait", "--for", "condition=Established", "--timeout", "10s", crd}).exit_code == 0; }, 60s))
      return false;
  return true;
}

// One cluster of a system: its NodePool, namespace, runner simulator, and headroom or ARC's listener
// with ARC's EphemeralRunnerSet.
struct member {
  std::string name;
  std::unique_ptr<nodepool> pool;
  std::unique_ptr<world> w;
  std::unique_ptr<testenv::child_process> listener;
  std::string runner_selector;
  int64_t set = 0;
  std::string log() const { return w && w->headroom ? w->headroom->log() : listener ? listener->log() : std::string{}; }
};

void boot_nodes(env& e, const options& o, const member& m);

// What ARC's gha-runner-scale-set chart makes for containerMode kubernetes-novolume: the runner pods'
// ServiceAccount (<name>-gha-rs-kube-mode) with the kube-mode Role the hook checks for, and here a
// hook template as an ARC user would mount one, giving the workflow pod the same room and node
// selector headroom's template gives its own (ARC's gives no PriorityClass: its workflow pod cannot
// preempt, and waits for room).
void arc_kube_mode(env& e, const std::string& ns) {
  const std::string sa = ns + "-gha-rs-kube-mode";
  e.c->kubectl({"apply", "-f", "-"},
               "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: " + sa + ", namespace: " + ns + "}\n---\n"
               "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: " + sa + ", namespace: " + ns + "}\nrules:\n"
               "  - {apiGroups: [\"\"], resources: [pods], verbs: [get, list, create, delete]}\n"
               "  - {apiGroups: [\"\"], resources: [pods/exec], verbs: [get, create]}\n"
               "  - {apiGroups: [\"\"], resources: [pods/log], verbs: [get, list, watch]}\n"
               "  - {apiGroups: [batch], resources: [jobs], verbs: [get, list, create, delete]}\n"
               "  - {apiGroups: [\"\"], resources: [secrets], verbs: [get, list, create, delete]}\n---\n"
               "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: " + sa + ", namespace: " + ns + "}\n"
               "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: " + sa + "}\n"
               "subjects: [{kind: ServiceAccount, name: " + sa + ", namespace: " + ns + "}]\n---\n"
               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + ns + "-hook-template, namespace: " + ns + "}\n"
               "data:\n  template.yaml: |\n    spec:\n      nodeSelector: {pool: " + ns + "}\n      containers:\n"
               "        - name: $job\n          resources: {requests: {cpu: 100m, memory: 64Mi}}\n");
}

// Starts `system` as cluster `name` with its NodePool limited to `limit_cpu` CPUs; `label`: a
// further label its runners carry (jobs posted for it reach every cluster with it). Ready when its
// session polls with its first capacity (a warm pool placed).
bool start_member(env& e, const options& o, const std::string& system, member& m, const std::string& name, const std::string& limit_cpu,
                  const std::string& label, bool booting = false, const std::string& warm_pool = "") {
  const bool arc = system == "arc";
  m.name = name;
  m.pool = std::make_unique<nodepool>(e.c, name, limit_cpu, booting);
  scenario sc{name, booting ? 2 * o.jobs : o.jobs, 0, "60s", o.duration};  // the day: two bursts may overlap its ramp
  if (system.starts_with("pool"))
    sc.proactive = std::stoi(system.substr(4));
  if (system.starts_with("follow")) {  // the warm pool follows the queue the scale set saw, up to N
    sc.proactive = 0;
    sc.warm_pool = "{followDemand: {percentile: 90, window: " + o.follow_window + ", max: " + system.substr(6) + "}}";
  }
  if (!warm_pool.empty())
    sc.warm_pool = warm_pool;
  sc.container_mode = o.container_mode;
  sc.node_selector = "pool: " + name;
  sc.runner_resources = "{cpu: \"" + o.runner_cpu + "\", memory: 1Gi}";
  sc.workflow_resources = "{cpu: 100m, memory: 64Mi}";
  sc.exit_runner_pods = true;
  sc.arc = arc;
  sc.labels = label;
  m.w = std::make_unique<world>(e, sc);
  if (!m.w->sim || !m.w->identity) {
    std::cerr << name << ": " << m.w->why << "\n";
    return false;
  }
  m.runner_selector = arc ? "actions-ephemeral-runner=True" : "headroom.dev/role=runner";
  if (arc) {
    e.c->kubectl({"-n", name, "create", "secret", "generic", "arc-github", "--from-literal=github_token=" + pat});
    const std::string ers = name + "-runners";
    const bool hook = o.container_mode == "kubernetes-novolume";
    if (hook)
      arc_kube_mode(e, name);
    auto ers_yaml = [&](int64_t id) {
      return "apiVersion: actions.github.com/v1alpha1\nkind: EphemeralRunnerSet\nmetadata:\n  name: " + ers + "\n  namespace: " + name +
             "\nspec:\n  replicas: 0\n  patchID: 0\n  ephemeralRunnerSpec:\n    githubConfigUrl: " + e.peer->http_url() +
             "/headroom-org\n    githubConfigSecret: arc-github\n    runnerScaleSetId: " + std::to_string(id) +
             "\n    spec:\n      restartPolicy: Never\n      nodeSelector: {pool: " + name + "}\n" +
             (hook ? "      serviceAccountName: " + name + "-gha-rs-kube-mode\n"
                     "      volumes: [{name: hook-template, configMap: {name: " + name + "-hook-template}}]\n"
                   : std::string{}) +
             "      containers:\n"
             "        - name: runner\n          image: runner:e2e\n          command: [/home/runner/run.sh]\n"
             "          resources: {requests: {cpu: \"" + o.runner_cpu + "\", memory: 1Gi}}\n" +
             (hook ? std::string{"          env:\n"
                                 "            - {name: ACTIONS_RUNNER_CONTAINER_HOOKS, value: /home/runner/k8s-novolume/index.js}\n"
                                 "            - {name: ACTIONS_RUNNER_POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
                                 "            - {name: ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER, value: \"true\"}\n"
                                 "            - {name: ACTIONS_RUNNER_IMAGE, value: \"runner:e2e\"}\n"
                                 "            - {name: ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE, value: /home/runner/hook-template/template.yaml}\n"
                                 "          volumeMounts: [{name: hook-template, mountPath: /home/runner/hook-template, readOnly: true}]\n"}
                   : std::string{});
    };
    e.c->kubectl({"apply", "-f", "-"}, ers_yaml(0));
    const std::string bin = m.w->dir + "/arc-listener";
    auto built = testenv::run_command(
        {std::string{HEADROOM_SOURCE_DIR} + "/tests/peers/scaleset-listener/build.sh", m.w->dir + "/listener", bin});
    if (built.exit_code != 0) {
      std::cerr << "arc-listener: " << built.err << "\n";
      return false;
    }
    std::vector<std::string> args{bin, "--url", e.peer->http_url() + "/headroom-org", "--token", pat, "--name", name, "--kubeconfig",
                                  e.c->kubeconfig(), "--namespace", name, "--runner-set", ers, "--max-runners", std::to_string(o.jobs)};
    if (!label.empty())
      args.insert(args.end(), {"--label", label});
    m.listener = std::make_unique<testenv::child_process>(args, std::vector<std::string>{"HOME=" + m.w->dir}, m.w->dir + "/arc-listener.log");
    if (!eventually([&] { return (m.set = m.w->scale_set_id()) != 0; }, 60s)) {
      std::cerr << name << ": the listener made no scale set\n" << m.log();
      return false;
    }
    e.c->kubectl({"apply", "-f", "-"}, ers_yaml(m.set));
  } else {
    m.w->start(system != "off");
    if (!eventually([&] { return (m.set = m.w->scale_set_id()) != 0; }, 60s)) {
      std::cerr << name << ": no scale set\n" << m.log();
      return false;
    }
  }
  const int64_t ready_capacity = system == "off" || arc ? sc.max_runners : sc.proactive;
  if (!eventually([&] {
        if (booting)  // the warm pool's nodes boot as the trace's will
          boot_nodes(e, o, m);
        return m.w->latest_capacity(m.set) == ready_capacity;
      }, 180s)) {
    std::cerr << name << ": never advertised " << ready_capacity << "\n" << m.log();
    return false;
  }
  return true;
}

// The run's outcomes: jobs as the service recorded them, nodes and runner pods as sampled.
struct observed {
  std::set<std::string> nodes, runner_pods;
  double node_seconds = 0, cpu_seconds = 0, last_sample = 0, first_sample = 0;
  // HEADROOM_BENCH_NODE_TRACE=1: each change of a member's NodeClaims goes to stderr with its pods
  // (name, phase, node), to see which pods bought a node and which keep one.
  const bool trace = std::getenv("HEADROOM_BENCH_NODE_TRACE") != nullptr;
  std::map<std::string, std::set<std::string>> live_claims;
  void sample(env& e, const std::vector<member*>& members) {
    const double now = wall_now();
    if (first_sample == 0)
      first_sample = now;
    for (auto* m : members) {
      size_t live = 0;
      std::set<std::string> claims;
      double cpus = 0;  // the live NodeClaims' CPUs (their instance types': the price follows them)
      std::istringstream nl{e.c->kubectl({"get", "nodeclaims", "-l", "karpenter.sh/nodepool=" + m->name, "-o",
                                          "jsonpath={range .items[*]}{.metadata.name} {.status.capacity.cpu}{\"\\n\"}{end}"}).out};
      for (std::string line; std::getline(nl, line);) {
        std::istringstream f{line};
        std::string n, cpu;
        f >> n >> cpu;
        if (n.empty())
          continue;
        n = "nodeclaim.karpenter.sh/" + n;
        nodes.insert(n), claims.insert(n), ++live;
        if (!cpu.empty())
          cpus += cpu.ends_with('m') ? std::stod(cpu) / 1000 : std::stod(cpu);
      }
      cpu_seconds += last_sample > 0 ? cpus * (now - last_sample) : 0;
      if (trace && claims != live_claims[m->name]) {
        std::fprintf(stderr, "[node-trace %s +%.1fs] nodeclaims:", m->name.c_str(), now - first_sample);
        for (const auto& n : claims)
          std::fprintf(stderr, " %s%s", live_claims[m->name].contains(n) ? "" : "+", n.c_str());
        for (const auto& n : live_claims[m->name])
          if (!claims.contains(n))
            std::fprintf(stderr, " -%s", n.c_str());
        std::fprintf(stderr, "\n%s", e.c->kubectl({"-n", m->name, "get", "pods", "--no-headers", "-o",
                                                   "custom-columns=N:.metadata.name,P:.status.phase,NODE:.spec.nodeName,PRIO:.spec.priority"}).out.c_str());
        std::fflush(stderr);
        live_claims[m->name] = claims;
      }
      node_seconds += last_sample > 0 ? static_cast<double>(live) * (now - last_sample) : 0;
      std::istringstream pl{e.c->kubectl({"-n", m->name, "get", "pods", "-l", m->runner_selector, "-o", "name"}).out};
      for (std::string p; std::getline(pl, p);)
        if (!p.empty())
          runner_pods.insert(m->name + "/" + p.substr(p.find('/') + 1));
    }
    last_sample = now;
  }
  int preempted(env& e, const std::vector<member*>& members) const {
    int n = 0;
    for (auto* m : members) {
      std::istringstream ev{e.c->kubectl({"-n", m->name, "get", "events", "--field-selector", "reason=Preempted", "-o",
                                          "jsonpath={range .items[*]}{.involvedObject.name}{\"\\n\"}{end}"}).out};
      for (std::string pod; std::getline(ev, pod);)
        n += runner_pods.contains(m->name + "/" + pod) ? 1 : 0;
    }
    return n;
  }
};

// A burst: `count` arrival offsets in [0, 5) s from the seed.
std::vector<double> burst(const options& o, int count) {
  std::mt19937 rng{o.seed};
  std::vector<double> offsets(static_cast<size_t>(count));
  for (auto& x : offsets)
    x = std::uniform_real_distribution<double>{0, 5}(rng);
  std::sort(offsets.begin(), offsets.end());
  return offsets;
}

// Posts the trace's jobs for `label` at `offsets` (seconds from the start, sorted; `at_half` runs
// once half are posted) and samples until every job completed (and `at_least` seconds passed) or
// the timeout.
std::vector<job_record> run_trace(env& e, const options& o, const std::string& label, const std::vector<double>& offsets,
                                  const std::vector<member*>& members, observed& seen, double& t0,
                                  const std::function<void()>& at_half = {}, const std::function<void()>& each_second = {},
                                  double at_least = 0) {
  t0 = wall_now();
  size_t posted = 0;
  std::vector<job_record> jobs;
  while (wall_now() - t0 < o.timeout_s) {
    while (posted < offsets.size() && wall_now() - t0 >= offsets[posted]) {
      e.peer->control("/jobs", "{\"labels\":[\"" + label + "\"],\"count\":1}");
      if (++posted == offsets.size() / 2 && at_half)
        at_half();
    }
    if (each_second)
      each_second();
    seen.sample(e, members);
    jobs = jobs_of(e, label);
    if (posted == offsets.size() && jobs.size() == offsets.size() && wall_now() - t0 >= at_least &&
        std::all_of(jobs.begin(), jobs.end(), [](const job_record& j) { return j.state == "completed"; }))
      break;
    std::this_thread::sleep_for(1s);
  }
  return jobs;
}

struct summary {
  int stuck = 0, completed = 0, canceled = 0, requeued = 0;
  double claimed_wait = 0;
  std::vector<double> starts;
};

summary summarize(const std::vector<job_record>& jobs, double end) {
  summary s;
  for (const auto& j : jobs) {
    const double started = j.started > 0 ? j.started : end;
    if (j.claimed > 0) {
      s.claimed_wait += started - j.claimed;
      s.stuck += started - j.claimed > 10 ? 1 : 0;
    }
    if (j.started > 0)
      s.starts.push_back(j.started - j.queued);
    s.completed += j.state == "completed" && j.result == "succeeded" ? 1 : 0;
    s.canceled += j.state == "completed" && j.result == "canceled" ? 1 : 0;
    s.requeued += static_cast<int>(j.requeues);
  }
  return s;
}

// The runners' side, from each member's runner simulator: jobs whose workflow pod the container hook
// made, jobs that failed in the runner (a hook that timed out waiting for its workflow pod, a refused
// permission), runner pods gone while their job ran, and each workflow pod's create → Running.
// Also queued → work: from the job's queueing to its work beginning (its workflow pod Running, or the
// job started in the runner container), what the job's owner waits for; queued → start counts to the
// runner taking the job, before its hook made the workflow pod.
std::string runner_fields(const std::vector<member*>& members, const std::vector<job_record>& jobs) {
  int hook = 0, errors = 0, lost = 0;
  std::vector<double> waits, to_work;
  for (auto* m : members) {
    const auto r = m->w->outcomes();
    for (const auto& j : jobs)
      if (auto it = r.work_began.find(j.request); j.request != 0 && it != r.work_began.end())
        to_work.push_back(std::chrono::duration<double>(it->second.time_since_epoch()).count() - j.queued);
    hook += r.hook, lost += r.lost, errors += r.errored;
    if (!r.errors.empty())
      std::cerr << m->name << ": runners whose job failed:\n" << r.errors;
    waits.insert(waits.end(), r.workflow_waits.begin(), r.workflow_waits.end());
  }
  char buf[384];
  std::snprintf(buf, sizeof buf,
                ",\"work_p50_s\":%.1f,\"work_p95_s\":%.1f,\"work_max_s\":%.1f,\"hook_jobs\":%d,\"runner_errors\":%d,\"lost_mid_job\":%d,"
                "\"workflow_wait_p95_s\":%.1f,\"workflow_wait_max_s\":%.1f",
                percentile(to_work, 0.5), percentile(to_work, 0.95), to_work.empty() ? 0.0 : *std::max_element(to_work.begin(), to_work.end()),
                hook, errors, lost, percentile(waits, 0.95), waits.empty() ? 0.0 : *std::max_element(waits.begin(), waits.end()));
  return buf;
}

std::string common_fields(const summary& s, const observed& seen, int preempted, double run_s) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\"claimed_stuck\":%d,\"claimed_wait_min\":%.2f,\"start_p50_s\":%.1f,\"start_p95_s\":%.1f,\"start_max_s\":%.1f,"
                "\"completed\":%d,\"canceled\":%d,\"requeued\":%d,\"nodes\":%zu,\"node_min\":%.1f,\"node_cpu_min\":%.1f,\"preempted_runners\":%d,\"run_s\":%.0f",
                s.stuck, s.claimed_wait / 60, percentile(s.starts, 0.5), percentile(s.starts, 0.95),
                s.starts.empty() ? 0.0 : *std::max_element(s.starts.begin(), s.starts.end()), s.completed, s.canceled, s.requeued, seen.nodes.size(),
                seen.node_seconds / 60, seen.cpu_seconds / 60, preempted, run_s);
  return buf;
}

// HEADROOM_BENCH_LOGS=<dir>: each member's headroom log (whole), runner simulator log and its
// namespace's Events are written there at the end, to read what a claim or a pair did.
void finish(env& e, std::vector<member*> members) {
  for (auto* m : members) {
    if (const char* dir = std::getenv("HEADROOM_BENCH_LOGS"); dir && m->w) {
      if (m->w->headroom)
        std::ofstream(std::string{dir} + "/" + m->name + ".headroom.log") << m->w->headroom->full_log();
      if (m->w->sim)
        std::ofstream(std::string{dir} + "/" + m->name + ".runner-sim.log") << m->w->sim->log();
      // The namespace's Events (scheduled, FailedScheduling, Preempted, Killing), in time order.
      std::ofstream(std::string{dir} + "/" + m->name + ".events.txt")
          << e.c->kubectl({"-n", m->name, "get", "events", "--sort-by=.metadata.creationTimestamp", "-o",
                           "custom-columns=EVENTTIME:.eventTime,CREATED:.metadata.creationTimestamp,FIRST:.firstTimestamp,LAST:.lastTimestamp,"
                           "COUNT:.count,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message"})
                 .out;
    }
    if (m->listener)
      m->listener->stop(SIGTERM);
    e.c->kubectl({"delete", "nodeclaims", "-l", "karpenter.sh/nodepool=" + m->name, "--timeout=60s"});
  }
}

// burst-over-limit: one cluster whose NodePool holds fewer runners than the burst.
void burst_over_limit(env& e, const options& o, const std::string& system) {
  member m;
  if (!start_member(e, o, system, m, "outcomes-" + system, o.limit_cpu, ""))
    return;
  observed seen;
  double t0 = 0;
  const auto jobs = run_trace(e, o, m.name, burst(o, o.jobs), {&m}, seen, t0);
  const double end = wall_now();
  std::printf("{\"mode\":\"job_outcomes\",\"scenario\":\"burst-over-limit\",\"system\":\"%s\",\"seed\":%u,\"jobs\":%d,\"limit_cpu\":\"%s\",%s}\n",
              system.c_str(), o.seed, o.jobs, o.limit_cpu.c_str(), (common_fields(summarize(jobs, end), seen, seen.preempted(e, {&m}), end - t0) + runner_fields({&m}, jobs)).c_str());
  std::fflush(stdout);
  finish(e, {&m});
}

// pool-stops: one cluster whose NodePool stops buying nodes once half the burst is posted (its limit
// lowered to 0: the nodes it has stay), and buys again 60 s later (the limit restored).
void pool_stops(env& e, const options& o, const std::string& system) {
  // A name (and so the jobs' label) of its own: one invocation runs the scenarios against one service.
  member m;
  if (!start_member(e, o, system, m, "outcomes-stops-" + system, o.limit_cpu, ""))
    return;
  observed seen;
  double t0 = 0, stopped_at = 0;
  bool restored = false;
  const auto limit = [&](const std::string& cpu) {
    e.c->kubectl({"patch", "nodepool", m.name, "--type", "merge", "-p", R"({"spec":{"limits":{"cpu":")" + cpu + R"("}}})"});
  };
  const auto jobs = run_trace(e, o, m.name, burst(o, o.jobs), {&m}, seen, t0, [&] {
    limit("0");
    stopped_at = wall_now();
  }, [&] {
    if (!restored && stopped_at > 0 && wall_now() - stopped_at >= 60) {
      limit(o.limit_cpu);
      restored = true;
    }
  });
  const double end = wall_now();
  std::printf("{\"mode\":\"job_outcomes\",\"scenario\":\"pool-stops\",\"system\":\"%s\",\"seed\":%u,\"jobs\":%d,\"limit_cpu\":\"%s\",%s}\n",
              system.c_str(), o.seed, o.jobs, o.limit_cpu.c_str(), (common_fields(summarize(jobs, end), seen, seen.preempted(e, {&m}), end - t0) + runner_fields({&m}, jobs)).c_str());
  std::fflush(stdout);
  finish(e, {&m});
}

// two-clusters: two clusters serve one label; the first (the service offers it jobs first: the
// lower scale set id) loses its capacity once half the burst is posted: its nodes cordoned and
// its NodePool's limit lowered to 0 (a zone or a pool withdrawn). The second has room for all.
// Outcomes beside the common ones: jobs the first claimed after it lost its capacity, and where
// the jobs ran.
void two_clusters(env& e, const options& o, const std::string& system) {
  const std::string label = "outcomes-shared-" + system;
  member a, b;
  if (!start_member(e, o, system, a, "outcomes-" + system + "-a", o.limit_cpu, label) ||
      !start_member(e, o, system, b, "outcomes-" + system + "-b", std::to_string(2 * o.jobs * 2), label))
    return;
  observed seen;
  double t0 = 0, lost_at = 0;
  const auto jobs = run_trace(e, o, label, burst(o, 2 * o.jobs), {&a, &b}, seen, t0, [&] {
    std::istringstream nl{e.c->kubectl({"get", "nodes", "-l", "pool=" + a.name, "-o", "name"}).out};
    for (std::string n; std::getline(nl, n);)
      if (!n.empty())
        e.c->kubectl({"cordon", n});
    e.c->kubectl({"patch", "nodepool", a.name, "--type", "merge", "-p", R"({"spec":{"limits":{"cpu":"0"}}})"});
    lost_at = wall_now();
  });
  const double end = wall_now();
  // Where each job ran and who claimed it after the loss, from the service's record.
  int claimed_after_loss = 0, on_a = 0, on_b = 0;
  for (const auto& j : jobs) {
    claimed_after_loss += j.set == a.set && j.claimed > lost_at ? 1 : 0;
    if (j.state == "completed" && j.result == "succeeded") {
      on_a += j.set == a.set ? 1 : 0;
      on_b += j.set == b.set ? 1 : 0;
    }
  }
  std::printf("{\"mode\":\"job_outcomes\",\"scenario\":\"two-clusters\",\"system\":\"%s\",\"seed\":%u,\"jobs\":%d,\"limit_cpu\":\"%s\","
              "\"claimed_by_lost_cluster\":%d,\"completed_on_lost\":%d,\"completed_on_other\":%d,%s}\n",
              system.c_str(), o.seed, 2 * o.jobs, o.limit_cpu.c_str(), claimed_after_loss, on_a, on_b,
              (common_fields(summarize(jobs, end), seen, seen.preempted(e, {&a, &b}), end - t0) + runner_fields({&a, &b}, jobs)).c_str());
  std::fflush(stdout);
  finish(e, {&a, &b});
}

// day: a day compressed, each hour --hour long, from midnight to midnight: quiet until 07:00, a
// morning ramp, a burst of --jobs at 10:00 and at 14:00 (within 5 s each), an evening tail, quiet
// from 19:00. Arrivals per hour from kDayProfile, Poisson from the seed, uniform within their hour.
// Nodes take --node-start to boot and an empty one goes back after 30 s, so node-minutes are what
// the warm pool costs. Beside the common outcomes: the trace's jobs and each hour's p95 queue → start.
constexpr std::array<int, 24> kDayProfile{0, 0, 0, 0, 0, 0, 0, 1, 3, 5, 4, 4, 3, 4, 4, 3, 3, 2, 1, 0, 0, 0, 0, 0};

std::vector<double> day_offsets(const options& o) {
  std::mt19937 rng{o.seed};
  std::vector<double> offsets;
  for (size_t h = 0; h < kDayProfile.size(); ++h) {
    const int n = std::poisson_distribution<int>{static_cast<double>(kDayProfile[h])}(rng);
    for (int i = 0; i < n; ++i)
      offsets.push_back((static_cast<double>(h) + std::uniform_real_distribution<double>{0, 1}(rng)) * o.hour_s);
    if (h == 10 || h == 14)
      for (int i = 0; i < o.jobs; ++i)
        offsets.push_back(static_cast<double>(h) * o.hour_s + std::uniform_real_distribution<double>{0, 5}(rng));
  }
  std::sort(offsets.begin(), offsets.end());
  return offsets;
}

// Lifts the boot taint of each of the pool's nodes whose NodeClaim is --node-start old.
void boot_nodes(env& e, const options& o, const member& m) {
  std::istringstream nl{e.c->kubectl({"get", "nodes", "-l", "pool=" + m.name, "-o",
                                      "jsonpath={range .items[*]}{.metadata.name} {.metadata.creationTimestamp} {.spec.taints[*].key}{\"\\n\"}{end}"}).out};
  for (std::string line; std::getline(nl, line);) {
    std::istringstream f{line};
    std::string node, created, taints;
    f >> node >> created;
    std::getline(f, taints);
    if (taints.find(booting_taint) != std::string::npos && wall_now() - seconds_of(created) >= o.node_start_s)
      e.c->kubectl({"taint", "node", node, std::string{booting_taint} + ":NoSchedule-"});
  }
}

// "HH:MM" (UTC) of `epoch_s`.
std::string utc_hhmm(double epoch_s) {
  const auto t = static_cast<std::time_t>(std::llround(epoch_s));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d:%02d", tm.tm_hour, tm.tm_min);
  return buf;
}

void day(env& e, const options& o, const std::string& system) {
  // sched<N>: warmPool.schedule holds N pairs from the day's --sched-from (6: an hour before the
  // ramp) to --sched-to (18), with followDemand (at most N) beside it. A schedule's windows are whole
  // UTC minutes, so the day starts on a whole minute, far enough ahead for the set-up; at --hour 20
  // its 06:00 and 18:00 fall on whole minutes too (other lengths: widened to them).
  double start_at = 0;
  std::string warm_pool;
  if (system.starts_with("sched")) {
    start_at = std::ceil((wall_now() + 120) / 60) * 60;
    const std::string n = system.substr(5);
    warm_pool = "{schedule: [{from: \"" + utc_hhmm(std::floor((start_at + o.sched_from * o.hour_s) / 60) * 60) + "\", to: \"" +
                utc_hhmm(std::ceil((start_at + o.sched_to * o.hour_s) / 60) * 60) + "\", size: " + n +
                "}], followDemand: {percentile: 90, window: " + o.follow_window + ", max: " + n + "}}";
  }
  member m;
  if (!start_member(e, o, system, m, "outcomes-day-" + system, o.limit_cpu, "", true, warm_pool))
    return;
  if (start_at > 0) {
    if (wall_now() > start_at)
      std::cerr << system << ": the set-up outlasted the minute the day was to start at; the schedule is off by "
                << wall_now() - start_at << " s\n";
    while (wall_now() < start_at)
      std::this_thread::sleep_for(50ms);
  }
  const auto offsets = day_offsets(o);
  observed seen;
  double t0 = 0;
  const auto jobs = run_trace(e, o, m.name, offsets, {&m}, seen, t0, {}, [&] { boot_nodes(e, o, m); },
                              static_cast<double>(kDayProfile.size()) * o.hour_s);  // the whole day, its night too
  const double end = wall_now();
  std::string hours;  // each hour's p95 queue → start, of the jobs queued in it
  for (size_t h = 0; h < kDayProfile.size(); ++h) {
    std::vector<double> starts;
    for (const auto& j : jobs)
      if (j.started > 0 && j.queued >= t0 + static_cast<double>(h) * o.hour_s && j.queued < t0 + static_cast<double>(h + 1) * o.hour_s)
        starts.push_back(j.started - j.queued);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.1f", h == 0 ? "" : ",", starts.empty() ? 0.0 : percentile(starts, 0.95));
    hours += buf;
  }
  std::printf("{\"mode\":\"job_outcomes\",\"scenario\":\"day\",\"system\":\"%s\",\"seed\":%u,\"jobs\":%zu,\"limit_cpu\":\"%s\","
              "\"hour_s\":%.0f,\"node_start_s\":%.0f,\"hourly_start_p95_s\":[%s],%s}\n",
              system.c_str(), o.seed, offsets.size(), o.limit_cpu.c_str(), o.hour_s, o.node_start_s, hours.c_str(),
              (common_fields(summarize(jobs, end), seen, seen.preempted(e, {&m}), end - t0) + runner_fields({&m}, jobs)).c_str());
  std::fflush(stdout);
  finish(e, {&m});
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--systems" || k == "--scenarios") {
      auto& list = k == "--systems" ? o.systems : o.scenarios;
      list.clear();
      std::istringstream in{v};
      for (std::string s; std::getline(in, s, ',');)
        list.push_back(s);
    } else if (k == "--jobs") {
      o.jobs = std::stoi(v);
    } else if (k == "--duration") {
      o.duration = v;
    } else if (k == "--limit-cpu") {
      o.limit_cpu = v;
    } else if (k == "--runner-cpu") {
      o.runner_cpu = v;
    } else if (k == "--seed") {
      o.seed = static_cast<unsigned>(std::stoul(v));
    } else if (k == "--timeout") {
      o.timeout_s = std::stoi(v);
    } else if (k == "--hour") {
      o.hour_s = std::stod(v);
    } else if (k == "--node-start") {
      o.node_start_s = std::stod(v);
    } else if (k == "--sched-from") {
      o.sched_from = std::stoi(v);
    } else if (k == "--sched-to") {
      o.sched_to = std::stoi(v);
    } else if (k == "--follow-window") {
      o.follow_window = v;
    } else if (k == "--container-mode") {
      if (v != "kubernetes-novolume" && v != "none") {
        std::cerr << "--container-mode: " << v << " (kubernetes-novolume or none)\n";
        return 2;
      }
      o.container_mode = v;
    } else {
      std::cerr << "unknown option " << k << "\n";
      return 2;
    }
  }
  env e;
  if (!bench_env(e, "job_outcomes"))
    return 1;
  if (std::find(o.systems.begin(), o.systems.end(), "arc") != o.systems.end() && !arc_crds(e)) {
    std::cerr << "ARC's CRDs were not established\n";
    return 1;
  }
  for (const auto& s : o.systems)
    if (s != "arc" && s != "off" && !s.starts_with("pool") && !s.starts_with("follow") && !s.starts_with("sched")) {
      std::cerr << "unknown system " << s << " (arc, off, pool<N>, follow<N>, sched<N>: day only)\n";
      return 2;
    }
  for (const auto& sc : o.scenarios) {
    if (sc != "burst-over-limit" && sc != "pool-stops" && sc != "two-clusters" && sc != "day") {
      std::cerr << "unknown scenario " << sc << " (burst-over-limit, pool-stops, two-clusters, day)\n";
      return 2;
    }
    for (const auto& s : o.systems)
      (sc == "two-clusters" ? two_clusters : sc == "pool-stops" ? pool_stops : sc == "day" ? day : burst_over_limit)(e, o, s);
  }
  return 0;
}
