// Webhook-driven runner scheduling (seed 003) end to end: the headroom binary in scheduler mode
// on the real control plane (kube-scheduler places its runner pods on kwok nodes that offer
// `headroom.dev/runner` slots), the Actions Service peer as GitHub (signed workflow_job webhooks,
// the REST calls), the runner simulator as the runners, and the real PostgreSQL.

#include "adapters/store/store.hpp"
#include "e2e/scheduler_world.hpp"
#include "testenv/apiserver_proxy.hpp"
#include "testenv/browser.hpp"
#include "testenv/child_process.hpp"
#include "testenv/dashboard.hpp"
#include "testenv/shared_env.hpp"

namespace headroom::e2e {
namespace {

using namespace std::chrono_literals;

testenv::shared_env<sched_env> the_env{make_sched_env, [](sched_env& e) {
                                         e.peer.reset();
                                         e.pg.reset();
                                       }};

#define REQUIRE_SCHED_ENV(var)                                                       \
  auto& var = the_env.get();                                                         \
  HEADROOM_REQUIRE_READY(var.c != nullptr && var.peer && var.pg,                     \
                         "the control plane, the Actions Service peer and PostgreSQL", var.why)

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
  // Mid-burst, /usage in the browser: one row per (entity, labels) with work, the cap shown.
  const auto shots = testenv::browser::output_dir("scheduler_e2e");
  std::string why;
  ASSERT_TRUE(testenv::browser::available(why)) << why;
  ASSERT_TRUE(eventually([&] { return w.live_workers("org-capped") > 0; }, 60s)) << "org-capped never had a worker";
  {
    const auto dom = testenv::browser::dom(w.pages + "/usage", why);
    ASSERT_FALSE(dom.empty()) << why;
    std::map<std::string, std::vector<std::string>> by_entity;
    for (auto& row : testenv::browser::body_rows(dom))
      if (row.size() == 7)
        by_entity[row[0]] = row;
    for (const auto& [entity, row] : by_entity)
      EXPECT_TRUE(entity == "org-a" || entity == "org-capped" || entity == "solo/tool") << entity;
    ASSERT_TRUE(by_entity.count("org-capped")) << dom;
    EXPECT_EQ(by_entity["org-capped"][1], "linux,self-hosted");
    EXPECT_EQ(by_entity["org-capped"][6], "5") << "the max-workers column shows the cap";
    EXPECT_TRUE(testenv::browser::screenshot(w.pages + "/usage", shots / "usage.png", why)) << why;
  }
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
  ASSERT_TRUE(eventually([&] { return w.each_ran_once(ids); }, 30s))
      << "every job is recorded on exactly one worker:\n" << w.ran_not_once(ids) << w.headroom->log() << "\n" << w.sim->log();
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
  auto page = testpeer::http_call(w.pages + "/jobs?per_page=100");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find(std::to_string(ids.front())), std::string::npos);
  EXPECT_NE(testpeer::http_call(w.pages + "/usage").body.find("<table>"), std::string::npos);
  // The pages show every organization's jobs: never on the webhook's public port.
  for (const char* path : {"/usage", "/jobs", "/history.json", "/workers"})
    EXPECT_EQ(testpeer::http_call(w.url + path).status, 404) << path << " on the webhook's port";
  // Runner pods went Succeeded and are deleted after podDeleteGrace (5 s here).
  EXPECT_TRUE(eventually([&] {
    auto r = e.c->kubectl({"-n", w.o.name, "get", "pods", "-l", "headroom.dev/role=runner", "-o", "name"});
    return r.exit_code == 0 && r.out.empty();
  }, 60s)) << e.c->kubectl({"-n", w.o.name, "get", "pods", "-o", "wide"}).out;

  // The dashboards in headless Chromium, row by row against the store itself (read from its file
  // beside the running headroom; SQLite in WAL mode allows the second reader). Screenshots go to
  // test-output/scheduler_e2e/.
  auto opened = store::open_sqlite(w.dir + "/jobs.db");
  ASSERT_EQ(opened.index(), 0u) << std::get<store::error>(opened).message;
  auto& db = *std::get<0>(opened);
  store::page_query everything;
  everything.limit = 1000;
  const auto stored = std::get<0>(db.jobs_page(everything));
  const auto stored_workers = std::get<0>(db.workers_page(everything));
  ASSERT_EQ(stored.size(), 50u);
  for (const std::string page : {"/jobs", "/history"}) {
    const auto dom = testenv::browser::dom(w.pages + page + "?per_page=100", why);
    ASSERT_FALSE(dom.empty()) << why;
    const auto rows = testenv::browser::body_rows(dom);
    ASSERT_EQ(rows.size(), stored.size()) << page;
    for (size_t i = 0; i < rows.size(); ++i) {
      ASSERT_EQ(rows[i].size(), 9u) << page << " row " << i;
      EXPECT_EQ(rows[i][0], std::to_string(stored[i].id)) << page << " row " << i << ": newest first, as the store pages";
      EXPECT_EQ(rows[i][1], stored[i].name);
      EXPECT_EQ(rows[i][2], stored[i].repository);
      EXPECT_EQ(rows[i][3], stored[i].entity);
      EXPECT_EQ(rows[i][4], stored[i].labels);
      EXPECT_EQ(rows[i][5].rfind(store::to_string(stored[i].status), 0), 0u) << rows[i][5];
      EXPECT_EQ(rows[i][6], stored[i].runner_name);
    }
    EXPECT_TRUE(testenv::browser::screenshot(w.pages + page + "?per_page=100", shots / (page.substr(1) + ".png"), why)) << why;
  }
  {
    const auto dom = testenv::browser::dom(w.pages + "/workers?per_page=100", why);
    ASSERT_FALSE(dom.empty()) << why;
    const auto rows = testenv::browser::body_rows(dom);
    ASSERT_EQ(rows.size(), stored_workers.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      ASSERT_EQ(rows[i].size(), 9u) << "workers row " << i;
      EXPECT_EQ(rows[i][0], stored_workers[i].name);
      EXPECT_EQ(rows[i][1], stored_workers[i].entity);
      EXPECT_EQ(rows[i][3], store::to_string(stored_workers[i].status));
      EXPECT_EQ(rows[i][4], stored_workers[i].job_id ? std::to_string(stored_workers[i].job_id) : "");
      EXPECT_EQ(rows[i][6], stored_workers[i].failure_info);
    }
    EXPECT_TRUE(testenv::browser::screenshot(w.pages + "/workers?per_page=100", shots / "workers.png", why)) << why;
  }
  // A page of 7 in the browser: 7 rows and a next link carrying the keyset cursor.
  {
    const auto dom = testenv::browser::dom(w.pages + "/jobs?per_page=7", why);
    EXPECT_EQ(testenv::browser::body_rows(dom).size(), 7u);
    EXPECT_NE(dom.find("after="), std::string::npos) << "no next link on a partial page";
  }
  // The Grafana dashboard's scheduler row queries only what this run exported.
  const auto metrics = w.headroom->metrics();
  ASSERT_FALSE(metrics.empty()) << w.headroom->log();
  auto dashboard = testenv::dashboard_check("Runner scheduling", metrics);
  EXPECT_EQ(dashboard.exit_code, 0) << dashboard.out << dashboard.err;
  const auto log = w.headroom->full_log();
  EXPECT_EQ(log.find(pat), std::string::npos) << "the GitHub token reached the log";
  EXPECT_EQ(log.find(secret), std::string::npos) << "the webhook secret reached the log";
}

