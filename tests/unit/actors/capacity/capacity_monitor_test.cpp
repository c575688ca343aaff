// capacity_monitor (actors/capacity/capacity_monitor.cpp, monitor_*.cpp) with its real
// placeholder pairs, under CAF's deterministic test_coordinator, with the API server answered by
// hand (tests/unit/support/scripted_exchange.hpp) and the pods streamed to a real informer over its
// scripted watch: the start-up (PriorityClasses, the owner ConfigMap, the runners'
// PodDisruptionBudget), a warm pool of one pair made, capacity advertised only once both its
// placeholders are Running, and back to 0 with a new pair made when the runner placeholder goes
// without a runner taking it.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include "adapters/k8s/decode.hpp"
#include "actors/runners/pods.hpp"
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/capacity/capacity.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer_slice.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace cap = actors::capacity;

namespace {

struct monitor_fixture : test_support::actor_fixture {
  ~monitor_fixture() override {
    caf::anon_send_exit(monitor, caf::exit_reason::kill);
    caf::anon_send_exit(listener, caf::exit_reason::kill);
    sched.run();
    pods->stop();
    if (nodes)
      nodes->stop();
  }

  headroom::hud::queue_share share;  // hud.share; one cluster by default
  std::shared_ptr<k8s::shared_reads> reads;  // the process's shared start-up reads (none: its own)
  bool sweeps_owners = true;

  bool pods_listed = true;  // false: the pod informer's list waits for the test's answer
  bool with_nodes = false;  // true: a node informer whose list waits for the test's answer
  cap::warm_pool_policy warm_pool;  // capacityAware.warmPool
  std::chrono::milliseconds ready_timeout{300'000};  // placeholderReadyTimeout
  std::shared_ptr<k8s::informer<k8s::node>> nodes;

  void start(int64_t proactive = 1, std::string hook_template = {}) {
    io.use_clock(test_clock);  // the informer stamps its events on the actors' clock (hop traces)
    if (pods_listed) {
      pods = pod_informer("arc");
    } else {
      k8s::informer<k8s::pod>::options o;
      o.kind = k8s::kinds::pods;
      o.ns = "arc";
      pods = k8s::informer<k8s::pod>::make(kube, o);
      pods->start();
    }
    router = k8s::label_router<k8s::pod>::make(pods, std::string{cap::keys::scale_set});
    auto ctx = std::make_shared<cap::scale_set_context>();
    ctx->spec.ns = "arc";
    ctx->spec.name = "linux";
    ctx->spec.max_runners = 5;
    ctx->spec.proactive_capacity = proactive;  // a warm pool of one pair by default
    ctx->spec.warm_pool = warm_pool;
    ctx->spec.placeholder_ready_timeout = ready_timeout;
    ctx->spec.placeholder_image = "registry.k8s.io/pause:3.10";
    ctx->spec.hook_template_configmap = std::move(hook_template);
    ctx->spec.workflow_cpu = "500m";
    ctx->spec.workflow_memory = "512Mi";
    ctx->spec.queue_share = share;
    if (mode)
      ctx->spec.mode = *mode;
    ctx->spec.held_rooms = ctx->spec.capacity_aware;  // as the scale set's spec sets it
    ctx->kube = &kube;
    ctx->pods = router->slice("linux");
    if (with_nodes) {
      k8s::informer<k8s::node>::options o;
      o.kind = k8s::kinds::nodes;
      nodes = k8s::informer<k8s::node>::make(kube, o);
      nodes->start();
      ctx->nodes = nodes;
    }
    ctx->owner_configmap = "headroom-owner-linux";
    ctx->owners_kept = std::make_shared<std::set<std::string>>(std::set<std::string>{"headroom-owner-linux", "headroom-owner-mac"});
    ctx->owner_process = "headroom-owner";
    ctx->instance = instance;
    ctx->reads = reads;
    ctx->sweeps_owners = sweeps_owners;
    ctx->metrics.set = [g = gauges](const char* name, int64_t v) { (*g)[name] = v; };
    ctx->metrics.add = [c = counters](const char* name, int64_t v) { (*c)[name] += v; };
    ctx->metrics.observe = [d = decisions](const char* name, double) {
      if (std::string_view{name} == "headroom_capacity_decision_seconds")
        ++*d;
    };
    ctx->metrics.hop = [h = hops](const char* hop, double seconds) { (*h)[hop].push_back(seconds); };
    // The listener's part: the capacity to advertise, in order.
    listener = sys.spawn(
        [](caf::event_based_actor*, std::shared_ptr<std::vector<int64_t>> told) -> caf::behavior {
          return {[told](const msg::set_max_capacity& m) { told->push_back(m.capacity); }, [](msg::update_atom) {},
                  [](msg::view_atom) {}};
        },
        advertised);
    cap::scale_set_peers peers;
    peers.listener = caf::actor_cast<actors::listener_actor>(listener);
    spec = ctx->spec;
    monitor = cap::spawn_capacity_monitor(sys, ctx, peers);
    sched.run();
  }

  // Start-up: the four PriorityClasses exist with the ladder's values; the owner ConfigMap is made;
  // no earlier process left one; the runners' PodDisruptionBudget is made.
  void set_up() {
    const std::map<std::string, int> ladder{{"placeholder-runner", -10}, {"arc-runner", 0}, {"placeholder-workflow", 10}, {"arc-workflow", 20}};
    for (const auto& [name, value] : ladder)
      ASSERT_TRUE(io.answer("GET", "/priorityclasses/" + name, 200,
                            R"({"metadata":{"name":")" + name + R"("},"value":)" + std::to_string(value) + "}"))
          << name;
    ASSERT_TRUE(io.answer("POST", "/namespaces/arc/configmaps", 201, R"({"metadata":{"name":"headroom-owner-linux","uid":"u-owner"}})"));
    ASSERT_TRUE(io.answer("GET", "/namespaces/arc/configmaps", 200, R"({"kind":"ConfigMapList","metadata":{},"items":[]})"));
    sched.run();
    ASSERT_TRUE(io.answer("POST", "/poddisruptionbudgets", 201, "{}"));
    ASSERT_TRUE(io.answer("POST", "/poddisruptionbudgets", 201, "{}")) << "the runner placeholders' budget";
    sched.run();
  }
  // The pair's two creates, answered; the names, runner placeholder first.
  std::vector<std::string> created() {
    std::vector<std::string> names;
    for (const auto& c : io.waiting())
      if (c.request.method == "POST" && c.request.url.find("/namespaces/arc/pods") != std::string::npos) {
        simdjson::dom::parser p;
        std::string_view name;
        EXPECT_EQ(p.parse(c.request.body)["metadata"]["name"].get(name), simdjson::SUCCESS);
        names.emplace_back(name);
      }
    for (size_t i = 0; i < names.size(); ++i)
      EXPECT_TRUE(io.answer("POST", "/namespaces/arc/pods", 201, "{}"));
    sched.run();
    return names;
  }
  // The watch tells a placeholder's change; the monitor routes it to its pair.
  // `owner`: the uid of the ConfigMap that owns it (this process's is u-owner).
  void watch(const std::string& type, const std::string& name, const std::string& role, const std::string& slot,
             const std::string& phase, const std::string& node, const std::string& owner = "u-owner") {
    const std::string pod = R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name +
                            R"(","resourceVersion":"11","labels":{"headroom.dev/scale-set":"linux","headroom.dev/slot":")" + slot +
                            R"(","headroom.dev/role":")" + role +
                            R"("},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"headroom-owner","uid":")" + owner +
                            R"("}]},"spec":{"nodeName":")" + node +
                            R"("},"status":{"phase":")" + phase + R"("}})";
    ASSERT_TRUE(io.stream("watch=true", R"({"type":")" + type + R"(","object":)" + pod + "}\n"));
    sched.run();
  }
  // kubernetes mode: the pair's probe is placed on `node`; both placeholders are made there, and
  // the probe is deleted.
  void probe_placed(const std::string& slot, const std::string& node) {
    const std::string probe = "linux-ph-" + slot + "-probe";
    watch("ADDED", probe, "pair-probe", slot, "Running", node);
    ASSERT_EQ(created().size(), 2u) << "both placeholders, pinned to " << node;
    ASSERT_TRUE(io.answer("DELETE", "/pods/" + probe, 200, "{}"));
    watch("DELETED", probe, "pair-probe", slot, "Running", node);
  }
  // Start-up, then the warm pool's one pair placed on `node`: its two placeholders' names.
  std::vector<std::string> warm_pair_placed(const std::string& node) {
    start();
    set_up();
    auto names = created();
    EXPECT_EQ(names.size(), 2u);
    if (names.size() != 2)
      return names;
    const std::string slot = slot_of(names[0]);
    watch("ADDED", names[0], "runner-placeholder", slot, "Running", node);
    watch("ADDED", names[1], "workflow-placeholder", slot, "Running", node);
    EXPECT_EQ(advertised->back(), 1);
    return names;
  }
  // linux-ph-<slot>-runner
  static std::string slot_of(const std::string& name) {
    const auto from = std::string{"linux-ph-"}.size();
    return name.substr(from, name.rfind('-') - from);
  }

  // Any pod of the scale set as the watch shows it (`body`: the pod's JSON).
  void watch_pod(const std::string& type, const std::string& body) {
    ASSERT_TRUE(io.stream("watch=true", R"({"type":")" + type + R"(","object":)" + body + "}\n"));
    sched.run();
  }

  // A placeholder as an earlier process left it: owned by the scale set's owner (u-owner), labelled
  // with the spec hash `hash` ("" none), Running on `node`.
  std::string left_placeholder(const std::string& slot, cap::role r, const std::string& hash, const std::string& node) {
    const std::string role = r == cap::role::runner_placeholder ? "runner-placeholder" : "workflow-placeholder";
    const std::string name = cap::placeholder_pod_name(spec, slot, r);
    return R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name +
           R"(","resourceVersion":"9","labels":{"headroom.dev/scale-set":"linux","headroom.dev/slot":")" + slot +
           R"(","headroom.dev/role":")" + role + R"(")" + (hash.empty() ? std::string{} : R"(,"headroom.dev/spec-hash":")" + hash + R"(")") +
           R"(},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"headroom-owner-linux","uid":"u-owner"}]},)"
           R"("spec":{"nodeName":")" + node + R"("},"status":{"phase":"Running"}})";
  }
  // The workflow pod `name` nominated to `node` (a merge patch of its status) before its room is
  // freed: the patch checked, then answered `status`.
  void nominated(const std::string& name, const std::string& node, long status = 200) {
    const auto* patch = find("PATCH", "/namespaces/arc/pods/" + name + "/status");
    ASSERT_NE(patch, nullptr) << "no nomination of " << name;
    EXPECT_EQ(patch->body, R"({"status":{"nominatedNodeName":")" + node + R"("}})");
    ASSERT_TRUE(io.answer("PATCH", "/pods/" + name + "/status", status, status == 200 ? "{}" : R"({"kind":"Status","code":)" + std::to_string(status) + "}"));
    sched.run();
  }
  // kubernetes-novolume: the warm pair placed on node-1 (probe, then its runner placeholder), and a
  // runner pod preempting its runner placeholder: the pair is handed to its job, its workflow
  // placeholder (returned) holding the workflow's room.
  std::string novolume_pair_handed_off() {
    mode = actors::runners::runner_spec::container_mode::kubernetes_novolume;
    start();
    set_up();
    auto first = created();
    EXPECT_EQ(first.size(), 2u);
    if (first.size() != 2)
      return {};
    const std::string slot = slot_of(first[1]);
    const std::string probe = "linux-ph-" + slot + "-probe", runner_ph = "linux-ph-" + slot + "-runner",
                      workflow_ph = "linux-ph-" + slot + "-workflow";
    watch("ADDED", probe, "pair-probe", slot, "Pending", "node-1");
    watch("ADDED", workflow_ph, "workflow-placeholder", slot, "Running", "node-1");
    EXPECT_EQ(created(), std::vector<std::string>{runner_ph});
    EXPECT_TRUE(io.answer("DELETE", "/pods/" + probe, 200, "{}"));
    watch("DELETED", probe, "pair-probe", slot, "Pending", "node-1");
    watch("ADDED", runner_ph, "runner-placeholder", slot, "Running", "node-1");
    watch_pod("ADDED", R"({"metadata":{"name":"linux-runner-a","namespace":"arc","uid":"u-ra","resourceVersion":"12",)"
                       R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"runner"}},"spec":{},)"
                       R"("status":{"phase":"Pending","nominatedNodeName":"node-1"}})");
    watch("DELETED", runner_ph, "runner-placeholder", slot, "Running", "node-1");
    return workflow_ph;
  }

  std::set<std::string> deletes() const {
    std::set<std::string> out;
    for (const auto& c : io.waiting())
      if (c.request.method == "DELETE" && c.request.url.find("/pods/") != std::string::npos)
        out.insert(c.request.url.substr(c.request.url.rfind('/') + 1));
    return out;
  }

  runtime::actor_system_clock test_clock{sys.clock()};
  cap::scale_set_spec spec;  // as start() made it
  std::optional<actors::runners::runner_spec::container_mode> mode;  // before start(): the runners' container mode
  std::shared_ptr<std::map<std::string, int64_t>> gauges = std::make_shared<std::map<std::string, int64_t>>();
  std::shared_ptr<std::map<std::string, int64_t>> counters = std::make_shared<std::map<std::string, int64_t>>();
  std::string instance;  // this install's headroom.dev/instance ("": no leader election)
  std::shared_ptr<k8s::informer<k8s::pod>> pods;
  std::shared_ptr<k8s::label_router<k8s::pod>> router;
  std::shared_ptr<std::vector<int64_t>> advertised = std::make_shared<std::vector<int64_t>>();
  std::shared_ptr<int> decisions = std::make_shared<int>(0);  // recomputes (decision timings observed)
  std::shared_ptr<std::map<std::string, std::vector<double>>> hops = std::make_shared<std::map<std::string, std::vector<double>>>();
  caf::actor listener;
  cap::monitor_actor monitor;
};

