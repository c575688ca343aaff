#include "actors/gates/model.hpp"

#include <gtest/gtest.h>

#include "adapters/k8s/time.hpp"

// Designated initializers name only what a case needs; the rest keep their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace headroom;
using namespace headroom::actors::gates;

namespace {

const std::string gate{"headroom.dev/queue-allocation-gate"};
const wall_time t0 = parse_wall("2026-11-23T12:00:00Z").value();

struct pod_spec_in {
  std::string name;
  int64_t cpu_milli = 1000;
  bool gated = true, bound = false, opted = true;
  std::string phase = "Pending";
  int32_t priority = 0;
  std::string created = "2026-11-23T11:00:00Z";
  std::string ungated_at;
  std::vector<std::string> other_gates;
  std::string gang, gang_size;
};

std::shared_ptr<const k8s::pod> make(const pod_spec_in& in) {
  k8s::pod p;
  p.meta.name = in.name;
  p.meta.ns = "ci";
  p.meta.uid = "uid-" + in.name;
  p.meta.resource_version = "1";
  p.meta.created = k8s::parse_rfc3339(in.created);
  k8s::string_pairs ann;
  if (in.opted)
    ann.emplace_back(gate, "true");
  if (!in.ungated_at.empty())
    ann.emplace_back("headroom.dev/ungated-at", in.ungated_at);
  if (!in.gang.empty()) {
    ann.emplace_back("headroom.dev/gang", in.gang);
    ann.emplace_back("headroom.dev/gang-size", in.gang_size);
  }
  p.meta.annotations = ann;
  k8s::pod_spec spec;
  spec.scheduling_gates = in.other_gates;
  if (in.gated)
    spec.scheduling_gates.push_back(gate);
  spec.requests.cpu_milli = in.cpu_milli;
  p.spec = spec;
  p.priority = in.priority;
  p.phase = in.phase;
  if (in.bound)
    p.node_name = "node-1";
  return std::make_shared<const k8s::pod>(std::move(p));
}

queue_rules queue(int64_t cpu_milli, bool strict = false) {
  queue_rules q;
  q.spec.name = "q";
  q.spec.capacity = {{"cpu", cpu_milli}};
  q.spec.strict_fifo = strict;
  q.reservation_timeout = std::chrono::minutes{10};
  return q;
}

std::vector<std::string> names(const queue_plan& p) {
  std::vector<std::string> out;
  for (const auto& u : p.ungates)
    out.push_back(u.name);
  return out;
}

}  // namespace

TEST(gates_model, ungates_by_priority_then_age_while_allocated_plus_reserved_fits) {
  std::vector<std::shared_ptr<const k8s::pod>> pods = {
      make({.name = "running", .gated = false, .bound = true, .phase = "Running"}),
      make({.name = "old", .created = "2026-11-23T10:00:00Z"}),
      make({.name = "new", .created = "2026-11-23T11:30:00Z"}),
      make({.name = "urgent", .priority = 100, .created = "2026-11-23T11:59:00Z"}),
  };
  auto plan = plan_queue(queue(3000), pods, t0, {});
  EXPECT_EQ(names(plan), (std::vector<std::string>{"urgent", "old"}));
  EXPECT_EQ(plan.status.allocated, (k8s::resource_amounts{{"cpu", 1000}}));
  EXPECT_EQ(plan.status.reserved, (k8s::resource_amounts{{"cpu", 2000}}));
  EXPECT_EQ(plan.status.waiting, (k8s::resource_amounts{{"cpu", 1000}}));
  EXPECT_EQ(plan.status.gated_pods, 1);
  ASSERT_EQ(plan.conditions.size(), 1u);
  EXPECT_EQ(plan.conditions[0].name, "new");
  EXPECT_EQ(plan.conditions[0].reason, "QueueFull");
  EXPECT_NE(plan.conditions[0].message.find("cpu=1"), std::string::npos) << plan.conditions[0].message;
}

TEST(gates_model, reserved_is_recomputed_from_the_pods_and_in_flight_pods_count) {
  // An ungated, unbound pod holds room; one whose ungating is in flight (still gated in the
  // cache) holds it too and is not ungated again; finished pods hold nothing.
  std::vector<std::shared_ptr<const k8s::pod>> pods = {
      make({.name = "reserved", .gated = false, .ungated_at = "2026-11-23T11:58:00Z"}),
      make({.name = "flying"}),
      make({.name = "done", .gated = false, .bound = true, .phase = "Succeeded"}),
      make({.name = "waiting"}),
  };
  auto plan = plan_queue(queue(2000), pods, t0, {"ci/flying"});
  EXPECT_TRUE(plan.ungates.empty());
  EXPECT_EQ(plan.status.reserved, (k8s::resource_amounts{{"cpu", 2000}}));
  EXPECT_EQ(plan.status.reserved_pods, 2);
  EXPECT_EQ(plan.status.gated_pods, 1);
  // The same pods without the in-flight mark: the flying pod is the one ungated (it is older by name).
  auto again = plan_queue(queue(2000), pods, t0, {});
  EXPECT_EQ(names(again).size(), 1u);
}