// Runner pools: a plain pool and a Docker-in-Docker pool (a full pod template: a privileged
// sidecar, a volume, ephemeral storage, its own nodes and a pool-wide cap of 2), beside jobs no
// pool serves (GitHub-hosted ubuntu-latest, a gpu label), for two organizations with one GitHub
// App installed in both and no installation id configured. Each job gets a runner from its pool,
// on that pool's nodes, as its template says; the unmatched get none and are not recorded; the
// dind pool never has more than 2 live runners; every job runs once; each organization's calls
// use its own installation's token (the peer refuses another's).
TEST(scheduler_e2e, pools_each_job_gets_its_pools_runner_and_hosted_jobs_none) {
  REQUIRE_SCHED_ENV(e);
  for (int i = 0; i < 2; ++i)
    kube_apply(e.c, kwok_node("sched-dind-" + std::to_string(i), "sched-dind", 2, "ephemeral-storage: 100Gi, "));
  // A peer of its own: the App, installed in org-pools (201) and org-pools-b (202).
  auto [app_key, app_public_key] = testpeer::make_app_key();
  testpeer::actions_peer::options po;
  po.app_public_key_pem = app_public_key;
  po.installations = "org-pools=201,org-pools-b=202";
  sched_env app_env;
  app_env.c = e.c;
  app_env.peer = testpeer::actions_peer::start(po, app_env.why);
  ASSERT_TRUE(app_env.peer) << app_env.why;
  sched_options o{.name = "sched-pools"};
  o.env = {"HEADROOM_GITHUB_APP_ID=12345", "HEADROOM_GITHUB_APP_PRIVATE_KEY=" + app_key};
  o.pools = R"(    - name: linux
      labels: [linux, x64]
    - name: dind
      labels: [linux, docker]
      maxWorkers: 2
      template:
        metadata: {labels: {team: ci}}
        spec:
          nodeSelector: {headroom.test/pool: sched-dind}
          containers:
            - name: runner
              image: ghcr.io/actions/actions-runner:latest
              command: [/home/runner/run.sh]
              env: [{name: DOCKER_HOST, value: "tcp://localhost:2375"}]
              resources: {requests: {cpu: 100m, memory: 128Mi, ephemeral-storage: 1Gi}}
            - name: dind
              image: docker:dind
              securityContext: {privileged: true}
              volumeMounts: [{name: docker, mountPath: /var/lib/docker}]
          volumes: [{name: docker, emptyDir: {}}])";
  sched_world w{app_env, o};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  std::vector<int64_t> ours, unmatched;
  for (const char* org : {"org-pools", "org-pools-b"}) {
    const std::string repo = std::string{org} + "/app";
    // Plain jobs ask for x64, which the dind runners lack: by GitHub's rule a runner takes any job
    // its labels cover, so a dind runner could otherwise take a plain job and leave its own to a
    // second dind runner (docs/modes/scheduler.md: give overlapping pools a label of their own).
    for (auto v : {w.post_jobs(org, repo, "\"self-hosted\",\"linux\",\"x64\"", 2), w.post_jobs(org, repo, "\"self-hosted\",\"linux\",\"docker\"", 2)})
      ours.insert(ours.end(), v.begin(), v.end());
  }
  for (auto v : {w.post_jobs("org-pools", "org-pools/app", "\"ubuntu-latest\"", 2), w.post_jobs("org-pools-b", "org-pools-b/app", "\"self-hosted\",\"gpu\"", 1)})
    unmatched.insert(unmatched.end(), v.begin(), v.end());
  // An organization the App is not installed in: its job waits, and costs a failed worker per
  // backoff step (10 s doubling), not one per cycle.
  const auto started = std::chrono::steady_clock::now();
  const auto nowhere = w.post_jobs("org-nowhere", "org-nowhere/app", "\"self-hosted\",\"linux\",\"x64\"", 1);

  struct seen_pod {
    std::string pool, node, team, env0;
    std::vector<std::string> containers;
    bool privileged_sidecar = false, ephemeral = false;
  };
  std::map<std::string, seen_pod> pods;  // every runner pod seen bound to a node
  int64_t most_dind = 0;
  auto sample = [&] {
    most_dind = std::max(most_dind, w.live_workers("org-pools", "docker") + w.live_workers("org-pools-b", "docker"));
    auto r = e.c->kubectl({"-n", w.o.name, "get", "pods", "-l", "headroom.dev/role=runner", "-o", "json"});
    simdjson::dom::parser p;
    auto doc = p.parse(r.out);
    if (r.exit_code != 0 || doc.error())
      return;
    for (auto item : doc["items"].get_array()) {
      std::string_view node;
      if (item["spec"]["nodeName"].get(node) != simdjson::SUCCESS || node.empty())
        continue;
      seen_pod s;
      std::string_view v;
      if (item["metadata"]["labels"]["headroom.dev/pool"].get(v) == simdjson::SUCCESS)
        s.pool = v;
      if (item["metadata"]["labels"]["team"].get(v) == simdjson::SUCCESS)
        s.team = v;
      s.node = node;
      for (auto c : item["spec"]["containers"].get_array()) {
        s.containers.emplace_back(std::string_view(c["name"]));
        bool privileged = false;
        if (c["securityContext"]["privileged"].get(privileged) == simdjson::SUCCESS && privileged && s.containers.back() == "dind")
          s.privileged_sidecar = true;
        if (s.containers.back() == "runner") {
          s.ephemeral = c["resources"]["requests"]["ephemeral-storage"].error() == simdjson::SUCCESS;
          s.env0 = std::string_view(c["env"].at(0)["name"]);
        }
      }
      pods[std::string{std::string_view(item["metadata"]["name"])}] = s;
    }
  };
  const bool done = eventually([&] {
    sample();
    auto jobs = w.peer_jobs();
    return std::all_of(ours.begin(), ours.end(), [&](int64_t id) { return jobs[id] == "completed"; });
  }, 240s);
  ASSERT_TRUE(done) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.each_ran_once(ours); }, 30s)) << "every job is recorded on exactly one worker";
  // (Sampled from the dashboards' usage, the store's count can miss the dind pool's short-lived
  // workers under load: a cold CI run saw none. That the pool ran is asserted by its pods below.)
  EXPECT_LE(most_dind, 2) << "the dind pool's maxWorkers";
  int linux_pods = 0, dind_pods = 0;
  for (const auto& [name, s] : pods) {
    if (s.pool == "linux") {
      ++linux_pods;
      EXPECT_EQ(s.node.rfind("sched-node-", 0), 0u) << name << " on " << s.node << ": the runner section's nodeSelector";
      EXPECT_EQ(s.containers, std::vector<std::string>{"runner"}) << name;
    } else if (s.pool == "dind") {
      ++dind_pods;
      EXPECT_EQ(s.node.rfind("sched-dind-", 0), 0u) << name << " on " << s.node << ": the template's nodeSelector";
      EXPECT_EQ(s.containers, (std::vector<std::string>{"runner", "dind"})) << name;
      EXPECT_TRUE(s.privileged_sidecar) << name;
      EXPECT_TRUE(s.ephemeral) << name << ": the template's ephemeral-storage request";
      EXPECT_EQ(s.team, "ci") << name << ": the template's label";
    } else {
      ADD_FAILURE() << name << " has pool '" << s.pool << "'";
    }
    EXPECT_EQ(s.env0, "ACTIONS_RUNNER_INPUT_JITCONFIG") << name;
  }
  EXPECT_GE(linux_pods, 4);
  EXPECT_GE(dind_pods, 4);
  // The unmatched: answered, counted, kept as history (status unmatched), never given a runner.
  auto stored = w.stored_jobs();
  for (auto id : unmatched)
    EXPECT_EQ(stored[id], "unmatched") << "job " << id << " is no pool's";
  size_t refused = 0, served = 0;
  for (const auto& x : w.workers()) {
    if (x.entity != "org-nowhere") {
      ++served;
      continue;
    }
    ++refused;
    EXPECT_EQ(x.status, "failed") << x.name;
    EXPECT_NE(x.failure.find("runner group"), std::string::npos) << x.failure;
  }
  EXPECT_EQ(served, ours.size()) << "one worker per job of a pool, none for the unmatched";
  // Attempts at 0 s and then after 5-10 s, 10-20 s, 20-40 s, … (jittered): at most one more than
  // the doublings that fit.
  const auto took = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count();
  size_t bound = 1;
  for (int64_t t = 5; t <= took; t = 2 * t + 5)
    ++bound;
  EXPECT_GE(refused, 1u);
  EXPECT_LE(refused, bound) << "in " << took << " s: the refused organization is backed off";
  EXPECT_EQ(w.stored_jobs()[nowhere.at(0)], "pending") << "it waits for the App to be installed";
  EXPECT_GE(w.headroom->sample("headroom_scheduler_skipped_total{reason=\"github_backoff\"}"), 1);
  const auto log = w.headroom->full_log();
  size_t lines = 0;
  for (auto at = log.find("GitHub refuses runners for this scope"); at != std::string::npos;
       at = log.find("GitHub refuses runners for this scope", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << "one warning for the refusal, not one per attempt";
  const auto metrics = w.headroom->metrics();
  EXPECT_NE(metrics.find("headroom_scheduler_webhooks_total{outcome=\"unmatched\"} 3"), std::string::npos)
      << "two ubuntu-latest and one gpu job, queued";
  // Each organization through its own installation, one token each (cached), none refused.
  auto counts = app_env.peer->request_counts();
  auto count = [&](const char* route) { return counts[route]; };
  EXPECT_EQ(count("access_token:201"), 1);
  EXPECT_EQ(count("access_token:202"), 1);
  EXPECT_EQ(count("wrong_installation"), 0);
  EXPECT_EQ(w.headroom->full_log().find("PRIVATE KEY"), std::string::npos) << "the App's key reached the log";
}

// RunnerPool objects on the running scheduler (scheduler.poolObjects): a pool declared by an object
// serves its jobs from the next cycle (their runner pods carry its name), a new generation applies,
// an object naming a pool of the file's and one over the namespace's bound are refused in their
// status, the API server refuses an invalid one naming the field; once deleted, its jobs are not
// the scheduler's any more. The file's pool serves throughout (one headroom, no restart).
TEST(scheduler_e2e, runner_pool_objects_are_served_changed_refused_and_stopped_live) {
  REQUIRE_SCHED_ENV(e);
  auto crd = e.c->kubectl({"apply", "-f", std::string{HEADROOM_SOURCE_DIR} + "/deploy/crds/runnerpools.yaml"});
  ASSERT_EQ(crd.exit_code, 0) << crd.err;
  ASSERT_EQ(e.c->kubectl({"wait", "--for", "condition=Established", "--timeout", "60s", "crd/runnerpools.headroom.dev"}).exit_code, 0);
  sched_options o{.name = "sched-objects"};
  o.pools = "    - name: linux\n      labels: [linux, x64]";
  o.extra = "\n  poolObjects: {enabled: true, limits: {maxWorkers: 10}}";
  sched_world w{e, o};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  const auto pid = w.headroom->pid();
  auto pool = [&](const std::string& name, const std::string& spec) {
    return e.c->kubectl({"apply", "-f", "-"}, "apiVersion: headroom.dev/v1alpha1\nkind: RunnerPool\nmetadata: {name: " + name +
                                                    ", namespace: " + o.name + "}\nspec: " + spec + "\n");
  };
  auto ready = [&](const std::string& name) {
    return e.c->kubectl({"get", "runnerpool", "-n", o.name, name, "-o",
                         "jsonpath={.status.observedGeneration} {.status.conditions[?(@.type==\"Ready\")].status} "
                         "{.status.conditions[?(@.type==\"Ready\")].reason}"})
        .out;
  };
  ASSERT_EQ(pool("gpu", "{labels: [linux, gpu], maxWorkers: 2}").exit_code, 0);
  ASSERT_TRUE(eventually([&] { return ready("gpu") == "1 True Serving"; }, 30s)) << ready("gpu");
  const auto gpu_jobs = w.post_jobs("org-objects", "org-objects/app", "\"self-hosted\",\"linux\",\"gpu\"", 3);
  const auto linux_jobs = w.post_jobs("org-objects", "org-objects/app", "\"self-hosted\",\"linux\",\"x64\"", 2);
  int64_t most_gpu = 0;
  const bool done = eventually([&] {
    most_gpu = std::max(most_gpu, w.live_workers("org-objects", "gpu"));
    auto jobs = w.peer_jobs();
    for (const auto& ids : {gpu_jobs, linux_jobs})
      for (auto id : ids)
        if (jobs[id] != "completed")
          return false;
    return true;
  }, 180s);
  ASSERT_TRUE(done) << w.headroom->log();
  EXPECT_LE(most_gpu, 2) << "the declared pool's maxWorkers";
  auto pods_of = [&](const std::string& p) {
    auto r = e.c->kubectl({"-n", o.name, "get", "pods", "-l", "headroom.dev/pool=" + p, "-o", "name"});
    return std::count(r.out.begin(), r.out.end(), '\n');
  };
  EXPECT_GE(pods_of("gpu"), 3) << "each gpu job's runner pod is the declared pool's";
  EXPECT_GE(pods_of("linux"), 2) << "the file's pool kept serving";
  // A new generation; a pool named like the file's; one over the namespace's bound (1 + 10 > 10).
  ASSERT_EQ(pool("gpu", "{labels: [linux, gpu], maxWorkers: 1}").exit_code, 0);
  EXPECT_TRUE(eventually([&] { return ready("gpu") == "2 True Serving"; }, 30s)) << ready("gpu");
  ASSERT_EQ(pool("linux", "{labels: [linux, arm64]}").exit_code, 0);
  ASSERT_EQ(pool("big", "{labels: [linux, big], maxWorkers: 10}").exit_code, 0);
  EXPECT_TRUE(eventually([&] { return ready("linux") == "1 False NameTaken"; }, 30s)) << ready("linux");
  EXPECT_TRUE(eventually([&] { return ready("big") == "1 False NamespaceLimit"; }, 30s)) << ready("big");
  // The API server refuses what the generated schema says, naming the field.
  for (const auto& [name, spec, field] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"empty", "{labels: []}", "spec.labels"},
           {"a-name-longer-than-twenty", "{labels: [x]}", "metadata.name"},
           {"neg", "{labels: [x], maxWorkers: -1}", "spec.maxWorkers"}}) {
    auto r = pool(name, spec);
    EXPECT_NE(r.exit_code, 0) << name;
    EXPECT_NE(r.err.find(field), std::string::npos) << field << " not named: " << r.err;
  }
  // Deleted: its jobs are not the scheduler's any more (unmatched at the webhook), and big fits.
  ASSERT_EQ(e.c->kubectl({"delete", "runnerpool", "-n", o.name, "gpu"}).exit_code, 0);
  EXPECT_TRUE(eventually([&] { return ready("big") == "1 True Serving"; }, 30s)) << ready("big");
  ASSERT_TRUE(eventually([&] { return e.c->kubectl({"get", "runnerpool", "-n", o.name, "gpu"}).exit_code != 0; }, 30s));
  std::this_thread::sleep_for(1s);  // this replica's cache has seen the delete (the intake reads it)
  const auto after = w.post_jobs("org-objects", "org-objects/app", "\"self-hosted\",\"linux\",\"gpu\"", 1);
  EXPECT_TRUE(eventually([&] { return w.stored_jobs()[after.at(0)] == "unmatched"; }, 30s)) << w.stored_jobs()[after.at(0)];
  EXPECT_EQ(w.headroom->sample("headroom_runner_pool_objects_total{outcome=\"stopped\"}"), 1);
  EXPECT_EQ(w.headroom->sample("headroom_runner_pool_objects_total{outcome=\"replaced\"}"), 1);
  EXPECT_EQ(w.headroom->pid(), pid) << "one headroom throughout";
}

