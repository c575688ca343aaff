// The BigFleet operator's pure parts: CapacityRequest decoding, penalty buckets, canonical
// selectors, roll-up aggregation, Pod → CR translation, and the MachineState → phase table.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "actors/bigfleet/model.hpp"
#include "adapters/bigfleet/capacity_request.hpp"
#include "adapters/bigfleet/node_state.hpp"
#include "adapters/k8s/decode.hpp"

namespace headroom::bigfleet {
namespace {

using actors::bigfleet::build_rollup;  // the rollup actor's model (actors/bigfleet/model.hpp)
using actors::bigfleet::encode_deterministic;

std::string cr_json(std::string_view name, std::string_view spec, std::string_view ns = "ci",
                    std::string_view status = "") {
  std::string out = R"({"apiVersion":"bigfleet.lucy.sh/v1alpha1","kind":"CapacityRequest","metadata":{"name":")" +
                    std::string{name} + R"(","namespace":")" + std::string{ns} + R"(","uid":"u-)" + std::string{name} +
                    R"(","resourceVersion":"1"},"spec":)" + std::string{spec};
  if (!status.empty())
    out += R"(,"status":)" + std::string{status};
  return out + "}";
}

capacity_request decode(std::string_view json) {
  auto r = decode_capacity_request(json);
  if (auto* e = std::get_if<decode_error>(&r)) {
    ADD_FAILURE() << e->message;
    return {};
  }
  return std::get<capacity_request>(std::move(r));
}

TEST(bigfleet_penalty, buckets_round_up) {
  auto b = [](std::string_view s) { return std::get<pb::PenaltyBucket>(penalty_bucket(s)); };
  EXPECT_EQ(b(""), pb::PENALTY_BUCKET_UNSPECIFIED);
  EXPECT_EQ(b("0"), pb::PENALTY_BUCKET_ZERO);
  EXPECT_EQ(b("0.0"), pb::PENALTY_BUCKET_ZERO);
  EXPECT_EQ(b("500m"), pb::PENALTY_BUCKET_HALF_DOLLAR) << "500m is $0.50, not $0";
  EXPECT_EQ(b("0.1"), pb::PENALTY_BUCKET_HALF_DOLLAR);
  EXPECT_EQ(b("0.51"), pb::PENALTY_BUCKET_1);
  EXPECT_EQ(b("1"), pb::PENALTY_BUCKET_1);
  EXPECT_EQ(b("1.01"), pb::PENALTY_BUCKET_2);
  EXPECT_EQ(b("2"), pb::PENALTY_BUCKET_2);
  EXPECT_EQ(b("3"), pb::PENALTY_BUCKET_4);
  EXPECT_EQ(b("1024"), pb::PENALTY_BUCKET_1024);
  EXPECT_EQ(b("1k"), pb::PENALTY_BUCKET_1024);
  EXPECT_EQ(b("1Ki"), pb::PENALTY_BUCKET_1024);
  EXPECT_EQ(b("1025"), pb::PENALTY_BUCKET_2048);
  EXPECT_EQ(b("8388608"), pb::PENALTY_BUCKET_8388608);
  EXPECT_EQ(b("8388609"), pb::PENALTY_BUCKET_PINNED);
  EXPECT_EQ(b("1e9"), pb::PENALTY_BUCKET_PINNED);
  for (std::string_view bad : {"x", "-1", "5 dollars", "1Q"}) {
    auto r = penalty_bucket(bad);
    ASSERT_TRUE(std::holds_alternative<decode_error>(r)) << bad;
    EXPECT_NE(std::get<decode_error>(r).message.find(bad), std::string::npos);
  }
}

TEST(bigfleet_selector, canonical_form_is_order_independent) {
  k8s::label_selector a, b;
  a.match_labels = {{"app", "train"}, {"team", "ml"}};
  a.match_expressions = {{"tier", "In", {"b", "a"}}};
  b.match_expressions = {{"tier", "In", {"a", "b"}}, {"team", "In", {"ml"}}};
  b.match_labels = {{"app", "train"}};
  EXPECT_EQ(canonical_selector(a), canonical_selector(b));
  b.match_labels = {{"app", "infer"}};
  EXPECT_NE(canonical_selector(a), canonical_selector(b));
}