// #54: the runner pods' hook template is written when the monitor starts acting, and an earlier
// process's (or an older spec's) is brought up to date rather than left as it was.
TEST_F(monitor_fixture, the_hook_template_is_written_at_start_and_an_older_one_is_brought_up_to_date) {
  start(1, "linux-hook-template");
  set_up();
  const auto* post = find("POST", "/namespaces/arc/configmaps");
  ASSERT_NE(post, nullptr) << "the hook template's create";
  simdjson::dom::parser p;
  std::string_view name, text;
  ASSERT_EQ(p.parse(post->body)["metadata"]["name"].get(name), simdjson::SUCCESS);
  EXPECT_EQ(name, "linux-hook-template");
  ASSERT_EQ(p.parse(post->body)["data"]["template.yaml"].get(text), simdjson::SUCCESS);
  const std::string t{text};
  EXPECT_NE(t.find(R"("priorityClassName":"arc-workflow")"), std::string::npos) << t;
  EXPECT_NE(t.find(R"("cpu":"500m")"), std::string::npos) << t;
  ASSERT_TRUE(io.answer("POST", "/namespaces/arc/configmaps", 409, R"({"kind":"Status","reason":"AlreadyExists","code":409})"));
  sched.run();
  const auto* patch = find("PATCH", "/namespaces/arc/configmaps/linux-hook-template");
  ASSERT_NE(patch, nullptr) << "the existing one is patched";
  ASSERT_EQ(p.parse(patch->body)["data"]["template.yaml"].get(text), simdjson::SUCCESS);
  EXPECT_EQ(std::string{text}, t);
}

// #55 (a warm restart at 1,000 scale sets): with the process's shared reads, a monitor reads the
// PriorityClasses and the namespace's owner list through them and finds its owner there (an
// earlier process made it), so it makes no owner; a monitor that is not its namespace's sweeper
// lists nothing else. Its calls: the four shared reads and the list, then its own budgets.
TEST_F(monitor_fixture, with_shared_reads_a_warm_start_finds_its_owner_in_the_shared_list_and_makes_none) {
  reads = std::make_shared<k8s::shared_reads>(kube);
  sweeps_owners = false;
  start();
  const std::map<std::string, int> ladder{{"placeholder-runner", -10}, {"arc-runner", 0}, {"placeholder-workflow", 10}, {"arc-workflow", 20}};
  for (const auto& [name, value] : ladder)
    ASSERT_TRUE(io.answer("GET", "/priorityclasses/" + name, 200,
                          R"({"metadata":{"name":")" + name + R"("},"value":)" + std::to_string(value) + "}"))
        << name;
  int configmap_reads = 0;
  for (const auto& c : io.waiting())
    configmap_reads += c.request.url.find("/namespaces/arc/configmaps?labelSelector=headroom.dev%2Fowner%3Dtrue") != std::string::npos;
  EXPECT_EQ(configmap_reads, 1) << "one list of the owners, shared:\n" << waiting_text();
  ASSERT_TRUE(io.answer("GET", "/namespaces/arc/configmaps", 200,
                        R"({"kind":"ConfigMapList","metadata":{},"items":[{"metadata":{"name":"headroom-owner-mac","uid":"u-mac"}},)"
                        R"({"metadata":{"name":"headroom-owner-linux","uid":"u-owner"}}]})"));
  sched.run();
  EXPECT_EQ(find("POST", "/configmaps"), nullptr) << "its owner exists: nothing made";
  EXPECT_EQ(find("GET", "/configmaps"), nullptr) << "not the sweeper: no list of its own";
  EXPECT_EQ(find("DELETE", "/configmaps/"), nullptr);
  ASSERT_NE(find("POST", "/poddisruptionbudgets"), nullptr) << "acting, with the owner found:\n" << waiting_text();
  EXPECT_EQ(reads->counted().requests, 5u);
}