// The seed's cleanup and stuck-job paths, and a runner group for chosen repositories. Phase 4 removes headroom's leftover GitHub runners: in
// an organization those of its runner group (a runner of another group, even one named like
// headroom's, is not its to remove), in a personal account's repository those with its name
// prefix. A job queued past jobStuckQueued (30 s here) whose run is over fails.
TEST(scheduler_e2e, phase_4_by_runner_group_and_prefix_and_a_stuck_queued_job_fails) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-phase4", .extra = "\n  runnerGroupRepositories: [org-p4/app, org-zero/app]"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  // One job each in an organization and a personal repository: the group exists, the entities are seen.
  auto ran = w.post_jobs("org-p4", "org-p4/app", "\"self-hosted\",\"linux\"", 1);
  auto solo = w.post_jobs("", "solo-p4/tool", "\"self-hosted\",\"linux\"", 1);
  ran.insert(ran.end(), solo.begin(), solo.end());
  ASSERT_TRUE(eventually([&] {
    auto jobs = w.peer_jobs();
    return jobs[ran[0]] == "completed" && jobs[ran[1]] == "completed";
  }, 90s)) << w.headroom->log();
  // The group headroom made in org-p4 (runnerGroup: headroom), as GitHub lists it.
  int64_t group = 0;
  {
    auto r = testpeer::http_call(e.peer->http_url() + "/orgs/org-p4/actions/runner-groups", {}, {"Authorization: Bearer " + pat});
    simdjson::dom::parser p;
    auto doc = p.parse(r.body);
    ASSERT_EQ(doc.error(), simdjson::SUCCESS) << r.status << " " << r.body;
    for (auto g : doc["runner_groups"].get_array())
      if (std::string_view(g["name"]) == "headroom")
        group = int64_t(g["id"]);
  }
  ASSERT_GT(group, 1) << "headroom ensured its runner group in org-p4";
  // runnerGroupRepositories: the group is for org-p4/app alone, and org-p4/other's job is not ours.
  {
    auto r = testpeer::http_call(e.peer->http_url() + "/orgs/org-p4/actions/runner-groups", {}, {"Authorization: Bearer " + pat});
    auto repo = testpeer::http_call(e.peer->http_url() + "/repos/org-p4/app", {}, {"Authorization: Bearer " + pat});
    simdjson::dom::parser p, q;
    const int64_t app_id = int64_t(q.parse(repo.body)["id"]);
    for (auto g : p.parse(r.body)["runner_groups"].get_array())
      if (std::string_view(g["name"]) == "headroom") {
        EXPECT_EQ(std::string_view(g["visibility"]), "selected");
        auto ids = g["selected_repository_ids"].get_array();
        ASSERT_EQ(ids.size(), 1u);
        EXPECT_EQ(int64_t(ids.at(0)), app_id);
      }
  }
  auto other = w.post_jobs("org-p4", "org-p4/other", "\"self-hosted\",\"linux\"", 1);
  EXPECT_TRUE(eventually([&] { return w.headroom->sample("headroom_scheduler_webhooks_total{outcome=\"unmatched\"}") >= 1; }, 20s));
  EXPECT_EQ(w.stored_jobs()[other[0]], "unmatched") << "org-p4/other may not use the runner group";
  auto enroll = [&](const std::string& entity, int64_t group_id, const std::string& name) {
    auto r = e.peer->control("/runners/register", "{\"entity\":\"" + entity + "\",\"groupId\":" + std::to_string(group_id) +
                                                      ",\"name\":\"" + name + "\",\"online\":false}");
    EXPECT_EQ(r.status, 200) << r.body;
  };
  enroll("org-p4", group, "headroom-runner-leftover01");        // ours: removed
  enroll("org-p4", 1, "headroom-runner-othergroup");            // the Default group's: kept
  enroll("org-p4", group, "someone-else-01");                   // not named as ours: kept
  enroll("solo-p4/tool", 0, "headroom-runner-leftover02");      // ours by prefix: removed
  enroll("solo-p4/tool", 0, "laptop-runner");                   // kept
  auto names_of = [&](const std::string& entity) {
    std::set<std::string> out;
    simdjson::dom::parser p;
    for (auto rn : p.parse(e.peer->control("/state").body)["runners"].get_array()) {
      std::string_view en;
      if (rn["entity"].get(en) == simdjson::SUCCESS && en == entity)
        out.emplace(std::string_view(rn["name"]));
    }
    return out;
  };
  EXPECT_TRUE(eventually([&] {
    return names_of("org-p4").count("headroom-runner-leftover01") == 0 && names_of("solo-p4/tool").count("headroom-runner-leftover02") == 0;
  }, 30s)) << w.headroom->log();
  for (const char* kept : {"headroom-runner-othergroup", "someone-else-01"})
    EXPECT_EQ(names_of("org-p4").count(kept), 1u) << kept << " is not headroom's to remove";
  EXPECT_EQ(names_of("solo-p4/tool").count("laptop-runner"), 1u);
  EXPECT_GE(w.headroom->sample("headroom_scheduler_actions_total{action=\"runner_removed\"}"), 2);

  // Stuck: org-zero's cap is 0, so its job never gets a runner; its run is over; past 30 s it fails.
  auto stuck = w.post_jobs("org-zero", "org-zero/app", "\"self-hosted\"", 1);
  ASSERT_TRUE(eventually([&] { return w.stored_jobs()[stuck[0]] == "pending"; }, 20s)) << w.job_story(stuck[0]);
  e.peer->control("/webhooks/run-done", "{\"jobId\":" + std::to_string(stuck[0]) + "}");
  EXPECT_TRUE(eventually([&] { return w.stored_jobs()[stuck[0]] == "failed"; }, 60s)) << w.headroom->log();
  EXPECT_GE(w.headroom->sample("headroom_scheduler_actions_total{action=\"job_failed\"}"), 1);
}

// The health checks' timers are in the store: a restart (SIGKILL) does not reset them. The
// simulator never connects the first runner; its pod is Running from T0 and headroom is killed and
// restarted about 8 s later. The runner still fails runner_never_registered 20 s after T0 (it
// would be 20 s after the restart, 28 s or more, with timers in memory), and the stored
// running_since is T0 throughout.
TEST(scheduler_e2e, health_timers_survive_a_restart) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-timers", .skip_runners = 1, .health = "{registrationTimeout: 20s, pendingTimeout: 600s, idleTimeout: 600s}"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  w.post_jobs("org-timers", "org-timers/app", "\"self-hosted\"", 1);
  auto stored_worker = [&]() -> std::optional<store::worker> {
    auto opened = store::open_sqlite(w.dir + "/jobs.db");
    if (opened.index() != 0)
      return std::nullopt;
    store::page_query q;
    q.limit = 10;
    auto rows = std::get<0>(opened)->workers_page(q);
    if (rows.index() != 0 || std::get<0>(rows).empty())
      return std::nullopt;
    return std::get<0>(rows).back();  // the first worker (pages are newest first)
  };
  int64_t t0 = 0;
  std::string name;
  ASSERT_TRUE(eventually([&] {
    auto x = stored_worker();
    if (!x || x->running_since == 0)
      return false;
    t0 = x->running_since;
    name = x->name;
    return true;
  }, 60s)) << "the first worker's pod was never seen Running\n" << w.headroom->log();
  std::this_thread::sleep_for(8s);
  w.headroom->stop(SIGKILL);
  ASSERT_TRUE(w.start()) << w.headroom->log();
  ASSERT_TRUE(eventually([&] {
    auto x = stored_worker();
    return x && x->name == name && x->status == store::worker_status::failed;
  }, 60s)) << w.headroom->log();
  const auto x = *stored_worker();
  EXPECT_EQ(x.running_since, t0) << "the restart kept the timer";
  EXPECT_EQ(x.failure_info.rfind("runner_never_registered", 0), 0u) << x.failure_info;
  EXPECT_LT(x.updated_at - t0, 26'000) << "failed " << (x.updated_at - t0) << " ms after Running: the timer restarted with headroom";
}

