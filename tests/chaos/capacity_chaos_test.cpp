// The fault campaign on the scale-set path (CTest label `chaos`): the headroom binary on the real
// control plane with Karpenter, the Actions Service peer and the runner simulator, as in
// tests/e2e/capacity_e2e_test.cpp, and one of headroom's dependencies broken in the middle of a
// burst of jobs. Every scenario then demands the same recovery:
//
//   - every job of the burst completes, exactly once (the peer's records);
//   - the warm pool returns to its size with no leaked or duplicated placeholder (two pods per
//     slot, as many slots as the pool);
//   - every poll the peer logged passes the audit: advertised capacity never above what the
//     cluster had confirmed (see capacity_world.hpp);
//   - the process is still the one started (no crash, no exit), unless the scenario kills it.
//
// Each prints one `[chaos]` line: what was injected, how long recovery took, what was lost.

#include <gtest/gtest.h>
#include <iostream>
#include <set>
#include <sstream>

#include "e2e/capacity_suite.hpp"
#include "testenv/apiserver_proxy.hpp"
#include "testenv/child_process.hpp"

namespace headroom::e2e {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

double seconds_since(steady::time_point t) { return std::chrono::duration<double>(steady::now() - t).count(); }


// Starts headroom, waits for the warm pool of 2 pairs, posts `jobs` jobs and waits until one runs.
// Returns the scale set's id (0 after a failed assertion).
int64_t start_burst(world& w, int jobs) {
  w.start();
  int64_t set = 0;
  EXPECT_TRUE(eventually([&] { return (set = w.scale_set_id()) != 0; }, 60s)) << w.headroom->log();
  EXPECT_TRUE(eventually([&] { return w.latest_capacity(set) == 2; }, 120s)) << "warm pool\n" << w.headroom->log();
  w.post_jobs(jobs);
  EXPECT_TRUE(eventually([&] { return w.job_states()["running"] >= 1; }, 120s)) << "burst under way\n" << w.headroom->log();
  return set;
}

// The first poll of `set` the peer recorded after `after` (wall clock); -1 s when none yet.
double first_poll_after(const world& w, int64_t set, clock_type::time_point after) {
  simdjson::dom::parser p;
  for (auto poll : p.parse(w.e.peer->control("/state").body)["polls"].get_array())
    if (int64_t(poll["scaleSetId"]) == set) {
      const auto at = parse_time(std::string_view(poll["at"]));
      if (at > after)
        return std::chrono::duration<double>(at - after).count();
    }
  return -1;
}

int64_t requests(const world& w, const std::string& route) {
  simdjson::dom::parser p;
  int64_t n = 0;
  auto doc = p.parse(w.e.peer->control("/state").body);
  if (doc["requests"][route].get(n) != simdjson::SUCCESS)
    return 0;
  return n;
}

// Slots and how many placeholder pods each has (any phase, terminating ones excluded).
std::map<std::string, int> placeholder_slots(const world& w) {
  auto r = w.e.c->kubectl({"-n", w.s.name, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)", "-o",
                           "jsonpath={range .items[*]}{.metadata.labels.headroom\\.dev/slot} {.metadata.deletionTimestamp}{\"\\n\"}{end}"});
  std::map<std::string, int> out;
  std::istringstream in{r.out};
  for (std::string line; std::getline(in, line);) {
    const auto space = line.find(' ');
    const auto slot = line.substr(0, space);
    const bool terminating = space != std::string::npos && space + 1 < line.size();
    if (!slot.empty() && !terminating)
      ++out[slot];
  }
  return out;
}