// #61 (two installs in one namespace), #55: at start an install deletes the owner ConfigMaps no
// scale set configured in the namespace has (a scale set removed, an earlier version's per-process
// owner) among its own (its instance label) and unlabelled ones (a headroom before the label), which
// garbage-collects their placeholders; another install's, and its configured scale sets', are left.
TEST_F(monitor_fixture, start_up_deletes_only_this_installs_earlier_owners) {
  instance = "inst-a";
  start();
  const auto* create = find("POST", "/namespaces/arc/configmaps");
  ASSERT_NE(create, nullptr);
  simdjson::dom::parser p;
  std::string_view label;
  ASSERT_EQ(p.parse(create->body)["metadata"]["labels"]["headroom.dev/instance"].get(label), simdjson::SUCCESS) << create->body;
  EXPECT_EQ(label, "inst-a") << "this process's owner carries its install";
  const std::map<std::string, int> ladder{{"placeholder-runner", -10}, {"arc-runner", 0}, {"placeholder-workflow", 10}, {"arc-workflow", 20}};
  for (const auto& [name, value] : ladder)
    ASSERT_TRUE(io.answer("GET", "/priorityclasses/" + name, 200,
                          R"({"metadata":{"name":")" + name + R"("},"value":)" + std::to_string(value) + "}"));
  ASSERT_TRUE(io.answer("POST", "/namespaces/arc/configmaps", 201, R"({"metadata":{"name":"headroom-owner-linux","uid":"u-owner"}})"));
  auto owner = [](const std::string& name, const std::string& inst) {
    return R"({"metadata":{"name":")" + name + R"(","labels":{"headroom.dev/owner":"true")" +
           (inst.empty() ? std::string{} : R"(,"headroom.dev/instance":")" + inst + R"(")") + "}}}";
  };
  ASSERT_TRUE(io.answer("GET", "/namespaces/arc/configmaps", 200,
                        R"({"kind":"ConfigMapList","metadata":{},"items":[)" + owner("headroom-owner-linux", "inst-a") + "," +
                            owner("headroom-owner-mac", "inst-a") + "," + owner("headroom-0ld-linux", "inst-a") + "," +
                            owner("headroom-other-linux", "inst-b") + "," + owner("headroom-older-linux", "") + "]}"));
  sched.run();
  std::set<std::string> deleted;
  for (const auto& c : io.waiting())
    if (c.request.method == "DELETE")
      deleted.insert(c.request.url.substr(c.request.url.rfind('/') + 1));
  EXPECT_EQ(deleted, (std::set<std::string>{"headroom-0ld-linux", "headroom-older-linux"}))
      << "its own earlier process's and an unlabelled one; not another install's, nor its own scale sets'";
}

// #55: warm capacity survives the process. A pair an earlier process placed (both pods Running,
// owned by the scale set's owner, made from the pod spec this configuration makes) is adopted as
// it is: counted at once, nothing made or deleted for it. One made from another pod spec (the
// runner template, resources or TTL changed) is deleted, both pods, and a new pair is made.
TEST_F(monitor_fixture, an_earlier_processs_placed_pair_is_adopted_and_one_of_another_pod_spec_is_not) {
  start();
  const auto runner_hash = cap::placeholder_spec_hash(spec, cap::role::runner_placeholder);
  const auto workflow_hash = cap::placeholder_spec_hash(spec, cap::role::workflow_placeholder);
  ASSERT_NE(runner_hash, workflow_hash);
  watch_pod("ADDED", left_placeholder("0ld0ld00", cap::role::runner_placeholder, runner_hash, "node-1"));
  watch_pod("ADDED", left_placeholder("0ld0ld00", cap::role::workflow_placeholder, workflow_hash, "node-1"));
  set_up();
  EXPECT_TRUE(deletes().empty()) << waiting_text();
  EXPECT_TRUE(created().empty()) << "the warm pool of one is the adopted pair";
  ASSERT_FALSE(advertised->empty());
  EXPECT_EQ(advertised->back(), 1) << "counted at once";
  EXPECT_EQ((*counters)["headroom_capacity_pairs_adopted_total"], 1);

  // The same left by a process with another runner template: not adopted.
  watch_pod("ADDED", left_placeholder("0ddspec0", cap::role::runner_placeholder, "0000beef", "node-2"));
  watch_pod("ADDED", left_placeholder("0ddspec0", cap::role::workflow_placeholder, workflow_hash, "node-2"));
  EXPECT_EQ(deletes(), (std::set<std::string>{"linux-ph-0ddspec0-runner", "linux-ph-0ddspec0-workflow"})) << waiting_text();
  EXPECT_EQ(advertised->back(), 1) << "not counted";
  // Nor one made before the label.
  watch_pod("ADDED", left_placeholder("unlabeld", cap::role::runner_placeholder, "", "node-3"));
  watch_pod("ADDED", left_placeholder("unlabeld", cap::role::workflow_placeholder, "", "node-3"));
  EXPECT_EQ(deletes().count("linux-ph-unlabeld-runner") + deletes().count("linux-ph-unlabeld-workflow"), 2u) << waiting_text();
  EXPECT_EQ(advertised->back(), 1);
}

// #55: a monitor whose start-up is done before its namespace's pods are listed (a warm start with
// the shared reads answered at once, a namespace of thousands of pods) decides nothing until they
// are: counting the empty cache placed a new warm pool beside the one the last process left, and
// then adopted that one too (capacity_e2e's adopt test, two workflow placeholders too many).
TEST_F(monitor_fixture, nothing_is_decided_before_the_pods_are_listed_so_a_left_pair_is_adopted_not_doubled) {
  pods_listed = false;
  start();
  set_up();
  EXPECT_TRUE(created().empty()) << "no pair placed on an empty cache";
  EXPECT_TRUE(advertised->empty()) << "nothing published before the pods are known";
  const auto runner = left_placeholder("0ld0ld00", cap::role::runner_placeholder, cap::placeholder_spec_hash(spec, cap::role::runner_placeholder), "node-1");
  const auto workflow = left_placeholder("0ld0ld00", cap::role::workflow_placeholder, cap::placeholder_spec_hash(spec, cap::role::workflow_placeholder), "node-1");
  ASSERT_TRUE(io.answer("GET", "/api/v1/namespaces/arc/pods", 200,
                        R"({"kind":"PodList","metadata":{"resourceVersion":"10"},"items":[)" + runner + "," + workflow + "]}"));
  io.fire_timers();
  ASSERT_TRUE(pods->synced());
  sched.run();
  sched.advance_time(100ms);
  sched.run();
  EXPECT_TRUE(created().empty()) << "the warm pool of one is the left pair:\n" << waiting_text();
  EXPECT_TRUE(deletes().empty()) << waiting_text();
  ASSERT_FALSE(advertised->empty());
  EXPECT_EQ(advertised->back(), 1);
  EXPECT_EQ((*counters)["headroom_capacity_pairs_adopted_total"], 1);
}

