#include "runtime/secrets.hpp"

#include <algorithm>
#include <mutex>

namespace headroom::runtime {

void secret_registry::insert(std::string_view secret) {
  auto at = std::upper_bound(secrets_.begin(), secrets_.end(), secret.size(),
                             [](size_t n, const std::string& s) { return n > s.size(); });
  secrets_.emplace(at, secret);
}

bool secret_registry::add(std::string_view secret) {
  if (secret.size() < min_length)
    return false;
  std::unique_lock lock{mutex_};
  if (!permanent_.emplace(secret).second)
    return true;
  if (std::find(secrets_.begin(), secrets_.end(), secret) == secrets_.end())
    insert(secret);
  return true;
}

bool secret_registry::add_ephemeral(std::string_view secret) {
  if (secret.size() < min_length)
    return false;
  std::unique_lock lock{mutex_};
  if (std::find(secrets_.begin(), secrets_.end(), secret) != secrets_.end())
    return true;
  insert(secret);
  ephemeral_.emplace_back(secret);
  if (ephemeral_.size() > ephemeral_max) {
    const std::string oldest = std::move(ephemeral_.front());
    ephemeral_.pop_front();
    if (permanent_.count(oldest) == 0)
      if (auto it = std::find(secrets_.begin(), secrets_.end(), oldest); it != secrets_.end())
        secrets_.erase(it);
  }
  return true;
}

size_t secret_registry::size() const {
  std::shared_lock lock{mutex_};
  return secrets_.size();
}

void secret_registry::clear() {
  std::unique_lock lock{mutex_};
  secrets_.clear();
  permanent_.clear();
  ephemeral_.clear();
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
