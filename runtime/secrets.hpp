#pragma once

#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::runtime {

// Every secret headroom holds (tokens, private keys, webhook secrets) is registered here the moment
// it is read, and every log line and user-visible error passes through `redact`, so a secret that
// ends up in a message by accident (an echoed header, a server's error body) still never leaves
// the process. Read-mostly: registration happens at start-up and on token refresh.
class secret_registry {
 public:
  static constexpr std::string_view mask = "[REDACTED]";
  // Shorter values would mask ordinary words and numbers; real secrets are far longer.
  static constexpr size_t min_length = 6;

  // Returns false (and registers nothing) for values too short to redact safely.
  bool add(std::string_view secret);
  void clear();
  std::string redact(std::string_view text) const;
  bool empty() const;

  // The process-wide registry the logger consults.
  static secret_registry& global();

 private:
  mutable std::shared_mutex mutex_;
  std::vector<std::string> secrets_;  // longest first, so a secret containing another is masked whole
};

inline std::string redact(std::string_view text) { return secret_registry::global().redact(text); }

}  // namespace headroom::runtime
