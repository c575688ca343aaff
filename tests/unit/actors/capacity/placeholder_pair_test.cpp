// placeholder_pair (actors/capacity/placeholder_pair.cpp) under CAF's deterministic
// test_coordinator, with the API server answered by hand (tests/unit/support/scripted_exchange.hpp)
// and the pods' changes streamed to a real informer over its scripted watch: the pair creates its
// two placeholders, reports ready only when both are Running on a node, is lost when the workflow
// placeholder goes, and times out (deleting its pods) when they are not Running within
// placeholderReadyTimeout on the injected clock.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/capacity/capacity.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer_slice.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace cap = actors::capacity;

namespace {

struct pair_fixture : test_support::actor_fixture {
  ~pair_fixture() override {
    caf::anon_send_exit(pair, caf::exit_reason::kill);
    caf::anon_send_exit(owner, caf::exit_reason::kill);
    sched.run();
    pods->stop();
    if (nodes)
      nodes->stop();
  }

  void start(bool with_nodes = false, bool kubernetes_mode = false) {
    pods = pod_informer("arc");
    if (with_nodes) {
      k8s::informer<k8s::node>::options o;
      o.kind = k8s::kinds::nodes;
      nodes = k8s::informer<k8s::node>::make(kube, o);
      nodes->start();
      EXPECT_TRUE(io.answer("GET", "/api/v1/nodes", 200,
                            R"({"kind":"NodeList","metadata":{"resourceVersion":"10"},"items":[)" + node_json("node-1", "false", "") + "]}"));
      io.fire_timers();
      EXPECT_TRUE(nodes->synced());
    }
    router = k8s::label_router<k8s::pod>::make(pods, std::string{cap::keys::scale_set});
    auto ctx = std::make_shared<cap::scale_set_context>();
    ctx->spec.ns = "arc";
    ctx->spec.name = "linux";
    ctx->spec.placeholder_ready_timeout = 300s;
    ctx->spec.placeholder_image = "registry.k8s.io/pause:3.10";
    ctx->kube = &kube;
    ctx->pods = router->slice("linux");
    ctx->nodes = nodes;
    ctx->spec.tolerations = {k8s::toleration{"ci", "Exists", "", "NoSchedule", std::nullopt}};
    if (kubernetes_mode)
      ctx->spec.mode = actors::runners::runner_spec::container_mode::kubernetes;
    if (mode)
      ctx->spec.mode = *mode;
    owner = sys.spawn(
        [](cap::pair_owner::pointer, std::shared_ptr<std::vector<msg::pair_report>> seen) -> cap::pair_owner::behavior_type {
          return {[seen](msg::pair_report& r) { seen->push_back(std::move(r)); }, [](msg::k8s_event&) {}};
        },
        reports);
    pair = cap::spawn_placeholder_pair(sys, ctx, "a1b2c3d4", false, owner, {"v1", "ConfigMap", "headroom-owner", "u-owner"});
    sched.run();
  }

