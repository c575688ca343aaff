// runner_provisioner (actors/capacity/runner_provisioner.cpp, provisioner_sweep.cpp) under CAF's
// deterministic test_coordinator, with GitHub, the Actions Service and the API server answered by
// hand (tests/unit/support/scripted_exchange.hpp) and the pods on a real informer: assigned jobs
// become runners, never more than the advertised capacity; each runner is a JIT configuration, then
// its pod, then the Secret holding the configuration, owned by that pod; a JIT configuration the
// service could not give is asked again 5 s later on the injected clock.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "actors/capacity/capacity.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer_slice.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace cap = actors::capacity;

namespace {

constexpr const char* admin_jwt = "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjQxMDI0NDQ4MDB9.c2ln";  // {"exp":4102444800}

struct provisioner_fixture : test_support::actor_fixture {
  ~provisioner_fixture() override {
    caf::anon_send_exit(provisioner, caf::exit_reason::kill);
    sched.run();
    pods->stop();
  }

  void start(bool arc = false, const std::string& pod_items = "") {
    pods = pod_informer("arc", pod_items);
    router = k8s::label_router<k8s::pod>::make(pods, std::string{cap::keys::scale_set});
    auto where = std::get<github::config_url>(github::parse_config_url("https://github.com/acme"));
    github::credentials creds;
    creds.personal_access_token = "ghp_scripted";
    github::actions_options ao;
    ao.retry_base = 1ms;
    auto ctx = std::make_shared<cap::scale_set_context>();
    ctx->spec.ns = "arc";
    ctx->spec.name = "linux";
    ctx->spec.max_runners = 5;
    ctx->spec.runner_image = "ghcr.io/actions/actions-runner:2.330.0";
    if (mode)
      ctx->spec.mode = *mode;
    if (arc) {
      ctx->spec.standalone = false;
      ctx->spec.arc_set = "linux";
    }
    ctx->kube = &kube;
    ctx->pods = router->slice("linux");
    ctx->github = github::actions_client::make(where, creds, io, ao);
    ctx->spec.capacity_aware = capacity_aware;
    ctx->metrics.set = [g = gauges](const char* name, int64_t v) { (*g)[name] = v; };
    ctx->metrics.add = [](const char*, int64_t) {};
    ctx->metrics.observe = [](const char*, double) {};
    ctx->metrics.actions_error = [](std::string_view) {};
    provisioner = cap::spawn_runner_provisioner(sys, ctx, cap::scale_set_peers{});
    sched.run();
  }
  void connect() {
    ASSERT_TRUE(io.answer("POST", "/orgs/acme/actions/runners/registration-token", 201,
                          R"({"token":"reg-token","expires_at":"2100-01-01T00:00:00Z"})"));
    sched.run();
    ASSERT_TRUE(io.answer("POST", "/actions/runner-registration", 200,
                          std::string{R"({"url":"https://pipelines.test/tenant","token":")"} + admin_jwt + "\"}"));
    sched.run();
  }

  // kubernetes-mode cases: `capacity` advertised, one job assigned, its runner registered (JIT answered).
  void one_job_one_runner(int64_t capacity) {
    caf::anon_send(provisioner, msg::set_max_capacity{capacity});
    msg::scale_set_update u;
    u.scale_set_id = 7;
    u.stats.total_assigned_jobs = 1;
    caf::anon_send(provisioner, u);
    sched.run();
    connect();
    ASSERT_TRUE(io.answer("POST", "/generatejitconfig", 200,
                          R"({"runner":{"id":101,"name":"linux-runner-x"},"encodedJITConfig":"c2VjcmV0LWppdC1jb25maWc="})"));
    sched.run();
  }

  std::optional<actors::runners::runner_spec::container_mode> mode;
  bool capacity_aware = true;
  std::shared_ptr<std::map<std::string, int64_t>> gauges = std::make_shared<std::map<std::string, int64_t>>();
  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::label_router<k8s::pod>> router;
  cap::provisioner_actor provisioner;
};

// A placeholder of slot `slot` as the informer lists it.
std::string placeholder(const std::string& slot, const std::string& role, const std::string& phase, const std::string& node) {
  return R"({"metadata":{"name":"linux-ph-)" + slot + "-" + role + R"(","namespace":"arc","uid":"u-)" + slot + role +
         R"(","resourceVersion":"9","labels":{"headroom.dev/scale-set":"linux","headroom.dev/slot":")" + slot +
         R"(","headroom.dev/role":")" + role + R"(-placeholder"}},"spec":{"nodeName":")" + node + R"("},"status":{"phase":")" +
         phase + R"("}})";
}

