#pragma once

// The world of a scheduler end-to-end run, shared by tests/e2e/scheduler_e2e_test.cpp and
// bench/scheduler_latency_bench.cpp: the headroom binary in scheduler mode, a namespace with the
// runner simulator in it, the Actions Service peer delivering webhooks to it, PostgreSQL.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "e2e/capacity_world.hpp"
#include "testenv/postgres_server.hpp"

namespace headroom::e2e {

inline const std::string secret = "whsec_e2e_scheduler_0123456789";

struct sched_env {
  cluster* c = nullptr;
  std::unique_ptr<testpeer::actions_peer> peer;
  std::unique_ptr<testenv::postgres_server> pg;
  std::string why;
};

inline void kube_apply(cluster* c, const std::string& yaml) { c->kubectl({"apply", "-f", "-"}, yaml); }

// A kwok node labelled headroom.test/pool: <pool>, with `slots` runner slots (a device plugin's, as
// in the seed), 32 CPUs, 128 Gi and `more` resources ("ephemeral-storage: 100Gi, ").
inline std::string kwok_node(const std::string& name, const std::string& pool, int slots, const std::string& more = {}) {
  const std::string resources = "{cpu: \"32\", memory: 128Gi, " + more + "pods: \"110\", headroom.dev/runner: \"" + std::to_string(slots) + "\"}";
  return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name + "\n  annotations: {kwok.x-k8s.io/node: fake}\n"
         "  labels: {kubernetes.io/hostname: " + name + ", type: kwok, headroom.test/pool: " + pool + "}\nstatus:\n"
         "  allocatable: " + resources + "\n  capacity: " + resources + "\n";
}

// Three kwok nodes of the pool, four runner slots each.
inline sched_env make_sched_env() {
  sched_env out;
  out.c = cluster::shared();
  if (!out.c) {
    out.why = cluster::unavailable_reason();
    return out;
  }
  testpeer::actions_peer::options o;
  o.pat = pat;
  out.peer = testpeer::actions_peer::start(o, out.why);
  if (!out.peer)
    return out;
  out.pg = testenv::postgres_server::start(out.why);
  if (!out.pg)
    return out;
  for (int i = 0; i < 3; ++i)
    kube_apply(out.c, kwok_node("sched-node-" + std::to_string(i), "sched", 4));
  // The simulator's workflow pods name this PriorityClass (the scale sets' ladder makes it there).
  kube_apply(out.c, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: arc-workflow}\nvalue: 10\n");
  return out;
}

inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

struct sched_options {
  std::string name;              // namespace and directory
  std::string store = "sqlite";  // or postgres
  std::string job_duration = "2s";
  int skip_runners = 0;
  std::string caps = "{org-capped: 5, org-zero: 0}";
  std::string health = "{registrationTimeout: 120s, pendingTimeout: 600s, idleTimeout: 600s}";
  std::string node_selector = "headroom.test/pool: sched";
  bool fault_hooks = false;  // HEADROOM_TEST_FAULTS=1 (runtime/fault_hooks.hpp)
  std::string kubeconfig{};  // headroom's (the simulator's is the cluster's); empty: the cluster's
  std::string watch_stall{}; // kubernetes.watchStallTimeout; empty: the default
  std::string retention{};   // scheduler.store.retention; empty: the default (90 days)
  std::string pools{};       // scheduler.pools, YAML indented for its place; empty: none (one pool)
  std::vector<std::string> env{};  // more of headroom's environment (a GitHub App's credentials)
  std::string extra{};             // more keys of the scheduler section, "\n  key: value" each
};

// One scheduler world: a namespace, the runner simulator in it, headroom serving the webhook.
struct sched_world {
  sched_env& e;
  sched_options o;
  std::string dir, url, pages, dsn, why;  // url: the webhook's port; pages: the dashboards'
  int port = 0, pages_port = 0;
  std::unique_ptr<testpeer::peer_process> sim;
  std::unique_ptr<agent> headroom;

