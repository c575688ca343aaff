#pragma once

#include <deque>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::runtime {

// Every secret headroom holds (tokens, private keys, webhook secrets) is registered here the moment
// it is read, and every log line and user-visible error passes through `redact`, so a secret that
// ends up in a message by accident (an echoed header, a server's error body) still never leaves
// the process. Read-mostly: registration happens at start-up and on token refresh.
//
// Secrets that come and go (a runner's single-use JIT configuration, tokens that rotate) are
// registered with `add_ephemeral`: the newest `ephemeral_max` are kept and the oldest forgotten,
// by then long used and gone. Registered for good, one JIT configuration per job grew the
// registry without bound: +1.8 KiB of RSS per job in the soak benchmark, and every log line
// scanned against every secret ever seen.
class secret_registry {
 public:
  static constexpr std::string_view mask = "[REDACTED]";
  // Shorter values would mask ordinary words and numbers; real secrets are far longer.
  static constexpr size_t min_length = 6;
  static constexpr size_t ephemeral_max = 256;

  // Returns false (and registers nothing) for values too short to redact safely.
  bool add(std::string_view secret);
  bool add_ephemeral(std::string_view secret);
  size_t size() const;
  void clear();
  std::string redact(std::string_view text) const;
  bool empty() const;

  // The process-wide registry the logger consults.
  static secret_registry& global();

 private:
  void insert(std::string_view secret);  // under the lock, keeping secrets_ longest first

  mutable std::shared_mutex mutex_;
  std::vector<std::string> secrets_;  // longest first, so a secret containing another is masked whole
  std::set<std::string, std::less<>> permanent_;
  std::deque<std::string> ephemeral_;  // oldest first
};

inline std::string redact(std::string_view text) { return secret_registry::global().redact(text); }

}  // namespace headroom::runtime
