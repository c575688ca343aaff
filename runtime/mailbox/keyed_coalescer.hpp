#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "runtime/mailbox/buffer_stats.hpp"
#include "runtime/mailbox/wake_signal.hpp"

namespace headroom::runtime {

// Keyed coalescer: the latest value per key, at most one handler in flight per key.
//
// Bounds:   `max_keys` keys with a pending or in-flight value (default 65536); one value per key.
// Blocks:   nothing.
// Drops:    an unhandled older value of the same key when a newer one arrives (`coalesced`);
//           a value for a *new* key when `max_keys` keys are already tracked (`dropped`).
// Order:    keys become ready in the order their first pending value arrived. While a key's
//           handler is in flight, newer values wait; `done(key)` re-queues the key when one did
//           ("re-run if a newer value arrived"). A burst of 1000 updates for one machine thus
//           costs at most two writes: the one in flight and one of the latest state.
// Wakes:    the consumer once while ready keys are waiting (see wake_signal).
// Counts:   accepted, coalesced, dropped, delivered, wakeups; depth = ready keys;
//           in_flight = keys being handled.
template <class Key, class Value, class Hash = std::hash<Key>>
class keyed_coalescer {
 public:
  static constexpr size_t default_max_keys = 65536;

  keyed_coalescer(std::string name, wake_signal::waker wake, size_t max_keys = default_max_keys)
      : stats_(std::make_shared<buffer_stats>(std::move(name), "keyed_coalescer")),
        signal_(std::move(wake), stats_.get()),
        max_keys_(max_keys) {}

  // Any thread. False when the value was dropped because too many keys are tracked.
  bool offer(const Key& key, Value value) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      auto it = entries_.find(key);
      if (it == entries_.end()) {
        if (entries_.size() >= max_keys_) {
          buffer_stats::bump(stats_->dropped);
          return false;
        }
        it = entries_.emplace(key, entry{}).first;
      }
      entry& e = it->second;
      if (e.latest.has_value())
        buffer_stats::bump(stats_->coalesced);
      e.latest = std::move(value);
      if (!e.in_flight && !e.queued) {
        e.queued = true;
        ready_.push_back(key);
        stats_->depth.store(static_cast<int64_t>(ready_.size()), std::memory_order_relaxed);
        wake = true;
      }
    }
    buffer_stats::bump(stats_->accepted);
    if (wake)
      signal_.notify();
    return true;
  }

  // Consumer, first thing in its wake-up handler.
  void rearm() { signal_.rearm(); }

  // Consumer: the next ready key and its latest value; the key is in flight until `done(key)`.
  std::optional<std::pair<Key, Value>> next() {
    std::optional<std::pair<Key, Value>> out;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (ready_.empty())
        return out;
      Key key = std::move(ready_.front());
      ready_.pop_front();
      entry& e = entries_.at(key);
      e.queued = false;
      e.in_flight = true;
      out.emplace(std::move(key), std::move(*e.latest));
      e.latest.reset();
      stats_->depth.store(static_cast<int64_t>(ready_.size()), std::memory_order_relaxed);
      stats_->in_flight.fetch_add(1, std::memory_order_relaxed);
    }
    buffer_stats::bump(stats_->delivered);
    return out;
  }

  // Any thread: the handler for `key` finished. Re-queues the key if a newer value arrived.
  void done(const Key& key) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      auto it = entries_.find(key);
      if (it == entries_.end() || !it->second.in_flight)
        return;
      stats_->in_flight.fetch_sub(1, std::memory_order_relaxed);
      entry& e = it->second;
      e.in_flight = false;
      if (e.latest.has_value()) {
        e.queued = true;
        ready_.push_back(key);
        stats_->depth.store(static_cast<int64_t>(ready_.size()), std::memory_order_relaxed);
        wake = true;
      } else {
        entries_.erase(it);
      }
    }
    if (wake)
      signal_.notify();
  }

  size_t tracked_keys() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return entries_.size();
  }

  const buffer_stats_ptr& stats() const { return stats_; }

 private:
  struct entry {
    std::optional<Value> latest;
    bool in_flight = false;
    bool queued = false;
  };

  buffer_stats_ptr stats_;
  wake_signal signal_;
  size_t max_keys_;
  mutable std::mutex mutex_;
  std::unordered_map<Key, entry, Hash> entries_;
  std::deque<Key> ready_;
};

}  // namespace headroom::runtime
