#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace caf {
class actor_clock;
}

namespace headroom::runtime {

// Time as headroom's components see it: monotonic time for timeouts, backoffs and windows, and
// wall time for what is compared with other systems' timestamps (a pod's creationTimestamp, a
// Prometheus range, an annotation). Both come from one clock, so tests drive them together
// (manual_clock, or CAF's test_coordinator through actor_system_clock) and never sleep.
//
// This is the only place headroom reads the system's clocks: scripts/check-layers refuses
// system_clock::now, steady_clock::now, std::time(, gettimeofday and clock_gettime anywhere else
// (as Envoy's TimeSource and its real-time allowlist do).
class clock {
 public:
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;
  using wall_time_point = std::chrono::system_clock::time_point;

  virtual ~clock() = default;
  virtual time_point now() const = 0;
  virtual wall_time_point wall() const = 0;

  // The wall time as milliseconds, or seconds, since the Unix epoch.
  int64_t wall_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(wall().time_since_epoch()).count();
  }
  double wall_seconds() const { return std::chrono::duration<double>(wall().time_since_epoch()).count(); }
  // The monotonic time as milliseconds since its (arbitrary) epoch.
  int64_t now_ms() const { return std::chrono::duration_cast<std::chrono::milliseconds>(now().time_since_epoch()).count(); }
};

// Production: the monotonic clock and the system's wall clock.
class steady_clock_source final : public clock {
 public:
  time_point now() const override;
  wall_time_point wall() const override;
};

// The process's real clock, for code that is not given one (adapters' I/O timing, start-up).
const clock& real_clock();

// Tests: time moves only when told to; the wall time moves with it from `wall_start`.
class manual_clock final : public clock {
 public:
  explicit manual_clock(time_point start = time_point{std::chrono::hours(1)},
                        wall_time_point wall_start = wall_time_point{std::chrono::seconds(1'790'000'000)})
      : now_(start.time_since_epoch().count()), start_(start), wall_start_(wall_start) {}
  time_point now() const override { return time_point{duration{now_.load(std::memory_order_acquire)}}; }
  wall_time_point wall() const override {
    return wall_start_ + std::chrono::duration_cast<wall_time_point::duration>(now() - start_);
  }
  void advance(duration d) { now_.fetch_add(d.count(), std::memory_order_acq_rel); }

 private:
  std::atomic<duration::rep> now_;
  time_point start_;
  wall_time_point wall_start_;
};

// Actors: the actor system's own clock, the one delayed messages are scheduled on. Under CAF's
// test_coordinator it is the deterministic test clock, so an actor's windows and its timers move
// together when a test advances time, and its wall time moves with them (from a fixed origin);
// otherwise the wall time is the system's.
class actor_system_clock final : public clock {
 public:
  explicit actor_system_clock(caf::actor_clock& source) : source_(source) {}
  time_point now() const override;
  wall_time_point wall() const override;

 private:
  caf::actor_clock& source_;
};

}  // namespace headroom::runtime