TEST(gates_model, a_reservation_expires_and_frees_its_room) {
  std::vector<std::shared_ptr<const k8s::pod>> pods = {
      make({.name = "stuck", .gated = false, .ungated_at = "2026-11-23T11:45:00Z"}),  // 15 min ago
      make({.name = "next"}),
  };
  auto plan = plan_queue(queue(1000), pods, t0, {});
  EXPECT_EQ(plan.expired, (std::vector<std::string>{"ci/stuck"}));
  EXPECT_EQ(names(plan), (std::vector<std::string>{"next"}));
  // Not yet expired: it holds the room, and the next expiry is when it will.
  pods[0] = make({.name = "stuck", .gated = false, .ungated_at = "2026-11-23T11:55:00Z"});
  plan = plan_queue(queue(1000), pods, t0, {});
  EXPECT_TRUE(plan.ungates.empty());
  ASSERT_TRUE(plan.next_expiry.has_value());
  EXPECT_EQ(format_wall(*plan.next_expiry), "2026-11-23T12:05:00.000Z");
}

TEST(gates_model, other_gates_too_big_pods_and_strict_fifo) {
  std::vector<std::shared_ptr<const k8s::pod>> pods = {
      make({.name = "a-held", .created = "2026-11-23T09:00:00Z", .other_gates = {"example.com/x"}}),
      make({.name = "b-huge", .cpu_milli = 8000, .created = "2026-11-23T09:30:00Z"}),
      make({.name = "c-big", .cpu_milli = 1200, .created = "2026-11-23T10:00:00Z"}),
      make({.name = "running", .cpu_milli = 500, .gated = false, .bound = true, .phase = "Running"}),
      make({.name = "d-small", .cpu_milli = 500, .created = "2026-11-23T10:30:00Z"}),
  };
  auto best = plan_queue(queue(1500), pods, t0, {});
  EXPECT_EQ(names(best), (std::vector<std::string>{"d-small"})) << "BestEffortFIFO: a smaller pod passes";
  bool too_small = false;
  for (const auto& c : best.conditions)
    too_small |= c.name == "b-huge" && c.reason == "QueueTooSmall";
  EXPECT_TRUE(too_small);
  int held = 0;
  for (const auto& c : best.conditions)
    if (c.name == "a-held") {
      ++held;
      EXPECT_EQ(c.status, "False");
      EXPECT_EQ(c.reason, "OtherGates") << "a pod another gate holds is not admitted, and says why";
      EXPECT_NE(c.message.find("example.com/x"), std::string::npos) << c.message;
    }
  EXPECT_EQ(held, 1);
  EXPECT_EQ(best.status.gated_pods, 3) << "a-held, b-huge and c-big carry the queue's gate";
  auto strict = plan_queue(queue(1500, true), pods, t0, {});
  EXPECT_TRUE(strict.ungates.empty()) << "StrictFIFO: nothing passes c-big, which waits (b-huge can never fit and does not block)";
}

// #40: a pod that also carried another controller's gate kept the QueueNotFound condition it got
// before its queue existed, and the queue counted it nowhere.
TEST(gates_model, a_pod_held_by_another_gate_loses_a_stale_queue_not_found_condition) {
  k8s::pod p = *make({.name = "held", .other_gates = {"example.com/other"}});
  const auto stale = queue_not_found(p, "q");
  p.conditions = std::vector<k8s::condition>{{std::string{admitted_condition}, stale.status, stale.reason, stale.message}};
  auto plan = plan_queue(queue(1000), {std::make_shared<const k8s::pod>(p)}, t0, {});
  ASSERT_EQ(plan.conditions.size(), 1u);
  EXPECT_EQ(plan.conditions[0].reason, "OtherGates");
  EXPECT_EQ(plan.status.gated_pods, 1);
  EXPECT_TRUE(plan.ungates.empty());
  const auto& c = plan.conditions[0];
  p.conditions = std::vector<k8s::condition>{{std::string{admitted_condition}, c.status, c.reason, c.message}};
  EXPECT_TRUE(plan_queue(queue(1000), {std::make_shared<const k8s::pod>(p)}, t0, {}).conditions.empty()) << "written once";
}