  // The pods the pair asked to create, by name, answered as created.
  std::vector<std::string> create_both() {
    std::vector<std::string> names;
    for (const auto& c : io.waiting())
      if (c.request.method == "POST") {
        simdjson::dom::parser p;
        std::string_view name;
        EXPECT_EQ(p.parse(c.request.body)["metadata"]["name"].get(name), simdjson::SUCCESS);
        names.emplace_back(name);
      }
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_TRUE(io.answer("POST", "/api/v1/namespaces/arc/pods", 201, "{}"));
      sched.run();
    }
    return names;
  }
  // The watch tells a pod's change, and the monitor hands it to the pair (as capacity_monitor does).
  void pod_is(const std::string& type, const std::string& name, const std::string& phase, const std::string& node = "",
              const std::string& conditions = "") {
    const std::string pod = R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name +
                            R"(","resourceVersion":"11","labels":{"headroom.dev/scale-set":"linux","headroom.dev/slot":"a1b2c3d4"}},)" +
                            R"("spec":{"nodeName":")" + node + R"("},"status":{"phase":")" + phase + R"(","conditions":[)" +
                            conditions + "]}}";
    ASSERT_TRUE(io.stream("/namespaces/arc/pods", R"({"type":")" + type + R"(","object":)" + pod + "}\n")) << "the watch waits";
    auto p = pods->get("arc", name);
    caf::anon_send(pair, msg::pod_event{type == "DELETED" ? msg::object_change::deleted : msg::object_change::modified,
                                        p ? p : std::make_shared<const k8s::pod>()});
    sched.run();
  }

  static std::string node_json(const std::string& name, const std::string& unschedulable, const std::string& taints) {
    return R"({"metadata":{"name":")" + name + R"(","uid":"u-)" + name + R"(","resourceVersion":"12"},"spec":{"unschedulable":)" +
           unschedulable + R"(,"taints":[)" + taints + "]}}";
  }
  // The node watch tells a node's change (the monitor then pokes the pairs on it, as it does here).
  void node_is(const std::string& type, const std::string& name, const std::string& unschedulable, const std::string& taints,
               const std::string& placeholder) {
    ASSERT_TRUE(io.stream("/api/v1/nodes", R"({"type":")" + type + R"(","object":)" + node_json(name, unschedulable, taints) + "}\n"));
    caf::anon_send(pair, msg::pod_event{msg::object_change::modified, pods->get("arc", placeholder)});
    sched.run();
  }

  // A runner pod of the scale set, nominated to (or bound on) a node, as the watch shows it.
  void runner_pod_on(const std::string& name, const std::string& nominated) {
    const std::string pod = R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name +
                            R"(","resourceVersion":"13","labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"runner"}},)"
                            R"("spec":{},"status":{"phase":"Pending","nominatedNodeName":")" + nominated + R"("}})";
    ASSERT_TRUE(io.stream("/namespaces/arc/pods", R"({"type":"ADDED","object":)" + pod + "}\n"));
    sched.run();
  }

  // kubernetes-novolume: a pair whose probe and workflow placeholder are bound to node-1 (the
  // workflow placeholder not Running yet), and its runner placeholder made and Running there.
  // Its placeholders' names, runner placeholder first.
  std::vector<std::string> placed_up_to_the_workflow_placeholders_start() {
    mode = actors::runners::runner_spec::container_mode::kubernetes_novolume;
    start();
    create_both();
    pod_is("ADDED", "linux-ph-a1b2c3d4-probe", "Pending", "node-1");
    pod_is("ADDED", "linux-ph-a1b2c3d4-workflow", "Pending", "node-1");
    create_both();
    pod_is("ADDED", "linux-ph-a1b2c3d4-runner", "Running", "node-1");
    return {"linux-ph-a1b2c3d4-runner", "linux-ph-a1b2c3d4-workflow"};
  }

  std::optional<actors::runners::runner_spec::container_mode> mode;  // before start(): the scale set's container mode
  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::informer<k8s::node>> nodes;
  std::shared_ptr<k8s::label_router<k8s::pod>> router;
  std::shared_ptr<std::vector<msg::pair_report>> reports = std::make_shared<std::vector<msg::pair_report>>();
  cap::pair_owner owner;
  cap::pair_actor pair;
};

using state = msg::pair_report::state;

TEST_F(pair_fixture, ready_only_when_both_placeholders_run_and_lost_when_the_workflow_one_goes) {
  start();
  const auto names = create_both();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(names[0].find("runner"), std::string::npos) << names[0];
  EXPECT_NE(names[1].find("workflow"), std::string::npos) << names[1];
  pod_is("ADDED", names[0], "Running", "node-1");
  pod_is("ADDED", names[1], "Pending");
  EXPECT_TRUE(reports->empty()) << "pending, as it started: nothing to report";
  pod_is("MODIFIED", names[1], "Running", "node-1");
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ(reports->back().what, state::ready);
  EXPECT_EQ(reports->back().slot, "a1b2c3d4");
  pod_is("DELETED", names[1], "Running", "node-1");
  EXPECT_EQ(reports->back().what, state::lost);
  EXPECT_NE(reports->back().reason.find(names[1]), std::string::npos) << reports->back().reason;
  ASSERT_EQ(waiting("DELETE"), 1u) << "the pod the watch showed deleted is not deleted again";
  EXPECT_NE(find("DELETE", names[0]), nullptr) << "the runner placeholder is deleted";
}

