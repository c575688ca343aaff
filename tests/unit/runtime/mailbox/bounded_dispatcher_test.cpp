#include "runtime/mailbox/bounded_dispatcher.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "unit/runtime/mailbox/wake_probe.hpp"

using headroom::runtime::bounded_dispatcher;
using headroom::runtime::dispatch_lane;
using headroom::testing::wake_probe;

// No more than N normal handlers start; a finish frees a slot and wakes the consumer.
TEST(bounded_dispatcher, caps_normal_handlers_in_flight) {
  wake_probe probe;
  bounded_dispatcher<int> d{"test/dispatch", probe.waker(), 3, 100};
  for (int i = 0; i < 10; ++i)
    d.submit(i);
  ASSERT_TRUE(probe.wait());
  d.rearm();
  std::vector<int> started;
  while (auto w = d.next())
    started.push_back(w->item);
  EXPECT_EQ(started, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(d.normal_in_flight(), 3u);
  d.finish(dispatch_lane::normal);
  ASSERT_TRUE(probe.wait()) << "a freed slot with work waiting must wake the consumer";
  d.rearm();
  auto next = d.next();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->item, 3);
  EXPECT_FALSE(d.next());
}

// Bypass items start at once even with every normal slot busy, and ahead of waiting normal items.
TEST(bounded_dispatcher, bypass_lane_ignores_the_limit) {
  wake_probe probe;
  bounded_dispatcher<std::string> d{"test/dispatch", probe.waker(), 1, 100};
  d.submit("write-1");
  d.submit("write-2");
  d.rearm();
  ASSERT_TRUE(d.next());  // write-1 takes the only slot
  d.submit("bootstrap", dispatch_lane::bypass);
  auto w = d.next();
  ASSERT_TRUE(w);
  EXPECT_EQ(w->item, "bootstrap");
  EXPECT_EQ(w->lane, dispatch_lane::bypass);
  EXPECT_FALSE(d.next()) << "write-2 still waits for the normal slot";
}

// A producer that can wait is held back while its lane is full, and let in once the consumer takes
// an item: nothing is dropped. `interrupt` releases it (the item dropped and counted) and keeps
// refusing until `resume`.
TEST(bounded_dispatcher, a_waiting_submit_is_held_back_while_full_and_dropped_only_when_interrupted) {
  wake_probe probe;
  bounded_dispatcher<int> d{"test/dispatch", probe.waker(), 1, 2};
  ASSERT_TRUE(d.submit_waiting(1));
  ASSERT_TRUE(d.submit_waiting(2));
  std::mutex m;
  std::condition_variable cv;
  bool done = false, ok = false;
  std::thread producer{[&] {
    const bool r = d.submit_waiting(3);
    std::lock_guard lock{m};
    done = true;
    ok = r;
    cv.notify_all();
  }};
  {
    std::unique_lock lock{m};
    EXPECT_FALSE(cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return done; })) << "the lane is full: it waits";
  }
  d.rearm();
  auto first = d.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->item, 1);
  {
    std::unique_lock lock{m};
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done; })) << "room again: it goes in";
    EXPECT_TRUE(ok);
  }
  producer.join();
  EXPECT_EQ(d.stats()->dropped.load(), 0u);
  EXPECT_EQ(d.stats()->depth.load(), 2) << "2 and 3 wait";

  done = false;
  std::thread held{[&] {
    const bool r = d.submit_waiting(4);
    std::lock_guard lock{m};
    done = true;
    ok = r;
    cv.notify_all();
  }};
  d.interrupt();
  {
    std::unique_lock lock{m};
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done; })) << "interrupt releases a waiting producer";
    EXPECT_FALSE(ok);
  }
  held.join();
  EXPECT_FALSE(d.submit_waiting(5)) << "refused at once while interrupted";
  EXPECT_EQ(d.stats()->dropped.load(), 2u);
  d.resume();
  d.finish(dispatch_lane::normal);
  auto second = d.next();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->item, 2);
  EXPECT_TRUE(d.submit_waiting(6)) << "after resume, room: in";
}

// A full lane drops the newest item and counts it.
TEST(bounded_dispatcher, full_queue_drops_the_newest) {
  wake_probe probe;
  bounded_dispatcher<int> d{"test/dispatch", probe.waker(), 1, 2};
  EXPECT_TRUE(d.submit(1));
  EXPECT_TRUE(d.submit(2));
  EXPECT_FALSE(d.submit(3));
  EXPECT_EQ(d.stats()->dropped.load(), 1u);
}

// Concurrent submitters, handlers finishing on their own threads: the limit holds throughout and
// every accepted item is started exactly once.
TEST(bounded_dispatcher, concurrent_submitters_never_exceed_the_limit) {
  constexpr size_t limit = 8;
  constexpr int producers = 4;
  constexpr int per_producer = 5'000;
  wake_probe probe;
  bounded_dispatcher<int> d{"test/dispatch", probe.waker(), limit, 1'000'000};
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  std::atomic<int> started{0};
  // Handlers complete on a pool of finisher threads, as apiserver writes complete on the I/O thread.
  std::mutex done_mutex;
  std::condition_variable done_cv;
  std::deque<dispatch_lane> completions;
  bool finished = false;
  std::vector<std::thread> finishers;
  for (int f = 0; f < 3; ++f)
    finishers.emplace_back([&] {
      for (;;) {
        std::unique_lock<std::mutex> lock{done_mutex};
        done_cv.wait(lock, [&] { return !completions.empty() || finished; });
        if (completions.empty())
          return;
        const auto lane = completions.front();
        completions.pop_front();
        lock.unlock();
        running.fetch_sub(1);
        d.finish(lane);
      }
    });
  std::thread consumer([&] {
    while (probe.wait()) {
      d.rearm();
      while (auto w = d.next()) {
        const int now = running.fetch_add(1) + 1;
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {
        }
        ++started;
        std::lock_guard<std::mutex> g{done_mutex};
        completions.push_back(w->lane);
        done_cv.notify_one();
      }
    }
  });
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&] {
      for (int i = 0; i < per_producer; ++i)
        d.submit(i);
    });
  for (auto& t : threads)
    t.join();
  while (started.load() < producers * per_producer)
    std::this_thread::yield();
  probe.stop();
  consumer.join();
  {
    std::lock_guard<std::mutex> g{done_mutex};
    finished = true;
    done_cv.notify_all();
  }
  for (auto& f : finishers)
    f.join();
  EXPECT_LE(peak.load(), static_cast<int>(limit));
  EXPECT_EQ(d.stats()->delivered.load(), static_cast<uint64_t>(producers * per_producer));
  EXPECT_LE(probe.max_outstanding(), 1u);
}