TEST_F(provisioner_fixture, assigned_jobs_become_runners_within_the_capacity_each_a_jit_config_a_pod_and_its_secret) {
  start();
  caf::anon_send(provisioner, msg::set_max_capacity{2});
  msg::scale_set_update u;
  u.scale_set_id = 7;
  u.stats.total_assigned_jobs = 3;  // three jobs, room advertised for two
  caf::anon_send(provisioner, u);
  sched.run();
  connect();
  ASSERT_EQ(waiting("POST", "/runnerscalesets/7/generatejitconfig"), 2u) << "two runners, not three";

  // The first: its configuration, its pod, then the Secret with the configuration, owned by the pod.
  ASSERT_TRUE(io.answer("POST", "/generatejitconfig", 200,
                        R"({"runner":{"id":101,"name":"linux-runner-x"},"encodedJITConfig":"c2VjcmV0LWppdC1jb25maWc="})"));
  sched.run();
  const auto* pod = find("POST", "/namespaces/arc/pods");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->body.find("c2VjcmV0LWppdC1jb25maWc="), std::string::npos) << "the configuration is not in the pod";
  simdjson::dom::parser p;
  std::string_view pod_name;
  ASSERT_EQ(p.parse(pod->body)["metadata"]["name"].get(pod_name), simdjson::SUCCESS);
  const std::string name{pod_name};
  ASSERT_TRUE(io.answer("POST", "/namespaces/arc/pods", 201, R"({"metadata":{"name":")" + name + R"(","uid":"u-runner"}})"));
  sched.run();
  const auto* secret = find("POST", "/namespaces/arc/secrets");
  ASSERT_NE(secret, nullptr) << "the Secret follows its pod";
  EXPECT_NE(secret->body.find("\"uid\":\"u-runner\""), std::string::npos) << "owned by the pod";
  EXPECT_NE(secret->body.find("\"name\":\"" + name + "\""), std::string::npos);
  ASSERT_TRUE(io.answer("POST", "/namespaces/arc/secrets", 201, "{}"));
  sched.run();

  // The second: the service could not give one (its retries too); asked again 5 s later.
  while (io.answer("POST", "/generatejitconfig", 503, R"({"message":"unavailable"})"))
    sched.run();
  EXPECT_EQ(waiting("POST", "/generatejitconfig"), 0u);
  sched.advance_time(4900ms);
  sched.run();
  EXPECT_EQ(waiting("POST", "/generatejitconfig"), 0u) << "not before 5 s";
  sched.advance_time(100ms);
  sched.run();
  EXPECT_EQ(waiting("POST", "/generatejitconfig"), 1u) << "one runner still owed";
}