// kubernetes-novolume: the pair starts with a probe in its runner placeholder's stead, on the
// workflow placeholder's rung (no runner pod can preempt it), beside its workflow placeholder; the
// runner placeholder is made, required on the probe's node, only once both are on nodes. A runner
// pod, which takes any runner placeholder it finds, then never takes a pair whose workflow room is
// not held: its workflow pod would find none and preempt a running runner.
TEST_F(pair_fixture, the_runner_placeholder_is_made_once_the_probe_and_the_workflow_placeholder_are_placed) {
  mode = actors::runners::runner_spec::container_mode::kubernetes_novolume;
  start();
  std::map<std::string, std::string> priority;
  for (const auto& c : io.waiting())
    if (c.request.method == "POST") {
      simdjson::dom::parser p;
      auto pod = p.parse(c.request.body);
      priority[std::string(std::string_view(pod["metadata"]["name"]))] = std::string(std::string_view(pod["spec"]["priorityClassName"]));
    }
  ASSERT_EQ(priority.size(), 2u) << waiting_text();
  EXPECT_EQ(priority["linux-ph-a1b2c3d4-probe"], "placeholder-workflow") << "out of the runner pods' reach";
  EXPECT_EQ(priority.count("linux-ph-a1b2c3d4-workflow"), 1u);
  create_both();
  pod_is("ADDED", "linux-ph-a1b2c3d4-probe", "Pending", "node-1");
  pod_is("ADDED", "linux-ph-a1b2c3d4-workflow", "Pending");
  EXPECT_EQ(waiting("POST"), 0u) << "no runner placeholder while the workflow placeholder waits for a node";
  pod_is("MODIFIED", "linux-ph-a1b2c3d4-workflow", "Pending", "node-2");  // split: another node
  ASSERT_EQ(waiting("POST"), 1u) << waiting_text();
  simdjson::dom::parser p;
  auto runner = p.parse(find("POST")->body);
  EXPECT_EQ(std::string_view(runner["metadata"]["name"]), "linux-ph-a1b2c3d4-runner");
  EXPECT_EQ(std::string_view(runner["spec"]["priorityClassName"]), "placeholder-runner");
  EXPECT_EQ(std::string_view(runner["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                                ["nodeSelectorTerms"].at(0)["matchFields"].at(0)["values"].at(0)),
            "node-1");
  EXPECT_NE(find("DELETE", "linux-ph-a1b2c3d4-probe"), nullptr) << "the probe gives its room to the runner placeholder";
  create_both();
  pod_is("ADDED", "linux-ph-a1b2c3d4-runner", "Running", "node-1");
  EXPECT_TRUE(reports->empty() || reports->back().what == state::pending);
  pod_is("MODIFIED", "linux-ph-a1b2c3d4-workflow", "Running", "node-2");
  ASSERT_FALSE(reports->empty());
  EXPECT_EQ(reports->back().what, state::ready);
}

// A pair placed up to its workflow placeholder's start (bound, not Running yet) whose runner
// placeholder a runner pod took is consumed: the workflow placeholder stays, to hold the room that
// runner's workflow pod needs, until the workflow pod takes it. (Ending the pair, as it once did,
// deleted the one pod that held that room.)
TEST_F(pair_fixture, a_runner_taking_a_pair_whose_workflow_placeholder_starts_consumes_it) {
  const auto names = placed_up_to_the_workflow_placeholders_start();
  runner_pod_on("linux-runner-x", "node-1");
  pod_is("DELETED", names[0], "Running", "node-1");  // the preemption's victim
  ASSERT_FALSE(reports->empty());
  EXPECT_EQ(reports->back().what, state::consumed) << reports->back().reason;
  EXPECT_EQ(find("DELETE", names[1]), nullptr) << "the workflow placeholder stays";
  pod_is("MODIFIED", names[1], "Running", "node-1");
  EXPECT_EQ(reports->back().what, state::consumed);
  pod_is("DELETED", names[1], "Running", "node-1");  // given to the workflow pod
  EXPECT_EQ(reports->back().what, state::lost);
  EXPECT_NE(reports->back().reason.find("hand-off over"), std::string::npos) << reports->back().reason;
}

// Not by a runner (a pod of another kind preempted it, or it was deleted): the pair is lost and
// its workflow placeholder goes, once the runner pod's binding could have shown (5 s).
TEST_F(pair_fixture, a_pending_pair_whose_runner_placeholder_goes_not_to_a_runner_is_lost) {
  const auto names = placed_up_to_the_workflow_placeholders_start();
  pod_is("DELETED", names[0], "Running", "node-1");
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(reports->empty() || reports->back().what == state::pending);
    sched.advance_time(500ms);
    sched.run();
  }
  ASSERT_FALSE(reports->empty());
  EXPECT_EQ(reports->back().what, state::lost);
  EXPECT_NE(reports->back().reason.find("not by a runner"), std::string::npos) << reports->back().reason;
  EXPECT_NE(find("DELETE", names[1]), nullptr) << "the workflow placeholder goes";
}

// The wait for the runner pod's binding is time, not looks: in a burst every pod event is a look,
// and ten of them within a second once ended it, the pair lost (its workflow placeholder deleted)
// before the binding of the runner that had taken it showed (CI's migration e2e: that runner's
// workflow pod then found no room on its node). Bound 1.5 s after its victim went: consumed.
TEST_F(pair_fixture, many_pod_events_while_the_runners_binding_trails_do_not_end_the_wait) {
  const auto names = placed_up_to_the_workflow_placeholders_start();
  pod_is("DELETED", names[0], "Running", "node-1");
  for (int i = 0; i < 10; ++i) {
    pod_is("MODIFIED", names[1], "Running", "node-1");  // any pod event the pair is told of
    sched.advance_time(100ms);
    sched.run();
  }
  EXPECT_TRUE(reports->empty() || reports->back().what == state::pending) << reports->back().reason;
  EXPECT_EQ(find("DELETE", names[1]), nullptr);
  sched.advance_time(500ms);
  sched.run();
  runner_pod_on("linux-runner-x", "node-1");
  sched.advance_time(500ms);
  sched.run();
  ASSERT_FALSE(reports->empty());
  EXPECT_EQ(reports->back().what, state::consumed) << reports->back().reason;
  EXPECT_EQ(find("DELETE", names[1]), nullptr) << "the workflow placeholder holds the runner's workflow room";
}

// dind and none: no workflow pod will come, so once a runner pod took the pair (preempting its
// runner placeholder, or in dind both) the hand-off is over: the pair ends and its workflow
// placeholder goes at once instead of holding room until placeholderReadyTimeout.
TEST_F(pair_fixture, with_no_workflow_pod_to_come_a_runner_taking_the_pair_ends_it) {
  using cm = actors::runners::runner_spec::container_mode;
  for (const auto m : {cm::none, cm::dind}) {
    SCOPED_TRACE(m == cm::none ? "none" : "dind");
    mode = m;
    reports->clear();
    if (pair) {
      caf::anon_send_exit(pair, caf::exit_reason::kill);
      sched.run();
      pods->stop();
    }
    start();
    std::vector<std::string> names;
    if (m == cm::dind) {  // placed by its probe on one node first
      const auto probe = create_both();
      ASSERT_EQ(probe.size(), 1u);
      pod_is("ADDED", probe[0], "Pending", "node-1");
      names = create_both();
    } else {
      names = create_both();
    }
    ASSERT_EQ(names.size(), 2u);
    pod_is("ADDED", names[0], "Running", "node-1");
    pod_is("ADDED", names[1], "Running", "node-1");
    ASSERT_EQ(reports->back().what, state::ready);
    runner_pod_on("linux-runner-x", "node-1");
    pod_is("DELETED", names[0], "Running", "node-1");  // the preemption's victim
    ASSERT_FALSE(reports->empty());
    EXPECT_EQ(reports->back().what, state::lost);
    EXPECT_NE(reports->back().reason.find("hand-off over: no workflow pod comes"), std::string::npos) << reports->back().reason;
    EXPECT_NE(find("DELETE", names[1]), nullptr) << "the workflow placeholder goes at once";
    while (io.answer("DELETE", "/pods/", 200, "{}"))
      sched.run();
  }
}

// kubernetes mode: the pair is placed by its probe (the whole pair's room in one pod); once the
// scheduler has put the probe on a node, the placeholders are made required on that node and the
// probe is deleted. A probe that goes before it is placed loses the pair, which deletes nothing
// it never made.
TEST_F(pair_fixture, in_kubernetes_mode_a_probe_places_the_pair_on_one_node) {
  start(false, true);
  const auto probe = create_both();
  ASSERT_EQ(probe.size(), 1u) << "the probe alone first";
  EXPECT_EQ(probe[0], "linux-ph-a1b2c3d4-probe");
  pod_is("ADDED", probe[0], "Pending");
  EXPECT_EQ(waiting("POST"), 0u) << "nothing more until the probe is placed";
  pod_is("MODIFIED", probe[0], "Pending", "node-9");  // bound: the scheduler chose node-9
  std::vector<std::string> pinned;
  for (const auto& c : io.waiting())
    if (c.request.method == "POST") {
      simdjson::dom::parser p;
      auto pod = p.parse(c.request.body);
      EXPECT_EQ(std::string_view(pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                                    ["nodeSelectorTerms"].at(0)["matchFields"].at(0)["values"].at(0)),
                "node-9");
      pinned.emplace_back(std::string_view(pod["metadata"]["name"]));
    }
  ASSERT_EQ(pinned.size(), 2u);
  EXPECT_NE(find("DELETE", probe[0]), nullptr) << "the probe gives its room to the placeholders";
  const auto names = create_both();
  pod_is("ADDED", names[0], "Running", "node-9");
  pod_is("ADDED", names[1], "Running", "node-9");
  ASSERT_FALSE(reports->empty());
  EXPECT_EQ(reports->back().what, state::ready);
}

// A pair that ends while its placeholders' creates are in flight deletes what those creates make
// once they are answered (its deletes at the end came first and found nothing), and only then
// goes: left to the monitor's sweep, such a pod sat Pending for its grace and was counted as a
// pending pair (the burst budget e2e saw 64 pending of a budget of 60).
TEST_F(pair_fixture, an_ended_pair_deletes_what_its_creates_in_flight_made) {
  start(false, true);
  const auto probe = create_both();
  ASSERT_EQ(probe.size(), 1u);
  pod_is("MODIFIED", probe[0], "Pending", "node-9");
  const std::string runner_ph = "linux-ph-a1b2c3d4-runner", workflow_ph = "linux-ph-a1b2c3d4-workflow";
  ASSERT_EQ(waiting("POST"), 2u) << "both placeholders on the way";
  pod_is("ADDED", workflow_ph, "Running", "node-9");  // the create's answer is still in flight
  pod_is("MODIFIED", workflow_ph, "Failed", "node-9");  // preempted, or its container ended
  ASSERT_FALSE(reports->empty());
  EXPECT_EQ(reports->back().what, state::lost);
  auto deletes_of = [&](const std::string& name) {
    size_t n = 0;
    for (const auto& c : io.waiting())
      n += c.request.method == "DELETE" && c.request.url.find("/" + name) != std::string::npos ? 1 : 0;
    return n;
  };
  EXPECT_EQ(deletes_of(runner_ph), 1u) << waiting_text();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(io.answer("POST", "/api/v1/namespaces/arc/pods", 201, "{}"));
    sched.run();
  }
  EXPECT_EQ(deletes_of(runner_ph), 2u) << "the runner placeholder its create made, deleted once answered\n" << waiting_text();
  EXPECT_EQ(deletes_of(workflow_ph), 2u) << waiting_text();
  EXPECT_EQ(reports->back().what, state::lost) << "told once";
}

