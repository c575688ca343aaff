#include "runtime/secrets.hpp"

#include <algorithm>
#include <mutex>

namespace headroom::runtime {

bool secret_registry::add(std::string_view secret) {
  if (secret.size() < min_length)
    return false;
  std::unique_lock lock{mutex_};
  if (std::find(secrets_.begin(), secrets_.end(), secret) != secrets_.end())
    return true;
  secrets_.emplace_back(secret);
  std::stable_sort(secrets_.begin(), secrets_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return true;
}

void secret_registry::clear() {
  std::unique_lock lock{mutex_};
  secrets_.clear();
}

bool secret_registry::empty() const {
  std::shared_lock lock{mutex_};
  return secrets_.empty();
}

std::string secret_registry::redact(std::string_view text) const {
  std::string out{text};
  std::shared_lock lock{mutex_};
  for (const auto& secret : secrets_) {
    size_t pos = 0;
    while ((pos = out.find(secret, pos)) != std::string::npos) {
      out.replace(pos, secret.size(), mask);
      pos += mask.size();
    }
  }
  return out;
}

secret_registry& secret_registry::global() {
  static secret_registry registry;
  return registry;
}

}  // namespace headroom::runtime