// #55: nor before the nodes are listed. An adopted pair counts as placed only on a node known to
// take pods; judged before the node cache synced, each pair counted only once its own verdict
// came, and a new process advertised its adopted pool over several polls (capacity_e2e's adopt
// test, once in CI: 0, 1, then 2). Bounded: without the nodes, it decides after node_sync_wait.
TEST_F(monitor_fixture, a_left_pair_is_counted_in_the_first_capacity_once_the_nodes_are_listed) {
  with_nodes = true;
  start();
  const auto runner_hash = cap::placeholder_spec_hash(spec, cap::role::runner_placeholder);
  const auto workflow_hash = cap::placeholder_spec_hash(spec, cap::role::workflow_placeholder);
  watch_pod("ADDED", left_placeholder("0ld0ld00", cap::role::runner_placeholder, runner_hash, "node-1"));
  watch_pod("ADDED", left_placeholder("0ld0ld00", cap::role::workflow_placeholder, workflow_hash, "node-1"));
  set_up();
  sched.advance_time(500ms);
  sched.run();
  EXPECT_TRUE(advertised->empty()) << "nothing published before the nodes are known";
  EXPECT_TRUE(created().empty()) << waiting_text();
  ASSERT_TRUE(io.answer("GET", "/api/v1/nodes", 200,
                        R"({"kind":"NodeList","metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"node-1","resourceVersion":"9"}}]})"));
  io.fire_timers();
  ASSERT_TRUE(nodes->synced());
  sched.advance_time(100ms);
  sched.run();
  ASSERT_FALSE(advertised->empty()) << waiting_text();
  EXPECT_EQ(advertised->front(), 1) << "the adopted pair is in the first capacity published";
  EXPECT_TRUE(created().empty()) << "the warm pool of one is the adopted pair";
  EXPECT_EQ((*counters)["headroom_capacity_pairs_adopted_total"], 1);
}

TEST_F(monitor_fixture, a_cluster_that_never_lists_its_nodes_still_gets_capacity_after_the_wait) {
  with_nodes = true;
  start();
  set_up();
  sched.advance_time(9s);
  sched.run();
  EXPECT_TRUE(advertised->empty());
  for (int i = 0; i < 15; ++i) {  // 100 ms looks, past the 10 s wait
    sched.advance_time(100ms);
    sched.run();
  }
  EXPECT_FALSE(advertised->empty()) << "decided without the nodes once the wait is over";
  EXPECT_EQ(created().size(), 2u) << "the warm pool's pair";
}

// #55: an orderly stop (SIGTERM, the Lease lost) leaves the placed pairs' pods for the next process
// to adopt; a pair not placed yet deletes its pods (a next process would only delete them).
TEST_F(monitor_fixture, an_orderly_stop_keeps_the_placed_pairs_and_deletes_the_pending_ones) {
  start(2);
  set_up();
  auto names = created();
  ASSERT_EQ(names.size(), 4u) << "a warm pool of two pairs";
  const std::string placed = slot_of(names[0]);
  const std::string placed_runner = "linux-ph-" + placed + "-runner", placed_workflow = "linux-ph-" + placed + "-workflow";
  watch("ADDED", placed_runner, "runner-placeholder", placed, "Running", "node-1");
  watch("ADDED", placed_workflow, "workflow-placeholder", placed, "Running", "node-1");
  ASSERT_FALSE(advertised->empty());
  ASSERT_EQ(advertised->back(), 1);
  caf::anon_send_exit(monitor, caf::exit_reason::user_shutdown);
  sched.run();
  const auto gone = deletes();
  EXPECT_EQ(gone.count(placed_runner) + gone.count(placed_workflow), 0u) << "the placed pair is kept\n" << waiting_text();
  EXPECT_EQ(gone.size(), 2u) << "the pending pair's two pods are deleted\n" << waiting_text();
  EXPECT_EQ(find("DELETE", "/configmaps/"), nullptr) << "the owner stays";
}

// #58 (seed 000): the ladder's PriorityClasses are read, a missing one is made with the ladder's
// value, and one that exists with another value stops the monitor with a message naming both.
TEST_F(monitor_fixture, missing_priority_classes_are_made_and_one_with_another_value_stops_the_monitor) {
  start();
  std::string down;
  // What it needs as spawn arguments, not captures: CAF 0.17 binds an empty argument tuple through
  // a null pointer (UBSan's "reference binding to null pointer").
  auto observer = sys.spawn(
      [](caf::event_based_actor* self, std::string* out, cap::monitor_actor m) -> caf::behavior {
        self->monitor(m);
        self->set_down_handler([out](caf::down_msg& d) { *out = caf::to_string(d.reason); });
        return {[](int) {}};
      },
      &down, monitor);
  sched.run();
  ASSERT_TRUE(io.answer("GET", "/priorityclasses/placeholder-runner", 404, R"({"kind":"Status","reason":"NotFound","code":404})"));
  sched.run();
  const auto* create = find("POST", "/priorityclasses");
  ASSERT_NE(create, nullptr) << "a missing class is made";
  simdjson::dom::parser p;
  std::string_view name;
  int64_t value = 0;
  ASSERT_EQ(p.parse(create->body)["metadata"]["name"].get(name), simdjson::SUCCESS) << create->body;
  ASSERT_EQ(p.parse(create->body)["value"].get(value), simdjson::SUCCESS) << create->body;
  EXPECT_EQ(name, "placeholder-runner");
  EXPECT_EQ(value, -10) << "the ladder's value";
  ASSERT_TRUE(io.answer("POST", "/priorityclasses", 201, "{}"));
  ASSERT_TRUE(io.answer("GET", "/priorityclasses/arc-runner", 200, R"({"metadata":{"name":"arc-runner"},"value":0})"));
  ASSERT_TRUE(io.answer("GET", "/priorityclasses/placeholder-workflow", 200, R"({"metadata":{"name":"placeholder-workflow"},"value":10})"));
  sched.run();
  EXPECT_TRUE(down.empty()) << "classes with the ladder's values: it goes on";
  ASSERT_TRUE(io.answer("GET", "/priorityclasses/arc-workflow", 200, R"({"metadata":{"name":"arc-workflow"},"value":1000})"));
  sched.run();
  EXPECT_NE(down.find("PriorityClass arc-workflow exists with value 1000, headroom needs 20"), std::string::npos)
      << "stopped, naming the class and both values: " << down;
  caf::anon_send_exit(observer, caf::exit_reason::kill);
}

TEST_F(monitor_fixture, a_warm_pair_is_advertised_once_placed_and_replaced_when_its_runner_placeholder_goes) {
  start();
  set_up();
  auto names = created();
  ASSERT_EQ(names.size(), 2u) << "a warm pool of one pair";
  EXPECT_TRUE(advertised->empty() || advertised->back() == 0) << "nothing placed yet";
  const std::string slot = slot_of(names[0]);
  watch("ADDED", names[0], "runner-placeholder", slot, "Running", "node-1");
  watch("ADDED", names[1], "workflow-placeholder", slot, "Pending", "");
  EXPECT_TRUE(advertised->empty() || advertised->back() == 0) << "one placeholder placed is no room for a job";
  watch("MODIFIED", names[1], "workflow-placeholder", slot, "Running", "node-1");
  ASSERT_FALSE(advertised->empty());
  EXPECT_EQ(advertised->back(), 1) << "both placed: one job's room";
  for (const auto& c : io.waiting())
    EXPECT_NE(c.request.method, "DELETE") << "its own pair's pods are left alone: " << c.request.url;

  // A placeholder an earlier process left (owned by another ConfigMap) is deleted.
  watch("ADDED", "linux-ph-0ld0ld00-runner", "runner-placeholder", "0ld0ld00", "Running", "node-2", "u-earlier");
  ASSERT_TRUE(io.answer("DELETE", "/namespaces/arc/pods/linux-ph-0ld0ld00-runner", 200, "{}")) << "deleted";
  watch("DELETED", "linux-ph-0ld0ld00-runner", "runner-placeholder", "0ld0ld00", "Running", "node-2", "u-earlier");
  EXPECT_EQ(advertised->back(), 1) << "not counted";

  // The runner placeholder is deleted and no runner pod took its node: the pair is lost.
  watch("DELETED", names[0], "runner-placeholder", slot, "Running", "node-1");
  for (int i = 0; i < 12; ++i) {  // the pair waits 5 s for a runner pod's binding to show
    sched.advance_time(500ms);
    sched.run();
  }
  EXPECT_EQ(advertised->back(), 0);
  sched.advance_time(2s);
  sched.run();
  auto again = created();
  EXPECT_EQ(again.size(), 2u) << "a new pair for the warm pool";
}

