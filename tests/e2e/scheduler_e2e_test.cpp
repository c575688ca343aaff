// Webhook-driven runner scheduling (seed 003) end to end: the headroom binary in scheduler mode
// on the real control plane (kube-scheduler places its runner pods on kwok nodes that offer
// `headroom.dev/runner` slots), the Actions Service peer as GitHub (signed workflow_job webhooks,
// the REST calls), the runner simulator as the runners, and the real PostgreSQL.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "e2e/capacity_world.hpp"
#include "testenv/postgres_server.hpp"
#include "testenv/shared_env.hpp"

namespace headroom::e2e {
namespace {

using namespace std::chrono_literals;

const std::string secret = "whsec_e2e_scheduler_0123456789";

struct sched_env {
  cluster* c = nullptr;
  std::unique_ptr<testpeer::actions_peer> peer;
  std::unique_ptr<testenv::postgres_server> pg;
  std::string why;
};

void kube_apply(cluster* c, const std::string& yaml) { c->kubectl({"apply", "-f", "-"}, yaml); }

// Three kwok nodes of the pool, four runner slots each (a device plugin's, as in the seed).
sched_env make_env() {
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
  for (int i = 0; i < 3; ++i) {
    const std::string n = "sched-node-" + std::to_string(i);
    kube_apply(out.c, "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + n +
                          "\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {kubernetes.io/hostname: " + n +
                          ", type: kwok, headroom.test/pool: sched}\nstatus:\n"
                          "  allocatable: {cpu: \"32\", memory: 128Gi, pods: \"110\", headroom.dev/runner: \"4\"}\n"
                          "  capacity: {cpu: \"32\", memory: 128Gi, pods: \"110\", headroom.dev/runner: \"4\"}\n");
  }
  // The simulator's workflow pods name this PriorityClass (the scale sets' ladder makes it there).
  kube_apply(out.c, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: arc-workflow}\nvalue: 10\n");
  return out;
}

testenv::shared_env<sched_env> the_env{make_env, [](sched_env& e) {
                                         e.peer.reset();
                                         e.pg.reset();
                                       }};

#define REQUIRE_SCHED_ENV(var)                                                       \
  auto& var = the_env.get();                                                         \
  HEADROOM_REQUIRE_READY(var.c != nullptr && var.peer && var.pg,                     \
                         "the control plane, the Actions Service peer and PostgreSQL", var.why)

int free_port() {
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
};

// One scheduler world: a namespace, the runner simulator in it, headroom serving the webhook.
struct sched_world {
  sched_env& e;
  sched_options o;
  std::string dir, url, dsn, why;
  int port = 0;
  std::unique_ptr<testpeer::peer_process> sim;
  std::unique_ptr<agent> headroom;

