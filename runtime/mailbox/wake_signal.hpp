#pragma once

#include <atomic>
#include <functional>
#include <utility>

#include "runtime/mailbox/buffer_stats.hpp"

namespace headroom::runtime {

// The wake-up half of every policy buffer: at most one wake-up is outstanding per buffer.
//
// A producer that finds the signal idle flips it to pending and calls the waker (which sends one
// message to the consumer actor); every other producer only stores its item. The consumer calls
// `rearm()` when it handles the wake-up and *then* drains the buffer, so an item stored after the
// drain always flips the signal again: no item is ever left without a wake-up, and the consumer's
// CAF mailbox never holds more than one wake-up from this buffer.
class wake_signal {
 public:
  using waker = std::function<void()>;

  wake_signal(waker wake, buffer_stats* stats) : wake_(std::move(wake)), stats_(stats) {}

  // Any thread. Returns true when this call sent the wake-up.
  bool notify() {
    if (pending_.exchange(true, std::memory_order_acq_rel))
      return false;
    if (stats_ != nullptr)
      buffer_stats::bump(stats_->wakeups);
    if (wake_)
      wake_();
    return true;
  }

  // Consumer only, first thing in its wake-up handler.
  void rearm() { pending_.store(false, std::memory_order_release); }

  bool pending() const { return pending_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> pending_{false};
  waker wake_;
  buffer_stats* stats_;
};

}  // namespace headroom::runtime