// A runner pod preempting its way into a warm pair's room (nominated to the node, its victim going)
// holds the warm pool's refill back until it is bound: a new pair's workflow placeholder outranks
// runner pods and would take that room first (the real-node test: the runner then waited a minute,
// its job claimed). A nomination that lasts holds it back for 10 s at most.
TEST_F(monitor_fixture, a_runner_preempting_its_way_into_a_room_holds_the_warm_pools_refill_until_it_is_bound) {
  const auto names = warm_pair_placed("node-1");
  ASSERT_EQ(names.size(), 2u);
  const std::string slot = slot_of(names[0]);
  auto runner = [](const std::string& name, const std::string& node, const std::string& nominated) {
    return R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name +
           R"(","resourceVersion":"12","labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"runner"}},)"
           R"("spec":{"nodeName":")" + node + R"("},"status":{"phase":"Pending","nominatedNodeName":")" + nominated + R"("}})";
  };
  watch_pod("ADDED", runner("linux-runner-a", "", "node-1"));
  watch("DELETED", names[0], "runner-placeholder", slot, "Running", "node-1");
  sched.advance_time(1s);
  sched.run();
  EXPECT_TRUE(created().empty()) << "no new pair while the runner is on its way into the room";
  watch_pod("MODIFIED", runner("linux-runner-a", "node-1", "node-1"));
  sched.advance_time(100ms);
  sched.run();
  const auto refill = created();
  ASSERT_EQ(refill.size(), 2u) << "the runner bound: the warm pool is refilled";

  // A nomination that lasts (a victim with a long grace period) holds the refill 10 s at most.
  const std::string slot2 = slot_of(refill[0]);
  watch("ADDED", refill[0], "runner-placeholder", slot2, "Running", "node-2");
  watch("ADDED", refill[1], "workflow-placeholder", slot2, "Running", "node-2");
  watch_pod("ADDED", runner("linux-runner-b", "", "node-2"));
  watch("DELETED", refill[0], "runner-placeholder", slot2, "Running", "node-2");
  for (int i = 0; i < 9; ++i) {
    sched.advance_time(1s);
    sched.run();
  }
  EXPECT_TRUE(created().empty()) << "held while the runner is nominated";
  sched.advance_time(1100ms);
  sched.run();
  EXPECT_EQ(created().size(), 2u) << "not past 10 s";
}

// #62: a capacity change carries the watch event behind it (its resourceVersion, when it was read)
// through the pair's judgement to the first poll that carries it, and each hop is observed once.
// The informer and the actors read one clock here (the test coordinator's), as they read the
// machine's monotonic clock in production.
TEST_F(monitor_fixture, a_capacity_change_carries_the_watch_event_behind_it_to_the_poll_hop_by_hop) {
  std::vector<std::string> lines;
  runtime::logger::global().set_sink([&lines](std::string_view l) { lines.emplace_back(l); });
  const auto names = warm_pair_placed("node-1");
  ASSERT_EQ(names.size(), 2u);
  const std::string slot = slot_of(names[0]);
  const auto now_ns = [&] { return std::chrono::duration_cast<std::chrono::nanoseconds>(sys.clock().now().time_since_epoch()).count(); };
  caf::anon_send(monitor, msg::capacity_polled{1, now_ns()});
  sched.run();
  ASSERT_EQ((*hops)["event_to_poll"].size(), 1u) << "the rise: the workflow placeholder's event behind it";
  hops->clear();

  // The runner placeholder is deleted: the informer reads it now, the monitor drains it 20 ms later
  // (its worker was busy), and its pair judges it at once (no room left: pending).
  ASSERT_TRUE(io.stream("watch=true", R"({"type":"DELETED","object":{"metadata":{"name":")" + names[0] +
                                          R"(","namespace":"arc","uid":"u-)" + names[0] +
                                          R"(","resourceVersion":"12","labels":{"headroom.dev/scale-set":"linux","headroom.dev/slot":")" +
                                          slot + R"(","headroom.dev/role":"runner-placeholder"}},"spec":{"nodeName":"node-1"},)"
                                          R"("status":{"phase":"Running"}}})" "\n"));
  sched.advance_time(20ms);
  sched.run();
  ASSERT_EQ(advertised->back(), 0);
  sched.advance_time(30ms);  // the listener issues its poll 30 ms after the publish
  caf::anon_send(monitor, msg::capacity_polled{0, now_ns()});
  caf::anon_send(monitor, msg::capacity_polled{0, now_ns()});  // a second poll of the same value: not a hop again
  sched.run();
  runtime::logger::global().set_sink(nullptr);
  for (const char* h : {"event_to_monitor", "monitor_to_judged", "judged_to_published", "published_to_poll", "event_to_poll"})
    ASSERT_EQ((*hops)[h].size(), 1u) << h;
  EXPECT_NEAR((*hops)["event_to_monitor"][0], 0.020, 1e-9);
  EXPECT_EQ((*hops)["monitor_to_judged"][0], 0.0);
  EXPECT_EQ((*hops)["judged_to_published"][0], 0.0);
  EXPECT_NEAR((*hops)["published_to_poll"][0], 0.030, 1e-9);
  EXPECT_NEAR((*hops)["event_to_poll"][0], 0.050, 1e-9);
  // The log line of the drop names the event (the deletion's resourceVersion) and its hops so far.
  const auto drop = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("\"msg\":\"capacity\"") != std::string::npos && l.find("\"capacity\":0") != std::string::npos &&
           l.find("\"event_rv\":\"12\"") != std::string::npos;
  });
  ASSERT_NE(drop, lines.end());
  EXPECT_NE(drop->find("\"since_event_ms\":20"), std::string::npos) << *drop;
}

// Kubernetes mode: a workflow pod pinned to its runner's node, where the only held room is the
// workflow placeholder of a pair whose runner placeholder never found room beside it (the node was
// full: pinned there, it may never be placed). That room is given: the pinned pod has nowhere else
// to go, and the pair would not be placed anyway.
TEST_F(monitor_fixture, a_pinned_workflow_pod_is_given_the_room_of_a_pair_that_cannot_be_placed_beside_it) {
  mode = actors::runners::runner_spec::container_mode::kubernetes;
  start();
  set_up();
  auto first = created();
  ASSERT_EQ(first.size(), 1u) << "the probe (room for both on one node)";
  const std::string slot = slot_of(first[0]);
  const std::string probe = "linux-ph-" + slot + "-probe", runner_ph = "linux-ph-" + slot + "-runner",
                    workflow_ph = "linux-ph-" + slot + "-workflow";
  ASSERT_EQ(first[0], probe);
  watch("ADDED", probe, "pair-probe", slot, "Running", "node-2");
  const auto next = created();
  ASSERT_NE(std::find(next.begin(), next.end(), workflow_ph), next.end()) << waiting_text();
  ASSERT_NE(std::find(next.begin(), next.end(), runner_ph), next.end()) << "both placeholders, pinned to the probe's node\n" << waiting_text();
  // The workflow placeholder is placed; the room the probe found is taken meanwhile, and the runner
  // placeholder stays Pending.
  watch("ADDED", workflow_ph, "workflow-placeholder", slot, "Running", "node-2");
  watch("ADDED", runner_ph, "runner-placeholder", slot, "Pending", "");
  // It stays unplaced (no room on node-2). A runner lands on node-2 anyway (room freed later);
  // its workflow pod, pinned there by the hook, finds none.
  watch_pod("ADDED", R"({"metadata":{"name":"linux-runner-c","namespace":"arc","uid":"u-rc","resourceVersion":"12",)"
                     R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"runner"}},"spec":{"nodeName":"node-2"},)"
                     R"("status":{"phase":"Running"}})");
  EXPECT_EQ(find("DELETE", workflow_ph), nullptr);
  watch_pod("ADDED", R"({"metadata":{"name":"linux-runner-c-workflow","namespace":"arc","uid":"u-wc","resourceVersion":"13",)"
                     R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"workflow","runner-pod":"linux-runner-c"}},)"
                     R"("spec":{},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}})");
  EXPECT_EQ(find("DELETE", workflow_ph), nullptr) << "not before the pod is nominated to the room's node";
  ASSERT_NO_FATAL_FAILURE(nominated("linux-runner-c-workflow", "node-2"));
  EXPECT_NE(find("DELETE", workflow_ph), nullptr) << "the unplaceable pair's room is given\n" << waiting_text();
  EXPECT_EQ((*counters)["headroom_capacity_workflow_rooms_given_total"], 1);
  EXPECT_EQ((*gauges)["headroom_capacity_workflow_pods_waiting"], 0);
}

