// event_book: client-go's Event semantics (series, per-object token bucket) as pure bookkeeping.

#include <gtest/gtest.h>
#include <simdjson.h>

#include "adapters/k8s/events.hpp"

namespace {

using namespace std::chrono_literals;
using headroom::k8s::event_book;
using headroom::k8s::event_record;
using verdict = event_book::verdict;

event_record ev(const std::string& name, const std::string& reason = "ScaledUp", const std::string& note = "1 → 2") {
  return {{"apps/v1", "Deployment", "ci", name, "uid-" + name}, "Normal", reason, "Scale", note};
}

const event_book::time_point t0{std::chrono::hours(1)};

TEST(event_book, a_repeat_within_the_window_joins_the_series_and_is_written_once_per_flush) {
  event_book b;
  auto first = b.observe(ev("web"), t0, 1000);
  ASSERT_EQ(first.what, verdict::create);
  EXPECT_EQ(first.ns, "ci");
  EXPECT_EQ(first.name.rfind("web.", 0), 0u) << first.name;
  EXPECT_TRUE(b.due_updates(t0).empty()) << "one occurrence has no series";
  b.created("ci", first.name, true);
  for (int i = 1; i <= 3; ++i) {
    auto again = b.observe(ev("web"), t0 + i * 10s, 1000 + i * 10);
    EXPECT_EQ(again.what, verdict::series);
    EXPECT_EQ(again.name, first.name);
  }
  auto due = b.due_updates(t0 + 31s);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].name, first.name);
  EXPECT_EQ(due[0].count, 4);
  EXPECT_DOUBLE_EQ(due[0].last_observed, 1030);
  EXPECT_TRUE(b.due_updates(t0 + 32s).empty()) << "in flight: not written twice";
  b.series_written("ci", first.name, true, false);
  EXPECT_TRUE(b.due_updates(t0 + 33s).empty()) << "nothing new since";
}

TEST(event_book, a_series_is_not_written_before_its_create_came_back) {
  event_book b;
  auto first = b.observe(ev("web"), t0, 1000);
  b.observe(ev("web"), t0 + 1s, 1001);
  EXPECT_TRUE(b.due_updates(t0 + 2s).empty());
  b.created("ci", first.name, true);
  auto due = b.due_updates(t0 + 3s);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].count, 2);
}

TEST(event_book, a_different_note_reason_or_object_is_a_new_event) {
  event_book b;
  EXPECT_EQ(b.observe(ev("web"), t0, 1).what, verdict::create);
  EXPECT_EQ(b.observe(ev("web", "ScaledDown"), t0, 1).what, verdict::create);
  EXPECT_EQ(b.observe(ev("web", "ScaledUp", "2 → 3"), t0, 1).what, verdict::create);
  EXPECT_EQ(b.observe(ev("api"), t0, 1).what, verdict::create);
  EXPECT_EQ(b.observe(ev("web"), t0, 1).what, verdict::series);
}

TEST(event_book, after_the_window_a_repeat_is_a_new_event_and_quiet_series_are_forgotten) {
  event_book b;
  auto first = b.observe(ev("web"), t0, 1);
  b.created("ci", first.name, true);
  b.observe(ev("web"), t0 + 1s, 2);
  auto due = b.due_updates(t0 + 7min);  // quiet for longer than 6 min: its last count, then gone
  ASSERT_EQ(due.size(), 1u);
  b.series_written("ci", first.name, true, false);
  b.due_updates(t0 + 7min + 1s);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.observe(ev("web"), t0 + 8min, 3).what, verdict::create);
}

TEST(event_book, each_object_has_a_burst_of_25_new_events_then_one_per_5_minutes) {
  event_book b;
  int created = 0;
  for (int i = 0; i < 40; ++i)
    created += b.observe(ev("flappy", "R", "note " + std::to_string(i)), t0, 1).what == verdict::create;
  EXPECT_EQ(created, 25);
  EXPECT_EQ(b.observe(ev("flappy", "R", "note 0"), t0 + 1s, 2).what, verdict::series) << "repeats still join, for free";
  EXPECT_EQ(b.observe(ev("other"), t0, 1).what, verdict::create) << "another object has its own bucket";
  EXPECT_EQ(b.observe(ev("flappy", "R", "new"), t0 + 4min, 1).what, verdict::rate_limited);
  EXPECT_EQ(b.observe(ev("flappy", "R", "new"), t0 + 5min, 1).what, verdict::create);
  EXPECT_EQ(b.observe(ev("flappy", "R", "newer"), t0 + 5min, 1).what, verdict::rate_limited);
}

TEST(event_book, a_failed_create_or_an_expired_event_starts_again) {
  event_book b;
  auto first = b.observe(ev("web"), t0, 1);
  b.created("ci", first.name, false);
  auto second = b.observe(ev("web"), t0 + 1s, 2);
  EXPECT_EQ(second.what, verdict::create);
  b.created("ci", second.name, true);
  b.observe(ev("web"), t0 + 2s, 3);
  auto due = b.due_updates(t0 + 3s);
  ASSERT_EQ(due.size(), 1u);
  b.series_written("ci", second.name, false, /*gone=*/true);  // the API server expired it (TTL)
  EXPECT_EQ(b.observe(ev("web"), t0 + 4s, 4).what, verdict::create);
}

TEST(event_book, a_failed_series_write_is_written_again) {
  event_book b;
  auto first = b.observe(ev("web"), t0, 1);
  b.created("ci", first.name, true);
  b.observe(ev("web"), t0 + 1s, 2);
  ASSERT_EQ(b.due_updates(t0 + 2s).size(), 1u);
  b.series_written("ci", first.name, false, false);
  auto again = b.due_updates(t0 + 3s);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].count, 2);
}

TEST(event_book, the_oldest_series_is_forgotten_beyond_the_cap) {
  event_book::options o;
  o.max_series = 3;
  event_book b{o};
  for (const char* n : {"a", "b", "c", "d"})
    b.observe(ev(n), t0, 1);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b.observe(ev("a"), t0, 1).what, verdict::create);
  EXPECT_EQ(b.observe(ev("d"), t0, 1).what, verdict::series);
}

TEST(encode_event, is_an_events_k8s_io_v1_event_within_the_api_limits) {
  event_record e{{"v1", "Node", "", "node-1", ""}, "Warning", std::string(200, 'R'), "Drain",
                 std::string(1021, 'x') + "ééé"};  // 1027 bytes: cut before the character byte 1024 splits
  const auto json = headroom::k8s::encode_event(e, "node-1.abc", 1700000000.25, "headroom.dev/headroom", "pod-0");
  simdjson::dom::parser p;
  auto doc = p.parse(json).value();
  EXPECT_EQ(std::string_view{doc["apiVersion"]}, "events.k8s.io/v1");
  EXPECT_EQ(std::string_view{doc["metadata"]["namespace"]}, "default") << "a cluster-scoped object's Events";
  EXPECT_EQ(std::string_view{doc["eventTime"]}, "2023-11-14T22:13:20.250000Z");
  EXPECT_EQ(std::string_view{doc["reason"]}.size(), 128u);
  EXPECT_EQ(std::string_view{doc["note"]}.size(), 1023u);
  EXPECT_EQ(std::string_view{doc["regarding"]["kind"]}, "Node");
  EXPECT_TRUE(doc["regarding"]["namespace"].error() == simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(headroom::k8s::encode_series_patch(3, 1700000000.5),
            R"({"series":{"count":3,"lastObservedTime":"2023-11-14T22:13:20.500000Z"}})");
}

}  // namespace