  sched_world(sched_env& env_, sched_options opts) : e(env_), o(std::move(opts)) {
    dir = e.c->dir() + "/sched-" + o.name;
    std::filesystem::create_directories(dir);
    e.c->kubectl({"create", "namespace", o.name});
    sim = testpeer::peer_process::start("tests/peers/runner-sim/build.sh",
                                        {"--kubeconfig", e.c->kubeconfig(), "--namespace", o.name, "--peer", e.peer->http_url(),
                                         "--job-duration", o.job_duration, "--workflow-cpu", "100m", "--workflow-memory", "64Mi",
                                         "--exit-runner-pods", "--skip-runners", std::to_string(o.skip_runners)},
                                        why);
    if (o.store == "postgres") {
      e.pg->create_database(o.name, why);
      dsn = e.pg->conninfo(o.name);
    }
    port = free_port();
    url = "http://127.0.0.1:" + std::to_string(port);
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

  std::string config() const {
    return "kubernetes:\n  kubeconfig: " + e.c->kubeconfig() +
           "\nleaderElection:\n  enabled: false\nscheduler:\n  enabled: true\n  listen: 127.0.0.1:" + std::to_string(port) +
           "\n  githubUrl: " + e.peer->http_url() + "\n  namespace: " + o.name +
           "\n  store: {sqlitePath: " + dir + "/jobs.db, postgres: " + (o.store == "postgres" ? "true" : "false") + "}" +
           "\n  runner: {image: runner:e2e, resources: {cpu: 100m, memory: 128Mi}, nodeSelector: {" + o.node_selector + "}}" +
           "\n  maxWorkers: {default: 20, entities: " + o.caps + "}" +
           "\n  pollInterval: 2s\n  jobSyncInterval: 2s\n  jobStuckQueued: 30s\n  killGrace: 2s\n  podDeleteGrace: 5s" +
           "\n  healthCheck: " + o.health + "\n";
  }

  bool start() {
    std::vector<std::string> env{"HEADROOM_WEBHOOK_SECRET=" + secret};
    if (!dsn.empty())
      env.push_back("HEADROOM_POSTGRES_DSN=" + dsn);
    headroom = std::make_unique<agent>(dir, config(), env);
    return eventually([&] { return testpeer::http_call(url + "/health").status == 200; }, 30s);
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
  std::vector<std::string> all_rows(const std::string& first, const char* key, int* pages = nullptr) const {
    std::vector<std::string> out;
    std::string next = first;
    int n = 0;
    while (!next.empty() && n < 1000) {
      auto r = testpeer::http_call(url + next);
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
    if (pages)
      *pages = n;
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
    auto r = testpeer::http_call(url + next);
    simdjson::dom::parser p;
    for (auto row : p.parse(r.body).get_array())
      out.push_back({std::string{std::string_view(row["name"])}, std::string{std::string_view(row["entity"])},
                     std::string{std::string_view(row["status"])}, std::string{std::string_view(row["failure_info"])},
                     int64_t(row["job_id"])});
    return out;
  }

  std::map<int64_t, std::string> stored_jobs() const {
    std::map<int64_t, std::string> out;
    auto r = testpeer::http_call(url + "/jobs.json?per_page=1000");
    simdjson::dom::parser p;
    for (auto row : p.parse(r.body).get_array())
      out[int64_t(row["id"])] = std::string{std::string_view(row["status"])};
    return out;
  }

  // Live workers (creating + running) of an entity, from /usage.json.
  int64_t live_workers(const std::string& entity) const {
    auto r = testpeer::http_call(url + "/usage.json");
    simdjson::dom::parser p;
    int64_t n = 0;
    auto doc = p.parse(r.body);
    if (doc.error())
      return -1;
    for (auto row : doc.get_array())
      if (std::string_view(row["entity"]) == entity)
        n += int64_t(row["workers_creating"]) + int64_t(row["workers_running"]);
    return n;
  }
};

// 50 jobs across 3 entities (two organizations and a personal repository) and 2 label sets, one
// organization capped at 5 runners: every job completes, the cap holds at every sample, each job
// ran on exactly one worker, and the dashboards' JSON pages, followed through Link, give every
// row exactly once.
TEST(scheduler_e2e, fifty_jobs_three_entities_the_cap_holds_and_every_job_completes_once) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-burst"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  std::vector<int64_t> ids;
  for (auto v : {w.post_jobs("org-a", "org-a/app", "\"self-hosted\",\"linux\"", 20),
                 w.post_jobs("org-capped", "org-capped/svc", "\"self-hosted\",\"linux\"", 15),
                 w.post_jobs("", "solo/tool", "\"self-hosted\",\"arm64\"", 15)})
    ids.insert(ids.end(), v.begin(), v.end());
  ASSERT_EQ(ids.size(), 50u);
  int64_t most_capped = 0;
  const bool done = eventually([&] {
    most_capped = std::max(most_capped, w.live_workers("org-capped"));
    auto jobs = w.peer_jobs();
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return jobs[id] == "completed"; });
  }, 240s);
  auto jobs = w.peer_jobs();
  std::map<std::string, int> states;
  for (auto id : ids)
    ++states[jobs[id]];
  ASSERT_TRUE(done) << "jobs by state: completed " << states["completed"] << ", running " << states["running"] << ", queued "
                    << states["queued"] << "\n" << w.headroom->log();
  EXPECT_LE(most_capped, 5) << "org-capped is capped at 5 workers";
  EXPECT_GT(most_capped, 0);
  // Completed in the store too (the completed webhooks were recorded).
  ASSERT_TRUE(eventually([&] {
    auto stored = w.stored_jobs();
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return stored[id] == "completed"; });
  }, 30s));
  // Each job ran on exactly one worker; no worker ran two.
  ASSERT_TRUE(eventually([&] {
    auto ws = w.workers();
    std::map<int64_t, int> runs;
    for (const auto& x : ws)
      if (x.job_id != 0)
        ++runs[x.job_id];
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return runs[id] == 1; });
  }, 30s)) << "every job is recorded on exactly one worker";
  for (const auto& x : w.workers())
    EXPECT_NE(x.status, "failed") << x.name << ": " << x.failure;
  // The .json pages, followed through Link, give every job exactly once (7 per page: 8 pages).
  int pages = 0;
  auto rows = w.all_rows("/jobs.json?per_page=7", "id", &pages);
  std::set<std::string> unique(rows.begin(), rows.end());
  EXPECT_EQ(rows.size(), unique.size()) << "a row came twice";
  for (auto id : ids)
    EXPECT_EQ(unique.count(std::to_string(id)), 1u) << "job " << id << " missing from the pages";
  EXPECT_GE(pages, 8);
  auto worker_rows = w.all_rows("/workers.json?per_page=9", "name");
  EXPECT_EQ(worker_rows.size(), std::set<std::string>(worker_rows.begin(), worker_rows.end()).size());
  EXPECT_EQ(worker_rows.size(), w.workers().size());
  // The HTML pages answer and carry the rows.
  auto page = testpeer::http_call(w.url + "/jobs?per_page=100");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find(std::to_string(ids.front())), std::string::npos);
  EXPECT_NE(testpeer::http_call(w.url + "/usage").body.find("<table>"), std::string::npos);
  // Runner pods went Succeeded and are deleted after podDeleteGrace (5 s here).
  EXPECT_TRUE(eventually([&] {
    auto r = e.c->kubectl({"-n", w.o.name, "get", "pods", "-l", "headroom.dev/role=runner", "-o", "name"});
    return r.exit_code == 0 && r.out.empty();
  }, 60s)) << e.c->kubectl({"-n", w.o.name, "get", "pods", "-o", "wide"}).out;
  const auto log = w.headroom->full_log();
  EXPECT_EQ(log.find(pat), std::string::npos) << "the GitHub token reached the log";
  EXPECT_EQ(log.find(secret), std::string::npos) << "the webhook secret reached the log";
}