  sched_world(sched_env& env_, sched_options opts) : e(env_), o(std::move(opts)) {
    dir = e.c->dir() + "/sched-" + o.name;
    std::filesystem::create_directories(dir);
    e.c->kubectl({"create", "namespace", o.name});
    sim = testpeer::peer_process::start("tests/peers/runner-sim/build.sh",
                                        {"--kubeconfig", e.c->kubeconfig(), "--namespace", o.name, "--peer", e.peer->http_url(),
                                         "--job-duration", o.job_duration,
                                         "--exit-runner-pods", "--skip-runners", std::to_string(o.skip_runners)},
                                        why);
    if (o.store == "postgres") {
      e.pg->create_database(o.name, why);
      dsn = e.pg->conninfo(o.name);
    }
    port = free_port();
    url = "http://127.0.0.1:" + std::to_string(port);
    pages_port = free_port();
    pages = "http://127.0.0.1:" + std::to_string(pages_port);
    e.peer->control("/webhooks/config", "{\"url\":\"" + url + "/webhook\",\"secret\":\"" + secret + "\"}");
  }
  ~sched_world() {
    if (headroom)
      headroom->stop(SIGTERM);
    sim.reset();
    e.c->kubectl({"delete", "namespace", o.name, "--timeout=90s"});
  }
  sched_world(const sched_world&) = delete;
  sched_world& operator=(const sched_world&) = delete;

  std::string config(int listen_port, int dashboard_port) const {
    return "kubernetes:\n  kubeconfig: " + (o.kubeconfig.empty() ? e.c->kubeconfig() : o.kubeconfig) +
           (o.watch_stall.empty() ? "" : "\n  watchStallTimeout: " + o.watch_stall) +
           "\nleaderElection:\n  enabled: false\nscheduler:\n  enabled: true\n  listen: 127.0.0.1:" + std::to_string(listen_port) +
           "\n  dashboardListen: 127.0.0.1:" + std::to_string(dashboard_port) +
           "\n  githubUrl: " + e.peer->http_url() + "\n  namespace: " + o.name +
           "\n  store: {sqlitePath: " + dir + "/jobs.db, postgres: " + (o.store == "postgres" ? "true" : "false") +
           (o.retention.empty() ? "" : ", retention: " + o.retention) + "}" +
           "\n  runner: {image: runner:e2e, resources: {cpu: 100m, memory: 128Mi}, nodeSelector: {" + o.node_selector + "}}" +
           (o.pools.empty() ? "" : "\n  pools:\n" + o.pools) +
           "\n  maxWorkers: {default: 20, entities: " + o.caps + "}" +
           "\n  pollInterval: 2s\n  jobSyncInterval: 2s\n  jobStuckQueued: 30s\n  killGrace: 2s\n  podDeleteGrace: 5s" +
           "\n  healthCheck: " + o.health + o.extra + "\n";
  }

  bool start() {
    headroom = launch(dir, port, pages_port);
    return eventually([&] { return testpeer::http_call(url + "/health").status == 200; }, 30s);
  }

  // Another headroom on the same store and namespace, with its own port and directory (both
  // reconcile: leader election is off, so only the store's reconcile lock keeps them apart).
  std::unique_ptr<agent> start_another(const std::string& name) {
    const std::string other_dir = dir + "/" + name;
    std::filesystem::create_directories(other_dir);
    const int other_port = free_port();
    auto a = launch(other_dir, other_port, free_port());
    if (!eventually([&] { return testpeer::http_call("http://127.0.0.1:" + std::to_string(other_port) + "/health").status == 200; }, 30s))
      return nullptr;
    return a;
  }

  std::unique_ptr<agent> launch(const std::string& in_dir, int listen_port, int dashboard_port) const {
    std::vector<std::string> env{"HEADROOM_WEBHOOK_SECRET=" + secret};
    if (!dsn.empty())
      env.push_back("HEADROOM_POSTGRES_DSN=" + dsn);
    if (o.fault_hooks)
      env.push_back("HEADROOM_TEST_FAULTS=1");
    env.insert(env.end(), o.env.begin(), o.env.end());
    return std::make_unique<agent>(in_dir, config(listen_port, dashboard_port), env);
  }