TEST(bigfleet_cr, decodes_and_names_bad_fields) {
  auto cr = decode(cr_json("a", R"({"requirements":[{"key":"zone","operator":"In","values":["b","a"]},
      {"key":"arch","operator":"In","values":["amd64"]}],"resources":{"memory":"4Gi","cpu":"1500m"},"priority":100,
      "interruptionPenalty":12,"reclamationPenalty":"500m",
      "topologySpread":[{"topologyKey":"zone","maxSkew":1,"whenUnsatisfiable":"ScheduleAnyway"},
                        {"topologyKey":"host","maxSkew":2,"whenUnsatisfiable":"DoNotSchedule"}]})",
                           "ci", R"({"phase":"Pending"})"));
  ASSERT_EQ(cr.requirements.size(), 2u);
  EXPECT_EQ(cr.requirements[0].key, "arch") << "sorted by key";
  EXPECT_EQ(cr.requirements[1].values, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(cr.resources.size(), 2u);
  EXPECT_EQ(cr.resources[0].name, "cpu");
  EXPECT_EQ(cr.resources[0].amount, 1500);
  EXPECT_EQ(cr.resources[1].amount, int64_t{4} << 30);
  EXPECT_EQ(cr.interruption_bucket, pb::PENALTY_BUCKET_16);
  EXPECT_EQ(cr.reclamation_bucket, pb::PENALTY_BUCKET_HALF_DOLLAR);
  ASSERT_EQ(cr.topology_spread.size(), 1u) << "ScheduleAnyway is dropped";
  EXPECT_EQ(cr.topology_spread[0].topology_key, "host");
  EXPECT_EQ(cr.phase, "Pending");

  struct bad_case {
    std::string spec, expect;
  };
  for (const auto& c : std::vector<bad_case>{
           {R"({"resources":{"cpu":"lots"},"priority":1})", "spec.resources.cpu: invalid quantity \"lots\""},
           {R"({"resources":{"cpu":"1"}})", "spec.resources and spec.priority are required"},
           {R"({"resources":{"cpu":"1"},"priority":1,"interruptionPenalty":"cheap"})", "spec.interruptionPenalty"},
           {R"({"resources":{"cpu":"1"},"priority":1,"coLocation":{"labelSelector":{}}})", "spec.coLocation.topologyKey"},
           {R"({"resources":{"cpu":"1"},"priority":1,"requirements":[{"key":"a"}]})", "spec.requirements[0]"},
           {R"({"resources":{"cpu":"1"},"priority":"high"})", "CapacityRequest ci/bad"},
       }) {
    auto r = decode_capacity_request(cr_json("bad", c.spec));
    ASSERT_TRUE(std::holds_alternative<decode_error>(r)) << c.spec;
    EXPECT_NE(std::get<decode_error>(r).message.find(c.expect), std::string::npos) << std::get<decode_error>(r).message;
  }
}

std::vector<capacity_request> homogeneous(int n, std::string_view spec_extra = "") {
  std::vector<capacity_request> out;
  for (int i = 0; i < n; ++i)
    out.push_back(decode(cr_json("cr-" + std::to_string(i),
                                 R"({"resources":{"cpu":"500m","memory":"1Gi"},"priority":10)" + std::string{spec_extra} + "}")));
  return out;
}

std::vector<const capacity_request*> ptrs(const std::vector<capacity_request>& v) {
  std::vector<const capacity_request*> out;
  for (const auto& c : v)
    out.push_back(&c);
  return out;
}

TEST(bigfleet_rollup, sums_resources_and_maxes_min_unit) {
  auto crs = homogeneous(3);
  crs.push_back(decode(cr_json("big", R"({"resources":{"cpu":"4","memory":"1Gi"},"priority":10})")));
  auto r = build_rollup("cluster-1", ptrs(crs), 42);
  EXPECT_EQ(r.cluster_id(), "cluster-1");
  EXPECT_EQ(r.timestamp_unix_nanos(), 42);
  ASSERT_EQ(r.needs_size(), 1) << "same profile: one need";
  const auto& need = r.needs(0);
  EXPECT_EQ(need.aggregate_resources().at("cpu"), "5500m");
  EXPECT_EQ(need.aggregate_resources().at("memory"), std::to_string(int64_t{4} << 30));
  EXPECT_EQ(need.min_unit().at("cpu"), "4");
  EXPECT_EQ(need.priority(), 10);
}