// kubernetes mode: once the probe is placed, both placeholders are made on its node, but a waiting
// pod of a higher priority may take the probe's room first. A placeholder Unschedulable there for
// 10 s ends the pair (a pod pinned to one node waits for good: Karpenter makes no node for it), and
// a new pair is made at once, its probe free to go wherever there is room.
TEST_F(monitor_fixture, a_same_node_pair_whose_placeholder_finds_no_room_on_the_probes_node_is_replaced) {
  mode = actors::runners::runner_spec::container_mode::kubernetes;
  start();
  set_up();
  const auto first = created();
  ASSERT_EQ(first.size(), 1u);
  const std::string slot = slot_of(first[0]);
  const std::string probe = "linux-ph-" + slot + "-probe", runner_ph = "linux-ph-" + slot + "-runner",
                    workflow_ph = "linux-ph-" + slot + "-workflow";
  ASSERT_NO_FATAL_FAILURE(probe_placed(slot, "node-2"));
  watch("ADDED", workflow_ph, "workflow-placeholder", slot, "Running", "node-2");
  watch_pod("ADDED", R"({"metadata":{"name":")" + runner_ph + R"(","namespace":"arc","uid":"u-rp","resourceVersion":"12",)"
                     R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/slot":")" + slot +
                     R"(","headroom.dev/role":"runner-placeholder"},)"
                     R"("ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"headroom-owner","uid":"u-owner"}]},"spec":{},)"
                     R"("status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}})");
  sched.advance_time(9s);
  sched.run();
  EXPECT_EQ(find("DELETE", workflow_ph), nullptr) << "room may still free within 10 s";
  EXPECT_TRUE(advertised->empty() || advertised->back() == 0);
  sched.advance_time(1s);
  sched.run();
  EXPECT_NE(find("DELETE", workflow_ph), nullptr) << "the pair gives the node up\n" << waiting_text();
  EXPECT_NE(find("DELETE", runner_ph), nullptr);
  const auto again = created();
  ASSERT_EQ(again.size(), 1u) << "a new pair at once\n" << waiting_text();
  EXPECT_NE(again[0], probe);
  EXPECT_NE(again[0].find("-probe"), std::string::npos);
}

// kubernetes mode: a runner goes only into a pair's room (runner_provisioner_test), so an assigned
// job whose runner is not placed has a pair made for it when none is left (lost after its capacity
// was advertised), even with no warm pool; in the other modes a runner finds its own room.
TEST_F(monitor_fixture, kubernetes_mode_makes_a_pair_for_an_assigned_job_with_no_runner_placed) {
  mode = actors::runners::runner_spec::container_mode::kubernetes;
  start(0);
  set_up();
  EXPECT_TRUE(created().empty()) << "no warm pool, nothing assigned";
  msg::scale_set_update u;
  u.scale_set_id = 7;
  u.stats.total_assigned_jobs = 2;
  caf::anon_send(monitor, u);
  sched.run();
  EXPECT_EQ(created().size(), 2u) << "a probe for each job's pair";
}

// kubernetes mode: the pair a runner pod is pinned to (its headroom.dev/workflow-room annotation)
// is that runner's job's. A scale-down while the counts trail does not take it (nor hand any other
// pair over: a runner placeholder's freed room could be taken by any pod before a runner came), and
// the runner's workflow pod, pinned to its node, is given that pair's room.
TEST_F(monitor_fixture, kubernetes_mode_keeps_the_pair_a_runner_is_pinned_to_for_its_workflow_pod) {
  mode = actors::runners::runner_spec::container_mode::kubernetes;
  start(0);
  set_up();
  msg::scale_set_update u;
  u.scale_set_id = 7;
  u.stats.total_assigned_jobs = 1;
  caf::anon_send(monitor, u);
  sched.run();
  const auto first = created();
  ASSERT_EQ(first.size(), 1u) << "a pair for the job";
  const std::string slot = slot_of(first[0]);
  const std::string runner_ph = "linux-ph-" + slot + "-runner",
                    workflow_ph = "linux-ph-" + slot + "-workflow";
  ASSERT_NO_FATAL_FAILURE(probe_placed(slot, "node-2"));
  watch("ADDED", workflow_ph, "workflow-placeholder", slot, "Running", "node-2");
  watch("ADDED", runner_ph, "runner-placeholder", slot, "Running", "node-2");
  const auto runner = [&](const std::string& node, const std::string& phase) {
    return R"({"metadata":{"name":"linux-runner-a","namespace":"arc","uid":"u-ra","resourceVersion":"12",)"
           R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"runner"},)"
           R"("annotations":{"headroom.dev/workflow-room":")" + slot + R"("}},"spec":{"nodeName":")" + node +
           R"("},"status":{"phase":")" + phase + R"("}})";
  };
  watch_pod("ADDED", runner("", "Pending"));
  // The service's count drops (a cancelled job, or counts that trail): nothing assigned.
  u.stats.total_assigned_jobs = 0;
  caf::anon_send(monitor, u);
  sched.run();
  EXPECT_EQ(find("DELETE", workflow_ph), nullptr) << "the pinned runner's pair stays\n" << waiting_text();
  EXPECT_EQ(find("DELETE", runner_ph), nullptr) << "and is not handed over: its runner preempts it";
  // The runner preempts the runner placeholder and runs; its workflow pod, pinned to node-2, finds
  // no room of its own: the pair's is given.
  watch("DELETED", runner_ph, "runner-placeholder", slot, "Running", "node-2");
  watch_pod("MODIFIED", runner("node-2", "Running"));
  watch_pod("ADDED", R"({"metadata":{"name":"linux-runner-a-workflow","namespace":"arc","uid":"u-wa","resourceVersion":"13",)"
                     R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"workflow","runner-pod":"linux-runner-a"}},)"
                     R"("spec":{},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}})");
  ASSERT_NO_FATAL_FAILURE(nominated("linux-runner-a-workflow", "node-2"));
  EXPECT_NE(find("DELETE", workflow_ph), nullptr) << "its own pair's room\n" << waiting_text();
  EXPECT_EQ((*counters)["headroom_capacity_workflow_rooms_given_total"], 1);
}

TEST_F(monitor_fixture, kubernetes_novolume_mode_makes_no_pair_for_an_assigned_job) {
  mode = actors::runners::runner_spec::container_mode::kubernetes_novolume;
  start(0);
  set_up();
  msg::scale_set_update u;
  u.scale_set_id = 7;
  u.stats.total_assigned_jobs = 2;
  caf::anon_send(monitor, u);
  sched.run();
  EXPECT_TRUE(created().empty()) << "its runners take room wherever the scheduler finds it";
}

// A workflow pod takes no room by preemption (its PriorityClass has preemptionPolicy Never: on the
// ladder it could preempt a running runner): once the scheduler has found none for it, the monitor
// deletes the workflow placeholder of the oldest hand-off, and the pod is placed in the room that
// frees. One with no held room to give waits, and is counted.
TEST_F(monitor_fixture, a_workflow_pod_the_scheduler_finds_no_room_for_is_given_a_held_one) {
  mode = actors::runners::runner_spec::container_mode::kubernetes_novolume;
  start();
  set_up();
  auto first = created();
  ASSERT_EQ(first.size(), 2u) << "the probe and the workflow placeholder";
  const std::string slot = slot_of(first[1]);
  const std::string probe = "linux-ph-" + slot + "-probe", runner_ph = "linux-ph-" + slot + "-runner",
                    workflow_ph = "linux-ph-" + slot + "-workflow";
  watch("ADDED", probe, "pair-probe", slot, "Pending", "node-1");
  watch("ADDED", workflow_ph, "workflow-placeholder", slot, "Running", "node-1");
  ASSERT_EQ(created(), std::vector<std::string>{runner_ph}) << "the runner placeholder, once both are placed";
  ASSERT_TRUE(io.answer("DELETE", "/pods/" + probe, 200, "{}"));
  watch("DELETED", probe, "pair-probe", slot, "Pending", "node-1");
  watch("ADDED", runner_ph, "runner-placeholder", slot, "Running", "node-1");
  ASSERT_FALSE(advertised->empty());
  ASSERT_EQ(advertised->back(), 1) << "placed";

  // A runner pod preempts the runner placeholder: the pair is handed to its job.
  watch_pod("ADDED", R"({"metadata":{"name":"linux-runner-a","namespace":"arc","uid":"u-ra","resourceVersion":"12",)"
                     R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"runner"}},"spec":{},)"
                     R"("status":{"phase":"Pending","nominatedNodeName":"node-1"}})");
  watch("DELETED", runner_ph, "runner-placeholder", slot, "Running", "node-1");
  while (io.answer("POST", "/namespaces/arc/pods", 201, "{}"))  // the replacement pair
    sched.run();
  EXPECT_EQ(find("DELETE", workflow_ph), nullptr) << "the hand-off holds the workflow's room";

  // Its workflow pod: made, not placed yet: nothing given.
  const auto workflow_pod = [](const std::string& name, const std::string& conditions) {
    return R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name + R"(","resourceVersion":"13",)"
           R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"workflow","runner-pod":"linux-runner-a"}},)"
           R"("spec":{},"status":{"phase":"Pending","conditions":[)" + conditions + "]}}";
  };
  const std::string unschedulable = R"({"type":"PodScheduled","status":"False","reason":"Unschedulable"})";
  watch_pod("ADDED", workflow_pod("linux-runner-a-workflow", ""));
  EXPECT_EQ(find("DELETE", workflow_ph), nullptr) << "the scheduler may place it in free room";
  // The scheduler found no room for it: the hand-off's workflow placeholder is deleted for it.
  watch_pod("MODIFIED", workflow_pod("linux-runner-a-workflow", unschedulable));
  // First nominated to the room's node (the scheduler then keeps that room for it from the
  // placeholders waiting for room), then the room is freed.
  EXPECT_EQ(find("DELETE", workflow_ph), nullptr) << "not before the nomination is written";
  ASSERT_NO_FATAL_FAILURE(nominated("linux-runner-a-workflow", "node-1"));
  EXPECT_NE(find("DELETE", workflow_ph), nullptr) << "the held room is given\n" << waiting_text();
  EXPECT_EQ((*counters)["headroom_capacity_workflow_rooms_given_total"], 1);
  EXPECT_EQ((*gauges)["headroom_capacity_workflow_pods_waiting"], 0);
  // Another, with no room held anywhere (the replacement pair is not placed): it waits, counted.
  watch_pod("ADDED", workflow_pod("linux-runner-b-workflow", unschedulable));
  EXPECT_EQ((*counters)["headroom_capacity_workflow_rooms_given_total"], 1);
  EXPECT_EQ((*gauges)["headroom_capacity_workflow_pods_waiting"], 1);
}