// Two workers lose half of themselves. One's pod is deleted behind headroom's back (the orphan
// sweep: the worker is over, and its job, running on the runner that died with the pod, gets no
// second runner). The other's runner registration is deleted on GitHub while its pod runs on
// (runner_vanished: killed after registrationTimeout, 5 s here).
TEST(scheduler_e2e, a_worker_whose_pod_or_runner_vanished_is_over) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-vanish", .job_duration = "600s",
                    .health = "{registrationTimeout: 5s, pendingTimeout: 600s, idleTimeout: 600s}"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  auto status_of = [&](const std::string& name) {
    for (const auto& x : w.workers())
      if (x.name == name)
        return x.status + ": " + x.failure;
    return std::string{"absent"};
  };
  auto running_worker_of = [&](const std::string& entity) {
    for (const auto& x : w.workers())
      if (x.entity == entity && x.status == "running" && x.job_id != 0)
        return x.name;
    return std::string{};
  };
  // 1. The orphan: a running job's pod deleted.
  auto a = w.post_jobs("org-orphan", "org-orphan/app", "\"self-hosted\"", 1);
  std::string orphan;
  ASSERT_TRUE(eventually([&] { return !(orphan = running_worker_of("org-orphan")).empty(); }, 60s)) << w.headroom->log();
  e.c->kubectl({"-n", w.o.name, "delete", "pod", orphan, "--grace-period=0", "--force"});
  EXPECT_TRUE(eventually([&] { return status_of(orphan).rfind("failed: pod_missing", 0) == 0; }, 60s)) << status_of(orphan);
  std::this_thread::sleep_for(6s);  // three cycles: no second runner for a job whose runner is known and gone
  int workers_of_a = 0;
  for (const auto& x : w.workers())
    workers_of_a += x.entity == "org-orphan";
  EXPECT_EQ(workers_of_a, 1);

  // 2. The vanished runner: busy, then deleted on GitHub (as an admin would, in the runner settings).
  w.post_jobs("org-vanish", "org-vanish/app", "\"self-hosted\"", 1);
  std::string gone;
  ASSERT_TRUE(eventually([&] { return !(gone = running_worker_of("org-vanish")).empty(); }, 60s)) << w.headroom->log();
  // Once headroom's health check has seen it online (its memory, kept in the store, says so).
  ASSERT_TRUE(eventually([&] {
    auto opened = store::open_sqlite(w.dir + "/jobs.db");
    if (opened.index() != 0)
      return false;
    auto active = std::get<0>(opened)->active_workers();
    if (active.index() != 0)
      return false;
    for (const auto& x : std::get<0>(active))
      if (x.name == gone && x.registered)
        return true;
    return false;
  }, 30s)) << w.headroom->log();
  int64_t runner_id = 0;
  {
    simdjson::dom::parser p;
    for (auto rn : p.parse(e.peer->control("/state").body)["runners"].get_array())
      if (std::string_view(rn["name"]) == gone)
        runner_id = int64_t(rn["id"]);
  }
  ASSERT_NE(runner_id, 0);
  e.peer->control("/runners/forget", "{\"id\":" + std::to_string(runner_id) + "}");
  EXPECT_TRUE(eventually([&] { return status_of(gone).rfind("failed: runner_vanished", 0) == 0; }, 60s))
      << status_of(gone) << "\n" << w.headroom->log();
  EXPECT_TRUE(eventually([&] { return e.c->kubectl({"-n", w.o.name, "get", "pod", gone, "-o", "name"}).exit_code != 0; }, 30s))
      << "killed, then deleted after killGrace (kwok does not enforce activeDeadlineSeconds)";
  (void)a;
}

// Enterprise runners (scheduler.enterprise): two organizations' jobs run on runners registered
// at the enterprise, in its runner group headroom made; a leftover in that group is removed by
// Phase 4 like an organization's.
TEST(scheduler_e2e, enterprise_runners_serve_every_organization) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-enterprise", .extra = "\n  enterprise: acme-ent"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  auto ids = w.post_jobs("org-ent-a", "org-ent-a/app", "\"self-hosted\",\"linux\"", 2);
  auto more = w.post_jobs("org-ent-b", "org-ent-b/app", "\"self-hosted\",\"linux\"", 2);
  ids.insert(ids.end(), more.begin(), more.end());
  ASSERT_TRUE(eventually([&] {
    auto jobs = w.peer_jobs();
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return jobs[id] == "completed"; });
  }, 120s)) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.each_ran_once(ids); }, 30s));
  auto r = testpeer::http_call(e.peer->http_url() + "/enterprises/acme-ent/actions/runner-groups", {}, {"Authorization: Bearer " + pat});
  int64_t group = 0;
  simdjson::dom::parser p;
  for (auto g : p.parse(r.body)["runner_groups"].get_array())
    if (std::string_view(g["name"]) == "headroom")
      group = int64_t(g["id"]);
  ASSERT_GT(group, 1) << r.body;
  // No runner was an organization's: headroom made no runner group in either organization.
  for (const char* org : {"org-ent-a", "org-ent-b"}) {
    auto groups = testpeer::http_call(e.peer->http_url() + "/orgs/" + org + "/actions/runner-groups", {}, {"Authorization: Bearer " + pat});
    simdjson::dom::parser q;
    EXPECT_EQ(int64_t(q.parse(groups.body)["total_count"]), 1) << org << ": " << groups.body;
  }
  auto enrolled = e.peer->control("/runners/register", "{\"entity\":\"enterprises/acme-ent\",\"groupId\":" + std::to_string(group) +
                                                           ",\"name\":\"headroom-runner-entleft01\",\"online\":false}");
  ASSERT_EQ(enrolled.status, 200) << enrolled.body;
  EXPECT_TRUE(eventually([&] {
    simdjson::dom::parser q;
    for (auto rn : q.parse(e.peer->control("/state").body)["runners"].get_array())
      if (std::string_view(rn["name"]) == "headroom-runner-entleft01")
        return false;
    return true;
  }, 30s)) << "the enterprise group's leftover was not removed\n" << w.headroom->log();
}