TEST(bigfleet_rollup, profiles_split_by_priority_requirements_spread_and_buckets) {
  std::vector<capacity_request> crs;
  crs.push_back(decode(cr_json("a", R"({"resources":{"cpu":"1"},"priority":10})")));
  crs.push_back(decode(cr_json("b", R"({"resources":{"cpu":"1"},"priority":20})")));
  crs.push_back(decode(cr_json("c", R"({"resources":{"cpu":"1"},"priority":10,
      "requirements":[{"key":"gpu","operator":"Exists"}]})")));
  crs.push_back(decode(cr_json("d", R"({"resources":{"cpu":"1"},"priority":10,"interruptionPenalty":"3"})")));
  crs.push_back(decode(cr_json("e", R"({"resources":{"cpu":"1"},"priority":10,"interruptionPenalty":"4"})")));
  crs.push_back(decode(cr_json("f", R"({"resources":{"cpu":"1"},"priority":10,
      "topologySpread":[{"topologyKey":"zone","maxSkew":1,"whenUnsatisfiable":"ScheduleAnyway"}]})")));
  auto r = build_rollup("c", ptrs(crs), 0);
  // a+f (ScheduleAnyway dropped), b, c, d+e ($3 and $4 share the $4 bucket).
  EXPECT_EQ(r.needs_size(), 4);
}

TEST(bigfleet_rollup, colocation_groups_get_one_same_requirement) {
  const std::string rack_a = R"(,"coLocation":{"topologyKey":"rack","labelSelector":{"matchLabels":{"job":"a"}}})";
  const std::string rack_a_reordered =
      R"(,"coLocation":{"topologyKey":"rack","labelSelector":{"matchExpressions":[{"key":"job","operator":"In","values":["a"]}]}})";
  const std::string rack_b = R"(,"coLocation":{"topologyKey":"rack","labelSelector":{"matchLabels":{"job":"b"}}})";
  auto crs = homogeneous(2, rack_a);
  auto more = homogeneous(1, rack_a_reordered);
  auto other = homogeneous(2, rack_b);
  crs.insert(crs.end(), more.begin(), more.end());
  crs.insert(crs.end(), other.begin(), other.end());
  auto r = build_rollup("c", ptrs(crs), 0);
  ASSERT_EQ(r.needs_size(), 2) << "one need per co-location group; equal selectors written differently merge";
  for (const auto& need : r.needs()) {
    int same = 0;
    for (const auto& req : need.requirements())
      same += req.key() == "rack" && req.operator_() == pb::NodeSelectorRequirement::OPERATOR_SAME;
    EXPECT_EQ(same, 1);
  }
  EXPECT_TRUE(r.needs(0).aggregate_resources().at("cpu") == "1500m" || r.needs(1).aggregate_resources().at("cpu") == "1500m");
  // Built twice: still one Same (idempotent), identical bytes.
  EXPECT_EQ(encode_deterministic(build_rollup("c", ptrs(crs), 0)), encode_deterministic(r));
}

TEST(bigfleet_rollup, order_independent_bytes_and_small_for_homogeneous_demand) {
  std::vector<capacity_request> crs;
  for (int i = 0; i < 1000; ++i)
    crs.push_back(decode(cr_json("cr-" + std::to_string(i), R"({"resources":{"cpu":"1","memory":"2Gi"},"priority":)" +
                                                                 std::to_string(i % 3) + "}")));
  auto p = ptrs(crs);
  const auto bytes = encode_deterministic(build_rollup("c", p, 7));
  std::shuffle(p.begin(), p.end(), std::mt19937{1});
  EXPECT_EQ(encode_deterministic(build_rollup("c", p, 7)), bytes);
  EXPECT_LT(bytes.size(), 2048u) << "homogeneous demand stays small whatever the CR count";
}

TEST(bigfleet_translate, pod_to_capacity_request) {
  auto pod = std::get<k8s::pod>(k8s::decode_pod(R"({"metadata":{"name":"train-0","namespace":"ml","uid":"pod-uid-1",
    "annotations":{"bigfleet.lucy.sh/interruption-penalty":"25"}},
    "spec":{"priorityClassName":"batch","priority":500,"nodeSelector":{"arch":"amd64"},
      "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
          {"matchExpressions":[{"key":"zone","operator":"In","values":["z2","z1"]}]},
          {"matchExpressions":[{"key":"ignored","operator":"Exists"}]}]}},
        "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
          {"topologyKey":"rack","labelSelector":{"matchLabels":{"job":"train"}}}]}},
      "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"ScheduleAnyway","labelSelector":{}},
                                   {"maxSkew":2,"topologyKey":"host","whenUnsatisfiable":"DoNotSchedule","labelSelector":{}}],
      "containers":[{"name":"a","resources":{"requests":{"cpu":"2","memory":"1Gi","nvidia.com/gpu":"1"}}}],
      "initContainers":[{"name":"i","resources":{"requests":{"cpu":"3"}}}]}})"));
  penalty_defaults defaults;
  defaults.by_priority_class["batch"] = {"1", "2"};
  const auto object = capacity_request_object(pod, defaults);
  auto cr = decode(object);
  EXPECT_EQ(cr.meta.name, "train-0");
  EXPECT_EQ(cr.meta.ns, "ml");
  ASSERT_EQ(cr.meta.owners.size(), 1u);
  EXPECT_EQ(cr.meta.owners[0].uid, "pod-uid-1");
  ASSERT_NE(cr.meta.label(pod_uid_label), nullptr);
  ASSERT_EQ(cr.requirements.size(), 2u) << "first node-affinity term + nodeSelector";
  EXPECT_EQ(cr.requirements[0].key, "arch");
  EXPECT_EQ(cr.requirements[1].values, (std::vector<std::string>{"z1", "z2"}));
  EXPECT_EQ(cr.resources[0].name, "cpu");
  EXPECT_EQ(cr.resources[0].amount, 3000) << "the largest init stage wins (scheduler arithmetic)";
  EXPECT_EQ(cr.priority, 500);
  EXPECT_EQ(cr.interruption_penalty, "25") << "annotation beats the PriorityClass default";
  EXPECT_EQ(cr.reclamation_penalty, "2") << "PriorityClass default";
  ASSERT_EQ(cr.topology_spread.size(), 1u);
  ASSERT_TRUE(cr.colocation.has_value());
  EXPECT_EQ(cr.colocation->topology_key, "rack");

  auto bare = std::get<k8s::pod>(k8s::decode_pod(R"({"metadata":{"name":"p","namespace":"d","uid":"u"},
    "spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"100m"}}}]}})"));
  auto bare_cr = decode(capacity_request_object(bare, {}));
  ASSERT_EQ(bare_cr.requirements.size(), 1u);
  EXPECT_EQ(bare_cr.requirements[0].key, "node.kubernetes.io/instance-type");
  EXPECT_EQ(bare_cr.requirements[0].op, "Exists");
  EXPECT_TRUE(bare_cr.interruption_penalty.empty());
}