  // GitHub's "redeliver failed deliveries", for these jobs only (`refused_only`: a 503 or no
  // connection; else also any 5xx and any not answered yet). The peer serves the whole suite and
  // keeps every delivery, and an earlier test's failed ones stay failed: sent to this test's
  // headroom, they provisioned runners for jobs long completed (the actor-fault scenario's "extra
  // workers" of 2026-11-25 were two jobs of the PostgreSQL scenario's organization).
  void redeliver_failed(const std::vector<int64_t>& ids, bool refused_only = false) const {
    const std::set<int64_t> mine(ids.begin(), ids.end());
    simdjson::dom::parser q;
    for (auto d : q.parse(e.peer->control("/webhooks/state").body)["deliveries"].get_array()) {
      const int64_t status = int64_t(d["status"]);
      const bool failed = refused_only ? (status == 503 || status == -1) : (status <= 0 || status >= 500);
      if (failed && mine.count(int64_t(d["jobId"])) > 0)
        e.peer->control("/webhooks/redeliver", "{\"deliveryId\":\"" + std::string{std::string_view(d["id"])} + "\"}");
    }
  }

  // The peer's webhook jobs: {id → state}.
  std::map<int64_t, std::string> peer_jobs() const {
    simdjson::dom::parser p;
    std::map<int64_t, std::string> out;
    for (auto j : p.parse(e.peer->control("/webhooks/state").body)["jobs"].get_array())
      out[int64_t(j["runnerRequestId"])] = std::string{std::string_view(j["state"])};
    return out;
  }

  std::vector<int64_t> post_jobs(const std::string& org, const std::string& repo, const std::string& labels, int n,
                                 bool announce = true) const {
    auto r = e.peer->control("/webhooks/jobs", "{\"organization\":\"" + org + "\",\"repository\":\"" + repo + "\",\"labels\":[" +
                                                   labels + "],\"count\":" + std::to_string(n) +
                                                   ",\"announce\":" + (announce ? "true" : "false") + "}");
    simdjson::dom::parser p;
    std::vector<int64_t> ids;
    for (auto id : p.parse(r.body)["ids"].get_array())
      ids.push_back(int64_t(id));
    return ids;
  }

  // Every row of a .json listing, following its Link header's rel="next" to the end.
  std::vector<std::string> all_rows(const std::string& first, const char* key, int* page_count = nullptr) const {
    std::vector<std::string> out;
    std::string next = first;
    int n = 0;
    while (!next.empty() && n < 1000) {
      auto r = testpeer::http_call(pages + next);
      if (r.status != 200) {
        ADD_FAILURE() << next << ": " << r.status << " " << r.body;
        break;
      }
      ++n;
      simdjson::dom::parser p;
      for (auto row : p.parse(r.body).get_array()) {
        auto v = row[key];
        out.push_back(v.type() == simdjson::dom::element_type::STRING ? std::string{std::string_view(v)}
                                                                      : std::to_string(int64_t(v)));
      }
      next.clear();
      if (auto at = r.link.find(">; rel=\"next\""); at != std::string::npos) {
        const auto open = r.link.rfind('<', at);
        next = r.link.substr(open + 1, at - open - 1);
      }
    }
    if (page_count)
      *page_count = n;
    return out;
  }

  // A scalar of the store as the dashboard's JSON shows it: the rows of /workers.json (all pages).
  struct worker_row {
    std::string name, entity, status, failure;
    int64_t job_id = 0;
  };
  std::vector<worker_row> workers() const {
    std::vector<worker_row> out;
    std::string next = "/workers.json?per_page=1000";
    auto r = testpeer::http_call(pages + next);
    simdjson::dom::parser p;
    for (auto row : p.parse(r.body).get_array())
      out.push_back({std::string{std::string_view(row["name"])}, std::string{std::string_view(row["entity"])},
                     std::string{std::string_view(row["status"])}, std::string{std::string_view(row["failure_info"])},
                     int64_t(row["job_id"])});
    return out;
  }

