// Many scale sets in one headroom (#38's CI version of the 1,000-scale-set benchmark): 50 scale
// sets in one namespace, each with a warm pool of one pair, on the real control plane with the
// chart's RBAC. Every scale set holds its session with the Actions Service peer and advertises the
// one pair the scheduler placed; no poll of any scale set ever advertised more than that (no job
// is queued, so one placed pair is all any of them may claim); and the 50 scale sets cost the API
// server one pod watch, not 50 (one informer per namespace, sliced by scale set). Each scale set
// has its own owner ConfigMap and runner PodDisruptionBudget, and an orderly stop leaves each
// scale set's placed pairs for the next process without a pair lost or a crash.
//
// And #38's CI version of the 100,000-pod benchmark: 10 scale sets with 1,000 runner pods each
// (10,000 pods, held Pending by a scheduling gate) created before headroom starts. Every scale set
// holds its session and advertises its one pair, no poll advertises more, each counts exactly its
// 1,000 pods, and the counts follow the pods as 100 of one scale set's are deleted.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "adapters/k8s/client.hpp"
#include "bench/histogram_text.hpp"
#include "adapters/k8s/connection.hpp"
#include "e2e/bulk_create.hpp"
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

// The peer's view of the scale sets named `prefix`-…: each one's id, its sessions, its polls' capacities.
struct view {
  std::map<std::string, int64_t> ids;      // name → id
  std::map<int64_t, int> sessions;          // id → sessions
  std::map<int64_t, int64_t> latest, most;  // id → the latest poll's capacity, the largest ever
  int polls = 0;
};

view look(const env& e, const std::string& prefix) {
  view v;
  simdjson::dom::parser p;
  auto st = p.parse(e.peer->control("/state").body);
  std::map<int64_t, std::string> names;
  for (auto s : st["scaleSets"].get_array()) {
    const std::string name{std::string_view(s["name"])};
    if (name.rfind(prefix + "-", 0) == 0) {
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
}

std::string describe(const view& v) {
  std::string out = std::to_string(v.ids.size()) + " scale sets at the peer;";
  for (const auto& [name, set] : v.ids)
    out += " " + name + "(sessions " + std::to_string(v.sessions.count(set) ? v.sessions.at(set) : 0) + ", capacity " +
           std::to_string(v.latest.count(set) ? v.latest.at(set) : -1) + ")";
  return out;
}

// A kwok node for the scenario's pool, the chart's identity for `names`, and headroom started with
// one scale set per name (a warm pool of one pair each; `extra`: more keys per scale set).
void start_sets(world& w, const std::vector<std::string>& names, const std::string& extra = "", bool objects = false) {
  auto& e = w.e;
  const auto& pool = w.s.name;
  e.c->kubectl({"apply", "-f", "-"}, "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + pool + "-node\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                  "  labels: {kubernetes.io/hostname: " + pool + "-node, type: kwok, pool: " + pool + "}\nstatus:\n"
                  "  allocatable: {cpu: \"200\", memory: 1000Gi, pods: \"500\"}\n  capacity: {cpu: \"200\", memory: 1000Gi, pods: \"500\"}\n");
  std::ostringstream values, config;
  values << "config:\n  github: {configUrl: " << e.peer->http_url() << "/headroom-org}\n  scaleSets:\n";
  for (const auto& name : names) {
    values << "    - {name: " << name << ", namespace: " << pool << "}\n";
    config << "  - name: " << name << "\n    namespace: " << pool << "\n    maxRunners: 10\n"
           << "    runner: {image: runner:e2e, resources: {cpu: 500m, memory: 512Mi}, serviceAccountName: e2e-" << pool
           << "-headroom-runner, nodeSelector: {pool: " << pool << "}}\n"
           << "    capacityAware: {proactiveCapacity: 1, recalculateInterval: 2s, placeholderReadyTimeout: 10m, "
           << "workflowResources: {cpu: 500m, memory: 512Mi}}\n" << extra;
  }
  if (objects)
    values << "  scaleSetObjects: {namespaces: [" << pool << "]}\n";
  values << "github: {existingSecret: e2e-github}\n"
            "priorityClasses: {placeholderRunner: placeholder-runner, runner: arc-runner, placeholderWorkflow: placeholder-workflow, "
            "workflow: arc-workflow}\n";
  std::ofstream(w.dir + "/values.yaml") << values.str();
  auto id = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/chart-identity.sh", e.c->kubeconfig(),
                                  w.dir + "/values.yaml", "e2e-" + pool, "headroom-e2e", w.dir + "/chart.kubeconfig"});
  ASSERT_EQ(id.exit_code, 0) << id.err;
  w.headroom = std::make_unique<agent>(w.dir, "kubernetes:\n  kubeconfig: " + w.dir + "/chart.kubeconfig\n"
                                              "leaderElection:\n  enabled: false\ngithub:\n  configUrl: " + e.peer->http_url() +
                                              "/headroom-org\nscaleSets:\n" + config.str() +
                                              (objects ? "scaleSetObjects:\n  namespaces: [" + pool + "]\n" : ""));
}