// arc mode: the EphemeralRunnerSet is the AutoscalingRunnerSet's newest; each change of the
// count, and each batch of job events, is a new patchID continuing the set's own; once the count
// stays put with no job event for 30 s, one patch with patchID 0 lets ARC's controller scale down
// (it ignores a scale-down while patchID > 0). A set gone (ARC replaced it) is found again.
TEST_F(provisioner_fixture, arc_mode_patches_as_arcs_listener_does_and_lets_arc_scale_down) {
  start(true);
  auto patch_of = [&] {
    const auto* r = find("PATCH", "/ephemeralrunnersets/");
    return r == nullptr ? std::string{} : r->url.substr(r->url.rfind('/') + 1) + " " + r->body;
  };
  auto answer_patch = [&](long status = 200) {
    ASSERT_TRUE(io.answer("PATCH", "/ephemeralrunnersets/", status, status == 200 ? "{}" : R"({"kind":"Status","code":404})"));
    sched.run();
  };
  caf::anon_send(provisioner, msg::set_max_capacity{3});
  msg::scale_set_update u;
  u.scale_set_id = 7;
  u.stats.total_assigned_jobs = 2;
  caf::anon_send(provisioner, u);
  sched.run();
  const auto* list = find("GET", "/apis/actions.github.com/v1alpha1/namespaces/arc/ephemeralrunnersets?");
  ASSERT_NE(list, nullptr);
  EXPECT_NE(list->url.find("labelSelector=actions.github.com%2Fscale-set-name%3Dlinux"), std::string::npos) << list->url;
  ASSERT_TRUE(io.answer("GET", "/ephemeralrunnersets?", 200,
                        R"({"items":[{"metadata":{"name":"linux-old","creationTimestamp":"2026-11-01T00:00:00Z"},"spec":{"patchID":40}},)"
                        R"({"metadata":{"name":"linux-x7k2p","creationTimestamp":"2026-11-02T00:00:00Z"},"spec":{"patchID":7}}]})"));
  sched.run();
  EXPECT_EQ(patch_of(), R"(linux-x7k2p {"spec":{"replicas":2,"patchID":8}})") << "the newest set, its sequence continued";
  answer_patch();

  // A job completed and another's runner is still needed: the same count, a new patchID (ARC
  // replaces the finished runner only on a patch it has not seen).
  msg::job_transition done;
  done.type = msg::job_transition::completed;
  done.runner_name = "linux-x7k2p-runner-abcde";
  u.jobs = {done};
  caf::anon_send(provisioner, u);
  sched.run();
  EXPECT_EQ(patch_of(), R"(linux-x7k2p {"spec":{"replicas":2,"patchID":9}})");
  answer_patch();
  u.jobs.clear();
  u.stats.total_assigned_jobs = 0;
  caf::anon_send(provisioner, u);
  sched.run();
  EXPECT_EQ(patch_of(), R"(linux-x7k2p {"spec":{"replicas":0,"patchID":10}})");
  answer_patch();
  caf::anon_send(provisioner, u);  // the same statistics again: nothing new
  sched.run();
  EXPECT_EQ(waiting("PATCH"), 0u);
  sched.advance_time(29s);
  sched.run();
  EXPECT_EQ(waiting("PATCH"), 0u) << "not settled before 30 s";
  sched.advance_time(1s);
  sched.run();
  EXPECT_EQ(patch_of(), R"(linux-x7k2p {"spec":{"replicas":0,"patchID":0}})") << "settled: ARC may delete idle runners";
  answer_patch();
  sched.advance_time(60s);
  sched.run();
  EXPECT_EQ(waiting("PATCH"), 0u) << "patchID 0 once";

  // ARC replaced the set: the patch finds it gone, the lookup the new one.
  u.stats.total_assigned_jobs = 1;
  caf::anon_send(provisioner, u);
  sched.run();
  EXPECT_EQ(patch_of(), R"(linux-x7k2p {"spec":{"replicas":1,"patchID":11}})");
  answer_patch(404);
  sched.advance_time(5s);
  sched.run();
  ASSERT_TRUE(io.answer("GET", "/ephemeralrunnersets?", 200,
                        R"({"items":[{"metadata":{"name":"linux-q9w3e","creationTimestamp":"2026-11-03T00:00:00Z"},"spec":{"patchID":0}}]})"));
  sched.run();
  EXPECT_EQ(patch_of(), R"(linux-q9w3e {"spec":{"replicas":1,"patchID":12}})");
  answer_patch();
}