// The recovery every scenario demands, after the fault ended at `ended` (steady) / `ended_wall`.
// `same_process`: the process was not restarted, so its job counters cover the whole burst.
void expect_recovered(world& w, int64_t set, int jobs, const std::string& fault, steady::time_point ended,
                      clock_type::time_point ended_wall, bool same_process = true,
                      double* pool_back_after = nullptr) {
  ASSERT_TRUE(eventually([&] { return w.job_states()["completed"] == jobs; }, 240s))
      << fault << ": every job completes\n" << w.headroom->log() << "\n" << w.sim->log();
  const double jobs_done = seconds_since(ended);
  const auto states = w.job_states();
  int total = 0;
  for (const auto& [state, n] : states)
    total += n;
  EXPECT_EQ(total, jobs) << fault << ": no job beyond the burst, none lost";
  simdjson::dom::parser p;
  int64_t requeues = 0;
  std::set<int64_t> runners;
  for (auto j : p.parse(w.e.peer->control("/state").body)["jobs"].get_array())
    if (int64_t(j["scaleSetId"]) == set) {
      requeues += int64_t(j["requeues"]);
      EXPECT_EQ(std::string_view(j["result"]), "succeeded") << fault << ": job " << int64_t(j["runnerRequestId"]) << "\n"
                                                            << w.outcomes().errors << "\n" << w.stuck_report() << "\n"
                                                            << w.headroom->full_log();
      EXPECT_TRUE(runners.insert(int64_t(j["runnerId"])).second) << fault << ": two jobs ran on one runner";
    }
  if (same_process) {
    EXPECT_TRUE(eventually([&] { return w.headroom->sample("gha_completed_jobs_total{name=\"" + w.s.name + "\"}") == jobs; }, 30s))
        << fault << ": headroom counted each job once";
    const double started = w.headroom->sample("gha_started_jobs_total{name=\"" + w.s.name + "\"}");
    // Exact even when the listener was killed: its successor adopts the session it left, with the
    // job messages queued there, and skips the ones it handled (it once deleted the session, and
    // with it starts still queued: 5 of 6 counted).
    EXPECT_EQ(started, jobs) << fault << ": each job started once\n" << w.headroom->log();
    std::cout << "[chaos] " << fault << ": " << started << " of " << jobs << " job starts counted\n";
  }
  // The warm pool returns: 2 slots of 2 pods each, both Running, and nothing else.
  std::map<std::string, int> slots;
  const bool pool_back = eventually([&] {
    slots = placeholder_slots(w);
    return w.latest_capacity(set) == 2 && slots.size() == 2 && w.ready_pairs() == 2 &&
           std::all_of(slots.begin(), slots.end(), [](const auto& s) { return s.second == 2; });
  }, 120s);
  const double pool_after = seconds_since(ended);
  if (pool_back_after)
    *pool_back_after = pool_after;
  std::string seen;
  for (const auto& [slot, n] : slots)
    seen += slot + ":" + std::to_string(n) + " ";
  EXPECT_TRUE(pool_back) << fault << ": the warm pool returns with no leaked placeholder; slots " << seen << "\n"
                         << w.e.c->kubectl({"-n", w.s.name, "get", "pods", "--show-labels"}).out << w.headroom->log();
  const int checked = audited(w, set);
  EXPECT_GT(checked, 3);
  if (same_process) {
    EXPECT_TRUE(w.headroom->alive()) << fault << ": headroom exited\n" << w.headroom->log();
  }
  std::cout << "[chaos] " << fault << ": first poll " << first_poll_after(w, set, ended_wall) << " s after the fault ended, "
            << "all " << jobs << " jobs completed " << jobs_done << " s after, warm pool back " << pool_after << " s after; "
            << "requeued " << requeues << ", lost 0, " << checked << " polls audited\n";
}

