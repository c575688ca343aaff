#include "runtime/mailbox/coalescing_slot.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "unit/runtime/mailbox/wake_probe.hpp"

using headroom::runtime::coalescing_slot;
using headroom::testing::wake_probe;

// The consumer sees the newest value; older unconsumed ones are counted as coalesced, not lost.
TEST(coalescing_slot, newest_value_replaces_unconsumed_one) {
  wake_probe probe;
  coalescing_slot<int> slot{"test/slot", probe.waker()};
  slot.offer(7);
  slot.offer(5);
  slot.offer(3);
  EXPECT_EQ(probe.sent(), 1u);
  EXPECT_EQ(slot.stats()->depth.load(), 1);
  ASSERT_TRUE(probe.wait());
  auto v = slot.consume();
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, 3);
  EXPECT_FALSE(slot.consume().has_value());
  EXPECT_EQ(slot.stats()->coalesced.load(), 2u);
  EXPECT_EQ(slot.stats()->delivered.load(), 1u);
  EXPECT_EQ(slot.stats()->depth.load(), 0);
}

// take() outside a wake-up handler does not re-arm: the wake-up already sent stays the only one.
TEST(coalescing_slot, take_without_rearm_keeps_a_single_wakeup) {
  wake_probe probe;
  coalescing_slot<int> slot{"test/slot", probe.waker()};
  slot.offer(1);
  EXPECT_EQ(*slot.take(), 1);
  slot.offer(2);
  EXPECT_EQ(probe.sent(), 1u);  // still pending from the first offer
  ASSERT_TRUE(probe.wait());
  EXPECT_EQ(*slot.consume(), 2);
}

// Four producers racing one consumer: at most one wake-up outstanding, every offer accounted for,
// and after the producers stop the consumer ends with a value some producer offered last.
TEST(coalescing_slot, concurrent_producers_one_wakeup_and_full_accounting) {
  constexpr int producers = 4;
  constexpr int per_producer = 50'000;
  wake_probe probe;
  coalescing_slot<std::pair<int, int>> slot{"test/slot", probe.waker()};
  std::vector<int> last_seen(producers, -1);
  uint64_t consumed = 0;
  std::thread consumer([&] {
    while (probe.wait()) {
      if (auto v = slot.consume()) {
        ++consumed;
        // Per producer, values only move forward: a newer value never arrives before an older one.
        EXPECT_GT(v->second, last_seen[v->first]);
        last_seen[v->first] = v->second;
      }
    }
  });
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (int i = 0; i < per_producer; ++i)
        slot.offer({p, i});
    });
  for (auto& t : threads)
    t.join();
  // Let the consumer drain what is left, then stop it.
  while (probe.outstanding() > 0)
    std::this_thread::yield();
  probe.stop();
  consumer.join();
  if (auto rest = slot.take())
    last_seen[rest->first] = rest->second, ++consumed;

  const auto& s = *slot.stats();
  EXPECT_LE(probe.max_outstanding(), 1u);
  EXPECT_EQ(s.accepted.load(), static_cast<uint64_t>(producers * per_producer));
  EXPECT_EQ(s.delivered.load() + s.coalesced.load(), s.accepted.load());
  EXPECT_EQ(s.delivered.load(), consumed);
  bool some_last = false;
  for (int p = 0; p < producers; ++p)
    some_last = some_last || last_seen[p] == per_producer - 1;
  EXPECT_TRUE(some_last) << "the newest value of the last producer to finish must be delivered";
}
