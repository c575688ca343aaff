#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string_view>

#include "runtime/log.hpp"

namespace headroom::runtime {

// One dependency's availability as its caller sees it (PostgreSQL, the API server, Prometheus,
// GitHub): how long to wait before the next attempt and which attempts deserve a log line.
//
// A dependency down for minutes must not become a log storm or a busy loop: the caller logs when
// the state changes (went_down, came_back) and at most once per `reminder` while it stays down
// (still_down), and retries after `retry_in`: `initial` doubling per failure in a row up to `max`,
// each drawn in [delay × (1 − jitter), delay] so callers that failed together do not retry in
// step. Pure: time comes from the caller (its injected clock), so tests drive it without sleeping.
struct outage_options {
  std::chrono::milliseconds initial{250};
  std::chrono::milliseconds max{10'000};
  std::chrono::milliseconds reminder{60'000};
  double jitter = 0.5;
};

class outage {
 public:
  using options = outage_options;
  enum class note { none, went_down, still_down, came_back };
  struct verdict {
    note log = note::none;                  // what (if anything) to log for this attempt
    std::chrono::milliseconds retry_in{0};  // when to try again (0 after a success)
    int64_t down_for_ms = 0;                // since the first failure of this outage
    uint64_t failures = 0;                  // failed attempts in this outage
  };

  explicit outage(options opts = {}, uint64_t seed = std::random_device{}()) : opts_(opts), rng_(seed) {}

  verdict failed(int64_t now_ms);
  verdict succeeded(int64_t now_ms);

  bool down() const { return failures_ > 0; }
  uint64_t failures() const { return failures_; }
  const options& opts() const { return opts_; }

  // Writes the line a verdict deserves: `went_down` or `still_down` as a warning, a failure in
  // between as a debug line (the same text), nothing for a success.
  static void log(std::string_view actor, const verdict& v, std::string_view went_down, std::string_view still_down,
                  std::initializer_list<log_field> fields);

 private:
  options opts_;
  std::mt19937_64 rng_;
  uint64_t failures_ = 0;
  int64_t since_ms_ = 0, reminded_ms_ = 0;
};

}  // namespace headroom::runtime
