#pragma once

#include <atomic>
#include <chrono>

namespace caf {
class actor_clock;
}

namespace headroom::runtime {

// Time as headroom's components see it. Timeouts, backoffs and windows take a clock so tests
// drive time by hand (manual_clock, or CAF's test_coordinator through actor_system_clock) and
// never sleep.
class clock {
 public:
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;

  virtual ~clock() = default;
  virtual time_point now() const = 0;
};

// Production: the monotonic clock.
class steady_clock_source final : public clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
};

// Tests: time moves only when told to.
class manual_clock final : public clock {
 public:
  explicit manual_clock(time_point start = time_point{std::chrono::hours(1)}) : now_(start.time_since_epoch().count()) {}
  time_point now() const override { return time_point{duration{now_.load(std::memory_order_acquire)}}; }
  void advance(duration d) { now_.fetch_add(d.count(), std::memory_order_acq_rel); }

 private:
  std::atomic<duration::rep> now_;
};

// Actors: the actor system's own clock, the one delayed messages are scheduled on. Under CAF's
// test_coordinator it is the deterministic test clock, so an actor's windows and its timers move
// together when a test advances time.
class actor_system_clock final : public clock {
 public:
  explicit actor_system_clock(caf::actor_clock& source) : source_(source) {}
  time_point now() const override;

 private:
  caf::actor_clock& source_;
};

}  // namespace headroom::runtime