  // Every job of `ids` is recorded on exactly one worker (none twice, none missing).
  bool each_ran_once(const std::vector<int64_t>& ids) const {
    std::map<int64_t, int> runs;
    for (const auto& x : workers())
      if (x.job_id != 0)
        ++runs[x.job_id];
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return runs[id] == 1; });
  }

  // The jobs of `ids` not recorded on exactly one worker, each with its workers (name, status,
  // failure), for a failed each_ran_once.
  std::string ran_not_once(const std::vector<int64_t>& ids) const {
    std::map<int64_t, std::string> on;
    std::map<int64_t, int> runs;
    for (const auto& x : workers())
      if (x.job_id != 0) {
        ++runs[x.job_id];
        on[x.job_id] += " " + x.name + " (" + x.status + (x.failure.empty() ? "" : ": " + x.failure) + ")";
      }
    std::string out;
    for (auto id : ids)
      if (runs[id] != 1)
        out += "job " + std::to_string(id) + " on " + std::to_string(runs[id]) + " workers:" + on[id] + "\n";
    return out;
  }

  // The story of each worker that ran no job (for the open question of where such an extra
  // worker comes from): its row, and the lines of each headroom log and of the simulator's that
  // name it. Empty when every worker ran a job.
  std::string extra_workers_story(const std::vector<std::string>& headroom_logs) const {
    std::string out;
    const auto sim_log = sim ? sim->log() : std::string{};
    for (const auto& x : workers()) {
      if (x.job_id != 0)
        continue;
      out += "extra worker " + x.name + " (" + x.status + ", " + x.failure + "):\n";
      std::vector<std::string> logs = headroom_logs;
      logs.push_back(sim_log);
      for (const auto& log : logs) {
        std::istringstream lines{log};
        for (std::string line; std::getline(lines, line);)
          if (line.find(x.name) != std::string::npos)
            out += "  " + line + "\n";
      }
    }
    return out;
  }

  // Why a job is not where a test waits for it: every delivery the peer made for it (action,
  // status, headroom's answer, when, how long) and headroom's log. For the failure message.
  std::string job_story(int64_t id) const {
    std::string out = "deliveries of job " + std::to_string(id) + ":\n";
    simdjson::dom::parser q;
    for (auto d : q.parse(e.peer->control("/webhooks/state").body)["deliveries"].get_array())
      if (int64_t(d["jobId"]) == id)
        out += "  " + std::string{std::string_view(d["id"])} + " " + std::string{std::string_view(d["action"])} + ": status " +
               std::to_string(int64_t(d["status"])) + " after " + std::to_string(double(d["latencyMs"])) + " ms, sent " +
               std::string{std::string_view(d["sentAt"])} + ", answer " + std::string{std::string_view(d["answer"])} + "\n";
    const auto stored = stored_jobs();
    out += "stored: " + (stored.count(id) ? stored.at(id) : std::string{"(none)"}) + "\n";
    return out + (headroom ? headroom->log() : std::string{});
  }

  std::map<int64_t, std::string> stored_jobs() const {
    std::map<int64_t, std::string> out;
    auto r = testpeer::http_call(pages + "/jobs.json?per_page=1000");
    simdjson::dom::parser p;
    for (auto row : p.parse(r.body).get_array())
      out[int64_t(row["id"])] = std::string{std::string_view(row["status"])};
    return out;
  }

  // Live workers (creating + running) of an entity, from /usage.json; with `label`, only those of
  // label sets holding it.
  int64_t live_workers(const std::string& entity, const std::string& label = {}) const {
    auto r = testpeer::http_call(pages + "/usage.json");
    simdjson::dom::parser p;
    int64_t n = 0;
    auto doc = p.parse(r.body);
    if (doc.error())
      return -1;
    for (auto row : doc.get_array()) {
      const std::string labels{std::string_view(row["labels"])};
      if (std::string_view(row["entity"]) == entity && (label.empty() || ("," + labels + ",").find("," + label + ",") != std::string::npos))
        n += int64_t(row["workers_creating"]) + int64_t(row["workers_running"]);
    }
    return n;
  }
};

}  // namespace headroom::e2e