// kubernetes-novolume: the hook template gates each workflow pod, so the scheduler cannot put it in
// room freed for a runner pod not yet bound. As it comes it is pinned to the node of the hand-off's
// held room and ungated in one patch, then nominated there, then the room is freed. With no room
// held, it is only ungated, and waits for room as any pod.
TEST_F(monitor_fixture, a_gated_workflow_pod_is_pinned_to_its_held_room_and_ungated) {
  const std::string workflow_ph = novolume_pair_handed_off();
  ASSERT_FALSE(workflow_ph.empty());
  while (io.answer("POST", "/namespaces/arc/pods", 201, "{}"))  // the replacement pair
    sched.run();
  const auto gated = [](const std::string& name) {
    return R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name + R"(","resourceVersion":"13",)"
           R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"workflow","runner-pod":"linux-runner-a"}},)"
           R"("spec":{"schedulingGates":[{"name":"headroom.dev/held-room"}]},)"
           R"("status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"SchedulingGated"}]}})";
  };
  watch_pod("ADDED", gated("linux-runner-a-workflow"));
  const auto* pin = find("PATCH", "/namespaces/arc/pods/linux-runner-a-workflow");
  ASSERT_NE(pin, nullptr) << waiting_text();
  EXPECT_EQ(pin->body, actors::runners::held_room_patch(std::get<k8s::pod>(k8s::decode_pod(gated("linux-runner-a-workflow"))), "node-1"));
  EXPECT_EQ(find("DELETE", workflow_ph), nullptr) << "not before the pod is pinned there";
  ASSERT_TRUE(io.answer("PATCH", "/pods/linux-runner-a-workflow", 200, "{}"));
  sched.run();
  // Pinned, it found room left on that node at once: bound before its nomination (422), it has its
  // room, and the hand-off's is freed all the same.
  ASSERT_NO_FATAL_FAILURE(nominated("linux-runner-a-workflow", "node-1", 422));
  EXPECT_NE(find("DELETE", workflow_ph), nullptr) << "the held room is given\n" << waiting_text();
  EXPECT_EQ((*counters)["headroom_capacity_workflow_rooms_given_total"], 1);
  EXPECT_EQ((*counters)["headroom_capacity_workflow_pods_ungated_total"], 1);
  // Another, with no room held (the replacement pair is not placed): ungated, not pinned.
  watch_pod("ADDED", gated("linux-runner-b-workflow"));
  const auto* ungate = find("PATCH", "/namespaces/arc/pods/linux-runner-b-workflow");
  ASSERT_NE(ungate, nullptr) << waiting_text();
  EXPECT_EQ(ungate->body, R"({"metadata":{"resourceVersion":"13"},"spec":{"schedulingGates":null}})");
  ASSERT_TRUE(io.answer("PATCH", "/pods/linux-runner-b-workflow", 200, "{}"));
  sched.run();
  EXPECT_EQ(find("PATCH", "/pods/linux-runner-b-workflow/status"), nullptr) << "nothing to nominate it to";
  EXPECT_EQ((*counters)["headroom_capacity_workflow_pods_ungated_total"], 2);
}

// A pinned workflow pod whose room was lost (taken before its nomination reached the scheduler, or
// too little: pods nominated to one node count against each other) waits on that node and nowhere
// else. Once its room is freed and it is still not placed regive_after (10 s) later, it is given
// another room on its node: the replacement pair's there. (The chaos suite's API server restart
// left three such pods, and their jobs, waiting for minutes.)
TEST_F(monitor_fixture, a_pinned_workflow_pod_still_waiting_after_its_room_was_freed_is_given_another_on_its_node) {
  const std::string workflow_ph = novolume_pair_handed_off();
  ASSERT_FALSE(workflow_ph.empty());
  // The runner is bound: the warm pool is refilled.
  watch_pod("MODIFIED", R"({"metadata":{"name":"linux-runner-a","namespace":"arc","uid":"u-ra","resourceVersion":"14",)"
                        R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"runner"}},"spec":{"nodeName":"node-1"},)"
                        R"("status":{"phase":"Running"}})");
  const auto second = created();  // the replacement pair: its probe and workflow placeholder
  ASSERT_EQ(second.size(), 2u);
  const std::string slot = slot_of(second[1]);
  watch("ADDED", second[0], "pair-probe", slot, "Pending", "node-1");
  watch("ADDED", second[1], "workflow-placeholder", slot, "Running", "node-1");
  const auto third = created();
  ASSERT_EQ(third.size(), 1u) << "its runner placeholder";
  ASSERT_TRUE(io.answer("DELETE", "/pods/" + second[0], 200, "{}"));
  watch("DELETED", second[0], "pair-probe", slot, "Pending", "node-1");
  watch("ADDED", third[0], "runner-placeholder", slot, "Running", "node-1");
  const auto workflow_pod = [](const std::string& spec, const std::string& condition) {
    return R"({"metadata":{"name":"linux-runner-a-workflow","namespace":"arc","uid":"u-wa","resourceVersion":"13",)"
           R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"workflow","runner-pod":"linux-runner-a"}},)"
           R"("spec":)" + spec + R"(,"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":")" +
           condition + R"("}]}})";
  };
  // Gated, pinned to the hand-off's node, nominated there; the room freed.
  watch_pod("ADDED", workflow_pod(R"({"schedulingGates":[{"name":"headroom.dev/held-room"}]})", "SchedulingGated"));
  ASSERT_TRUE(io.answer("PATCH", "/pods/linux-runner-a-workflow", 200, "{}")) << waiting_text();
  sched.run();
  ASSERT_NO_FATAL_FAILURE(nominated("linux-runner-a-workflow", "node-1"));
  ASSERT_TRUE(io.answer("DELETE", "/pods/" + workflow_ph, 200, "{}")) << waiting_text();
  for (const auto& c : io.waiting())  // the cache still shows its gate: it is not pinned again
    EXPECT_FALSE(c.request.method == "PATCH" && c.request.url.ends_with("/pods/linux-runner-a-workflow")) << waiting_text();
  sched.run();
  watch("DELETED", workflow_ph, "workflow-placeholder", slot_of(workflow_ph), "Running", "node-1");
  // The scheduler still finds no room for it there.
  const std::string pinned = R"({"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)"
                             R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["node-1"]}]}]}}}})";
  watch_pod("MODIFIED", workflow_pod(pinned, "Unschedulable"));
  EXPECT_EQ(find("PATCH", "/pods/linux-runner-a-workflow/status"), nullptr) << "the scheduler may still place it in the room freed";
  sched.advance_time(9s);
  sched.run();
  EXPECT_EQ(find("PATCH", "/pods/linux-runner-a-workflow/status"), nullptr) << "not before 10 s";
  sched.advance_time(1s);
  sched.run();
  ASSERT_NO_FATAL_FAILURE(nominated("linux-runner-a-workflow", "node-1"));
  const auto deleted = deletes();
  EXPECT_TRUE(deleted.count(second[1]) > 0 && deleted.count(third[0]) > 0) << "the pair on its node stops for it\n" << waiting_text();
  EXPECT_EQ((*counters)["headroom_capacity_workflow_rooms_given_total"], 2);
}

