#include "adapters/k8s/object_cache.hpp"

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

// A bucket is a small vector up to 16 objects and a hash set beyond; both hold the same answers.
TEST(store, large_and_small_buckets_answer_alike) {
  store<pod> s;
  s.add_default_indexes();
  for (int i = 0; i < 40; ++i)
    s.put(make("ci", "p-" + std::to_string(i), {{"pool", "a"}, {"i", std::to_string(i)}}));
  EXPECT_EQ(s.by_index("label", "pool=a").size(), 40u);
  EXPECT_EQ(s.by_index("namespace", "ci").size(), 40u);
  for (int i = 0; i < 40; ++i)  // replacing keeps one entry per object
    s.put(make("ci", "p-" + std::to_string(i), {{"pool", "a"}, {"i", std::to_string(i)}}));
  EXPECT_EQ(s.by_index("label", "pool=a").size(), 40u);
  for (int i = 0; i < 35; ++i)
    s.erase("ci/p-" + std::to_string(i));
  EXPECT_EQ(names(s.by_index("label", "pool=a")), (std::vector<std::string>{"p-35", "p-36", "p-37", "p-38", "p-39"}));
  EXPECT_EQ(names(s.by_index("label", "i=37")), (std::vector<std::string>{"p-37"}));
  EXPECT_TRUE(s.by_index("label", "i=3").empty());
  for (int i = 0; i < 10; ++i)  // small again, then growing past the limit once more
    s.put(make("ci", "q-" + std::to_string(i), {{"pool", "a"}}));
  for (int i = 35; i < 38; ++i)
    s.erase("ci/p-" + std::to_string(i));
  EXPECT_EQ(names(s.by_index("label", "pool=a")),
            (std::vector<std::string>{"p-38", "p-39", "q-0", "q-1", "q-2", "q-3", "q-4", "q-5", "q-6", "q-7", "q-8", "q-9"}));
}

// One writer and several readers at once (the informer's I/O thread and the actors): every read
// sees whole objects that match the index asked for. CI also runs it under ASan (unit-asan).
TEST(store, readers_and_a_writer_at_once) {
  store<pod> s;
  s.add_default_indexes();
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      while (!done) {
        for (const auto& p : s.by_index("namespace", "ci"))
          wrong += p->meta.ns != "ci";
        for (const auto& p : s.by_index("label", "gen=7"))
          wrong += *p->meta.label("gen") != "7";
        wrong += s.list().size() > 100;
        ++reads;
        std::this_thread::yield();  // readers that never pause would starve the writer's lock
      }
    });
  while (reads < 3)  // the readers are running before the first write
    std::this_thread::yield();
  for (int i = 0; i < 2000; ++i) {
    s.put(make("ci", "p-" + std::to_string(i % 100), {{"gen", std::to_string(i % 13)}}));
    if (i % 7 == 0)
      s.erase("ci/p-" + std::to_string((i / 7) % 100));
  }
  done = true;
  for (auto& t : readers)
    t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(reads.load(), 3);
  EXPECT_LE(s.size(), 100u);
  EXPECT_EQ(s.by_index("namespace", "ci").size(), s.size());
  size_t labelled = 0;
  for (int g = 0; g < 13; ++g)
    labelled += s.by_index("label", "gen=" + std::to_string(g)).size();
  EXPECT_EQ(labelled, s.size()) << "each pod is in exactly its own label bucket";
}
