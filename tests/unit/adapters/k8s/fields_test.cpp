// One fact read from an API server's answer (adapters/k8s/fields.hpp): the value when it is there,
// the empty answer for anything else, malformed or hostile bodies included.
#include "adapters/k8s/fields.hpp"

#include <gtest/gtest.h>

#include <string>

namespace headroom::k8s {
namespace {

TEST(fields, a_string_at_a_path) {
  const std::string pod = R"({"metadata":{"name":"p","uid":"0f3c"},"status":{"phase":"Running","nodeRef":{"name":"n1"}}})";
  EXPECT_EQ(uid_of(pod), "0f3c");
  EXPECT_EQ(string_at(pod, {"status", "phase"}), "Running");
  EXPECT_EQ(string_at(pod, {"status", "nodeRef", "name"}), "n1");
  EXPECT_EQ(string_at(pod, {"status", "nodeRef"}), "") << "an object is not a string";
  EXPECT_EQ(string_at(pod, {"status", "missing"}), "");
  EXPECT_EQ(string_at(pod, {"metadata", "name", "deeper"}), "") << "a string has no keys";
}

TEST(fields, an_integer_at_a_path) {
  EXPECT_EQ(int_at(R"({"value":1000})", {"value"}), 1000);
  EXPECT_EQ(int_at(R"({"value":-5})", {"value"}), -5);
  EXPECT_EQ(int_at(R"({"value":"1000"})", {"value"}), std::nullopt) << "a string is not an integer";
  EXPECT_EQ(int_at(R"({"value":1.5})", {"value"}), std::nullopt);
  EXPECT_EQ(int_at(R"({})", {"value"}), std::nullopt);
}

TEST(fields, names_and_keys_of_a_list) {
  const std::string list = R"({"items":[{"metadata":{"name":"a","namespace":"x"}},{"metadata":{}},{"metadata":{"name":"b"}}]})";
  EXPECT_EQ(item_names(list), (std::vector<std::string>{"a", "b"}));
  const auto keys = item_keys(list);
  ASSERT_TRUE(keys);
  ASSERT_EQ(keys->size(), 1u) << "only items with both a namespace and a name";
  EXPECT_EQ((*keys)[0].ns, "x");
  EXPECT_EQ((*keys)[0].name, "a");
  EXPECT_FALSE(item_keys(R"({"kind":"Status","code":403})")) << "no items: not a list";
  EXPECT_TRUE(item_keys(R"({"items":[]})")->empty());
}

TEST(fields, names_of_a_lists_items_by_one_label) {
  const std::string list = R"({"items":[)"
                           R"({"metadata":{"name":"mine","labels":{"i":"x","o":"true"}}},)"
                           R"({"metadata":{"name":"theirs","labels":{"i":"y"}}},)"
                           R"({"metadata":{"name":"old","labels":{"o":"true"}}},)"
                           R"({"metadata":{"name":"bare"}},)"
                           R"({"metadata":{"name":"odd","labels":{"i":7}}},)"
                           R"({"metadata":{"labels":{"i":"x"}}}]})";
  EXPECT_EQ(item_names_labelled(list, "i", "x"), (std::vector<std::string>{"mine"}));
  EXPECT_EQ(item_names_labelled(list, "i", "y"), (std::vector<std::string>{"theirs"}));
  EXPECT_EQ(item_names_labelled(list, "i", ""), (std::vector<std::string>{"old", "bare", "odd"}))
      << "no label (or none a string): the empty value";
}

// ARC makes a new EphemeralRunnerSet (a generated name) when its AutoscalingRunnerSet's runner
// spec changes, and deletes the old one once its runners are gone: the newest live one is scaled.
TEST(fields, the_newest_live_item_and_its_patch_id) {
  const std::string list = R"({"items":[)"
                           R"({"metadata":{"name":"arc-old","creationTimestamp":"2026-11-28T10:00:00Z"},"spec":{"patchID":9}},)"
                           R"({"metadata":{"name":"arc-new","creationTimestamp":"2026-11-28T11:00:00Z"},"spec":{"patchID":4}},)"
                           R"({"metadata":{"name":"arc-going","creationTimestamp":"2026-11-28T12:00:00Z",)"
                           R"("deletionTimestamp":"2026-11-28T12:01:00Z"},"spec":{"patchID":2}},)"
                           R"({"metadata":{"creationTimestamp":"2026-11-28T13:00:00Z"}}]})";
  const auto n = newest_live_item(list);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->name, "arc-new");
  EXPECT_EQ(n->patch_id, 4);
  const auto bare = newest_live_item(R"({"items":[{"metadata":{"name":"x"},"spec":{"patchID":"7"}}]})");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->patch_id, 0) << "a patchID not an integer counts as none";
  EXPECT_FALSE(newest_live_item(R"({"items":[]})"));
}

TEST(fields, a_scale_sets_session_and_since_when_it_is_open) {
  const auto s = scale_set_session_of(
      R"({"status":{"session":"abc","conditions":[{"type":"PairsPlaced","lastTransitionTime":"x"},)"
      R"({"type":"SessionOpen","status":"True","lastTransitionTime":"2026-11-28T10:00:00Z"}]}})");
  EXPECT_EQ(s.session, "abc");
  EXPECT_EQ(s.open_since, "2026-11-28T10:00:00Z");
  EXPECT_EQ(scale_set_session_of(R"({"status":{"session":"abc"}})").open_since, "");
  EXPECT_EQ(scale_set_session_of(R"({"status":{}})").session, "");
}

TEST(fields, malformed_and_hostile_bodies_give_the_empty_answer) {
  for (const std::string& bad : std::vector<std::string>{"", "null", "[]", "{", R"({"metadata":)", "\xff\xfe", R"({"items":{"a":1}})",
                                std::string(100000, '['), R"({"metadata":{"uid":123}})"}) {
    EXPECT_EQ(uid_of(bad), "") << bad.substr(0, 20);
    EXPECT_EQ(int_at(bad, {"value"}), std::nullopt);
    EXPECT_TRUE(item_names(bad).empty());
    EXPECT_TRUE(item_names_labelled(bad, "a", "").empty());
    EXPECT_FALSE(item_keys(bad));
    EXPECT_FALSE(newest_live_item(bad));
    EXPECT_EQ(scale_set_session_of(bad).session, "");
  }
}

}  // namespace
}  // namespace headroom::k8s
