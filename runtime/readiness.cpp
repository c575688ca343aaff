#include "runtime/readiness.hpp"

namespace headroom::runtime {

void readiness::set(const std::string& component, bool ready, std::string detail) {
  std::lock_guard<std::mutex> guard{mutex_};
  components_[component] = state{ready, std::move(detail)};
}

void readiness::remove(const std::string& component) {
  std::lock_guard<std::mutex> guard{mutex_};
  components_.erase(component);
}

void readiness::begin_shutdown() {
  std::lock_guard<std::mutex> guard{mutex_};
  shutting_down_ = true;
}

readiness::report readiness::check() const {
  std::lock_guard<std::mutex> guard{mutex_};
  report r{!components_.empty() && !shutting_down_, {}};
  if (shutting_down_)
    r.body += "not-ready shutdown: in progress\n";
  if (components_.empty())
    r.body += "not-ready startup: no component has reported yet\n";
  for (const auto& [name, s] : components_) {
    r.ready = r.ready && s.ready;
    r.body += (s.ready ? "ok " : "not-ready ") + name + (s.detail.empty() ? "" : ": " + s.detail) + "\n";
  }
  return r;
}

}  // namespace headroom::runtime