TEST_F(pair_fixture, in_kubernetes_mode_a_probe_gone_before_it_is_placed_loses_the_pair) {
  start(false, true);
  const auto probe = create_both();
  ASSERT_EQ(probe.size(), 1u);
  pod_is("ADDED", probe[0], "Pending");
  pod_is("DELETED", probe[0], "Pending");
  ASSERT_FALSE(reports->empty());
  EXPECT_EQ(reports->back().what, state::lost);
  EXPECT_EQ(waiting("DELETE"), 0u) << "nothing left to delete: the placeholders were never made";
}

TEST_F(pair_fixture, not_running_within_the_ready_timeout_times_out_and_deletes_its_pods) {
  start();
  const auto names = create_both();
  pod_is("ADDED", names[0], "Pending");
  pod_is("ADDED", names[1], "Pending");
  sched.advance_time(299s);
  sched.run();
  EXPECT_TRUE(reports->empty());
  EXPECT_EQ(waiting("DELETE"), 0u);
  sched.advance_time(1s);
  sched.run();
  EXPECT_TRUE(reports->empty()) << "what Karpenter said is read first";
  // Without the grant to list Events the pair times out as before.
  ASSERT_TRUE(io.answer("GET", "/api/v1/namespaces/arc/events?fieldSelector=involvedObject.name%3D" + names[0], 403,
                        R"({"kind":"Status","status":"Failure","reason":"Forbidden","code":403})"));
  sched.run();
  EXPECT_TRUE(reports->empty());
  EXPECT_EQ(waiting("DELETE"), 0u);
  ASSERT_TRUE(io.answer("GET", "involvedObject.name%3D" + names[1], 403, R"({"kind":"Status","code":403})"));
  sched.run();
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ(reports->back().what, state::timed_out);
  EXPECT_EQ(waiting("DELETE"), 2u) << "its two pods are deleted";
}