TEST(bigfleet_translate, penalty_defaults_file) {
  auto ok = parse_penalty_defaults("priorityClasses:\n  batch: {interruptionPenalty: \"5\", reclamationPenalty: 500m}\n");
  ASSERT_TRUE(std::holds_alternative<penalty_defaults>(ok));
  EXPECT_EQ(std::get<penalty_defaults>(ok).by_priority_class.at("batch").reclamation, "500m");
  auto bad = parse_penalty_defaults("priorityClasses:\n  batch: {interruptionPenalty: lots}\n");
  ASSERT_TRUE(std::holds_alternative<decode_error>(bad));
  EXPECT_NE(std::get<decode_error>(bad).message.find("priorityClasses.batch.interruptionPenalty"), std::string::npos);
  auto unknown = parse_penalty_defaults("priorityClasses:\n  batch: {penalty: 1}\n");
  EXPECT_TRUE(std::holds_alternative<decode_error>(unknown));
}

TEST(bigfleet_node_state, machine_state_to_phase) {
  using A = phase_decision::action;
  auto is = [](phase_decision d, A a, std::string_view phase) { return d.what == a && d.phase == phase; };
  EXPECT_TRUE(is(next_phase(pb::MACHINE_STATE_SPECULATIVE, ""), A::upsert, "Provisioning"));
  EXPECT_TRUE(is(next_phase(pb::MACHINE_STATE_CREATING, "Provisioning"), A::upsert, "Provisioning"));
  EXPECT_TRUE(is(next_phase(pb::MACHINE_STATE_IDLE, "Provisioning"), A::upsert, "Launched"));
  EXPECT_TRUE(is(next_phase(pb::MACHINE_STATE_CONFIGURING, "Launched"), A::upsert, "Registered"));
  EXPECT_TRUE(is(next_phase(pb::MACHINE_STATE_CONFIGURED, "Registered"), A::upsert, "Ready"));
  EXPECT_TRUE(is(next_phase(pb::MACHINE_STATE_DRAINING, "Ready"), A::upsert, "Draining"));
  EXPECT_TRUE(is(next_phase(pb::MACHINE_STATE_IDLE, "Draining"), A::remove, "Drained"))
      << "Idle after Draining is Drained, and the UpcomingNode goes";
  EXPECT_TRUE(is(next_phase(pb::MACHINE_STATE_FAILED, "Ready"), A::upsert, "Failed"));
  EXPECT_EQ(next_phase(pb::MACHINE_STATE_DELETING, "Ready").what, A::remove);
  EXPECT_EQ(next_phase(pb::MACHINE_STATE_UNSPECIFIED, "Ready").what, A::ignore);
}