// What GitHub gets wrong or an attacker sends: forged signatures write nothing; a redelivery
// records nothing twice; a job completed before it was provisioned stays completed with no
// worker; a job GitHub no longer knows (404) fails; malformed JSON is a 400 naming the field.
TEST(scheduler_e2e, forged_redelivered_early_completed_and_vanished_jobs) {
  REQUIRE_SCHED_ENV(e);
  // An idle enterprise runner the previous scenario left connected in the shared peer serves every
  // organization, org-zero too: it took this scenario's capped-at-0 job at once (in_progress 1 ms
  // after queued) in one CI run. Such leftovers are forgotten first.
  {
    simdjson::dom::parser lp;
    for (auto rn : lp.parse(e.peer->control("/state").body)["runners"].get_array()) {
      std::string_view entity;
      if (rn["entity"].get(entity) == simdjson::SUCCESS && entity.rfind("enterprises/", 0) == 0 && !bool(rn["busy"]))
        e.peer->control("/runners/forget", "{\"id\":" + std::to_string(int64_t(rn["id"])) + "}");
    }
  }
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
  ASSERT_TRUE(eventually([&] { return w.stored_jobs()[early[0]] == "pending"; }, 20s)) << w.job_story(early[0]);
  e.peer->control("/webhooks/complete", "{\"jobId\":" + std::to_string(early[0]) + ",\"conclusion\":\"cancelled\"}");
  ASSERT_TRUE(eventually([&] { return w.stored_jobs()[early[0]] == "completed"; }, 20s));
  // The queued delivery again, after the completion: recorded before, nothing changes.
  simdjson::dom::parser p;
  std::string queued_delivery;
  for (auto d : p.parse(e.peer->control("/webhooks/state").body)["deliveries"].get_array())
    if (int64_t(d["jobId"]) == early[0] && std::string_view(d["action"]) == "queued")
      queued_delivery = std::string{std::string_view(d["id"])};
  ASSERT_FALSE(queued_delivery.empty());
  e.peer->control("/webhooks/redeliver", "{\"deliveryId\":\"" + queued_delivery + "\"}");
  // The peer keeps a record per send: the redelivery is the second record with this id. (This
  // waited for the count of 202s to grow by one from a count taken before the redelivery; the
  // early job's completion delivery could still be unanswered at that moment - headroom records it
  // before its answer reaches the peer - so the count grew by two and the wait failed, in about
  // one run in eight under load.)
  auto sends_answered_202 = [&] {
    simdjson::dom::parser dp;
    int n = 0;
    for (auto d : dp.parse(e.peer->control("/webhooks/state").body)["deliveries"].get_array())
      n += std::string_view(d["id"]) == queued_delivery && int64_t(d["status"]) == 202 ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(eventually([&] { return sends_answered_202() == 2; }, 20s)) << w.job_story(early[0]);
  EXPECT_EQ(w.stored_jobs()[early[0]], "completed") << "a late queued redelivery moved a completed job back";
  for (const auto& x : w.workers())
    EXPECT_NE(x.entity, "org-zero") << "a capped-at-0 entity got a worker";

  // GitHub forgets a pending job (404 on the job API): failed within a jobSyncInterval or two.
  auto vanished = w.post_jobs("org-zero", "org-zero/app", "\"self-hosted\"", 1);
  ASSERT_TRUE(eventually([&] { return w.stored_jobs()[vanished[0]] == "pending"; }, 20s)) << w.job_story(vanished[0]);
  e.peer->control("/webhooks/forget", "{\"jobId\":" + std::to_string(vanished[0]) + "}");
  EXPECT_TRUE(eventually([&] { return w.stored_jobs()[vanished[0]] == "failed"; }, 20s)) << w.headroom->log();

  // GitHub's rate limit (429 with Retry-After: 6 on a job lookup): no GitHub call at all until it
  // has passed, then the lookups resume. The job waits pending (org-zero is capped at 0).
  auto rest_job_calls = [&] {
    simdjson::dom::parser q;
    auto doc = q.parse(e.peer->control("/webhooks/state").body);
    int64_t n = 0;
    if (doc["requests"]["rest_job"].get(n) != simdjson::SUCCESS)
      return int64_t{0};  // no lookup counted yet
    return n;
  };
  auto waiting = w.post_jobs("org-zero", "org-zero/app", "\"self-hosted\"", 1);
  ASSERT_TRUE(eventually([&] { return w.stored_jobs()[waiting[0]] == "pending"; }, 20s)) << w.job_story(waiting[0]);
  const int64_t before_limit = rest_job_calls();
  e.peer->control("/faults", R"([{"route":"rest_job","status":429,"count":1,"retryAfter":"6"}])");
  ASSERT_TRUE(eventually([&] { return rest_job_calls() > before_limit; }, 20s)) << "no job lookup reached the limit";
  const int64_t limited_at = rest_job_calls();
  std::this_thread::sleep_for(4s);  // two jobSyncIntervals: lookups would have been made
  EXPECT_EQ(rest_job_calls(), limited_at) << "GitHub was called during its rate limit";
  EXPECT_TRUE(eventually([&] { return rest_job_calls() > limited_at; }, 20s)) << "lookups never resumed after the limit";
  EXPECT_NE(w.headroom->full_log().find("pausing GitHub calls for 6 s"), std::string::npos) << w.headroom->log();
  EXPECT_EQ(w.stored_jobs()[waiting[0]], "pending");

  // Straight to the route: malformed JSON names the problem; a wrong signature is 401.
  const std::string body = "{\"action\":\"queued\",\"workflow_job\":{\"id\":\"x\"}}";
  const std::string sig = "sha256=" + testpeer::hmac_sha256_hex(secret, body);
  auto bad = testpeer::http_call(w.url + "/webhook", body,
                                 {"X-GitHub-Event: workflow_job", "X-GitHub-Delivery: d-bad-1", "X-Hub-Signature-256: " + sig});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("workflow_job"), std::string::npos) << bad.body;
  auto unsigned_ = testpeer::http_call(w.url + "/webhook", body, {"X-GitHub-Event: workflow_job", "X-GitHub-Delivery: d-bad-2"});
  EXPECT_EQ(unsigned_.status, 401);
  auto bad_query = testpeer::http_call(w.pages + "/jobs.json?per_page=abc");
  EXPECT_EQ(bad_query.status, 400);
  EXPECT_NE(bad_query.body.find("per_page"), std::string::npos);
  // #40: a page past the cursorless bound is the client's error, not the store's (it was 503).
  for (const char* path : {"/jobs.json?page=1001", "/history?page=1001", "/workers.json?page=5000"}) {
    auto far = testpeer::http_call(w.pages + path);
    EXPECT_EQ(far.status, 400) << path << ": " << far.body;
    EXPECT_NE(far.body.find("after"), std::string::npos) << far.body;
  }
  // #40: labels of the wrong type are refused with the field's path, as is a second document.
  for (const auto& [payload, says] : std::vector<std::pair<std::string, std::string>>{
           {"{\"action\":\"queued\",\"workflow_job\":{\"id\":77,\"labels\":\"self-hosted\"}}", "workflow_job.labels"},
           {"{\"action\":\"queued\",\"workflow_job\":{\"id\":78,\"labels\":[1]}}", "workflow_job.labels[0]"},
           {"{\"action\":\"queued\",\"workflow_job\":{\"id\":79}}{}", "trailing content"}}) {
    auto r = testpeer::http_call(w.url + "/webhook", payload,
                                 {"X-GitHub-Event: workflow_job", "X-GitHub-Delivery: d-type-" + says,
                                  "X-Hub-Signature-256: sha256=" + testpeer::hmac_sha256_hex(secret, payload)});
    EXPECT_EQ(r.status, 400) << payload << ": " << r.body;
    EXPECT_NE(r.body.find(says), std::string::npos) << r.body;
  }
  // Job names are attacker-controlled: the HTML escapes them.
  e.peer->control("/webhooks/jobs", "{\"organization\":\"org-zero\",\"repository\":\"org-zero/app\",\"labels\":[\"self-hosted\",\"x\"],"
                                    "\"name\":\"<script>alert(1)</script>\"}");
  ASSERT_TRUE(eventually([&] { return w.stored_jobs().size() >= 4; }, 20s));
  // #36: jobs for GitHub-hosted runners are answered (202 unmatched), kept as unmatched history
  // and never become demand; /history lists the jobs status first (pending, running, completed,
  // failed, unmatched), newest first within each.
  const auto hosted = w.post_jobs("org-zero", "org-zero/app", "\"ubuntu-latest\"", 2);
  ASSERT_EQ(hosted.size(), 2u);
  EXPECT_TRUE(eventually([&] { return w.headroom->sample("headroom_scheduler_webhooks_total{outcome=\"unmatched\"}") >= 2; }, 20s))
      << w.headroom->metrics();
  auto stored_now = w.stored_jobs();
  for (auto id : hosted)
    EXPECT_EQ(stored_now[id], "unmatched") << "the GitHub-hosted job " << id;
  {
    const auto listed = w.all_rows("/history.json?per_page=2", "status");
    const auto ids = w.all_rows("/history.json?per_page=2", "id");
    ASSERT_EQ(listed.size(), stored_now.size()) << "every job once, across pages of two";
    const std::vector<std::string> order{"pending", "running", "completed", "failed", "unmatched"};
    auto rank = [&](const std::string& s) { return std::find(order.begin(), order.end(), s) - order.begin(); };
    for (size_t i = 1; i < listed.size(); ++i)
      EXPECT_LE(rank(listed[i - 1]), rank(listed[i])) << "row " << i << ": " << listed[i - 1] << " before " << listed[i];
    EXPECT_EQ(listed.back(), "unmatched");
    EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size()) << "a job came twice";
  }
  auto html = testpeer::http_call(w.pages + "/jobs");
  EXPECT_EQ(html.body.find("<script>"), std::string::npos);
  EXPECT_NE(html.body.find("&lt;script&gt;"), std::string::npos);
  // As a browser parses it: no script element anywhere, the name is the cell's text.
  std::string why;
  ASSERT_TRUE(testenv::browser::available(why)) << why;
  const auto dom = testenv::browser::dom(w.pages + "/jobs", why);
  ASSERT_FALSE(dom.empty()) << why;
  EXPECT_EQ(dom.find("<script"), std::string::npos) << dom;
  bool shown = false;
  for (const auto& row : testenv::browser::body_rows(dom))
    shown = shown || (row.size() > 1 && row[1] == "<script>alert(1)</script>");
  EXPECT_TRUE(shown) << "the hostile name is shown as text";
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
  ids.insert(ids.end(), more.begin(), more.end());
  w.redeliver_failed(ids);
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
    w.redeliver_failed(ids, true);
    auto jobs = w.peer_jobs();
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return jobs[id] == "completed"; });
  }, 240s);
  ASSERT_TRUE(done) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.each_ran_once(ids); }, 30s)) << "a job ran on two workers, or none was recorded";
  // The peer marks a job completed before its webhook is delivered: the store follows by the
  // webhook (a refused one is redelivered) or by syncJobsState asking GitHub, within seconds.
  const bool stored_done = eventually([&] {
    auto stored = w.stored_jobs();
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return stored[id] == "completed"; });
  }, 30s);
  auto stored = w.stored_jobs();
  for (auto id : ids)
    EXPECT_EQ(stored[id], "completed") << "job " << id;
  EXPECT_TRUE(stored_done) << w.headroom->log();
}