// Every scale set named `prefix`-… holds one session and its latest poll advertises `capacity`.
bool all_advertise(const env& e, const std::string& prefix, size_t sets, int64_t capacity, view& now) {
  now = look(e, prefix);
  if (now.ids.size() != sets)
    return false;
  for (const auto& [name, set] : now.ids)
    if (now.sessions[set] != 1 || now.latest[set] != capacity)
      return false;
  return true;
}

TEST(capacity_e2e, fifty_scale_sets_in_one_headroom_hold_their_sessions_on_one_pod_watch) {
  REQUIRE_ENV(e);
  scenario sc;
  sc.name = "many-sets";
  sc.chart_install = true;  // this scenario writes its own values and configuration below
  world w{e, sc};
  REQUIRE_WORLD(w);
  std::vector<std::string> names;
  for (int i = 0; i < sets; ++i)
    names.push_back(set_name(i));
  const int watches_before = namespaced_pod_watches(e);
  start_sets(w, names);
  view now;
  ASSERT_TRUE(eventually([&] { return all_advertise(e, "many", sets, 1, now); }, 240s)) << describe(now) << "\n" << w.headroom->log();
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
  now = look(e, "many");
  EXPECT_GE(now.polls, sets);
  for (const auto& [name, set] : now.ids)
    EXPECT_LE(now.most[set], 1) << name << " advertised more than the one pair it had";
  EXPECT_EQ(namespaced_pod_watches(e) - watches_before, 1) << "one pod watch for the namespace's 50 scale sets";
  std::cout << "[many sets] " << sets << " scale sets: " << now.polls << " polls audited, " << namespaced_pod_watches(e) - watches_before
            << " pod watch, agent RSS " << rss_mib(w.headroom->pid()) << " MiB\n";
  // Each scale set has its own owner, so each has its own runner PodDisruptionBudget (one shared
  // owner gave the namespace one budget, for the first scale set only), and its own runner
  // placeholders' budget (#54).
  auto pdbs = e.c->kubectl({"-n", sc.name, "get", "pdb", "-o", "name"}).out;
  auto ending = [&](const std::string& suffix) {
    int n = 0;
    for (size_t at = pdbs.find(suffix + "\n"); at != std::string::npos; at = pdbs.find(suffix + "\n", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(ending("-runners"), sets) << pdbs;
  EXPECT_EQ(ending("-runner-placeholders"), sets) << pdbs;
  // An orderly stop: each scale set keeps its placed pairs for the next process, and none is lost
  // on the way. (With one owner for the namespace, the first scale set to stop once deleted every
  // scale set's placeholders; the others made new pairs while they waited their turn to stop:
  // thousands of pairs and log lines.)
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

// The peer's session id of each scale set named `prefix`-… ("" when it holds none, "2" when two).
std::map<std::string, std::string> session_ids(const env& e, const std::string& prefix) {
  simdjson::dom::parser p;
  auto st = p.parse(e.peer->control("/state").body);
  std::map<int64_t, std::string> names;
  std::map<std::string, std::string> out;
  for (auto s : st["scaleSets"].get_array()) {
    const std::string name{std::string_view(s["name"])};
    if (name.rfind(prefix + "-", 0) == 0) {
      names[int64_t(s["id"])] = name;
      out[name] = "";
    }
  }
  for (auto s : st["sessions"].get_array())
    if (auto it = names.find(int64_t(s["scaleSetId"])); it != names.end())
      out[it->second] = out[it->second].empty() ? std::string{std::string_view(s["sessionId"])} : "2";
  return out;
}

// The uids of the running placeholder pods of scale set `set`, sorted.
std::string placeholder_uids(const env& e, const std::string& ns, const std::string& set) {
  return e.c->kubectl({"-n", ns, "get", "pods", "-l", "headroom.dev/scale-set=" + set + ",headroom.dev/role in (runner-placeholder,workflow-placeholder)",
                       "--sort-by=.metadata.uid", "-o", "jsonpath={range .items[*]}{.metadata.uid} {end}"})
      .out;
}

std::string scale_set_object(const std::string& ns, const std::string& name, int proactive, const std::string& extra = "") {
  return "apiVersion: headroom.dev/v1alpha1\nkind: ScaleSet\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec:\n"
         "  maxRunners: 10\n  runner: {image: runner:e2e, resources: {cpu: 500m, memory: 512Mi}, serviceAccountName: e2e-" + ns +
         "-headroom-runner, nodeSelector: {pool: " + ns + "}}\n"
         "  capacityAware: {proactiveCapacity: " + std::to_string(proactive) + ", recalculateInterval: 2s, placeholderReadyTimeout: 10m, "
         "workflowResources: {cpu: 500m, memory: 512Mi}" + extra + "}\n";
}

// #55: scale sets declared as ScaleSet objects beside the file's, started, changed and stopped
// live on a headroom running 50 scale sets (46 from the file, 4 objects applied one by one). Each
// change reaches only its own scale set: every other one keeps its session (the same id at the
// peer) and its placed pairs (the same pods); the API server refuses an invalid object with the
// field's path; a deleted object's session and placeholders go.
TEST(capacity_e2e, scale_set_objects_are_started_changed_and_stopped_live_and_no_other_scale_set_notices) {
  REQUIRE_ENV(e);
  scenario sc;
  sc.name = "objects";
  sc.chart_install = true;
  world w{e, sc};
  REQUIRE_WORLD(w);
  const std::string ns = sc.name;
  constexpr int file_sets = sets - 4, objects = 4;
  std::vector<std::string> file_names;
  for (int i = 0; i < file_sets; ++i)
    file_names.push_back("objects-file-" + std::string(i < 10 ? "0" : "") + std::to_string(i));
  start_sets(w, file_names, "", true);
  view now;
  ASSERT_TRUE(eventually([&] { return all_advertise(e, "objects-file", file_sets, 1, now); }, 240s)) << describe(now) << "\n" << w.headroom->log();
  // The objects, one by one: each starts its own scale set, which places its pair and holds its session.
  for (int i = 0; i < objects; ++i) {
    auto applied = e.c->kubectl({"apply", "-f", "-"}, scale_set_object(ns, "objects-obj-" + std::to_string(i), 1));
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    ASSERT_TRUE(eventually([&] { return all_advertise(e, "objects-obj", i + 1, 1, now); }, 120s)) << describe(now) << "\n" << w.headroom->log();
  }
  ASSERT_TRUE(eventually([&] {
    return e.c->kubectl({"-n", ns, "get", "scaleset", "objects-obj-0", "-o",
                         "jsonpath={.status.observedGeneration} {.status.conditions[?(@.type==\"Ready\")].status}"}).out == "1 True";
  }, 30s)) << e.c->kubectl({"-n", ns, "get", "scaleset", "objects-obj-0", "-o", "yaml"}).out;
  const auto file_sessions = session_ids(e, "objects-file");
  const auto other_sessions = session_ids(e, "objects-obj");
  std::map<std::string, std::string> pairs;
  std::vector<std::string> every = file_names;
  for (int i = 0; i < objects; ++i)
    every.push_back("objects-obj-" + std::to_string(i));
  for (const auto& set : every)
    pairs[set] = placeholder_uids(e, ns, set);
  // A change: obj-0's warm pool 1 → 2, applied to it alone, in place: its session is handed to
  // the subtree that replaces its actors, and its placed pair adopted.
  const auto changed_at = std::chrono::steady_clock::now();
  auto changed = e.c->kubectl({"apply", "-f", "-"}, scale_set_object(ns, "objects-obj-0", 2));
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  ASSERT_TRUE(eventually([&] {
    now = look(e, "objects-obj");
    return now.ids.count("objects-obj-0") && now.latest[now.ids["objects-obj-0"]] == 2;
  }, 60s)) << describe(now) << "\n" << w.headroom->log();
  std::cout << "[objects] a warm pool 1 → 2 advertised "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - changed_at).count()
            << " ms after kubectl apply (its new pair placed by the scheduler included)\n";
  EXPECT_EQ(session_ids(e, "objects-obj")["objects-obj-0"], other_sessions.at("objects-obj-0")) << "the session was handed over";
  {
    const auto after = placeholder_uids(e, ns, "objects-obj-0");
    std::istringstream before{pairs["objects-obj-0"]};
    int kept = 0;
    for (std::string uid; before >> uid; ++kept)
      EXPECT_NE(after.find(uid), std::string::npos) << "its placed pair was adopted: " << pairs["objects-obj-0"] << " vs " << after;
    EXPECT_EQ(kept, 2) << "one pair: two placeholders";
  }
  EXPECT_TRUE(eventually([&] {
    return e.c->kubectl({"-n", ns, "get", "scaleset", "objects-obj-0", "-o", "jsonpath={.status.observedGeneration}"}).out == "2";
  }, 30s));
  // Invalid objects are refused by the API server, naming the field.
  struct bad {
    std::string name, extra, field;
  };
  for (const auto& b : {bad{"objects-bad-ttl", ", placeholderTTL: 1m", "spec.capacityAware.placeholderTTL"},
                        bad{"objects-bad-duration", ", recalculateInterval: soon", "spec.capacityAware.recalculateInterval"},
                        bad{"objects-name-far-too-long-for-a-runner-scale-set-name", "", "metadata.name"}}) {
    auto refused = e.c->kubectl({"apply", "-f", "-"}, scale_set_object(ns, b.name, 1, b.extra));
    EXPECT_NE(refused.exit_code, 0) << b.name;
    EXPECT_NE((refused.out + refused.err).find(b.field), std::string::npos) << b.name << ": " << refused.out << refused.err;
  }
  auto negative = e.c->kubectl({"apply", "-f", "-"}, "apiVersion: headroom.dev/v1alpha1\nkind: ScaleSet\nmetadata: {name: objects-neg, namespace: " +
                                                         ns + "}\nspec: {maxRunners: -1}\n");
  EXPECT_NE(negative.exit_code, 0);
  EXPECT_NE((negative.out + negative.err).find("spec.maxRunners"), std::string::npos) << negative.err;
  // The change reached obj-0 alone: the other objects kept their sessions and their pairs.
  for (int i = 1; i < objects; ++i) {
    const auto name = "objects-obj-" + std::to_string(i);
    EXPECT_EQ(session_ids(e, "objects-obj")[name], other_sessions.at(name)) << name;
    EXPECT_EQ(placeholder_uids(e, ns, name), pairs[name]) << name;
  }
  // Deleting obj-1 stops it: its session is deleted at the peer and its placeholders go.
  ASSERT_EQ(e.c->kubectl({"-n", ns, "delete", "scaleset", "objects-obj-1"}).exit_code, 0);
  ASSERT_TRUE(eventually([&] { return session_ids(e, "objects-obj")["objects-obj-1"].empty(); }, 60s)) << w.headroom->log();
  EXPECT_TRUE(eventually([&] { return placeholder_uids(e, ns, "objects-obj-1").empty(); }, 60s))
      << "its owner ConfigMap goes, and the garbage collector takes its placeholders";
  // No other scale set noticed any of it.
  EXPECT_EQ(session_ids(e, "objects-file"), file_sessions) << "the file's scale sets kept their sessions";
  EXPECT_EQ(session_ids(e, "objects-obj")["objects-obj-0"].empty(), false);
  for (int i = 2; i < objects; ++i)
    EXPECT_EQ(session_ids(e, "objects-obj")["objects-obj-" + std::to_string(i)], other_sessions.at("objects-obj-" + std::to_string(i)));
  int untouched = 0;
  for (const auto& set : every)
    if (set != "objects-obj-0" && set != "objects-obj-1") {
      EXPECT_EQ(placeholder_uids(e, ns, set), pairs[set]) << set << " kept its placed pairs";
      ++untouched;
    }
  EXPECT_EQ(untouched, sets - 2) << "48 scale sets audited";
  std::cout << "[objects] " << sets << " scale sets: 2 changed (one edited, one deleted), " << untouched
            << " kept their sessions and placed pairs\n";
  const auto log = w.headroom->log();
  EXPECT_NE(log.find("scale set replaced"), std::string::npos);
  EXPECT_NE(log.find("scale set stopped"), std::string::npos);
  EXPECT_EQ(log.find("restarting child"), std::string::npos) << "nothing crashed on the way";
  EXPECT_GE(w.headroom->sample("headroom_scale_set_objects_total{outcome=\"started\"}"), 2);
  EXPECT_EQ(w.headroom->stop(SIGTERM), 0);
  e.c->kubectl({"delete", "node", sc.name + "-node", "--wait=false"});
}

// The scale set's runner pods as headroom counts them (gha_controller_pending_ephemeral_runners).
double pending_runners(const world& w, const std::string& set) {
  return w.headroom->sample("gha_controller_pending_ephemeral_runners{name=\"" + set + "\"}");
}

TEST(capacity_e2e, ten_thousand_runner_pods_are_cached_counted_and_followed_while_every_scale_set_holds_its_session) {
  REQUIRE_ENV(e);
  constexpr int big_sets = 10, per_set = 1'000;
  scenario sc;
  sc.name = "big-pods";
  sc.chart_install = true;
  world w{e, sc};
  REQUIRE_WORLD(w);
  e.c->kubectl({"create", "namespace", sc.name});
  std::vector<std::string> names;
  for (int i = 0; i < big_sets; ++i)
    names.push_back("big-" + std::to_string(i));
  // The pods first, straight through the API: headroom's first list brings all 10,000.
  auto conn = std::get<k8s::connection>(k8s::load_kubeconfig(e.c->kubeconfig(), ""));
  k8s::transport io{bulk_transport_options()};
  k8s::client api{conn, io};
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(create_many(api, k8s::kinds::pods, sc.name, big_sets * per_set,
                        [&](int i) { return gated_runner_pod(sc.name, names[i % big_sets], i / big_sets); }),
            0);
  const double created_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The gated pods are older than any pending timeout by the time headroom looks at them.
  start_sets(w, names, "    healthCheck: {pendingTimeout: 24h}\n");
  const auto started = std::chrono::steady_clock::now();
  view now;
  ASSERT_TRUE(eventually([&] { return all_advertise(e, "big", big_sets, 1, now); }, 240s)) << describe(now) << "\n" << w.headroom->log();
  const double ready_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (const auto& set : names)
    EXPECT_TRUE(eventually([&] { return pending_runners(w, set) == per_set; }, 30s))
        << set << " counts " << pending_runners(w, set) << " pending runner pods, not " << per_set;

  // 100 of one scale set's pods go: its count follows, change by change; the others' stay.
  for (int i = 0; i < 100; ++i)
    api.remove(k8s::kinds::pods, sc.name, names[3] + "-runner-" + std::to_string(i), {}, [](k8s::api_result) {});
  EXPECT_TRUE(eventually([&] { return pending_runners(w, names[3]) == per_set - 100; }, 30s)) << pending_runners(w, names[3]);
  EXPECT_EQ(pending_runners(w, names[4]), per_set);

  // A broken pair on this cluster: the capacity goes to 0 and back to 1 as a new pair is placed.
  const auto placeholder = e.c->kubectl({"-n", sc.name, "get", "pods", "-l", "headroom.dev/role=runner-placeholder,headroom.dev/scale-set=" + names[5],
                                         "-o", "jsonpath={.items[0].metadata.name}"}).out;
  ASSERT_FALSE(placeholder.empty());
  const auto polls_before = look(e, "big").polls;
  e.c->kubectl({"-n", sc.name, "delete", "pod", placeholder, "--grace-period=0", "--wait=false"});
  ASSERT_TRUE(eventually([&] { return look(e, "big").latest[now.ids[names[5]]] == 0; }, 30s)) << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return all_advertise(e, "big", big_sets, 1, now); }, 60s)) << describe(now) << "\n" << w.headroom->log();

  // The audit: no scale set ever advertised more than its one pair.
  now = look(e, "big");
  EXPECT_GT(now.polls, polls_before);
  for (const auto& [name, set] : now.ids)
    EXPECT_LE(now.most[set], 1) << name << " advertised more than the one pair it had";
  const auto text = w.headroom->metrics();
  const auto decision = bench::buckets(text, "headroom_capacity_decision_seconds");
  ASSERT_FALSE(decision.empty()) << "no headroom_capacity_decision_seconds";
  std::cout << "[big pods] " << big_sets * per_set << " runner pods created in " << created_s << " s; every session held and advertising in "
            << ready_s << " s; " << now.polls << " polls audited; agent RSS " << rss_mib(w.headroom->pid()) << " MiB; "
            << decision.rbegin()->second << " capacity decisions, p99 within " << 1e3 * bench::bucket_quantile(decision, 0.99) << " ms\n";
  EXPECT_EQ(w.headroom->stop(SIGTERM), 0);
  EXPECT_NE(w.headroom->full_log().find("stopped cleanly"), std::string::npos);
  e.c->kubectl({"delete", "node", sc.name + "-node", "--wait=false"});
  e.c->kubectl({"delete", "namespace", sc.name, "--wait=false"});
}

}  // namespace
}  // namespace headroom::e2e
