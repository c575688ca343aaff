// The ScaleSet object's documents (actors/capacity/scale_set_status.hpp), read back with simdjson:
// what is known is written, what is not is left out, text is escaped, and the SessionOpen
// condition follows the session.

#include <gtest/gtest.h>
#include <simdjson.h>

#include "actors/capacity/capacity.hpp"
#include "actors/capacity/scale_set_status.hpp"

namespace headroom::actors::capacity {
namespace {

TEST(scale_set_status, the_object_has_no_spec_and_is_labelled_as_headroom_s) {
  simdjson::dom::parser p;
  auto doc = p.parse(scale_set_object("arc-runners", "linux"));
  EXPECT_EQ(std::string_view(doc["apiVersion"]), "headroom.dev/v1alpha1");
  EXPECT_EQ(std::string_view(doc["kind"]), "ScaleSet");
  EXPECT_EQ(std::string_view(doc["metadata"]["name"]), "linux");
  EXPECT_EQ(std::string_view(doc["metadata"]["namespace"]), "arc-runners");
  EXPECT_EQ(std::string_view(doc["metadata"]["labels"]["app.kubernetes.io/managed-by"]), "headroom");
  EXPECT_EQ(simdjson::dom::object(doc["spec"]).size(), 0u);
}

TEST(scale_set_status, the_object_carries_its_deployments_instance_label) {
  simdjson::dom::parser p;
  auto doc = p.parse(scale_set_object("arc-runners", "linux", "headroom-system.headroom"));
  EXPECT_EQ(std::string_view(doc["metadata"]["labels"]["headroom.dev/instance"]), "headroom-system.headroom");
  EXPECT_EQ(instance_label("headroom-system", "headroom"), "headroom-system.headroom");
  // A label value is at most 63 characters: long identities are cut and hashed, still distinct.
  const std::string ns(40, 'n'), a = instance_label(ns, std::string(40, 'a')), b = instance_label(ns, std::string(40, 'b'));
  EXPECT_LE(a.size(), 63u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, instance_label(ns, std::string(40, 'a')));
}

// #61: two installs without leader election, both under the default Lease name, removed each
// other's ScaleSet objects. Only a Lease scopes what an install owns.
TEST(scale_set_status, an_install_owns_objects_only_under_its_lease) {
  EXPECT_EQ(owned_instance(true, "headroom-system", "headroom"), "headroom-system.headroom");
  EXPECT_EQ(owned_instance(false, "kube-system", "headroom"), "") << "no Lease: nothing labelled, nothing swept";
}

TEST(scale_set_status, only_what_is_known_is_written) {
  scale_set_view v;
  v.session_since = "2026-11-26T07:00:00Z";
  simdjson::dom::parser p;
  auto status = p.parse(scale_set_status_patch(v, "2026-11-26T07:00:05Z"))["status"];
  EXPECT_TRUE(status["advertisedCapacity"].error()) << "no capacity before the monitor's first view";
  EXPECT_TRUE(status["assignedJobs"].error()) << "no statistics before the listener's first update";
  EXPECT_TRUE(status["lastPollTime"].error()) << "no poll yet";
  // Nor the session before the listener tells it: a restarted status actor must not write
  // "Opening" over the Open its predecessor wrote (it asks the listener, which answers).
  EXPECT_TRUE(status["session"].error());
  EXPECT_TRUE(status["conditions"].error());
  v.session = "Opening";
  status = p.parse(scale_set_status_patch(v, "2026-11-26T07:00:05Z"))["status"];
  EXPECT_EQ(std::string_view(status["session"]), "Opening");
  EXPECT_EQ(std::string_view(status["observedTime"]), "2026-11-26T07:00:05Z");
  auto c = status["conditions"].at(0);
  EXPECT_EQ(std::string_view(c["type"]), "SessionOpen");
  EXPECT_EQ(std::string_view(c["status"]), "False");
  EXPECT_EQ(std::string_view(c["reason"]), "Opening");
  EXPECT_EQ(std::string_view(c["lastTransitionTime"]), "2026-11-26T07:00:00Z");

  v.capacity = {3, 10, 2, 4, 2, 1, {}};
  v.capacity_known = true;
  v.stats.total_assigned_jobs = 5;
  v.stats.total_running_jobs = 1;
  v.scale_set_id = 42;
  v.stats_known = true;
  v.session = "Open";
  v.last_poll = "2026-11-26T07:00:04Z";
  status = p.parse(scale_set_status_patch(v, "2026-11-26T07:00:05Z"))["status"];
  EXPECT_EQ(int64_t(status["advertisedCapacity"]), 3);
  EXPECT_EQ(int64_t(status["maxRunners"]), 10);
  EXPECT_EQ(int64_t(status["desiredPairs"]), 2);
  EXPECT_EQ(int64_t(status["pairs"]), 4);
  EXPECT_EQ(int64_t(status["placedPairs"]), 2);
  EXPECT_EQ(int64_t(status["runnerPods"]), 1);
  EXPECT_EQ(int64_t(status["assignedJobs"]), 5);
  EXPECT_EQ(int64_t(status["runningJobs"]), 1);
  EXPECT_EQ(int64_t(status["scaleSetId"]), 42);
  EXPECT_EQ(std::string_view(status["lastPollTime"]), "2026-11-26T07:00:04Z");
  EXPECT_EQ(std::string_view(status["conditions"].at(0)["status"]), "True");
  EXPECT_EQ(std::string_view(status["conditions"].at(0)["reason"]), "SessionHeld");
}

// #61: the cause of a timed-out pair (the scheduler's words) stays on the object after the pods go.
TEST(scale_set_status, pairs_placed_says_why_the_last_pair_timed_out_until_one_is_placed) {
  scale_set_view v;
  v.session = "Open";
  v.capacity_known = true;
  v.pairs_since = "2026-11-26T07:01:00Z";
  v.capacity.unplaced = "not Running within 20000 ms; linux-ph-a-runner Unschedulable: 0/6 nodes are available";
  simdjson::dom::parser p;
  auto c = p.parse(scale_set_status_patch(v, "2026-11-26T07:01:05Z"))["status"]["conditions"].at(1);
  EXPECT_EQ(std::string_view(c["type"]), "PairsPlaced");
  EXPECT_EQ(std::string_view(c["status"]), "False");
  EXPECT_EQ(std::string_view(c["reason"]), "PlaceholderPairTimedOut");
  EXPECT_EQ(std::string_view(c["message"]), v.capacity.unplaced);
  EXPECT_EQ(std::string_view(c["lastTransitionTime"]), "2026-11-26T07:01:00Z");
  v.capacity.unplaced.clear();
  c = p.parse(scale_set_status_patch(v, "2026-11-26T07:01:05Z"))["status"]["conditions"].at(1);
  EXPECT_EQ(std::string_view(c["status"]), "True");
  EXPECT_EQ(std::string_view(c["reason"]), "Placed");
}

TEST(scale_set_status, a_message_from_the_service_is_escaped) {
  scale_set_view v;
  v.session = "Backoff";
  v.session_message = "server: 503 \"unavailable\"\n\tretry \\ later \x01";
  simdjson::dom::parser p;
  auto doc = p.parse(scale_set_status_patch(v, "2026-11-26T07:00:05Z"));
  ASSERT_FALSE(doc.error());
  EXPECT_EQ(std::string_view(doc["status"]["sessionMessage"]), v.session_message);
  auto c = doc["status"]["conditions"].at(0);
  EXPECT_EQ(std::string_view(c["reason"]), "ServiceUnavailable");
  EXPECT_EQ(std::string_view(c["message"]), v.session_message);
}

}  // namespace
}  // namespace headroom::actors::capacity