// kube-apiserver stopped and started again with the same flags while jobs run: the informers
// relist, the monitor's view converges on the cluster (its running-pairs gauge equals the pairs
// the cluster has Running) within 2 × the recalculate interval (2 s) of the API server being
// back, and the burst completes.
TEST(chaos, capacity_apiserver_restarted_mid_burst) {
  REQUIRE_ENV(e);
  world w{e, {"chaos-apiserver", 4, 2, "5m", "5s"}};
  REQUIRE_WORLD(w);
  const int64_t set = start_burst(w, 6);
  ASSERT_NE(set, 0);
  w.apiserver_restarted = true;
  ASSERT_TRUE(e.c->restart_apiserver()) << e.c->logs();
  const auto back = steady::now();
  const auto back_wall = clock_type::now();
  const std::string gauge = "headroom_capacity_advertised_running_pairs{name=\"chaos-apiserver\"}";
  const bool converged = eventually([&] { return w.headroom->sample(gauge) == w.ready_pairs(); }, 4s + 2s);
  const double took = seconds_since(back);
  EXPECT_TRUE(converged) << "the monitor's running pairs " << w.headroom->sample(gauge) << ", the cluster's " << w.ready_pairs()
                         << "\n" << w.headroom->log();
  std::cout << "[chaos] apiserver restart: the monitor agreed with the cluster " << took << " s after it was back\n";
  expect_recovered(w, set, 6, "apiserver restart", back, back_wall);
}

// The Actions Service answers 503 on every route for 30 s while jobs run: the listener retries
// with backoff (bounded: far fewer calls than a tight loop), nothing crashes, and once it answers
// again the burst completes. Runner pods exit after their job, as ephemeral runners' do, so jobs
// finish during the outage while the service's statistics (as of the last message) still count
// them: the first poll after it must not advertise their room again.
TEST(chaos, capacity_actions_service_unavailable_for_30s_mid_burst) {
  REQUIRE_ENV(e);
  scenario sc{"chaos-actions-503", 4, 2, "5m", "5s"};
  sc.exit_runner_pods = true;
  world w{e, sc};
  REQUIRE_WORLD(w);
  const int64_t set = start_burst(w, 6);
  ASSERT_NE(set, 0);
  const auto before = requests(w, "get_message") + requests(w, "acquire_jobs") + requests(w, "create_session");
  const size_t log_before = w.headroom->full_log().size();
  const double cpu_before = testenv::cpu_seconds(w.headroom->pid());
  e.peer->control("/faults", R"([{"route":"any","status":503,"forMs":30000}])");
  std::this_thread::sleep_for(30s);
  const auto during = requests(w, "get_message") + requests(w, "acquire_jobs") + requests(w, "create_session") - before;
  // #40: a dependency down is one line when it goes, a reminder a minute, one when it is back;
  // and no busy loop while it lasts.
  const std::string outage_log = w.headroom->full_log().substr(log_before);
  const double core = (testenv::cpu_seconds(w.headroom->pid()) - cpu_before) / 30.0;
  int failed_lines = 0;
  for (auto at = outage_log.find("\"msg\":\"Actions Service call"); at != std::string::npos;
       at = outage_log.find("\"msg\":\"Actions Service call", at + 1))
    ++failed_lines;
  EXPECT_LE(failed_lines, 2) << "one line per state change, not per retry\n" << outage_log.substr(0, 4000);
  EXPECT_LT(core, 0.15) << "headroom's CPU while the Actions Service was down";
  std::cout << "[chaos] Actions Service 503 for 30 s: " << failed_lines << " failure lines, " << core * 100 << " % of a core\n";
  const auto ended = steady::now();
  const auto ended_wall = clock_type::now();
  EXPECT_LE(during, 60) << "calls to the Actions Service in 30 s of 503s: backoff, not a tight loop";
  EXPECT_GE(w.headroom->sample("headroom_actions_errors_total{kind=\"server\",name=\"chaos-actions-503\"}"), 1)
      << "the failed calls are counted\n" << w.headroom->metrics();
  std::cout << "[chaos] Actions Service 503 for 30 s: " << during << " session/poll/acquire calls during it\n";
  expect_recovered(w, set, 6, "Actions Service 503 for 30 s", ended, ended_wall);
}

