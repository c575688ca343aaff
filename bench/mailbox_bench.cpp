// Operations per second of the policy buffers (targets: ≥ 10 M ops/s with one producer).
#include <benchmark/benchmark.h>

#include <atomic>
#include <string>
#include <thread>

#include "runtime/mailbox/bounded_dispatcher.hpp"
#include "runtime/mailbox/bounded_fifo.hpp"
#include "runtime/mailbox/coalescing_slot.hpp"
#include "runtime/mailbox/keyed_coalescer.hpp"

using namespace headroom::runtime;

namespace {

// The waker is a plain counter: these numbers are the buffers' own cost, not CAF's enqueue.
struct counting_waker {
  std::atomic<uint64_t> n{0};
  wake_signal::waker fn() {
    return [this] { n.fetch_add(1, std::memory_order_relaxed); };
  }
};

// One producer offering while nobody consumes: the steady state of a coalescing slot whose
// consumer is busy (every offer replaces the previous value).
void coalescing_slot_offer(benchmark::State& state) {
  counting_waker w;
  coalescing_slot<uint64_t> slot{"bench/slot", w.fn()};
  uint64_t i = 0;
  for (auto _ : state)
    slot.offer(++i);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(coalescing_slot_offer);

// Offer then consume: the full path of one value through the slot, wake-up included.
void coalescing_slot_offer_consume(benchmark::State& state) {
  counting_waker w;
  coalescing_slot<uint64_t> slot{"bench/slot", w.fn()};
  uint64_t i = 0;
  for (auto _ : state) {
    slot.offer(++i);
    benchmark::DoNotOptimize(slot.consume());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(coalescing_slot_offer_consume);

// One producer thread offering while a consumer thread drains: contended lock, real wake-ups.
void coalescing_slot_producer_vs_consumer(benchmark::State& state) {
  counting_waker w;
  coalescing_slot<uint64_t> slot{"bench/slot", w.fn()};
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    while (!stop.load(std::memory_order_relaxed))
      benchmark::DoNotOptimize(slot.consume());
  });
  uint64_t i = 0;
  for (auto _ : state)
    slot.offer(++i);
  stop = true;
  consumer.join();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(coalescing_slot_producer_vs_consumer)->UseRealTime();

// Push then pop in batches of 64: the FIFO's throughput with room to spare.
void bounded_fifo_push_consume(benchmark::State& state) {
  counting_waker w;
  bounded_fifo<uint64_t> fifo{"bench/fifo", w.fn()};
  uint64_t i = 0;
  for (auto _ : state) {
    fifo.push(++i);
    if ((i & 63) == 0)
      benchmark::DoNotOptimize(fifo.consume(64));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(bounded_fifo_push_consume);

// Push into a full FIFO: the cost of a drop (counted, refused).
void bounded_fifo_push_full(benchmark::State& state) {
  counting_waker w;
  bounded_fifo<uint64_t> fifo{"bench/fifo", w.fn()};
  while (fifo.push(0)) {
  }
  uint64_t i = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(fifo.push(++i));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(bounded_fifo_push_full);

// 10k keys (machines), updates round-robin, each key handled and done in turn: offer + next + done.
void keyed_coalescer_10k_keys(benchmark::State& state) {
  constexpr uint64_t keys = 10'000;
  counting_waker w;
  keyed_coalescer<uint64_t, uint64_t> kc{"bench/kc", w.fn()};
  uint64_t i = 0;
  for (auto _ : state) {
    const uint64_t key = i % keys;
    kc.offer(key, ++i);
    if (key == keys - 1) {  // the consumer's turn: every key handled once (cost amortised into offers)
      while (auto item = kc.next())
        kc.done(item->first);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(keyed_coalescer_10k_keys);

// A burst of 100 updates per key over 10k keys: all but the latest per key coalesce away.
void keyed_coalescer_10k_keys_burst(benchmark::State& state) {
  constexpr uint64_t keys = 10'000;
  counting_waker w;
  keyed_coalescer<uint64_t, uint64_t> kc{"bench/kc", w.fn()};
  for (auto _ : state) {
    for (uint64_t round = 0; round < 100; ++round)
      for (uint64_t k = 0; k < keys; ++k)
        kc.offer(k, round);
    while (auto item = kc.next())
      kc.done(item->first);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * keys * 100));
}
BENCHMARK(keyed_coalescer_10k_keys_burst)->Unit(benchmark::kMillisecond);

// Submit, start and finish one item through the dispatcher.
void bounded_dispatcher_submit_next_finish(benchmark::State& state) {
  counting_waker w;
  bounded_dispatcher<uint64_t> d{"bench/dispatch", w.fn()};
  uint64_t i = 0;
  for (auto _ : state) {
    d.submit(++i);
    auto item = d.next();
    d.finish(item->lane);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(bounded_dispatcher_submit_next_finish);

}  // namespace