TEST(gates_model, an_unchanged_condition_is_not_written_again) {
  k8s::pod p = *make({.name = "w"});
  auto running = make({.name = "r", .gated = false, .bound = true, .phase = "Running"});
  auto first = plan_queue(queue(1000), {running, std::make_shared<const k8s::pod>(p)}, t0, {});
  ASSERT_EQ(first.conditions.size(), 1u);
  const auto& c = first.conditions[0];
  p.conditions = std::vector<k8s::condition>{{std::string{admitted_condition}, c.status, c.reason, c.message}};
  auto second = plan_queue(queue(1000), {running, std::make_shared<const k8s::pod>(p)}, t0, {});
  EXPECT_TRUE(second.conditions.empty());
}

// Gang admission: all of a gang's gated members or none; an incomplete gang holds no room and
// holds nobody up; a gang that does not fit waits whole; members past its size go alone.
TEST(gates_model, a_gang_is_admitted_all_or_nothing_and_an_incomplete_one_holds_no_room) {
  auto member = [](const std::string& name, const std::string& created) {
    return make({.name = name, .created = created, .gang = "train", .gang_size = "3"});
  };
  // Two of three: neither is admitted, the pod behind them is.
  std::vector<std::shared_ptr<const k8s::pod>> pods = {member("w0", "2026-11-23T10:00:00Z"), member("w1", "2026-11-23T10:00:01Z"),
                                                       make({.name = "solo", .created = "2026-11-23T11:00:00Z"})};
  auto plan = plan_queue(queue(4000, true), pods, t0, {});
  EXPECT_EQ(names(plan), (std::vector<std::string>{"solo"})) << "an incomplete gang neither holds room nor blocks StrictFIFO";
  ASSERT_EQ(plan.conditions.size(), 2u);
  EXPECT_EQ(plan.conditions[0].reason, "GangIncomplete");
  EXPECT_NE(plan.conditions[0].message.find("has 2 of its 3 pods"), std::string::npos) << plan.conditions[0].message;
  EXPECT_EQ(plan.status.reserved, (k8s::resource_amounts{{"cpu", 1000}}));

  // The third arrives: all three at once.
  pods = {member("w0", "2026-11-23T10:00:00Z"), member("w1", "2026-11-23T10:00:01Z"), member("w2", "2026-11-23T10:00:02Z")};
  plan = plan_queue(queue(4000), pods, t0, {});
  EXPECT_EQ(names(plan), (std::vector<std::string>{"w0", "w1", "w2"}));

  // Room for two of three: none, and all say why (the gang's total).
  pods.push_back(make({.name = "busy", .cpu_milli = 2000, .gated = false, .bound = true, .phase = "Running"}));
  plan = plan_queue(queue(4000), pods, t0, {});
  EXPECT_TRUE(plan.ungates.empty());
  ASSERT_EQ(plan.conditions.size(), 3u);
  EXPECT_EQ(plan.conditions[0].reason, "QueueFull");
  EXPECT_NE(plan.conditions[0].message.find("gang train (3 pods) waits for cpu=3"), std::string::npos) << plan.conditions[0].message;
  // A gang larger than the queue can ever hold.
  plan = plan_queue(queue(2000), {member("w0", "2026-11-23T10:00:00Z"), member("w1", "2026-11-23T10:00:01Z"),
                                  member("w2", "2026-11-23T10:00:02Z")},
                    t0, {});
  EXPECT_TRUE(plan.ungates.empty());
  EXPECT_EQ(plan.conditions.at(0).reason, "QueueTooSmall");

  // Three admitted (one bound, two reserved): a fourth member is judged alone.
  pods = {make({.name = "w0", .gated = false, .bound = true, .phase = "Running", .gang = "train", .gang_size = "3"}),
          make({.name = "w1", .gated = false, .ungated_at = "2026-11-23T11:59:00Z", .gang = "train", .gang_size = "3"}),
          make({.name = "w2", .gated = false, .ungated_at = "2026-11-23T11:59:00Z", .gang = "train", .gang_size = "3"}),
          member("w3", "2026-11-23T11:00:00Z")};
  plan = plan_queue(queue(4000), pods, t0, {});
  EXPECT_EQ(names(plan), (std::vector<std::string>{"w3"}));
}

TEST(gates_model, a_gang_size_that_is_not_a_number_keeps_the_pod_gated_and_says_so) {
  auto plan = plan_queue(queue(4000), {make({.name = "w0", .gang = "train", .gang_size = "three"})}, t0, {});
  EXPECT_TRUE(plan.ungates.empty());
  ASSERT_EQ(plan.conditions.size(), 1u);
  EXPECT_EQ(plan.conditions[0].reason, "InvalidGang");
  EXPECT_NE(plan.conditions[0].message.find("headroom.dev/gang-size: expected a whole number"), std::string::npos);
  EXPECT_NE(plan.conditions[0].message.find("'three'"), std::string::npos);
}