// Polls that hang past their hold (25 s before the peer even looks, on a 20 s hold) for 30 s, then
// malformed message bodies: a capacity change still cancels a hung poll and re-polls (the audit
// holds throughout), a malformed body is rejected with the call named and counted, and the burst
// completes. (A poll hanging past the client's 70 s timeout is github_client_test's
// slow_responses_time_out_and_are_retried: here it would only lengthen the run.)
TEST(chaos, capacity_actions_polls_hang_past_the_hold_then_bodies_are_malformed) {
  REQUIRE_ENV(e);
  world w{e, {"chaos-actions-hang", 4, 2, "5m", "5s"}};
  REQUIRE_WORLD(w);
  const int64_t set = start_burst(w, 6);
  ASSERT_NE(set, 0);
  e.peer->control("/faults", R"([{"route":"get_message","delayMs":25000,"forMs":30000}])");
  std::this_thread::sleep_for(30s);
  e.peer->control("/faults", R"([{"route":"get_message","status":200,"malformed":true,"count":3}])");
  const auto ended = steady::now();
  const auto ended_wall = clock_type::now();
  expect_recovered(w, set, 6, "polls hanging 25 s for 30 s, then 3 malformed bodies", ended, ended_wall);
  // Each malformed body headroom reads is rejected with the call named, and counted, as many as
  // the log names. (The peer spends a fault when a poll arrives; a poll that a capacity change
  // cancels before its answer never reads its body, so fewer than 3 may arrive.)
  const double counted = w.headroom->sample("headroom_actions_errors_total{kind=\"bad_response\",name=\"chaos-actions-hang\"}");
  const auto log = w.headroom->full_log();
  size_t named = 0;  // a failed poll answered 200 can only be a body that did not decode
  std::istringstream lines{log};
  for (std::string line; std::getline(lines, line);)
    named += line.find("\"error\":\"get message (capacity") != std::string::npos && line.find("): 200 ") != std::string::npos ? 1 : 0;
  EXPECT_GE(counted, 1) << w.headroom->metrics();
  EXPECT_EQ(counted, static_cast<double>(named)) << "every malformed body read is named in the log and counted\n" << log;
  std::cout << "[chaos] malformed bodies: " << counted << " read, each rejected, named and counted\n";
}

// Another listener holds the session (409 on every create) for 45 s at start-up, longer than the
// client's 30 s between tries: headroom keeps retrying with backoff (bounded calls, the process
// stays up), and opens the session once the conflict clears; the jobs posted meanwhile complete.
TEST(chaos, capacity_session_conflict_for_45s_at_start_up) {
  REQUIRE_ENV(e);
  world w{e, {"chaos-conflict", 4, 2, "5m", "4s"}};
  REQUIRE_WORLD(w);
  e.peer->control("/faults", R"([{"route":"create_session","status":409,"forMs":45000}])");
  const auto before = requests(w, "create_session");
  const auto conflict_from = steady::now();
  w.start();
  int64_t set = 0;
  ASSERT_TRUE(eventually([&] { return (set = w.scale_set_id()) != 0; }, 60s)) << w.headroom->log();
  w.post_jobs(3);
  std::this_thread::sleep_until(conflict_from + 42s);
  const auto tries = requests(w, "create_session") - before;
  EXPECT_TRUE(w.headroom->alive()) << "a held session is no reason to exit\n" << w.headroom->log();
  EXPECT_GE(tries, 2) << "it kept trying (the client waits 30 s between tries, as the scaleset library does)";
  EXPECT_LE(tries, 30) << "session creates in 45 s of conflict: backoff, not a tight loop";
  EXPECT_EQ(w.job_states()["completed"], 0) << "no session, no job";
  std::this_thread::sleep_until(conflict_from + 46s);
  const auto ended = steady::now();
  const auto ended_wall = clock_type::now();
  std::cout << "[chaos] session conflict for 45 s: " << tries << " session creates during it\n";
  expect_recovered(w, set, 3, "session conflict for 45 s at start-up", ended, ended_wall);
}

