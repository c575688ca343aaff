#pragma once

// The HTTP transport's client-side rate limit (adapters/http/transport.cpp): request starts spaced
// by a token bucket, as client-go's flowcontrol does.

#include <algorithm>
#include <chrono>

#include "runtime/clock.hpp"

namespace headroom::http {

// Spaces request starts: `burst` tokens, refilled at `qps` per second.
class token_bucket {
 public:
  token_bucket(double qps, double burst, runtime::clock::time_point now) : qps_(qps), burst_(burst), tokens_(burst), last_(now) {}
  // True and a token taken, or false and `wait` set to when one will be there.
  bool take(runtime::clock::time_point now, runtime::clock::duration& wait) {
    refill(now);
    if (tokens_ >= 1.0) {
      tokens_ -= 1.0;
      return true;
    }
    wait = std::chrono::duration_cast<runtime::clock::duration>(std::chrono::duration<double>((1.0 - tokens_) / qps_));
    return false;
  }

 private:
  void refill(runtime::clock::time_point now) {
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  double qps_, burst_, tokens_;
  runtime::clock::time_point last_;
};

}  // namespace headroom::http