// #61: Karpenter's reason for making no node is an Event about the placeholder, not on the pod: the
// timed-out pair reads it (one list per placeholder not Running) and says it.
TEST_F(pair_fixture, a_timed_out_pair_says_what_karpenter_said) {
  start();
  const auto names = create_both();
  pod_is("ADDED", names[0], "Running", "node-1");
  pod_is("ADDED", names[1], "Pending");
  sched.advance_time(300s);
  sched.run();
  EXPECT_EQ(waiting("GET", "/events"), 1u) << "only the placeholder not Running is asked about";
  const std::string events = R"({"kind":"EventList","metadata":{"resourceVersion":"9"},"items":[
    {"metadata":{"name":"e1","namespace":"arc"},"reason":"FailedScheduling","message":"0/1 nodes are available",
     "source":{"component":"default-scheduler"},"lastTimestamp":"2026-11-28T07:00:05Z"},
    {"metadata":{"name":"e2","namespace":"arc"},"reason":"FailedScheduling",
     "message":"Failed to schedule pod, all available instance types exceed limits for nodepool: \"default\"",
     "source":{"component":"karpenter"},"lastTimestamp":"2026-11-28T07:00:04Z"}]})";
  ASSERT_TRUE(io.answer("GET", "/api/v1/namespaces/arc/events?fieldSelector=involvedObject.name%3D" + names[1], 200, events));
  sched.run();
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ(reports->back().what, state::timed_out);
  EXPECT_NE(reports->back().reason.find(names[1] + " Karpenter: FailedScheduling: Failed to schedule pod, all available instance types "
                                                   "exceed limits for nodepool: \"default\""),
            std::string::npos)
      << reports->back().reason;
  EXPECT_EQ(waiting("DELETE"), 2u);
}