// Each actor kind of the scale-set subtree failed mid-burst (the test fault hook kills it, as a
// crash would): its supervisor restarts it within 1 s, it rebuilds its state from the cluster and
// the Actions Service, and the burst completes with nothing lost or over-advertised. Then the
// capacity monitor is failed 6 times in a row (maxRestarts is 5 a minute): the scale set's
// supervisor gives up and escalates, its parent restarts the whole scale set, and the warm pool
// is advertised again.
TEST(chaos, capacity_each_actor_kind_failed_mid_burst_is_restarted_and_escalation_holds) {
  REQUIRE_ENV(e);
  scenario sc{"chaos-actors", 4, 2, "5m", "5s"};
  sc.fault_hooks = true;
  world w{e, sc};
  REQUIRE_WORLD(w);
  const int64_t set = start_burst(w, 6);
  ASSERT_NE(set, 0);
  const std::string sup = "scale_set/chaos-actors";
  auto restarts = [&](const std::string& supervisor, const std::string& child) {
    return std::max(0.0, w.headroom->sample("headroom_supervisor_restarts_total{child=\"" + child + "\",supervisor=\"" + supervisor + "\"}"));
  };
  for (const std::string child : {"listener_session", "capacity_monitor", "runner_provisioner", "health_check"}) {
    const double before = restarts(sup, child);
    const auto at = steady::now();
    EXPECT_EQ(w.headroom->post("/debug/fault?child=" + child), "1\n") << child << ": the hook reaches exactly one actor";
    const bool back = eventually([&] { return restarts(sup, child) > before; }, 5s);
    const double took = seconds_since(at);
    EXPECT_TRUE(back) << child << " was not restarted\n" << w.headroom->log();
    EXPECT_LT(took, 1.2) << child << ": restarted " << took << " s after it failed (goal 1 s; the 200 ms sampling adds up to 0.2 s)";
    std::cout << "[chaos] " << child << " failed mid-burst: restarted within " << took << " s (sampled every 200 ms)\n";
  }
  const auto ended = steady::now();
  const auto ended_wall = clock_type::now();
  expect_recovered(w, set, 6, "each actor kind failed once mid-burst", ended, ended_wall);

  // The status actor failed while the scale set is steady: a healthy session and a steady capacity
  // are not told again, so its successor asks the listener and the monitor for their views. The
  // ScaleSet object it writes keeps showing the session Open (since when it was opened) and the
  // capacity the last poll carried.
  auto status = [&](const std::string& path) {
    return w.e.c->kubectl({"-n", w.s.name, "get", "scaleset", w.s.name, "-o", "jsonpath={.status." + path + "}"}).out;
  };
  ASSERT_TRUE(eventually([&] { return status("session") == "Open"; }, 30s)) << status("session");
  const auto opened_at = status("conditions[0].lastTransitionTime");
  // observedTime is in whole seconds: a successor writing within the second of its predecessor's
  // last write writes the same text. So first a quiet second (no write for 1.1 s) before the fault.
  auto observed = status("observedTime");
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(1100ms);
    const auto again = status("observedTime");
    if (again == observed)
      break;
    observed = again;
  }
  EXPECT_EQ(w.headroom->post("/debug/fault?child=scale_set_status"), "1\n");
  if (!eventually([&] { return status("observedTime") != observed; }, 15s)) {
    std::string said;  // what the status actors logged
    std::istringstream lines{w.headroom->full_log()};
    for (std::string line; std::getline(lines, line);)
      if (line.find("scale_set_status") != std::string::npos || line.find("ScaleSet") != std::string::npos)
        said += line + "\n";
    ADD_FAILURE() << "the restarted status actor wrote nothing: observedTime still " << observed << "\n" << said;
  }
  for (int i = 0; i < 12; ++i, std::this_thread::sleep_for(250ms))
    if (status("session") != "Open") {
      ADD_FAILURE() << "a restarted status actor wrote session '" << status("session") << "' over Open";
      break;
    }
  EXPECT_EQ(status("conditions[0].lastTransitionTime"), opened_at) << "a restart is not a transition";
  EXPECT_TRUE(eventually([&] { return status("advertisedCapacity") == std::to_string(w.latest_capacity(set)); }, 15s))
      << status("advertisedCapacity") << " vs " << w.latest_capacity(set);

  // Escalation: more than maxRestarts (5) failures of one child within the window (1 minute). The
  // failure above is usually still inside it, so the 5th or the 6th failure here escalates;
  // every one before is restarted.
  auto escalated = [&] {
    return std::max(0.0, w.headroom->sample("headroom_supervisor_escalations_total{supervisor=\"" + sup + "\"}"));
  };
  const double escalations = escalated();
  const double subtree_restarts = restarts("scale_sets", sup);
  int failures = 0;
  while (escalated() == escalations && failures < 6) {
    const double before = restarts(sup, "capacity_monitor");
    ASSERT_EQ(w.headroom->post("/debug/fault?child=capacity_monitor"), "1\n") << "failure " << failures + 1;
    ++failures;
    ASSERT_TRUE(eventually([&] { return restarts(sup, "capacity_monitor") > before || escalated() > escalations; }, 10s))
        << "failure " << failures << " was neither restarted nor escalated\n" << w.headroom->log();
  }
  const auto escalated_at = steady::now();
  EXPECT_GT(escalated(), escalations) << "the scale set's supervisor gives up on the sixth failure in a minute\n" << w.headroom->log();
  EXPECT_GE(failures, 5) << "escalated before maxRestarts failures";
  EXPECT_TRUE(eventually([&] { return restarts("scale_sets", sup) > subtree_restarts; }, 30s))
      << "its parent restarts the whole scale set\n" << w.headroom->log();
  EXPECT_TRUE(w.headroom->alive()) << "one scale set's escalation does not end the process\n" << w.headroom->log();
  std::map<std::string, int> slots;
  EXPECT_TRUE(eventually([&] {
    slots = placeholder_slots(w);
    return w.latest_capacity(set) == 2 && w.ready_pairs() == 2 && slots.size() == 2;
  }, 120s)) << "the restarted scale set advertises its warm pool again, with no leaked placeholder\n"
            << w.e.c->kubectl({"-n", w.s.name, "get", "pods", "--show-labels"}).out << w.headroom->log();
  std::cout << "[chaos] capacity_monitor failed " << failures << " more times within the minute: escalated, the scale set restarted, warm pool back "
            << seconds_since(escalated_at) << " s after\n";
  audited(w, set);
}

