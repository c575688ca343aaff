#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "runtime/mailbox/wake_signal.hpp"

namespace headroom::testing {

// Stands in for a consumer actor's mailbox: counts wake-ups that were sent and not yet handled,
// and remembers the highest such count ever seen (the policy's promise is that it stays ≤ 1).
class wake_probe {
 public:
  runtime::wake_signal::waker waker() {
    return [this] {
      std::lock_guard<std::mutex> guard{mutex_};
      ++outstanding_;
      if (outstanding_ > max_outstanding_)
        max_outstanding_ = outstanding_;
      ++sent_;
      cv_.notify_one();
    };
  }

  // Consumer: waits for a wake-up (or `stop`), then counts it handled. False when stopped and idle.
  bool wait() {
    std::unique_lock<std::mutex> lock{mutex_};
    cv_.wait(lock, [&] { return outstanding_ > 0 || stopped_; });
    if (outstanding_ == 0)
      return false;
    --outstanding_;
    return true;
  }

  void stop() {
    std::lock_guard<std::mutex> guard{mutex_};
    stopped_ = true;
    cv_.notify_all();
  }

  uint64_t max_outstanding() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return max_outstanding_;
  }
  uint64_t sent() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return sent_;
  }
  uint64_t outstanding() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return outstanding_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t outstanding_ = 0;
  uint64_t max_outstanding_ = 0;
  uint64_t sent_ = 0;
  bool stopped_ = false;
};

}  // namespace headroom::testing