// What GitHub gets wrong or an attacker sends: forged signatures write nothing; a redelivery
// records nothing twice; a job completed before it was provisioned stays completed with no
// worker; a job GitHub no longer knows (404) fails; malformed JSON is a 400 naming the field.
TEST(scheduler_e2e, forged_redelivered_early_completed_and_vanished_jobs) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-faults"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  auto count_status = [&](int status) {
    simdjson::dom::parser p;
    int n = 0;
    for (auto d : p.parse(e.peer->control("/webhooks/state").body)["deliveries"].get_array())
      n += int64_t(d["status"]) == status ? 1 : 0;
    return n;
  };
  const int refused_before = count_status(401);
  e.peer->control("/webhooks/forged", "{\"count\":25}");
  ASSERT_TRUE(eventually([&] { return count_status(401) == refused_before + 25; }, 30s)) << "every forged delivery answered 401";
  EXPECT_TRUE(w.stored_jobs().empty()) << "a forged delivery was recorded";

  // Capped at 0: queued, never provisioned; then completed → completed, no worker.
  auto early = w.post_jobs("org-zero", "org-zero/app", "\"self-hosted\"", 1);
  ASSERT_TRUE(eventually([&] { return w.stored_jobs()[early[0]] == "pending"; }, 20s));
  e.peer->control("/webhooks/complete", "{\"jobId\":" + std::to_string(early[0]) + ",\"conclusion\":\"cancelled\"}");
  ASSERT_TRUE(eventually([&] { return w.stored_jobs()[early[0]] == "completed"; }, 20s));
  // The queued delivery again, after the completion: recorded before, nothing changes.
  simdjson::dom::parser p;
  std::string queued_delivery;
  for (auto d : p.parse(e.peer->control("/webhooks/state").body)["deliveries"].get_array())
    if (int64_t(d["jobId"]) == early[0] && std::string_view(d["action"]) == "queued")
      queued_delivery = std::string{std::string_view(d["id"])};
  ASSERT_FALSE(queued_delivery.empty());
  const int accepted_before = count_status(202);
  e.peer->control("/webhooks/redeliver", "{\"deliveryId\":\"" + queued_delivery + "\"}");
  ASSERT_TRUE(eventually([&] { return count_status(202) == accepted_before + 1; }, 20s));
  EXPECT_EQ(w.stored_jobs()[early[0]], "completed") << "a late queued redelivery moved a completed job back";
  for (const auto& x : w.workers())
    EXPECT_NE(x.entity, "org-zero") << "a capped-at-0 entity got a worker";

  // GitHub forgets a pending job (404 on the job API): failed within a jobSyncInterval or two.
  auto vanished = w.post_jobs("org-zero", "org-zero/app", "\"self-hosted\"", 1);
  ASSERT_TRUE(eventually([&] { return w.stored_jobs()[vanished[0]] == "pending"; }, 20s));
  e.peer->control("/webhooks/forget", "{\"jobId\":" + std::to_string(vanished[0]) + "}");
  EXPECT_TRUE(eventually([&] { return w.stored_jobs()[vanished[0]] == "failed"; }, 20s)) << w.headroom->log();

  // Straight to the route: malformed JSON names the problem; a wrong signature is 401.
  const std::string body = "{\"action\":\"queued\",\"workflow_job\":{\"id\":\"x\"}}";
  const std::string sig = "sha256=" + testpeer::hmac_sha256_hex(secret, body);
  auto bad = testpeer::http_call(w.url + "/webhook", body,
                                 {"X-GitHub-Event: workflow_job", "X-GitHub-Delivery: d-bad-1", "X-Hub-Signature-256: " + sig});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("workflow_job"), std::string::npos) << bad.body;
  auto unsigned_ = testpeer::http_call(w.url + "/webhook", body, {"X-GitHub-Event: workflow_job", "X-GitHub-Delivery: d-bad-2"});
  EXPECT_EQ(unsigned_.status, 401);
  auto bad_query = testpeer::http_call(w.url + "/jobs.json?per_page=abc");
  EXPECT_EQ(bad_query.status, 400);
  EXPECT_NE(bad_query.body.find("per_page"), std::string::npos);
  // Job names are attacker-controlled: the HTML escapes them.
  e.peer->control("/webhooks/jobs", "{\"organization\":\"org-zero\",\"repository\":\"org-zero/app\",\"labels\":[\"x\"],"
                                    "\"name\":\"<script>alert(1)</script>\"}");
  ASSERT_TRUE(eventually([&] { return w.stored_jobs().size() >= 3; }, 20s));
  auto html = testpeer::http_call(w.url + "/jobs");
  EXPECT_EQ(html.body.find("<script>"), std::string::npos);
  EXPECT_NE(html.body.find("&lt;script&gt;"), std::string::npos);
}

