#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/mailbox/buffer_stats.hpp"
#include "runtime/mailbox/wake_signal.hpp"

namespace headroom::runtime {

// Bounded FIFO with drop-newest back-pressure.
//
// Bounds:   `capacity` items (default 256), preallocated; nothing allocates per push.
// Blocks:   nothing; a producer never waits for space.
// Drops:    the *new* item when the queue is full (`push` returns false, `dropped` counts it).
//           Items already queued are never displaced: they were promised first (e.g. a
//           ReclaimAck must not be overtaken by a newer BootstrapBlobResponse).
// Wakes:    the consumer once while items are waiting; `consume` hands out at most `batch`
//           items per wake-up and re-wakes itself if more remain, so one busy buffer cannot
//           starve the consumer's other messages.
// Counts:   accepted, dropped, delivered, wakeups; depth = items waiting.
template <class T>
class bounded_fifo {
 public:
  static constexpr size_t default_capacity = 256;

  bounded_fifo(std::string name, wake_signal::waker wake, size_t capacity = default_capacity)
      : stats_(std::make_shared<buffer_stats>(std::move(name), "bounded_fifo")),
        signal_(std::move(wake), stats_.get()),
        ring_(capacity) {
    if (capacity == 0)
      throw std::invalid_argument("bounded_fifo capacity must be at least 1");
  }

  // Any thread. False when the queue was full and the item was dropped.
  bool push(T item) {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (size_ == ring_.size()) {
        buffer_stats::bump(stats_->dropped);
        return false;
      }
      ring_[(head_ + size_) % ring_.size()] = std::move(item);
      ++size_;
      stats_->depth.store(static_cast<int64_t>(size_), std::memory_order_relaxed);
    }
    buffer_stats::bump(stats_->accepted);
    signal_.notify();
    return true;
  }

  // Consumer, in its wake-up handler: re-arms, then takes up to `batch` items in FIFO order.
  std::vector<T> consume(size_t batch = 64) {
    signal_.rearm();
    std::vector<T> out;
    bool more = false;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      const size_t n = size_ < batch ? size_ : batch;
      out.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        out.push_back(std::move(*ring_[head_]));
        ring_[head_].reset();
        head_ = (head_ + 1) % ring_.size();
      }
      size_ -= n;
      more = size_ > 0;
      stats_->depth.store(static_cast<int64_t>(size_), std::memory_order_relaxed);
    }
    stats_->delivered.fetch_add(out.size(), std::memory_order_relaxed);
    if (more)
      signal_.notify();
    return out;
  }

  size_t capacity() const { return ring_.size(); }
  const buffer_stats_ptr& stats() const { return stats_; }

 private:
  buffer_stats_ptr stats_;
  wake_signal signal_;
  std::mutex mutex_;
  std::vector<std::optional<T>> ring_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace headroom::runtime
