#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "runtime/mailbox/buffer_stats.hpp"
#include "runtime/mailbox/wake_signal.hpp"

namespace headroom::runtime {

enum class dispatch_lane { normal, bypass };

// Bounded dispatcher: at most `max_in_flight` handlers at once, with a bypass lane.
//
// Bounds:   `max_in_flight` normal handlers (default 32); `queue_capacity` normal items waiting
//           (default 256) and as many bypass items waiting.
// Blocks:   `submit` never; `submit_waiting` (a producer that can be held back, such as a stream's
//           receive loop: holding it pushes back on the sender) waits while its lane is full,
//           until the consumer takes an item or `interrupt` is called.
// Bypass:   latency-critical kinds (e.g. BootstrapRequest: a node is booting and waits for its
//           blob) start at once, ahead of waiting normal items and outside the in-flight limit,
//           so a backlog of apiserver writes never delays them.
// Drops:    the new item when its lane's queue is full (drop-newest, `dropped`).
// Wakes:    the consumer once while startable items wait; `finish` re-wakes it when a slot frees
//           up and normal items are waiting.
// Counts:   accepted, dropped, delivered (= started), wakeups; depth = waiting items;
//           in_flight = running handlers of both lanes.
template <class T>
class bounded_dispatcher {
 public:
  static constexpr size_t default_max_in_flight = 32;
  static constexpr size_t default_queue_capacity = 256;

  struct work {
    T item;
    dispatch_lane lane;
  };

  bounded_dispatcher(std::string name, wake_signal::waker wake,
                     size_t max_in_flight = default_max_in_flight,
                     size_t queue_capacity = default_queue_capacity)
      : stats_(std::make_shared<buffer_stats>(std::move(name), "bounded_dispatcher")),
        signal_(std::move(wake), stats_.get()),
        max_in_flight_(max_in_flight),
        queue_capacity_(queue_capacity) {}

  // Any thread. False when the lane's queue was full and the item was dropped.
  bool submit(T item, dispatch_lane lane = dispatch_lane::normal) { return enqueue(std::move(item), lane, false); }

  // Any thread: like `submit`, but a full lane makes the caller wait for room instead of dropping
  // the item. False only after `interrupt` (the item is then dropped and counted).
  bool submit_waiting(T item, dispatch_lane lane = dispatch_lane::normal) { return enqueue(std::move(item), lane, true); }

  // Any thread: every waiting `submit_waiting` returns false, and later ones do at once, until
  // `resume` (e.g. the stream that feeds it is being closed and its reader must not block).
  void interrupt() {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      interrupted_ = true;
    }
    room_.notify_all();
  }
  void resume() {
    std::lock_guard<std::mutex> guard{mutex_};
    interrupted_ = false;
  }
  // Consumer, first thing in its wake-up handler.
  void rearm() { signal_.rearm(); }

  // Consumer: the next item allowed to start now (bypass first), or nothing. The caller must
  // call `finish(lane)` exactly once when the handler for it completes.
  std::optional<work> next() {
    std::optional<work> out;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (!bypass_.empty()) {
        out.emplace(work{std::move(bypass_.front()), dispatch_lane::bypass});
        bypass_.pop_front();
      } else if (normal_in_flight_ < max_in_flight_ && !normal_.empty()) {
        out.emplace(work{std::move(normal_.front()), dispatch_lane::normal});
        normal_.pop_front();
        ++normal_in_flight_;
      } else {
        return out;
      }
      publish_depth();
    }
    room_.notify_all();
    stats_->in_flight.fetch_add(1, std::memory_order_relaxed);
    buffer_stats::bump(stats_->delivered);
    return out;
  }

  // Any thread: a handler finished.
  void finish(dispatch_lane lane) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (lane == dispatch_lane::normal && normal_in_flight_ > 0)
        --normal_in_flight_;
      wake = !normal_.empty();
    }
    stats_->in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (wake)
      signal_.notify();
  }

  size_t normal_in_flight() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return normal_in_flight_;
  }

  const buffer_stats_ptr& stats() const { return stats_; }

 private:
  bool enqueue(T item, dispatch_lane lane, bool wait) {
    {
      std::unique_lock<std::mutex> guard{mutex_};
      auto& queue = lane == dispatch_lane::bypass ? bypass_ : normal_;
      if (wait)
        room_.wait(guard, [&] { return interrupted_ || queue.size() < queue_capacity_; });
      if (wait ? interrupted_ : queue.size() >= queue_capacity_) {
        buffer_stats::bump(stats_->dropped);
        return false;
      }
      queue.push_back(std::move(item));
      publish_depth();
    }
    buffer_stats::bump(stats_->accepted);
    signal_.notify();
    return true;
  }

  void publish_depth() {
    stats_->depth.store(static_cast<int64_t>(normal_.size() + bypass_.size()),
                        std::memory_order_relaxed);
  }

  buffer_stats_ptr stats_;
  wake_signal signal_;
  size_t max_in_flight_;
  size_t queue_capacity_;
  mutable std::mutex mutex_;
  std::condition_variable room_;  // a queue has room again, or interrupted
  bool interrupted_ = false;
  std::deque<T> normal_;
  std::deque<T> bypass_;
  size_t normal_in_flight_ = 0;
};

}  // namespace headroom::runtime
