#pragma once

#include <map>
#include <mutex>
#include <string>

namespace headroom::runtime {

// /readyz aggregates what actors report: the process is ready when at least one component has
// reported, every reported component is ready, and shutdown has not begun. Safe from any thread.
class readiness {
 public:
  struct report {
    bool ready;
    std::string body;  // one line per component: "ok name" / "not-ready name: detail"
  };

  void set(const std::string& component, bool ready, std::string detail = {});
  void remove(const std::string& component);
  // Shutdown has begun: report not ready from now on, so traffic drains before children stop.
  void begin_shutdown();
  report check() const;

 private:
  struct state {
    bool ready;
    std::string detail;
  };
  mutable std::mutex mutex_;
  std::map<std::string, state> components_;
  bool shutting_down_ = false;
};

}  // namespace headroom::runtime