// #40, and the fault campaign's "dependency down for minutes" for the scheduler: PostgreSQL
// stopped for 20 s. The reconciler said so once and backed off (before: 33,000-47,000 log lines a
// second and half a core, from a loop that asked the down server again at once); the store's
// availability is a metric; when the server is back it says so once and the jobs posted during
// the outage (their webhooks refused with 503 and redelivered) run once each.
// The deliveries refused meanwhile (503) are not redelivered by hand: GitHub never does so by
// itself, and headroom, running as the GitHub App, asks for them through the App's
// webhook-deliveries API when the store is back (#61: refused, they were lost).
TEST(scheduler_e2e, postgres_down_for_20s_is_one_line_a_backoff_a_metric_and_nothing_lost) {
  REQUIRE_SCHED_ENV(e);
  // A peer of its own that knows the Apps (the shared one takes a personal access token), beside
  // the shared PostgreSQL, which this test stops and restarts. Two Apps, one per account kind
  // (seed 003): the first installed in org-down, the second in the personal account dana; each
  // App's webhook has its own deliveries, so the refused ones are found in both.
  auto [app_key, app_public_key] = testpeer::make_app_key();
  auto [user_app_key, user_app_public_key] = testpeer::make_app_key();
  testpeer::actions_peer::options po;
  po.app_public_key_pem = app_public_key;
  po.installations = "org-down=301";
  po.user_app_id = "67890";
  po.user_app_public_key_pem = user_app_public_key;
  po.user_installations = "dana=302";
  sched_env app_env;
  app_env.c = e.c;
  app_env.peer = testpeer::actions_peer::start(po, app_env.why);
  ASSERT_TRUE(app_env.peer) << app_env.why;
  app_env.pg = std::move(e.pg);
  struct give_back {
    sched_env& from;
    sched_env& to;
    ~give_back() { to.pg = std::move(from.pg); }
  } back{app_env, e};
  sched_options opts{.name = "sched-pg-down", .store = "postgres", .job_duration = "1s"};
  opts.env = {"HEADROOM_GITHUB_APP_ID=12345", "HEADROOM_GITHUB_APP_PRIVATE_KEY=" + app_key, "HEADROOM_GITHUB_USER_APP_ID=67890",
              "HEADROOM_GITHUB_USER_APP_PRIVATE_KEY=" + user_app_key};
  sched_world w{app_env, opts};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  // Both kinds of account, in every phase: an organization's repository and a personal one.
  const auto post_both = [&] {
    auto ids = w.post_jobs("org-down", "org-down/app", "\"self-hosted\"", 2);
    auto personal = w.post_jobs("", "dana/tool", "\"self-hosted\"", 1);
    ids.insert(ids.end(), personal.begin(), personal.end());
    return ids;
  };
  auto first = post_both();
  ASSERT_TRUE(eventually([&] {
    auto jobs = w.peer_jobs();
    return std::all_of(first.begin(), first.end(), [&](int64_t id) { return jobs[id] == "completed"; });
  }, 90s)) << w.headroom->log();
  EXPECT_EQ(w.headroom->sample("headroom_scheduler_store_available"), 1);
  const size_t log_before = w.headroom->full_log().size();
  const double cpu_before = testenv::cpu_seconds(w.headroom->pid());
  const auto down_at = std::chrono::steady_clock::now();
  app_env.pg->stop();
  auto during = post_both();  // refused (503): headroom has them redelivered, each by its App
  EXPECT_TRUE(eventually([&] { return w.headroom->sample("headroom_scheduler_store_available") == 0; }, 10s)) << w.headroom->log();
  std::this_thread::sleep_for(20s - (std::chrono::steady_clock::now() - down_at));
  const double cpu = testenv::cpu_seconds(w.headroom->pid()) - cpu_before;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - down_at).count();
  const std::string outage_log = w.headroom->full_log().substr(log_before);
  std::string why;
  ASSERT_TRUE(app_env.pg->restart(why)) << why;
  const auto count = [&](const std::string& text, const std::string& what) {
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      ++n;
    return n;
  };
  const int lines = count(outage_log, "\n");
  const double core = cpu / seconds;
  std::printf("[postgres down %.0f s] %d log lines, %.1f %% of a core\n", seconds, lines, core * 100);
  EXPECT_EQ(count(outage_log, "the job store is unavailable; retrying with backoff"), 1) << outage_log.substr(0, 4000);
  EXPECT_EQ(count(outage_log, "waiting for job events failed"), 0);
  EXPECT_LE(lines, 40) << "a 20 s outage is a few lines (the webhooks refused, the state change), not a line per retry\n"
                       << outage_log.substr(0, 4000);
  EXPECT_LT(core, 0.10) << "headroom spun while the store was down";
  std::vector<int64_t> ids = first;
  ids.insert(ids.end(), during.begin(), during.end());
  auto after = post_both();
  ids.insert(ids.end(), after.begin(), after.end());
  ASSERT_TRUE(eventually([&] {
    auto jobs = w.peer_jobs();
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return jobs[id] == "completed"; });
  }, 180s)) << "the deliveries refused during the outage were not redelivered\n" << w.headroom->log();
  EXPECT_GE(w.headroom->sample("headroom_scheduler_actions_total{action=\"webhook_redelivered\"}"), 3)
      << "headroom asked for the refused deliveries itself\n" << w.headroom->log();
  // The personal account's runners were made with the second App's installation, the
  // organization's with the first's; neither App's token went to the other's account.
  auto counts = app_env.peer->request_counts();
  const auto requests = [&](const char* route) { return counts[route]; };
  EXPECT_GE(requests("access_token:301"), 1);
  EXPECT_GE(requests("access_token:302"), 1) << "the second App's installation served dana";
  EXPECT_EQ(requests("wrong_installation"), 0);
  EXPECT_NE(w.headroom->full_log().find("asked GitHub to redeliver the webhook deliveries refused during the store outage"),
            std::string::npos);
  EXPECT_TRUE(eventually([&] { return w.headroom->sample("headroom_scheduler_store_available") == 1; }, 30s));
  EXPECT_EQ(count(w.headroom->full_log(), "the job store is available again"), 1);
  EXPECT_TRUE(eventually([&] { return w.each_ran_once(ids); }, 30s)) << "a job ran on two workers, or none was recorded";
}

// Fault campaign (#19): each scheduler actor kind failed mid-burst (the test fault hook kills it,
// as a crash would). The supervisor restarts it within 1 s; the restarted reconciler rebuilds from
// the store and the cluster and provisions each job once; the restarted webhook server answers
// again (deliveries refused in its gap are redelivered, as GitHub's "redeliver failed" does).
// Then the reconciler is failed past maxRestarts (5 a minute): the scheduler supervisor gives up,
// its parent restarts the subtree, the process lives on, and every job still completes once.
TEST(scheduler_e2e, each_actor_kind_failed_mid_burst_is_restarted_and_every_job_runs_once) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-actors", .job_duration = "3s", .fault_hooks = true}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  auto restarts = [&](const std::string& supervisor, const std::string& child) {
    return std::max(0.0, w.headroom->sample("headroom_supervisor_restarts_total{child=\"" + child + "\",supervisor=\"" + supervisor + "\"}"));
  };
  auto escalations = [&] { return std::max(0.0, w.headroom->sample("headroom_supervisor_escalations_total{supervisor=\"scheduler\"}")); };
  auto fail_and_time = [&](const std::string& supervisor, const std::string& child) {
    const double before = restarts(supervisor, child);
    const auto at = std::chrono::steady_clock::now();
    EXPECT_EQ(w.headroom->post("/debug/fault?child=" + child), "1\n") << child << ": the hook reaches exactly one actor";
    bool back = false;  // sampled every 50 ms
    while (!(back = restarts(supervisor, child) > before) && std::chrono::steady_clock::now() - at < 5s)
      std::this_thread::sleep_for(50ms);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - at).count();
    EXPECT_TRUE(back) << child << " was not restarted\n" << w.headroom->log();
    // Goal 1 s. The reconciler makes its cycle's API calls one after another inside the actor, so
    // a kill lands when the call in flight returns: 0.21-0.78 s measured (0.78 with the chaos suite
    // sharing the machine); the bound leaves a loaded CI machine room.
    EXPECT_LT(took, 1.5) << child << ": restarted " << took << " s after it failed (goal 1 s)";
    std::printf("[faults] %s failed mid-burst: restarted within %.2f s\n", child.c_str(), took);
  };
  auto ids = w.post_jobs("org-actors", "org-actors/app", "\"self-hosted\"", 12);
  ASSERT_TRUE(eventually([&] { return w.live_workers("org-actors") >= 2; }, 60s)) << w.headroom->log();
  fail_and_time("scheduler", "reconciler");
  fail_and_time("root", "scheduler_http");
  EXPECT_TRUE(eventually([&] { return testpeer::http_call(w.url + "/health").status == 200; }, 5s)) << "the webhook server is back";
  auto more = w.post_jobs("org-actors", "org-actors/app", "\"self-hosted\"", 6);
  ids.insert(ids.end(), more.begin(), more.end());

  // Escalation: the reconciler failed past maxRestarts within the window.
  const double escalated_before = escalations();
  const double subtree_restarts = restarts("acting", "scheduler");
  int failures = 0;
  while (escalations() == escalated_before && failures < 7) {
    const double before = restarts("scheduler", "reconciler");
    ASSERT_EQ(w.headroom->post("/debug/fault?child=reconciler"), "1\n") << "failure " << failures + 1;
    ++failures;
    ASSERT_TRUE(eventually([&] { return restarts("scheduler", "reconciler") > before || escalations() > escalated_before; }, 10s))
        << "failure " << failures << " was neither restarted nor escalated\n" << w.headroom->log();
  }
  EXPECT_GT(escalations(), escalated_before) << "the scheduler supervisor gives up past maxRestarts failures in a minute\n"
                                             << w.headroom->log();
  EXPECT_GE(failures, 5) << "escalated before maxRestarts failures";
  EXPECT_TRUE(eventually([&] { return restarts("acting", "scheduler") > subtree_restarts; }, 30s))
      << "its parent restarts the scheduler subtree\n" << w.headroom->log();
  EXPECT_TRUE(w.headroom->alive()) << "an escalation in one mode does not end the process\n" << w.headroom->log();
  auto last = w.post_jobs("org-actors", "org-actors/app", "\"self-hosted\"", 4);
  ids.insert(ids.end(), last.begin(), last.end());

  const bool done = eventually([&] {
    w.redeliver_failed(ids);
    auto jobs = w.peer_jobs();
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return jobs[id] == "completed"; });
  }, 240s);
  ASSERT_TRUE(done) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.each_ran_once(ids); }, 30s)) << "a job ran on two workers, or none was recorded";
  // Each job ran exactly once (above), and no worker more than the jobs: a kill is delivered
  // between the reconciler's messages and a cycle is one message, so none lands mid-provision.
  // (This scenario made 24 workers for 22 jobs in two fresh-clone CI runs and two local ones. In
  // the one whose story was printed, 2026-11-25, the two extra were the PostgreSQL scenario's
  // jobs, whose failed deliveries this test redelivered to its own headroom; it now redelivers
  // only its own jobs'. The other runs' two are likely the same: always two, never the log.)
  const auto workers = w.workers();
  EXPECT_EQ(workers.size(), ids.size()) << "one worker per job (" << failures << " more failures)";
  for (const auto& x : workers)
    EXPECT_NE(x.status, "failed") << x.name << ": " << x.failure;
  if (workers.size() > ids.size())
    std::printf("[faults] %s", w.extra_workers_story({w.headroom->full_log()}).c_str());
  std::printf("[faults] reconciler failed %d more times: escalated, the scheduler subtree restarted; %zu jobs, %zu workers\n",
              failures, ids.size(), workers.size());
}