TEST(bigfleet_node_state, names_and_objects) {
  EXPECT_EQ(upcoming_node_name("m-123"), "m-123");
  const auto hashed = upcoming_node_name("Machine_ABC");
  EXPECT_EQ(hashed.substr(0, 2), "m-");
  EXPECT_EQ(hashed.size(), 42u);
  EXPECT_EQ(available_capacity_name("available:gpu-a100"), "ac-" + sha256_hex("gpu-a100"));
  pb::AvailableCapacityUpdate a;
  a.set_supersedes_key("available:gpu|a100:zone/b");
  a.set_available_count(3);
  EXPECT_EQ(available_capacity_spec(a).rfind(R"({"fingerprint":"gpu|a100:zone/b","availability":"None","availableCount":3,)", 0), 0u)
      << "the fingerprint the name hashes round-trips through the spec: " << available_capacity_spec(a);
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

  pb::NodeStateUpdate u;
  u.set_machine_id("m-1");
  (*u.mutable_labels())["b"] = "2";
  (*u.mutable_labels())["a"] = "1";
  (*u.mutable_resources()->mutable_resources())["cpu"] = "16";
  auto* t = u.add_taints();
  t->set_key("bigfleet.lucy.sh/upcoming");
  t->set_effect("NoSchedule");
  EXPECT_EQ(upcoming_node_spec(u), R"({"labels":{"a":"1","b":"2"},"resources":{"cpu":"16"},"taints":[{"key":"bigfleet.lucy.sh/upcoming","effect":"NoSchedule"}]})");
  u.set_node_name("node-1");
  EXPECT_EQ(upcoming_node_status(u, "Ready"), R"({"phase":"Ready","nodeRef":{"name":"node-1"},"lastError":""})");
}

}  // namespace
}  // namespace headroom::bigfleet

// ---- the mailbox policies of the shard flow ----

#include <atomic>
#include <thread>

#include "adapters/bigfleet/shard_stream.hpp"
#include "runtime/mailbox/keyed_coalescer.hpp"