// PostgreSQL as the store, headroom SIGKILLed mid-burst and started again: no job lost or run
// twice, the loop resumes; then PostgreSQL restarted mid-burst: the same.
TEST(scheduler_e2e, postgres_store_survives_sigkill_and_a_database_restart_mid_burst) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-pg", .store = "postgres", .job_duration = "3s"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  auto ids = w.post_jobs("org-pg", "org-pg/app", "\"self-hosted\"", 12);
  ASSERT_TRUE(eventually([&] { return w.live_workers("org-pg") >= 4; }, 60s)) << w.headroom->log();
  w.headroom->stop(SIGKILL);
  auto more = w.post_jobs("org-pg", "org-pg/app", "\"self-hosted\"", 6);  // while headroom is down: GitHub's delivery fails
  ASSERT_TRUE(w.start()) << w.headroom->log();
  // Deliveries that failed while headroom was down are redelivered (GitHub's "redeliver failed").
  simdjson::dom::parser p;
  for (auto d : p.parse(e.peer->control("/webhooks/state").body)["deliveries"].get_array())
    if (int64_t(d["status"]) <= 0 || int64_t(d["status"]) >= 500)
      e.peer->control("/webhooks/redeliver", "{\"deliveryId\":\"" + std::string{std::string_view(d["id"])} + "\"}");
  ids.insert(ids.end(), more.begin(), more.end());
  ASSERT_TRUE(eventually([&] {
    auto jobs = w.peer_jobs();
    int done = 0;
    for (auto id : ids)
      done += jobs[id] == "completed";
    return done >= 6;
  }, 120s));
  std::string why;
  ASSERT_TRUE(e.pg->restart(why)) << why;
  auto last = w.post_jobs("org-pg", "org-pg/app", "\"self-hosted\"", 4);
  ids.insert(ids.end(), last.begin(), last.end());
  const bool done = eventually([&] {
    // A delivery the restarting database refused (503) is sent again, as GitHub's redelivery would.
    simdjson::dom::parser q;
    for (auto d : q.parse(e.peer->control("/webhooks/state").body)["deliveries"].get_array())
      if (int64_t(d["status"]) == 503 || int64_t(d["status"]) == -1)
        e.peer->control("/webhooks/redeliver", "{\"deliveryId\":\"" + std::string{std::string_view(d["id"])} + "\"}");
    auto jobs = w.peer_jobs();
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return jobs[id] == "completed"; });
  }, 240s);
  ASSERT_TRUE(done) << w.headroom->log();
  ASSERT_TRUE(eventually([&] {
    std::map<int64_t, int> runs;
    for (const auto& x : w.workers())
      if (x.job_id != 0)
        ++runs[x.job_id];
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return runs[id] == 1; });
  }, 30s)) << "a job ran on two workers, or none was recorded";
  auto stored = w.stored_jobs();
  for (auto id : ids)
    EXPECT_EQ(stored[id], "completed") << "job " << id;
}

}  // namespace
}  // namespace headroom::e2e
