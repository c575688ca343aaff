#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace headroom::runtime {

// Counters every policy buffer keeps. Relaxed atomics: they are read by the metrics scrape, which
// needs eventual values, not a consistent snapshot, and they sit on the hot path of every push.
struct buffer_stats {
  buffer_stats(std::string name, std::string policy)
      : name(std::move(name)), policy(std::move(policy)) {}

  const std::string name;    // e.g. "listener/capacity"
  const std::string policy;  // coalescing_slot | keyed_coalescer | bounded_fifo | bounded_dispatcher

  std::atomic<uint64_t> accepted{0};   // items taken in
  std::atomic<uint64_t> coalesced{0};  // older items replaced by a newer one (not delivered)
  std::atomic<uint64_t> dropped{0};    // items refused because the buffer was full
  std::atomic<uint64_t> delivered{0};  // items handed to the consumer
  std::atomic<uint64_t> wakeups{0};    // wake-up messages sent to the consumer
  std::atomic<int64_t> depth{0};       // items waiting now
  std::atomic<int64_t> in_flight{0};   // items being handled now (keyed coalescer, dispatcher)

  static void bump(std::atomic<uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }
};

using buffer_stats_ptr = std::shared_ptr<buffer_stats>;

}  // namespace headroom::runtime