// The nomination's answers: a workflow pod gone meanwhile (404, its job cancelled) leaves the room
// held for the next; a refusal (403: a Role without pods/status, an older chart's) frees the room
// all the same, as before nominations, and says so once.
TEST_F(monitor_fixture, a_workflow_pod_gone_before_its_nomination_leaves_the_room_held_and_a_refused_one_still_gets_it) {
  const std::string workflow_ph = novolume_pair_handed_off();
  ASSERT_FALSE(workflow_ph.empty());
  while (io.answer("POST", "/namespaces/arc/pods", 201, "{}"))
    sched.run();
  const auto workflow_pod = [](const std::string& name) {
    return R"({"metadata":{"name":")" + name + R"(","namespace":"arc","uid":"u-)" + name + R"(","resourceVersion":"13",)"
           R"("labels":{"headroom.dev/scale-set":"linux","headroom.dev/role":"workflow","runner-pod":"linux-runner-a"}},)"
           R"("spec":{},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}})";
  };
  watch_pod("ADDED", workflow_pod("linux-runner-a-workflow"));
  ASSERT_NE(find("PATCH", "/pods/linux-runner-a-workflow/status"), nullptr);
  // Another workflow pod meanwhile: the room being given is not given twice.
  watch_pod("ADDED", workflow_pod("linux-runner-x-workflow"));
  EXPECT_EQ(find("PATCH", "/pods/linux-runner-x-workflow/status"), nullptr) << "the room is promised to the first";
  EXPECT_EQ((*gauges)["headroom_capacity_workflow_pods_waiting"], 1);
  watch_pod("DELETED", workflow_pod("linux-runner-x-workflow"));
  // The first is deleted before its nomination lands: the room stays held.
  watch_pod("DELETED", workflow_pod("linux-runner-a-workflow"));
  ASSERT_NO_FATAL_FAILURE(nominated("linux-runner-a-workflow", "node-1", 404));
  EXPECT_EQ(find("DELETE", workflow_ph), nullptr) << "no pod to give it to";
  // The next one's nomination is refused: the room is freed anyway.
  watch_pod("ADDED", workflow_pod("linux-runner-b-workflow"));
  ASSERT_NO_FATAL_FAILURE(nominated("linux-runner-b-workflow", "node-1", 403));
  EXPECT_NE(find("DELETE", workflow_ph), nullptr) << "the held room is given without the nomination\n" << waiting_text();
  EXPECT_EQ((*counters)["headroom_capacity_workflow_rooms_given_total"], 2);
}

// #57: a pair's pod is judged once, by its pair, and the decision is made after that verdict: a
// change that leaves the pair's state as it was decides nothing; the change that places it decides
// once, with the pair ready in it. A pod that is no pair's (an earlier process's) is decided at once.
TEST_F(monitor_fixture, a_pairs_pod_is_decided_once_after_its_pair_has_judged_it) {
  start();
  set_up();
  auto names = created();
  ASSERT_EQ(names.size(), 2u);
  const std::string slot = slot_of(names[0]);
  const int at_start = *decisions;
  watch("ADDED", names[0], "runner-placeholder", slot, "Running", "node-1");
  watch("ADDED", names[1], "workflow-placeholder", slot, "Pending", "");
  EXPECT_EQ(*decisions, at_start) << "the pair is still pending: nothing to decide";
  EXPECT_TRUE(advertised->empty() || advertised->back() == 0);
  watch("MODIFIED", names[1], "workflow-placeholder", slot, "Running", "node-1");
  EXPECT_EQ(*decisions, at_start + 1) << "one decision, on the pair's report";
  ASSERT_FALSE(advertised->empty());
  EXPECT_EQ(advertised->back(), 1) << "made with the pair's verdict in it";
  watch("ADDED", "linux-ph-0ld0ld00-runner", "runner-placeholder", "0ld0ld00", "Running", "node-2", "u-earlier");
  EXPECT_EQ(*decisions, at_start + 2) << "a placeholder no pair owns is the monitor's own";
  ASSERT_TRUE(io.answer("DELETE", "/namespaces/arc/pods/linux-ph-0ld0ld00-runner", 200, "{}")) << "deleted";
}

// #61: demand without a HUD. With no warm pool, the jobs the Actions Service counts as queued for
// the scale set (totalAvailableJobs, in the listener's statistics) bring pairs; none queued, none.
TEST_F(monitor_fixture, the_services_queued_jobs_bring_pairs_without_a_hud_or_a_warm_pool) {
  start(0);
  set_up();
  EXPECT_TRUE(created().empty()) << "nothing queued, no warm pool: no pair";
  msg::scale_set_update u;
  u.scale_set_id = 7;
  u.stats.total_available_jobs = 3;
  caf::anon_send(monitor, u);
  sched.run();
  EXPECT_EQ(created().size(), 6u) << "three pairs for three queued jobs";
  u.stats.total_available_jobs = 9;  // more than maxRunners (5) allows
  caf::anon_send(monitor, u);
  sched.run();
  EXPECT_EQ(created().size(), 4u) << "two more: never above maxRunners";
}

// #59: the warm pool follows a schedule (UTC windows of the actor system's wall clock: the test
// clock starts on Monday 2026-09-21 at 14:13:20) and, with followDemand, the queue it has seen.
TEST_F(monitor_fixture, a_scheduled_window_raises_the_warm_pool_and_its_end_lowers_it_to_the_floor) {
  warm_pool.schedule = {{0x01, 14 * 60, 14 * 60 + 14, 3}};  // Mondays 14:00 to 14:14
  start(1);
  set_up();
  EXPECT_EQ(created().size(), 6u) << "three warm pairs in the window";
  EXPECT_EQ((*gauges)["headroom_capacity_warm_pool_pairs"], 3);
  for (int i = 0; i < 2; ++i) {  // a minute of recalculations: past 14:14
    sched.advance_time(30s);
    sched.run();
  }
  EXPECT_EQ((*gauges)["headroom_capacity_warm_pool_pairs"], 1) << "the floor (proactiveCapacity) after the window";
  EXPECT_EQ(deletes().size(), 4u) << "two pairs' pods deleted:\n" << waiting_text();
}

TEST_F(monitor_fixture, following_demand_the_warm_pool_keeps_the_queue_it_has_seen_after_it_drains) {
  warm_pool.follow_demand = true;
  warm_pool.percentile = 100;
  warm_pool.window = std::chrono::hours{1};
  warm_pool.max = 2;
  ready_timeout = std::chrono::hours{24};  // the pairs wait unplaced through the hour
  start(0);
  set_up();
  EXPECT_TRUE(created().empty()) << "nothing seen yet: the floor, 0";
  msg::scale_set_update u;
  u.scale_set_id = 7;
  u.stats.total_available_jobs = 4;
  caf::anon_send(monitor, u);
  sched.run();
  EXPECT_EQ((*gauges)["headroom_capacity_warm_pool_pairs"], 2) << "the queue of 4, capped by max";
  u.stats.total_available_jobs = 0;
  caf::anon_send(monitor, u);
  sched.run();
  sched.advance_time(30s);
  sched.run();
  EXPECT_EQ((*gauges)["headroom_capacity_warm_pool_pairs"], 2) << "drained: the last hour's demand stays warm";
  for (int i = 0; i < 130; ++i) {  // 65 minutes later the window has nothing but zeros
    sched.advance_time(30s);
    sched.run();
  }
  EXPECT_EQ((*gauges)["headroom_capacity_warm_pool_pairs"], 0);
}

// hud.share: cluster 1 of 2 makes pairs for its share of the service's queued jobs (the
// remainder goes from cluster 0 on: 1 of 3 here), and for all of them once they have stayed
// queued for takeAllAfter (checked at the next recalculation).
TEST_F(monitor_fixture, with_a_share_the_services_queued_jobs_are_split_until_they_wait_too_long) {
  share = headroom::hud::queue_share{1, 2, 0.5};  // takeAllAfter 30 s
  start(0);
  set_up();
  msg::scale_set_update u;
  u.scale_set_id = 7;
  u.stats.total_available_jobs = 3;
  caf::anon_send(monitor, u);
  sched.run();
  EXPECT_EQ(created().size(), 2u) << "one pair: cluster 1's share of three (cluster 0 takes two)";
  for (int i = 0; i < 29; ++i) {
    sched.advance_time(1s);
    sched.run();
  }
  caf::anon_send(monitor, u);  // still three queued
  sched.run();
  EXPECT_TRUE(created().empty()) << "not yet 30 s";
  for (int i = 0; i < 2; ++i) {
    sched.advance_time(1s);
    sched.run();
  }
  caf::anon_send(monitor, u);
  sched.run();
  EXPECT_EQ(created().size(), 4u) << "queued 30 s: all three are this cluster's too";
}

}  // namespace
