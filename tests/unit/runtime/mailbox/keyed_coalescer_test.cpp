#include "runtime/mailbox/keyed_coalescer.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "unit/runtime/mailbox/wake_probe.hpp"

using headroom::runtime::keyed_coalescer;
using headroom::testing::wake_probe;

// A burst for one key while its handler is in flight costs exactly one more run, with the latest.
TEST(keyed_coalescer, burst_for_one_key_reruns_once_with_the_latest) {
  wake_probe probe;
  keyed_coalescer<std::string, int> kc{"test/kc", probe.waker()};
  kc.offer("machine-a", 1);
  ASSERT_TRUE(probe.wait());
  kc.rearm();
  auto first = kc.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->second, 1);
  for (int i = 2; i <= 1000; ++i)
    kc.offer("machine-a", i);
  EXPECT_FALSE(kc.next()) << "a key in flight must not be handed out twice";
  kc.done("machine-a");
  ASSERT_TRUE(probe.wait());
  kc.rearm();
  auto second = kc.next();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->second, 1000);
  kc.done("machine-a");
  EXPECT_FALSE(kc.next());
  EXPECT_EQ(kc.tracked_keys(), 0u) << "an idle key is forgotten";
  EXPECT_EQ(kc.stats()->delivered.load(), 2u);
  EXPECT_EQ(kc.stats()->coalesced.load(), 998u);
}

// Keys are independent: each ready key is handed out once, in first-arrival order.
TEST(keyed_coalescer, keys_become_ready_in_arrival_order) {
  wake_probe probe;
  keyed_coalescer<int, int> kc{"test/kc", probe.waker()};
  kc.offer(3, 30);
  kc.offer(1, 10);
  kc.offer(3, 31);
  kc.offer(2, 20);
  std::vector<std::pair<int, int>> got;
  kc.rearm();
  while (auto w = kc.next())
    got.push_back(*w);
  EXPECT_EQ(got, (std::vector<std::pair<int, int>>{{3, 31}, {1, 10}, {2, 20}}));
  EXPECT_EQ(probe.sent(), 1u);
}

// More keys than the bound: the new key's value is refused and counted.
TEST(keyed_coalescer, new_key_beyond_the_bound_is_dropped) {
  wake_probe probe;
  keyed_coalescer<int, int> kc{"test/kc", probe.waker(), 2};
  EXPECT_TRUE(kc.offer(1, 1));
  EXPECT_TRUE(kc.offer(2, 2));
  EXPECT_FALSE(kc.offer(3, 3));
  EXPECT_TRUE(kc.offer(1, 11)) << "a tracked key still takes new values";
  EXPECT_EQ(kc.stats()->dropped.load(), 1u);
}

// Concurrent producers over 100 keys, handlers completing on other threads: never two handlers
// for one key, and the last value handled per key is the last value offered for it.
TEST(keyed_coalescer, concurrent_producers_one_in_flight_per_key_and_latest_wins) {
  constexpr int keys = 100;
  constexpr int producers = 4;  // producer p owns keys with key % producers == p
  constexpr int rounds = 2'000;
  wake_probe probe;
  keyed_coalescer<int, int> kc{"test/kc", probe.waker()};
  std::vector<std::atomic<int>> in_flight(keys);
  std::vector<int> last_handled(keys, -1);
  std::mutex handled_mutex;
  std::atomic<bool> overlap{false};
  std::thread consumer([&] {
    while (probe.wait()) {
      kc.rearm();
      std::vector<std::thread> handlers;
      while (auto w = kc.next()) {
        const int key = w->first;
        const int value = w->second;
        if (in_flight[key].fetch_add(1) != 0)
          overlap = true;
        handlers.emplace_back([&, key, value] {
          {
            std::lock_guard<std::mutex> g{handled_mutex};
            EXPECT_GT(value, last_handled[key]);
            last_handled[key] = value;
          }
          in_flight[key].fetch_sub(1);
          kc.done(key);
        });
      }
      for (auto& h : handlers)
        h.join();
    }
  });
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (int r = 0; r < rounds; ++r)
        for (int k = p; k < keys; k += producers)
          kc.offer(k, r);
    });
  for (auto& t : threads)
    t.join();
  while (probe.outstanding() > 0 || kc.tracked_keys() > 0)
    std::this_thread::yield();
  probe.stop();
  consumer.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_LE(probe.max_outstanding(), 1u);
  for (int k = 0; k < keys; ++k)
    EXPECT_EQ(last_handled[k], rounds - 1) << "key " << k;
  const auto& s = *kc.stats();
  EXPECT_EQ(s.accepted.load(), static_cast<uint64_t>(keys * rounds));
  EXPECT_EQ(s.delivered.load() + s.coalesced.load(), s.accepted.load());
}
