#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "runtime/clock.hpp"

namespace headroom::runtime {

// When to restart a child that exited abnormally, and when to give up.
//
// Backoff grows exponentially with the number of exits inside the window (initial × 2^k, capped at
// `max`, then ±jitter so children of one supervisor that failed together do not restart in step);
// once the window has no exits the backoff is back at `initial`. More than `max_restarts` exits
// inside `window` means restarting does not help: the caller escalates. So do more than
// `max_restarts` exits in a row of a child that never ran `healthy_after` (10 windows): a child that
// is itself a supervisor takes a while to give up, so its give-ups never crowd into one window, and
// without this rule a cause that never goes away (a permanent error) restarted the tree for good
// instead of reaching the root, which ends the process.
class restart_policy {
 public:
  struct options {
    std::chrono::milliseconds initial{100};
    std::chrono::milliseconds max{30'000};
    double jitter = 0.2;  // fraction of the delay, either way
    uint32_t max_restarts = 5;
    std::chrono::milliseconds window{60'000};
    std::chrono::milliseconds healthy_after{600'000};  // a child that ran this long ends a run of failures
  };

  explicit restart_policy(options opts, uint64_t seed = std::random_device{}())
      : opts_(opts), rng_{seed} {}

  // An exit at `now` of a child that had run for `lived` (unknown: as long as it takes to count as
  // healthy): the delay before restarting, or nothing when the caller must give up.
  std::optional<clock::duration> on_exit(clock::time_point now, clock::duration lived = clock::duration::max());

  const options& opts() const { return opts_; }

 private:
  options opts_;
  // Every supervised child has a policy (six per scale set), so its state is kept small: a
  // jitter needs no better generator than SplitMix64 (8 bytes, where std::mt19937_64 is 2.5 KiB),
  // and the window holds at most max_restarts + 1 exits (an empty vector allocates nothing, an
  // empty std::deque 576 bytes). At 1,000 scale sets the two were 24 MiB.
  struct splitmix64 {
    using result_type = uint64_t;
    uint64_t state;
    static constexpr result_type min() { return 0; }
    static constexpr result_type max() { return UINT64_MAX; }
    result_type operator()() {
      uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    }
  };
  splitmix64 rng_;
  std::vector<clock::time_point> exits_;
  uint32_t short_lived_in_a_row_ = 0;
};

}  // namespace headroom::runtime