// The API-server fault proxy, for headroom's traffic only (testenv/apiserver_proxy.hpp).
using testenv::apiserver_proxy;

// headroom's informer log lines and the proxy's log, for a failure message.
std::string watch_story(const world& w, const apiserver_proxy& proxy) {
  std::string out;
  const auto log = w.headroom->full_log();
  std::istringstream in{log};
  for (std::string line; std::getline(in, line);)
    if (line.find("k8s/informer") != std::string::npos)
      out += line + "\n";
  return out + "--- the proxy:\n" + proxy.p->log();
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// Three API-server faults in one run, each in the middle of its own burst of 4 jobs:
//   1. every request answered 429 (Retry-After: 1), 503, 500 or 504 in turn for 30 s, a 504 to a
//      write only after the write was made (the apiserver's own Timeout);
//   2. every watch stream stops sending without closing: each is dropped after
//      kubernetes.watchStallTimeout (15 s here) and resumed;
//   3. every watch stream ends, and each comes back to what the API server sends to a watch an
//      etcd compaction overtook (an ERROR event with a 410 Expired Status): the informers relist
//      and emit only what changed.
// After each: the monitor agrees with the cluster, every job completes exactly once, the warm
// pool returns with no leaked or duplicated placeholder, and no poll over-advertised.
TEST(chaos, capacity_apiserver_429_5xx_stalled_and_expired_watches_mid_burst) {
  REQUIRE_ENV(e);
  scenario sc{"chaos-apiproxy", 4, 2, "5m", "5s"};
  sc.watch_stall = "15s";
  world w{e, sc};
  REQUIRE_WORLD(w);
  apiserver_proxy proxy{*e.c};
  HEADROOM_REQUIRE_READY(proxy.p != nullptr, "the API-server fault proxy", proxy.why);
  w.kubeconfig = proxy.through(w.kubeconfig);
  ASSERT_FALSE(w.kubeconfig.empty()) << "the chart identity's kubeconfig has no server or CA to swap";
  const int64_t set = start_burst(w, 4);
  ASSERT_NE(set, 0);
  const std::string gauge = "headroom_capacity_advertised_running_pairs{name=\"chaos-apiproxy\"}";
  auto agrees = [&](std::chrono::milliseconds limit) {
    return eventually([&] { return w.headroom->sample(gauge) == w.ready_pairs(); }, limit);
  };
  auto next_burst = [&](int jobs, int total) {
    w.post_jobs(jobs);
    ASSERT_TRUE(eventually([&] { auto st = w.job_states(); return st["running"] >= 1 || st["completed"] > total - jobs; }, 120s))
        << "burst under way\n" << w.headroom->log();
  };

  // 1. 429 and 5xx for 30 s.
  const auto faulted_before = proxy.state("faulted");
  proxy.post("/faults", R"({"statuses":[429,503,500,504],"forMs":30000})");
  std::this_thread::sleep_for(30s);
  const auto faulted = proxy.state("faulted") - faulted_before;
  auto ended = steady::now();
  auto ended_wall = clock_type::now();
  EXPECT_GT(faulted, 0) << "headroom called the API server during the 30 s";
  EXPECT_TRUE(agrees(4s + 2s)) << "the monitor's running pairs " << w.headroom->sample(gauge) << ", the cluster's " << w.ready_pairs()
                               << "\n" << w.headroom->log();
  std::cout << "[chaos] apiserver 429/503/500/504 for 30 s: " << faulted << " requests answered with an error; monitor agreed "
            << seconds_since(ended) << " s after\n";
  double pool_after = 0;
  expect_recovered(w, set, 4, "apiserver 429/503/500/504 for 30 s", ended, ended_wall, true, &pool_after);
  if (HasFatalFailure())
    return;
  // Placeholder creates the API server refused for load back off at most 5 s (not the 40 s of a
  // cluster without room): the pool is re-made within seconds of the fault's end.
  EXPECT_LT(pool_after, 20.0) << "the warm pool came back " << pool_after << " s after the API server recovered\n" << w.headroom->log();


  // 2. Every open watch falls silent. headroom watches pods, nodes and NodePools: with a 15 s
  // stall timeout and a bookmark a minute, the quiet ones (nodes, NodePools) are themselves
  // dropped and resumed every 15 s, so first wait until all three flow.
  next_burst(4, 8);
  constexpr int64_t watches = 3;
  ASSERT_TRUE(eventually([&] { return proxy.state("watchesFlowing") >= watches; }, 30s)) << watch_story(w, proxy);
  const auto stalled = std::stoll("0" + proxy.post("/stall"));
  const auto stall_at = steady::now();
  const auto stall_wall = clock_type::now();
  EXPECT_GE(stalled, watches) << "the pods, nodes and NodePools watches were open\n" << watch_story(w, proxy);
  // Each silent stream is dropped by headroom after watchStallTimeout and a new one opened.
  const bool resumed = eventually([&] { return proxy.state("watchesOpen") == proxy.state("watchesFlowing") && proxy.state("watchesFlowing") >= watches; }, 15s + 15s);
  const double resumed_after = seconds_since(stall_at);
  EXPECT_TRUE(resumed) << "each silent watch is dropped after watchStallTimeout (15 s) and resumed\n" << watch_story(w, proxy);
  // Each stream's timeout counts from its own last bytes, which may have come a while before the
  // stall (nothing changed): the proxy measures, per stream, last bytes → headroom's drop.
  EXPECT_TRUE(proxy.stall_respected(stalled, 15s))
      << "a watch was dropped before it had been silent for watchStallTimeout: " << proxy.stall_dropped() << " of " << stalled
      << " dropped, the soonest " << proxy.stall_dropped_min_s() << " s after its last bytes";
  EXPECT_TRUE(agrees(4s + 2s)) << "after the stalled watches resumed\n" << w.headroom->log();
  std::cout << "[chaos] " << stalled << " watch streams silenced: all dropped and resumed " << resumed_after << " s after (watchStallTimeout 15 s; the soonest "
            << proxy.stall_dropped_min_s() << " s after its last bytes)\n";
  expect_recovered(w, set, 8, "every watch stream silenced", stall_at, stall_wall, true, &pool_after);
  if (HasFatalFailure())
    return;
  // Within the stall timeout and a relist: a job that completed while the pods watch was silent
  // still has its runner pod deleted at once (by name, not by what the stale cache shows).
  EXPECT_LT(pool_after, 15.0 + 15.0) << "the warm pool came back " << pool_after << " s after the watches were silenced\n"
                                     << w.headroom->log();

  // 3. Every watch ends and comes back to a 410.
  next_burst(4, 12);
  ASSERT_TRUE(eventually([&] { return proxy.state("watchesFlowing") >= watches; }, 30s)) << watch_story(w, proxy);
  const auto relists_before = count_of(w.headroom->full_log(), "resourceVersion expired, relisting");
  const auto ended_watches = std::stoll("0" + proxy.post("/expire"));
  ended = steady::now();
  ended_wall = clock_type::now();
  EXPECT_GE(ended_watches, watches) << "the pods, nodes and NodePools watches were open\n" << watch_story(w, proxy);
  const bool relisted = eventually([&] { return count_of(w.headroom->full_log(), "resourceVersion expired, relisting") >= relists_before + size_t(ended_watches); }, 10s);
  EXPECT_TRUE(relisted) << "every watch met a 410 and relisted (" << proxy.state("expired") << " watches answered 410)\n"
                        << watch_story(w, proxy);
  EXPECT_TRUE(agrees(4s)) << "after the relists\n" << w.headroom->log();
  std::cout << "[chaos] " << ended_watches << " watch streams ended and met 410: relisted, the monitor agreed " << seconds_since(ended)
            << " s after\n";
  expect_recovered(w, set, 12, "every watch expired (410) mid-burst", ended, ended_wall);
}

// headroom killed (SIGKILL) mid-burst and started again: the new process adopts the first one's
// placed pairs (the scale set's owner ConfigMap outlives a process, #55) and deletes the rest;
// no job is lost or run twice; no poll ever over-advertises (the audit counts an adopted pair only
// while the cluster has it placed).
TEST(chaos, capacity_sigkill_mid_burst_and_restart) {
  REQUIRE_ENV(e);
  world w{e, {"chaos-sigkill", 3, 2, "5m", "6s"}};
  REQUIRE_WORLD(w);
  const int64_t set = start_burst(w, 4);
  ASSERT_NE(set, 0);
  auto owners = [&] {
    auto r = e.c->kubectl({"-n", w.s.name, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)", "-o",
                           "jsonpath={range .items[*]}{.metadata.ownerReferences[0].uid}{\"\\n\"}{end}"});
    std::set<std::string> out;
    std::istringstream in{r.out};
    for (std::string uid; std::getline(in, uid);)
      if (!uid.empty())
        out.insert(uid);
    return out;
  };
  const auto first = owners();
  ASSERT_FALSE(first.empty());
  w.headroom->stop(SIGKILL);
  const auto killed = steady::now();
  const auto killed_wall = clock_type::now();
  w.start();  // the old session is still held: the new process waits it out (409 retries)
  e.peer->control("/expire", R"({"what":"sessions"})");
  expect_recovered(w, set, 4, "SIGKILL mid-burst and restart", killed, killed_wall, false);
  EXPECT_EQ(first.size(), 1u) << "one owner, the scale set's";
  EXPECT_EQ(owners(), first) << "the placeholders' owner outlives the process";
}

}  // namespace
}  // namespace headroom::e2e
