#include "adapters/k8s/store.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "adapters/k8s/objects.hpp"

using headroom::k8s::owner_reference;
using headroom::k8s::pod;
using headroom::k8s::store;
using headroom::k8s::string_pairs;

namespace {

std::shared_ptr<const pod> make(const std::string& ns, const std::string& name, string_pairs labels,
                                const std::string& owner = "", const std::string& node = "") {
  pod p;
  p.meta.ns = ns;
  p.meta.name = name;
  p.meta.labels = std::move(labels);
  if (!owner.empty())
    p.meta.owners = std::vector<owner_reference>{{"apps/v1", "ReplicaSet", "rs", owner, true}};
  p.node_name = node;
  return std::make_shared<const pod>(std::move(p));
}

std::vector<std::string> names(const std::vector<std::shared_ptr<const pod>>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods)
    out.push_back(p->meta.name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// Replacing an object moves it between index buckets; erasing removes it from all of them; empty
// buckets go.
TEST(store, indexes_follow_replacements_and_deletions) {
  store<pod> s;
  s.add_default_indexes();
  s.add_index("node", [](const pod& p) { return std::vector<std::string>{p.node_name}; });
  EXPECT_EQ(s.put(make("ci", "a", {{"role", "runner"}}, "rs-1", "n1")), nullptr);
  EXPECT_EQ(s.put(make("ci", "b", {{"role", "runner"}}, "rs-1", "n2")), nullptr);
  EXPECT_EQ(s.put(make("other", "a", {{"role", "workflow"}})), nullptr);
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(names(s.by_index("namespace", "ci")), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(names(s.by_index("label", "role=runner")), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(names(s.by_index("owner", "rs-1")), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(names(s.by_index("node", "n1")), (std::vector<std::string>{"a"}));

  const auto old = s.put(make("ci", "a", {{"role", "workflow"}}, "", "n2"));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(*old->meta.label("role"), "runner") << "put returns the previous version";
  EXPECT_EQ(names(s.by_index("label", "role=runner")), (std::vector<std::string>{"b"}));
  EXPECT_EQ(s.by_index("label", "role=workflow").size(), 2u);
  EXPECT_EQ(names(s.by_index("owner", "rs-1")), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(s.by_index("node", "n1").empty());
  EXPECT_EQ(names(s.by_index("node", "n2")), (std::vector<std::string>{"a", "b"}));

  EXPECT_NE(s.erase("ci/b"), nullptr);
  EXPECT_EQ(s.erase("ci/b"), nullptr);
  EXPECT_TRUE(s.by_index("label", "role=runner").empty());
  EXPECT_TRUE(s.by_index("owner", "rs-1").empty());
  EXPECT_EQ(names(s.by_index("node", "n2")), (std::vector<std::string>{"a"}));
  EXPECT_EQ(s.get("ci/a")->node_name, "n2");
  EXPECT_EQ(s.get("ci/b"), nullptr);
  EXPECT_TRUE(s.by_index("no such index", "x").empty());
  auto keys = s.keys();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"ci/a", "other/a"}));
}

// One writer and several readers at once (the informer's I/O thread and the actors); CI also runs
// it under ASan (the unit-asan pass).
TEST(store, readers_and_a_writer_at_once) {
  store<pod> s;
  s.add_default_indexes();
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  std::atomic<size_t> seen{0};
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      while (!done) {
        for (const auto& p : s.by_index("namespace", "ci"))
          seen += p->meta.name.size() > 0;
        seen += s.list().size();
        std::this_thread::yield();  // readers that never pause would starve the writer's lock
      }
    });
  for (int i = 0; i < 2000; ++i) {
    s.put(make("ci", "p-" + std::to_string(i % 100), {{"gen", std::to_string(i)}}));
    if (i % 7 == 0)
      s.erase("ci/p-" + std::to_string((i / 7) % 100));
  }
  done = true;
  for (auto& t : readers)
    t.join();
  EXPECT_LE(s.size(), 100u);
  EXPECT_EQ(s.by_index("namespace", "ci").size(), s.size());
  size_t labelled = 0;
  for (const auto& p : s.list())
    labelled += s.by_index("label", "gen=" + *p->meta.label("gen")).size();
  EXPECT_EQ(labelled, s.size()) << "each pod is in exactly its own label bucket";
  EXPECT_GT(seen.load(), 0u);
}