namespace headroom::bigfleet {
namespace {

using actors::bigfleet::build_rollup;  // the rollup actor's model (actors/bigfleet/model.hpp)
using actors::bigfleet::encode_deterministic;

pb::ClusterCapacityNeeds rollup_at(int64_t t) {
  pb::ClusterCapacityNeeds r;
  r.set_cluster_id("c");
  r.set_timestamp_unix_nanos(t);
  return r;
}

TEST(bigfleet_send_queue, a_slow_stream_sends_only_the_newest_rollup) {
  send_queue q;
  std::atomic<bool> stop{false};
  // The writer is busy (a slow stream): three roll-ups are offered before it asks again.
  for (int64_t t = 1; t <= 3; ++t)
    q.offer_rollup(rollup_at(t));
  auto m = q.next(stop);
  ASSERT_TRUE(m && m->has_rollup());
  EXPECT_EQ(m->rollup().timestamp_unix_nanos(), 3) << "a newer roll-up replaces an unsent one";
  EXPECT_EQ(q.rollup_stats()->coalesced.load(), 2u);
  // Nothing else is pending: the writer blocks until stopped.
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
    q.wake();
  });
  EXPECT_FALSE(q.next(stop).has_value());
  stopper.join();
}

TEST(bigfleet_send_queue, a_full_outbox_drops_the_newest_and_counts_it) {
  send_queue q(4);
  for (int i = 0; i < 6; ++i) {
    pb::OperatorMessage ack;
    ack.mutable_reclaim_ack()->set_instruction_id("rc-" + std::to_string(i));
    EXPECT_EQ(q.enqueue(std::move(ack)), i < 4) << i;
  }
  EXPECT_EQ(q.outbox_stats()->dropped.load(), 2u);
  q.offer_rollup(rollup_at(9));
  std::atomic<bool> stop{false};
  // The outbox goes first, in order (responses the shard is waiting for), then the roll-up.
  for (int i = 0; i < 4; ++i) {
    auto m = q.next(stop);
    ASSERT_TRUE(m && m->has_reclaim_ack());
    EXPECT_EQ(m->reclaim_ack().instruction_id(), "rc-" + std::to_string(i));
  }
  auto last = q.next(stop);
  ASSERT_TRUE(last && last->has_rollup());
}

TEST(bigfleet_send_queue, a_writer_blocked_in_next_wakes_for_a_new_rollup) {
  send_queue q;
  std::atomic<bool> stop{false};
  std::optional<pb::OperatorMessage> got;
  std::thread writer([&] { got = q.next(stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.offer_rollup(rollup_at(5));
  writer.join();
  ASSERT_TRUE(got && got->has_rollup());
  EXPECT_EQ(got->rollup().timestamp_unix_nanos(), 5);
}

TEST(bigfleet_node_state_flow, a_burst_for_one_machine_makes_one_write_of_the_latest_state) {
  // The shard_session's wiring: key = machine id, one write in flight per machine.
  int wakeups = 0;
  runtime::keyed_coalescer<std::string, pb::NodeStateUpdate> nodes("node_state", [&] { ++wakeups; });
  auto update = [](pb::MachineState s, int seq) {
    pb::NodeStateUpdate u;
    u.set_machine_id("m-1");
    u.set_state(s);
    u.set_last_error(std::to_string(seq));
    return u;
  };
  nodes.offer("m-1", update(pb::MACHINE_STATE_CREATING, 0));
  nodes.rearm();
  auto first = nodes.next();
  ASSERT_TRUE(first);  // its write is now in flight
  for (int i = 1; i <= 1000; ++i)
    nodes.offer("m-1", update(i % 2 ? pb::MACHINE_STATE_CONFIGURING : pb::MACHINE_STATE_CONFIGURED, i));
  EXPECT_FALSE(nodes.next()) << "nothing starts for m-1 while its write is in flight";
  nodes.done("m-1");
  auto second = nodes.next();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->second.last_error(), "1000") << "the latest state, once";
  EXPECT_EQ(second->second.state(), pb::MACHINE_STATE_CONFIGURED);
  nodes.done("m-1");
  EXPECT_FALSE(nodes.next()) << "1001 updates, two writes";
  EXPECT_EQ(nodes.stats()->coalesced.load(), 999u);
}

}  // namespace
}  // namespace headroom::bigfleet
