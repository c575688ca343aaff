#include "runtime/mailbox/bounded_fifo.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "unit/runtime/mailbox/wake_probe.hpp"

using headroom::runtime::bounded_fifo;
using headroom::testing::wake_probe;

// A full queue refuses the newest item and counts it; items already queued are kept in order.
TEST(bounded_fifo, full_queue_drops_the_newest) {
  wake_probe probe;
  bounded_fifo<int> fifo{"test/fifo", probe.waker(), 4};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(fifo.push(i), i < 4);
  EXPECT_EQ(fifo.stats()->dropped.load(), 2u);
  EXPECT_EQ(fifo.stats()->depth.load(), 4);
  ASSERT_TRUE(probe.wait());
  EXPECT_EQ(fifo.consume(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(fifo.push(9));  // room again
}

TEST(bounded_fifo, default_capacity_is_256) {
  wake_probe probe;
  bounded_fifo<int> fifo{"test/fifo", probe.waker()};
  EXPECT_EQ(fifo.capacity(), 256u);
}

// A batch smaller than the backlog re-wakes the consumer so nothing is stranded.
TEST(bounded_fifo, partial_batch_rewakes_the_consumer) {
  wake_probe probe;
  bounded_fifo<int> fifo{"test/fifo", probe.waker(), 16};
  for (int i = 0; i < 10; ++i)
    fifo.push(i);
  ASSERT_TRUE(probe.wait());
  EXPECT_EQ(fifo.consume(4).size(), 4u);
  EXPECT_EQ(probe.outstanding(), 1u);
  ASSERT_TRUE(probe.wait());
  EXPECT_EQ(fifo.consume(64).size(), 6u);
  EXPECT_EQ(probe.outstanding(), 0u);
}

// Concurrent producers: per-producer order survives, accepted + dropped = offered, one wake-up.
TEST(bounded_fifo, concurrent_producers_keep_order_and_account_every_item) {
  constexpr int producers = 4;
  constexpr int per_producer = 50'000;
  wake_probe probe;
  bounded_fifo<std::pair<int, int>> fifo{"test/fifo", probe.waker(), 64};
  std::vector<int> last(producers, -1);
  uint64_t received = 0;
  std::thread consumer([&] {
    while (probe.wait())
      for (auto& [p, i] : fifo.consume(16)) {
        EXPECT_GT(i, last[p]);
        last[p] = i;
        ++received;
      }
  });
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (int i = 0; i < per_producer; ++i)
        fifo.push({p, i});
    });
  for (auto& t : threads)
    t.join();
  while (probe.outstanding() > 0)
    std::this_thread::yield();
  probe.stop();
  consumer.join();
  const auto& s = *fifo.stats();
  EXPECT_LE(probe.max_outstanding(), 1u);
  EXPECT_EQ(s.accepted.load() + s.dropped.load(), static_cast<uint64_t>(producers * per_producer));
  EXPECT_EQ(s.delivered.load(), received);
  EXPECT_EQ(s.accepted.load(), received);
  EXPECT_EQ(s.depth.load(), 0);
}