// kubernetes mode: a runner is pinned to the node of a pair whose runner placeholder is Running
// (it preempts that placeholder there), never to one whose runner placeholder is still Pending:
// that pair holds no runner room yet, and a runner pinned to it waited while the pair timed out
// and both its placeholders went (CI's migration e2e: the runner's workflow pod then found no room).
TEST_F(provisioner_fixture, kubernetes_mode_pins_a_runner_only_to_a_pair_whose_runner_placeholder_runs) {
  mode = actors::runners::runner_spec::container_mode::kubernetes;
  start(false, placeholder("pending1", "workflow", "Running", "node-1") + "," + placeholder("pending1", "runner", "Pending", "") +
                   "," + placeholder("placed22", "workflow", "Running", "node-2") + "," +
                   placeholder("placed22", "runner", "Running", "node-2"));
  ASSERT_NO_FATAL_FAILURE(one_job_one_runner(2));
  const auto* pod = find("POST", "/namespaces/arc/pods");
  ASSERT_NE(pod, nullptr) << waiting_text();
  EXPECT_NE(pod->body.find("placed22"), std::string::npos) << "pinned to the placed pair's room\n" << pod->body;
  EXPECT_NE(pod->body.find("node-2"), std::string::npos) << pod->body;
  EXPECT_EQ(pod->body.find("pending1"), std::string::npos) << "not to the pair still waiting for its runner placeholder";
}

// kubernetes mode: a runner registered while no workflow room is free waits for one (a pair being
// placed frees one within seconds) instead of going where its workflow pod may find no room, and
// is made unpinned only after a minute (the migration e2e: a workflow pod pinned by hostname to a
// full node waited for good, its job "running", while the next pair ran a second later).
TEST_F(provisioner_fixture, kubernetes_mode_a_runner_with_no_free_workflow_room_waits_for_one) {
  mode = actors::runners::runner_spec::container_mode::kubernetes;
  start(false, placeholder("coming11", "runner", "Pending", "") + "," + placeholder("coming11", "workflow", "Pending", ""));
  ASSERT_NO_FATAL_FAILURE(one_job_one_runner(1));
  EXPECT_EQ(find("POST", "/namespaces/arc/pods"), nullptr) << "no room yet: the pod waits\n" << waiting_text();
  sched.advance_time(3s);
  sched.run();
  EXPECT_EQ(find("POST", "/namespaces/arc/pods"), nullptr);
  EXPECT_EQ(waiting("POST", "/generatejitconfig"), 0u) << "no second runner for the one job while the first waits";
  // The pair is placed: the runner is made at once, pinned to it.
  ASSERT_TRUE(io.stream("watch=true", std::string{R"({"type":"MODIFIED","object":)"} + placeholder("coming11", "workflow", "Running", "node-5") + "}\n"));
  ASSERT_TRUE(io.stream("watch=true", std::string{R"({"type":"MODIFIED","object":)"} + placeholder("coming11", "runner", "Running", "node-5") + "}\n"));
  sched.run();
  sched.advance_time(1s);
  sched.run();
  const auto* pod = find("POST", "/namespaces/arc/pods");
  ASSERT_NE(pod, nullptr) << waiting_text();
  EXPECT_NE(pod->body.find("node-5"), std::string::npos) << "pinned to the pair placed meanwhile\n" << pod->body;
}

// kubernetes mode: a runner with no workflow room waits as long as it takes, never made where the
// scheduler puts it: its workflow pod, pinned to the runner's node, waited there for good when that
// node was full (the migration e2e's job "running" until the test gave up). The monitor makes a pair
// for its job meanwhile (capacity_monitor_test). Counted in the gauge, reminded once a minute.
TEST_F(provisioner_fixture, kubernetes_mode_a_runner_waits_for_a_workflow_room_as_long_as_it_takes) {
  mode = actors::runners::runner_spec::container_mode::kubernetes;
  start(false, "");
  ASSERT_NO_FATAL_FAILURE(one_job_one_runner(1));
  for (int i = 0; i < 600; ++i) {
    sched.advance_time(1s);
    sched.run();
  }
  EXPECT_EQ(find("POST", "/namespaces/arc/pods"), nullptr) << "ten minutes on, still no pod outside a pair's room\n" << waiting_text();
  EXPECT_EQ((*gauges)["headroom_runners_awaiting_workflow_room"], 1);
  EXPECT_EQ(waiting("POST", "/generatejitconfig"), 0u) << "no second runner for the one job";
  ASSERT_TRUE(io.stream("watch=true", std::string{R"({"type":"ADDED","object":)"} + placeholder("late0001", "workflow", "Running", "node-9") + "}\n"));
  ASSERT_TRUE(io.stream("watch=true", std::string{R"({"type":"ADDED","object":)"} + placeholder("late0001", "runner", "Running", "node-9") + "}\n"));
  sched.run();
  sched.advance_time(1s);
  sched.run();
  const auto* pod = find("POST", "/namespaces/arc/pods");
  ASSERT_NE(pod, nullptr) << waiting_text();
  EXPECT_NE(pod->body.find("node-9"), std::string::npos) << "pinned to the pair placed at last\n" << pod->body;
  EXPECT_EQ((*gauges)["headroom_runners_awaiting_workflow_room"], 0);
}