// The Event read is bounded: an API server that does not answer delays the timeout by 5 s, no more;
// a pair placed meanwhile is not timed out.
TEST_F(pair_fixture, a_slow_event_read_delays_the_timeout_five_seconds_and_a_pair_placed_meanwhile_stays) {
  start();
  const auto names = create_both();
  pod_is("ADDED", names[0], "Pending");
  pod_is("ADDED", names[1], "Pending");
  sched.advance_time(300s);
  sched.run();
  EXPECT_EQ(waiting("GET", "/events"), 2u);
  sched.advance_time(5s);
  sched.run();
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ(reports->back().what, state::timed_out);
  EXPECT_EQ(reports->back().reason.find("Karpenter"), std::string::npos);
}

TEST_F(pair_fixture, a_pair_placed_while_its_events_are_read_is_not_timed_out) {
  start();
  const auto names = create_both();
  pod_is("ADDED", names[0], "Running", "node-1");
  pod_is("ADDED", names[1], "Pending");
  sched.advance_time(300s);
  sched.run();
  pod_is("MODIFIED", names[1], "Running", "node-1");
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ(reports->back().what, state::ready);
  ASSERT_TRUE(io.answer("GET", "involvedObject.name%3D" + names[1], 200, R"({"items":[]})"));
  sched.run();
  EXPECT_EQ(reports->size(), 1u) << "no timeout after the pair was placed";
  EXPECT_EQ(waiting("DELETE"), 0u);
}

