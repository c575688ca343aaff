#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "runtime/mailbox/buffer_stats.hpp"
#include "runtime/mailbox/wake_signal.hpp"

namespace headroom::runtime {

// Coalescing slot: the newest value replaces any unconsumed older one.
//
// Bounds:   one value (plus the one the consumer is handling).
// Blocks:   nothing; producers take a short uncontended lock, never wait for the consumer.
// Drops:    an unconsumed value when a newer one arrives (counted as `coalesced`, not lost:
//           the newer value supersedes it, e.g. capacity 7 then 5 → the listener sees 5).
// Wakes:    the consumer once per pending value (see wake_signal).
// Counts:   accepted, coalesced, delivered, wakeups; depth is 0 or 1.
//
// Used where only the latest state matters: capacity → listener_session, roll-ups → shard,
// HUD counts → capacity_monitor.
template <class T>
class coalescing_slot {
 public:
  coalescing_slot(std::string name, wake_signal::waker wake)
      : stats_(std::make_shared<buffer_stats>(std::move(name), "coalescing_slot")),
        signal_(std::move(wake), stats_.get()) {}

  // Any thread.
  void offer(T value) {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (value_.has_value())
        buffer_stats::bump(stats_->coalesced);
      else
        stats_->depth.store(1, std::memory_order_relaxed);
      value_ = std::move(value);
    }
    buffer_stats::bump(stats_->accepted);
    signal_.notify();
  }

  // Consumer, in its wake-up handler: re-arms the wake-up, then takes the newest value if any.
  std::optional<T> consume() {
    signal_.rearm();
    return take();
  }

  // Consumer, at any other time (e.g. at the start of a poll): takes the newest value without
  // re-arming, so a wake-up already in the mailbox stays the only one.
  std::optional<T> take() {
    std::optional<T> out;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (!value_.has_value())
        return out;
      out.swap(value_);
      stats_->depth.store(0, std::memory_order_relaxed);
    }
    buffer_stats::bump(stats_->delivered);
    return out;
  }

  const buffer_stats_ptr& stats() const { return stats_; }

 private:
  buffer_stats_ptr stats_;
  wake_signal signal_;
  std::mutex mutex_;
  std::optional<T> value_;
};

}  // namespace headroom::runtime