// Fault campaign (#19): the API server broken under bursts of jobs, headroom's traffic through the
// fault proxy (testenv/apiserver_proxy.hpp; the simulator talks to the API server directly), in
// turn, each in the middle of its own burst of 4 jobs:
//   1. every request answered 429/503/500/504 for 30 s (a 504 to a create only after the pod
//      was made: the API server's own Timeout);
//   2. every watch stream silenced: headroom drops each after watchStallTimeout (15 s here);
//   3. every watch stream ended and met a 410 Expired: the informers relist;
//   4. kube-apiserver stopped and started again with the same flags.
// After each: every job of the run completes, each on exactly one worker; no runner pod is left
// behind (each is deleted once over, within the podDeleteGrace and a cycle); no worker is live.
TEST(scheduler_e2e, apiserver_faults_mid_burst_every_job_runs_once_and_no_runner_pod_leaks) {
  REQUIRE_SCHED_ENV(e);
  testenv::apiserver_proxy proxy{*e.c};
  HEADROOM_REQUIRE_READY(proxy.p != nullptr, "the API-server fault proxy", proxy.why);
  const std::string kubeconfig = proxy.kubeconfig(e.c->dir() + "/kubeconfig.sched-proxy", e.c->admin_token());
  sched_world w{e, {.name = "sched-apifault", .job_duration = "3s", .kubeconfig = kubeconfig, .watch_stall = "15s"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  using steady = std::chrono::steady_clock;
  auto since = [](steady::time_point t) { return std::chrono::duration<double>(steady::now() - t).count(); };
  std::vector<int64_t> ids;
  auto burst = [&] {
    auto more = w.post_jobs("org-apifault", "org-apifault/app", "\"self-hosted\"", 4);
    ids.insert(ids.end(), more.begin(), more.end());
    ASSERT_TRUE(eventually([&] { return w.live_workers("org-apifault") >= 1; }, 60s)) << "burst under way\n" << w.headroom->log();
  };
  auto pods_left = [&] {
    auto r = e.c->kubectl({"-n", "sched-apifault", "get", "pods", "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.phase}\n{end}"});
    return r.out;
  };
  int failed_before = 0;
  auto recovered = [&](const std::string& fault, steady::time_point ended, int most_failed = 1000) {
    const bool done = eventually([&] {
      auto jobs = w.peer_jobs();
      return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return jobs[id] == "completed"; });
    }, 180s);
    const double jobs_after = since(ended);
    auto story = [&] {
      std::string out = "jobs not completed:";
      auto jobs = w.peer_jobs();
      for (auto id : ids)
        if (jobs[id] != "completed")
          out += " " + std::to_string(id) + "=" + jobs[id];
      out += "\nworkers:";
      for (const auto& x : w.workers())
        out += "\n  " + x.name + " " + x.status + " job " + std::to_string(x.job_id) + " " + x.failure;
      return out + "\npods:\n" + pods_left() + "\n--- the simulator:\n" + w.sim->log();
    };
    ASSERT_TRUE(done) << fault << ": every job completes\n" << story() << "\n" << w.headroom->log();
    ASSERT_TRUE(eventually([&] { return w.each_ran_once(ids); }, 30s)) << fault << ": a job ran on two workers, or none was recorded";
    const bool clean = eventually([&] { return pods_left().empty() && w.live_workers("org-apifault") == 0; }, 60s);
    EXPECT_TRUE(clean) << fault << ": runner pods left behind\n" << story() << w.headroom->log();
    int failed = 0;
    for (const auto& x : w.workers())
      failed += x.status == "failed";
    // Each refused attempt costs a JIT config at GitHub and its removal: while the API server
    // refuses runner pods, provisioning pauses (1 s doubling to 10 s) rather than loop.
    EXPECT_LE(failed - failed_before, most_failed) << fault << ": provisioning attempts the API server refused";
    failed_before = failed;
    std::printf("[chaos] scheduler, %s: all %zu jobs completed %.1f s after the fault ended, each on one worker; "
                "no runner pod left %.1f s after; %zu workers, %d failed (provisioning refused by the API server)\n",
                fault.c_str(), ids.size(), jobs_after, since(ended), w.workers().size(), failed);
  };

  // 1. 429 and 5xx for 30 s, a burst running into it and another posted inside it.
  burst();
  std::thread during([&] {
    std::this_thread::sleep_for(2s);
    auto more = w.post_jobs("org-apifault", "org-apifault/app", "\"self-hosted\"", 4);
    ids.insert(ids.end(), more.begin(), more.end());
  });
  const auto faulted = proxy.error_storm(30s);
  during.join();
  EXPECT_GT(faulted, 0) << "headroom called the API server during the 30 s";
  recovered("apiserver 429/503/500/504 for 30 s", steady::now(), 15);
  if (HasFatalFailure())
    return;

  // 2. Every open watch falls silent (pods and nodes).
  ASSERT_TRUE(eventually([&] { return proxy.watches_flowing(2); }, 30s)) << proxy.p->log();
  const auto stalled = proxy.stall_watches();
  const auto stall_at = steady::now();
  burst();
  EXPECT_GE(stalled, 2) << "the pods and nodes watches were open";
  const bool resumed = eventually([&] { return proxy.watches_flowing(stalled); }, 15s + 15s);
  EXPECT_TRUE(resumed) << "each silent watch is dropped after watchStallTimeout (15 s) and resumed\n" << proxy.p->log();
  std::printf("[chaos] scheduler, %lld watch streams silenced: dropped and resumed %.1f s after\n", static_cast<long long>(stalled),
              since(stall_at));
  recovered("every watch stream silenced", stall_at);
  if (HasFatalFailure())
    return;

  // 3. Every watch ends and comes back to a 410.
  ASSERT_TRUE(eventually([&] { return proxy.watches_flowing(2); }, 30s)) << proxy.p->log();
  const auto expired = proxy.expire_watches();
  const auto expired_at = steady::now();
  burst();
  EXPECT_GE(expired, 2);
  EXPECT_TRUE(eventually([&] { return proxy.state("expired") >= expired; }, 10s)) << "every watch met the 410\n" << proxy.p->log();
  recovered("every watch expired (410)", expired_at);
  if (HasFatalFailure())
    return;

  // 4. kube-apiserver restarted mid-burst.
  burst();
  ASSERT_TRUE(e.c->restart_apiserver()) << e.c->logs();
  recovered("kube-apiserver restarted", steady::now());
  EXPECT_TRUE(w.headroom->alive()) << "no API-server fault ends the process\n" << w.headroom->log();
}

// The store wiped under a running worker (the operator deleted the SQLite file, or pointed
// headroom at a new database): the runner pod is a stray to the restarted headroom, which no
// stored worker owns. Past the orphan grace the stray sweep asks GitHub about it, finds its runner
// busy and leaves it to finish its job; the runner, ephemeral, ends its pod, which then goes. Before
// the check the sweep deleted it 30 s after it was made, and the job with it.
TEST(scheduler_e2e, a_wiped_store_leaves_a_runner_busy_with_a_job_to_finish_it) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-wiped", .job_duration = "50s"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  const auto ids = w.post_jobs("org-wiped", "org-wiped/app", "\"self-hosted\"", 1);
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(eventually([&] { return w.peer_jobs()[ids[0]] == "running"; }, 60s)) << w.headroom->log();
  const auto workers = w.workers();
  ASSERT_EQ(workers.size(), 1u);
  const std::string pod = workers[0].name;
  auto pod_phase = [&] {
    auto r = e.c->kubectl({"-n", w.o.name, "get", "pod", pod, "-o", "jsonpath={.status.phase}"});
    return r.exit_code == 0 ? r.out : std::string{"gone"};
  };
  ASSERT_EQ(pod_phase(), "Running");

  w.headroom->stop(SIGTERM);
  for (const char* f : {"/jobs.db", "/jobs.db-wal", "/jobs.db-shm"})
    std::filesystem::remove(w.dir + f);
  ASSERT_TRUE(w.start()) << w.headroom->log();
  ASSERT_TRUE(w.workers().empty()) << "the new store knows no worker";
  const std::string busy = "headroom_scheduler_skipped_total{reason=\"stray_busy\"}";
  const std::string deleted = "headroom_scheduler_actions_total{action=\"stray_deleted\"}";
  ASSERT_TRUE(eventually([&] { return w.headroom->sample(busy) > 0; }, 45s))
      << "the stray's runner was never found busy\n" << w.headroom->log();
  EXPECT_EQ(w.peer_jobs()[ids[0]], "running") << "judged while its job runs";
  EXPECT_EQ(pod_phase(), "Running");
  EXPECT_LE(w.headroom->sample(deleted), 0) << "not deleted while its job runs\n" << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.peer_jobs()[ids[0]] == "completed"; }, 60s)) << w.headroom->log();
  simdjson::dom::parser p;
  for (auto j : p.parse(e.peer->control("/webhooks/state").body)["jobs"].get_array())
    if (int64_t(j["runnerRequestId"]) == ids[0]) {
      EXPECT_EQ(std::string_view(j["result"]), "succeeded") << "the job ran to its end";
    }
  // Its job done, the runner is idle: the pod ends by itself, or the sweep deletes it (no longer busy).
  EXPECT_TRUE(eventually([&] { return pod_phase() == "gone"; }, 60s)) << "the pod goes after its job: " << pod_phase();
  std::printf("[wiped store] the stray was judged busy %.0f times and finished its job\n", w.headroom->sample(busy));
}

// History retention on a store a long-running headroom left: 90-day-old history is written into the
// SQLite file before headroom starts; its first cycle deletes the final jobs and workers and the
// deliveries past the retention (72 h), keeps the recent job, counts each on /metrics, and the
// scheduler then runs a new job as before.
TEST(scheduler_e2e, history_past_the_retention_is_pruned_and_the_rest_kept) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-retention", .retention = "72h"}};
  ASSERT_TRUE(w.sim) << w.why;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t old = now - int64_t{90} * 86'400'000;
  const int64_t first = 9'100'000'000;  // ids the peer never gives
  {
    auto opened = store::open_sqlite(w.dir + "/jobs.db");
    ASSERT_TRUE(std::holds_alternative<std::unique_ptr<store::store>>(opened)) << std::get<store::error>(opened).message;
    auto& s = *std::get<std::unique_ptr<store::store>>(opened);
    auto record = [&](const std::string& delivery, int64_t id, store::job_status status, int64_t at) {
      store::job_event ev;
      ev.delivery_id = delivery;
      ev.change.id = id;
      ev.change.run_id = id;
      ev.change.entity = "org-retention";
      ev.change.labels = "self-hosted";
      ev.change.name = "old";
      ev.change.repository = "org-retention/app";
      ev.change.status = status;
      ev.at = at;
      ASSERT_TRUE(std::holds_alternative<store::recorded>(s.record(ev)));
    };
    for (int64_t i = 0; i < 3; ++i) {
      record("retention-q-" + std::to_string(i), first + i, store::job_status::pending, old + i);
      record("retention-c-" + std::to_string(i), first + i, store::job_status::completed, old + 1000 + i);
    }
    record("retention-recent", first + 3, store::job_status::completed, now - 3'600'000);
    store::worker worker;
    worker.name = "headroom-runner-retention-old";
    worker.entity = "org-retention";
    worker.labels = "self-hosted";
    worker.created_at = old;
    ASSERT_TRUE(std::holds_alternative<bool>(s.add_worker(worker)));
    ASSERT_TRUE(std::holds_alternative<bool>(s.advance_worker(worker.name, store::worker_status::completed, "", old + 5000)));
  }
  ASSERT_TRUE(w.start()) << w.headroom->log();
  auto pruned = [&](const char* table) {
    return w.headroom->sample(std::string{"headroom_scheduler_pruned_total{table=\""} + table + "\"}");
  };
  ASSERT_TRUE(eventually([&] { return pruned("jobs") > 0; }, 30s)) << w.headroom->log() << w.headroom->metrics();
  EXPECT_EQ(pruned("jobs"), 3);
  EXPECT_EQ(pruned("workers"), 1);
  EXPECT_EQ(pruned("deliveries"), 6) << "the recent job's delivery is kept";
  auto stored = w.stored_jobs();
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(stored.count(first + i), 0u) << "old job " << i << " is gone";
  EXPECT_EQ(stored[first + 3], "completed") << "the recent job stays";
  EXPECT_TRUE(w.workers().empty()) << "the old worker is gone";
  const auto ids = w.post_jobs("org-retention", "org-retention/app", "\"self-hosted\"", 1);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_TRUE(eventually([&] { return w.peer_jobs()[ids[0]] == "completed"; }, 90s)) << w.headroom->log();
  EXPECT_TRUE(eventually([&] { return w.each_ran_once(ids); }, 30s));
  EXPECT_EQ(pruned("jobs"), 3) << "the next prune is an hour away";
}