// With capacityAware off there are no pairs to wait for: the runner goes where the scheduler puts it
// at once (as ARC's would).
TEST_F(provisioner_fixture, kubernetes_mode_without_pairs_makes_the_runner_at_once) {
  mode = actors::runners::runner_spec::container_mode::kubernetes;
  capacity_aware = false;
  start(false, "");
  ASSERT_NO_FATAL_FAILURE(one_job_one_runner(1));
  const auto* pod = find("POST", "/namespaces/arc/pods");
  ASSERT_NE(pod, nullptr) << waiting_text();
  EXPECT_EQ(pod->body.find("workflow-room"), std::string::npos) << pod->body;
}

// A runner exits by itself after its one job (its pod Succeeded, deleted later by the health check
// after terminalGrace): its job's completion does not delete its pod, which killed runners still
// finishing (CI's real-node run lost the runner's exit and its log). A runner pod still running
// 30 s after its job completed is deleted. Neither counts as a runner for another job.
TEST_F(provisioner_fixture, a_completed_jobs_runner_exits_by_itself_and_is_deleted_only_if_it_runs_on) {
  auto runner = [](const std::string& name, const std::string& phase) {
    return R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name +
           R"(","resourceVersion":"9","labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"runner"}},)"
           R"("spec":{"nodeName":"node-1"},"status":{"phase":")" + phase + R"("}})";
  };
  start(false, runner("linux-runner-exits", "Running") + "," + runner("linux-runner-lingers", "Running"));
  caf::anon_send(provisioner, msg::set_max_capacity{2});
  msg::scale_set_update u;
  u.scale_set_id = 7;
  u.stats.total_assigned_jobs = 2;
  auto both = [&u](msg::job_transition::kind type) {
    u.jobs.clear();
    for (const char* name : {"linux-runner-exits", "linux-runner-lingers"}) {
      msg::job_transition t;
      t.type = type;
      t.runner_name = name;
      u.jobs.push_back(t);
    }
  };
  both(msg::job_transition::started);
  caf::anon_send(provisioner, u);
  sched.run();
  EXPECT_EQ(waiting("POST", "/generatejitconfig"), 0u) << "both jobs have their runners";
  u.stats.total_assigned_jobs = 0;
  both(msg::job_transition::completed);
  caf::anon_send(provisioner, u);
  sched.run();
  EXPECT_EQ(waiting("DELETE"), 0u) << "no runner pod deleted at its job's completion\n" << waiting_text();
  ASSERT_TRUE(io.stream("watch=true", R"({"type":"MODIFIED","object":)" + runner("linux-runner-exits", "Succeeded") + "}\n"));
  sched.run();
  // A new job: both runners are done with theirs, so it gets a runner of its own.
  u.jobs.clear();
  u.stats.total_assigned_jobs = 1;
  caf::anon_send(provisioner, u);
  sched.run();
  connect();
  EXPECT_EQ(waiting("POST", "/generatejitconfig"), 1u) << "a runner whose job completed takes no other\n" << waiting_text();
  sched.advance_time(29s);
  sched.run();
  EXPECT_EQ(waiting("DELETE"), 0u) << "not before 30 s";
  sched.advance_time(2s);
  sched.run();
  const auto* del = find("DELETE", "/namespaces/arc/pods/");
  ASSERT_NE(del, nullptr) << waiting_text();
  EXPECT_NE(del->url.find("linux-runner-lingers"), std::string::npos) << del->url;
  EXPECT_EQ(waiting("DELETE"), 1u) << "the runner that exited is left to the health check";
}

}  // namespace