// #61: a timed-out pair's Event said only "not Running within 20000 ms" and its pods, deleted, took
// the cause with them: the report (and so the Event and the ScaleSet's condition) carries the
// scheduler's PodScheduled message for each placeholder not Running.
TEST_F(pair_fixture, a_timed_out_pair_says_what_the_scheduler_said) {
  start();
  const auto names = create_both();
  pod_is("ADDED", names[0], "Running", "node-1");
  pod_is("ADDED", names[1], "Pending", "",
         R"({"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."})");
  sched.advance_time(300s);
  sched.run();
  ASSERT_TRUE(io.answer("GET", "involvedObject.name%3D" + names[1], 200, R"({"items":[]})"));
  sched.run();
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ(reports->back().what, state::timed_out);
  const auto& why = reports->back().reason;
  EXPECT_NE(why.find("not Running within 300000 ms"), std::string::npos) << why;
  EXPECT_NE(why.find(names[1] + " Unschedulable: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."),
            std::string::npos) << why;
  EXPECT_EQ(why.find(names[0]), std::string::npos) << "the Running placeholder is not the cause: " << why;
}

// #61: a pair whose node stops taking pods is no room: the runner that would take it could not be
// placed there. It ends at once (its pods deleted, a Normal Event), so the next poll advertises less
// and the monitor makes a new pair elsewhere.
void ends_when_its_node(pair_fixture& f, const char* type, const char* unschedulable, const char* taints, const std::string& said) {
  f.start(true);
  const auto names = f.create_both();
  f.pod_is("ADDED", names[0], "Running", "node-1");
  f.pod_is("ADDED", names[1], "Running", "node-1");
  ASSERT_EQ(f.reports->size(), 1u);
  ASSERT_EQ(f.reports->back().what, state::ready);
  // A taint the runner template tolerates, and one that only prefers, change nothing.
  f.node_is("MODIFIED", "node-1", "false", R"({"key":"ci","effect":"NoSchedule"},{"key":"spot","effect":"PreferNoSchedule"})", names[0]);
  EXPECT_EQ(f.reports->size(), 1u) << "a tolerated taint is still room";
  f.node_is(type, "node-1", unschedulable, taints, names[0]);
  ASSERT_EQ(f.reports->size(), 2u);
  EXPECT_EQ(f.reports->back().what, state::lost);
  EXPECT_NE(f.reports->back().reason.find(said), std::string::npos) << f.reports->back().reason;
  EXPECT_EQ(f.waiting("DELETE"), 2u) << "both placeholders go";
}

TEST_F(pair_fixture, a_ready_pair_on_a_cordoned_node_ends) { ends_when_its_node(*this, "MODIFIED", "true", "", "node node-1 cordoned"); }

TEST_F(pair_fixture, a_ready_pair_on_a_node_karpenter_disrupts_ends) {
  ends_when_its_node(*this, "MODIFIED", "false", R"({"key":"karpenter.sh/disrupted","effect":"NoSchedule"})",
                     "node node-1 tainted karpenter.sh/disrupted:NoSchedule");
}

TEST_F(pair_fixture, a_ready_pair_on_an_unreachable_node_ends) {
  ends_when_its_node(*this, "MODIFIED", "false", R"({"key":"node.kubernetes.io/unreachable","effect":"NoExecute"})",
                     "node node-1 tainted node.kubernetes.io/unreachable:NoExecute");
}

TEST_F(pair_fixture, a_ready_pair_on_a_deleted_node_ends) { ends_when_its_node(*this, "DELETED", "false", "", "node node-1 deleted"); }

TEST_F(pair_fixture, a_pair_is_judged_on_its_node_only_once_the_nodes_are_known) {
  start(false);  // no node cache (or not synced): no verdict, the pair counts as before
  const auto names = create_both();
  pod_is("ADDED", names[0], "Running", "node-9");
  pod_is("ADDED", names[1], "Running", "node-9");
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ(reports->back().what, state::ready);
}

}  // namespace