// Two headroom processes on one PostgreSQL, both reconciling (no leader election): the store's
// reconcile lock lets one at a time touch workers, so each job gets exactly one worker and no
// worker is made twice for the same demand; both processes take turns (each ran cycles, and at
// least one found the lock held).
TEST(scheduler_e2e, two_processes_on_one_postgres_take_turns_and_provision_each_job_once) {
  REQUIRE_SCHED_ENV(e);
  sched_world w{e, {.name = "sched-two", .store = "postgres", .job_duration = "2s"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  auto other = w.start_another("second");
  ASSERT_TRUE(other) << "the second headroom did not become healthy";
  std::vector<int64_t> ids;
  for (auto v : {w.post_jobs("org-two", "org-two/app", "\"self-hosted\",\"linux\"", 15),
                 w.post_jobs("", "solo/two", "\"self-hosted\",\"arm64\"", 15)})
    ids.insert(ids.end(), v.begin(), v.end());
  ASSERT_TRUE(eventually([&] {
    auto jobs = w.peer_jobs();
    return std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return jobs[id] == "completed"; });
  }, 240s)) << w.headroom->log() << "\n--- second ---\n" << other->log();
  ASSERT_TRUE(eventually([&] { return w.each_ran_once(ids); }, 30s)) << "every job is recorded on exactly one worker";
  const auto workers = w.workers();
  // One worker per job, or one more: a runner now and then takes no job and idles until the idle
  // health check ends it (31 workers for 30 jobs in one fresh-clone CI run, with no process or
  // actor killed; the same as the actor-fault scenario's extra worker). No job runs twice (above).
  // Where it comes from is open (README, fault campaign): the story is printed when it happens.
  EXPECT_GE(workers.size(), ids.size());
  EXPECT_LE(workers.size(), ids.size() + 1) << "none provisioned twice for the same demand";
  if (workers.size() > ids.size())
    std::printf("[two processes] %s", w.extra_workers_story({w.headroom->full_log(), other->full_log()}).c_str());
  for (const auto& x : workers)
    EXPECT_NE(x.status, "failed") << x.name << ": " << x.failure;
  // Both reconciled; at least one of them found the lock held by the other.
  const std::string cycles = "headroom_scheduler_phase_duration_seconds_count{phase=\"demand_match\"}";
  const std::string held = "headroom_scheduler_skipped_total{reason=\"lock_held\"}";
  EXPECT_GT(w.headroom->sample(cycles), 0) << w.headroom->metrics();
  EXPECT_GT(other->sample(cycles), 0) << other->metrics();
  EXPECT_GT(w.headroom->sample(held) + other->sample(held), 0) << "the two never contended for the lock";
  other->stop(SIGTERM);
}

// Each health check on kwok nodes: a runner that never registers, a node that becomes unreachable
// under a running runner, an idle runner, a pod held Pending. Killed workers are failed with why.
TEST(scheduler_e2e, health_checks_fire_and_the_worker_says_why) {
  REQUIRE_SCHED_ENV(e);
  for (int i = 0; i < 2; ++i) {
    const std::string n = "health-node-" + std::to_string(i);
    kube_apply(e.c, "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + n +
                        "\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {kubernetes.io/hostname: " + n +
                        ", type: kwok, headroom.test/pool: health}\nstatus:\n"
                        "  allocatable: {cpu: \"32\", memory: 128Gi, pods: \"110\", headroom.dev/runner: \"4\"}\n"
                        "  capacity: {cpu: \"32\", memory: 128Gi, pods: \"110\", headroom.dev/runner: \"4\"}\n");
  }
  sched_world w{e, {.name = "sched-health", .job_duration = "600s",  // the busy runner stays busy throughout
                    .skip_runners = 1,
                    .health = "{registrationTimeout: 4s, pendingTimeout: 4s, idleTimeout: 4s}",
                    .node_selector = "headroom.test/pool: health"}};
  ASSERT_TRUE(w.sim) << w.why;
  ASSERT_TRUE(w.start()) << w.headroom->log();
  auto failed_with = [&](const std::string& check) {
    for (const auto& x : w.workers())
      if (x.status == "failed" && x.failure.rfind(check, 0) == 0)
        return x.name;
    return std::string{};
  };
  // Whether this worker failed that check (others may have failed it too: the held job's
  // replacement runners land on the same nodes).
  auto failed_as = [&](const std::string& name, const std::string& check) {
    for (const auto& x : w.workers())
      if (x.name == name)
        return x.status == "failed" && x.failure.rfind(check, 0) == 0;
    return false;
  };
  // 1. The simulator never connects the first runner: runner_never_registered, and the job gets
  //    a second runner that runs it.
  auto first = w.post_jobs("org-health", "org-health/app", "\"self-hosted\"", 1);
  ASSERT_TRUE(eventually([&] { return !failed_with("runner_never_registered").empty(); }, 40s)) << w.headroom->log();
  const auto never = failed_with("runner_never_registered");
  EXPECT_TRUE(eventually([&] {
    return e.c->kubectl({"-n", w.o.name, "get", "pod", never, "-o", "name"}).exit_code != 0;
  }, 20s)) << "the killed pod is deleted after killGrace (kwok does not enforce activeDeadlineSeconds)";
  ASSERT_TRUE(eventually([&] { return w.peer_jobs()[first[0]] == "running"; }, 40s)) << "a second runner took the job";

  // 2. A runner whose job is held (an environment waiting for approval) sits idle: removed from
  //    GitHub, killed. GitHub first answers the removal 422 (the runner took a job meanwhile, as
  //    far as it knows): the worker is left alone that cycle and removed at the next.
  e.peer->control("/faults", R"([{"route":"rest_runner","status":422,"count":1}])");
  auto held = w.post_jobs("org-idle", "org-idle/app", "\"self-hosted\"", 1, false);
  e.peer->control("/webhooks/hold", "{\"jobId\":" + std::to_string(held[0]) + "}");
  std::string idle_worker;
  // Its queued webhook, sent once it is held.
  e.peer->control("/webhooks/announce", "{\"jobId\":" + std::to_string(held[0]) + "}");
  ASSERT_TRUE(eventually([&] {
    for (const auto& x : w.workers())
      if (x.entity == "org-idle")
        idle_worker = x.name;
    return !idle_worker.empty();
  }, 20s)) << w.headroom->log();
  EXPECT_TRUE(eventually([&] { return failed_as(idle_worker, "runner_idle"); }, 40s)) << w.headroom->log();
  EXPECT_TRUE(eventually([&] {
    simdjson::dom::parser p;
    for (auto r : p.parse(e.peer->control("/webhooks/state").body)["runners"].get_array())
      if (std::string_view(r["name"]) == idle_worker)
        return false;
    return true;
  }, 20s)) << "the idle runner was removed from GitHub";
  EXPECT_NE(w.headroom->full_log().find("GitHub says the runner is busy: leaving it until the next cycle"), std::string::npos)
      << "the 422 left the worker for a cycle";

  // 3. The node under the busy runner stops reporting (kwok lets go of it, its Ready condition
  //    goes Unknown) and the node lifecycle controller taints it unreachable: the worker fails,
  //    its pod is force-deleted.
  std::string busy_pod;
  for (const auto& x : w.workers())
    if (x.status == "running" && x.entity == "org-health")
      busy_pod = x.name;
  ASSERT_FALSE(busy_pod.empty());
  const auto node = e.c->kubectl({"-n", w.o.name, "get", "pod", busy_pod, "-o", "jsonpath={.spec.nodeName}"}).out;
  ASSERT_FALSE(node.empty());
  e.c->kubectl({"annotate", "node", node, "kwok.x-k8s.io/node-"});
  e.c->kubectl({"patch", "node", node, "--subresource=status", "--type=strategic", "-p",
                R"json({"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown","message":"kubelet stopped posting node status (test)"}]}})json"});
  EXPECT_TRUE(eventually([&] { return failed_as(busy_pod, "node_unreachable"); }, 90s))
      << e.c->kubectl({"get", "node", node, "-o", "jsonpath={.spec.taints}"}).out << "\n" << w.headroom->log();
  EXPECT_TRUE(eventually([&] { return e.c->kubectl({"-n", w.o.name, "get", "pod", busy_pod, "-o", "name"}).exit_code != 0; }, 30s));

  // 4. A pod the scheduler cannot place (the healthy node cordoned, the only other one too small):
  //    pod_stuck_pending.
  for (int i = 0; i < 2; ++i)
    e.c->kubectl({"cordon", "health-node-" + std::to_string(i)});
  kube_apply(e.c, "apiVersion: v1\nkind: Node\nmetadata:\n  name: health-node-tight\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                  "  labels: {kubernetes.io/hostname: health-node-tight, type: kwok, headroom.test/pool: health}\nstatus:\n"
                  "  allocatable: {cpu: 50m, memory: 128Gi, pods: \"110\", headroom.dev/runner: \"2\"}\n"
                  "  capacity: {cpu: 50m, memory: 128Gi, pods: \"110\", headroom.dev/runner: \"2\"}\n");
  w.post_jobs("org-health", "org-health/app", "\"self-hosted\"", 1);
  EXPECT_TRUE(eventually([&] { return !failed_with("pod_stuck_pending").empty(); }, 40s)) << w.headroom->log();
  for (const char* n : {"health-node-0", "health-node-1", "health-node-tight"})
    e.c->kubectl({"delete", "node", n, "--wait=false"});
}

}  // namespace
}  // namespace headroom::e2e
