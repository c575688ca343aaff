// A Queue's status as headroom writes it (adapters/k8s/queue.hpp): the whole status in one JSON
// Patch, with the Active condition per the API conventions; read back with simdjson.

#include <gtest/gtest.h>
#include <simdjson.h>

#include "adapters/k8s/queue.hpp"

namespace headroom::k8s {
namespace {

TEST(queue_status, the_patch_replaces_the_whole_status_with_its_active_condition) {
  queue_status s;
  s.allocated = {{"cpu", 1500}, {"memory", 1073741824}};
  s.reserved = {{"cpu", 0}};
  s.gated_pods = 3;
  s.observed_generation = 7;
  s.active_since = "2026-11-26T07:00:00Z";
  simdjson::dom::parser p;
  auto op = p.parse(encode_queue_status_patch(s)).at(0);
  EXPECT_EQ(std::string_view(op["op"]), "add");
  EXPECT_EQ(std::string_view(op["path"]), "/status");
  auto v = op["value"];
  EXPECT_EQ(std::string_view(v["allocated"]["cpu"]), "1500m");
  EXPECT_EQ(std::string_view(v["allocated"]["memory"]), "1073741824");
  EXPECT_EQ(int64_t(v["gatedPods"]), 3);
  EXPECT_EQ(int64_t(v["observedGeneration"]), 7);
  auto c = v["conditions"].at(0);
  EXPECT_EQ(std::string_view(c["type"]), "Active");
  EXPECT_EQ(std::string_view(c["status"]), "True");
  EXPECT_EQ(std::string_view(c["reason"]), "Admitting");
  EXPECT_EQ(int64_t(c["observedGeneration"]), 7);
  EXPECT_EQ(std::string_view(c["lastTransitionTime"]), "2026-11-26T07:00:00Z");
}

TEST(queue_status, an_unreadable_queue_says_why_escaped) {
  queue_status s;
  s.active = false;
  s.active_reason = "InvalidSpec";
  s.active_message = "spec.capacity.cpu: \"lots\" is not a quantity\n";
  simdjson::dom::parser p;
  auto c = p.parse(encode_queue_status_patch(s)).at(0)["value"]["conditions"].at(0);
  EXPECT_EQ(std::string_view(c["status"]), "False");
  EXPECT_EQ(std::string_view(c["reason"]), "InvalidSpec");
  EXPECT_EQ(std::string_view(c["message"]), s.active_message);
}

}  // namespace
}  // namespace headroom::k8s
