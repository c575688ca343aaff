#pragma once

// #62: where the time goes between the API server's watch event and the poll that carries the
// capacity it changed, hop by hop, on one clock (the wall clock; every process here is on the
// same machine).
//
// Three readers of the same pod changes, matched by the watch event's resourceVersion:
// - a Go client (kubectl's `get --raw` of the same watch, client-go's HTTP/2 transport): the API
//   server's delivery as the reference clients see it;
// - the bench's own watch (headroom's Kubernetes client in the bench's process);
// - headroom itself: its "capacity" log line names the event behind each change (`event_rv`) and
//   its hops (read → drained by the monitor → judged → published).
// The peer's record of each poll gives its receipt.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "histogram_text.hpp"
#include "runtime/rfc3339.hpp"

namespace headroom::bench {

using wall = std::chrono::system_clock;

// `kubectl get --raw <path>` of a watch, each event line stamped as it arrives on the pipe (kubectl
// copies the response body as it reads it). The API server ends a watch that falls behind under
// load (during a start-up of 3,000 pods it did, after 141 s) or at its timeout: the watch is
// resumed from the last resourceVersion read, as client-go's reflector would, and the resumptions
// counted.
class go_watch {
 public:
  go_watch(std::string kubectl, std::string kubeconfig, std::string path)
      : kubectl_(std::move(kubectl)), kubeconfig_(std::move(kubeconfig)), path_(std::move(path)) {
    reader_ = std::thread([this] { run(); });
  }
  ~go_watch() {
    {
      std::lock_guard lock{m_};
      stopping_ = true;
      if (pid_ > 0)
        kill(pid_, SIGTERM);
    }
    if (reader_.joinable())
      reader_.join();
  }
  go_watch(const go_watch&) = delete;
  go_watch& operator=(const go_watch&) = delete;

  std::optional<wall::time_point> seen(const std::string& rv) const {
    std::lock_guard lock{m_};
    auto it = seen_.find(rv);
    return it == seen_.end() ? std::nullopt : std::optional{it->second};
  }
  // Events read, and how often the watch was resumed after the server ended it.
  std::pair<size_t, int> counts() const {
    std::lock_guard lock{m_};
    return {seen_.size(), resumed_};
  }

 private:
  void run() {
    std::string last_rv;
    for (bool first = true;; first = false) {
      int fds[2];
      if (pipe(fds) != 0)
        return;
      const std::string path = last_rv.empty() ? path_ : path_ + "&resourceVersion=" + last_rv;
      {
        std::lock_guard lock{m_};
        if (stopping_) {
          close(fds[0]);
          close(fds[1]);
          return;
        }
        resumed_ += first ? 0 : 1;
        pid_ = fork();
        if (pid_ == 0) {
          dup2(fds[1], 1);
          close(fds[0]);
          close(fds[1]);
          execl(kubectl_.c_str(), kubectl_.c_str(), "--kubeconfig", kubeconfig_.c_str(), "get", "--raw", path.c_str(), (char*)nullptr);
          _exit(127);
        }
      }
      close(fds[1]);
      if (read_lines(fds[0], last_rv) == 0) {  // refused (an expired resourceVersion): from now on
        last_rv.clear();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
      pid_t pid;
      {
        std::lock_guard lock{m_};
        pid = pid_;
      }
      waitpid(pid, nullptr, 0);
      std::lock_guard lock{m_};
      pid_ = -1;
      if (stopping_)
        return;
    }
  }
  size_t read_lines(int fd, std::string& last_rv) {
    FILE* in = fdopen(fd, "r");
    if (in == nullptr)
      return 0;
    size_t read = 0;
    simdjson::dom::parser p;
    char* line = nullptr;
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) {
      const auto at = wall::now();
      auto doc = p.parse(line, std::strlen(line));
      std::string_view rv;
      if (doc.error() || doc["object"]["metadata"]["resourceVersion"].get(rv))
        continue;
      last_rv = std::string{rv};
      ++read;
      std::lock_guard lock{m_};
      seen_.emplace(last_rv, at);
    }
    free(line);
    fclose(in);
    return read;
  }
  const std::string kubectl_, kubeconfig_, path_;
  pid_t pid_ = -1;
  bool stopping_ = false;
  int resumed_ = 0;
  std::thread reader_;
  mutable std::mutex m_;
  std::map<std::string, wall::time_point> seen_;
};

// One "capacity" line of headroom's log that names the watch event behind it.
struct published_change {
  std::string scale_set, rv;
  int64_t capacity = 0;
  wall::time_point published{};  // the line's ts (milliseconds)
  double since_event_ms = 0, event_to_monitor_ms = 0, monitor_to_judged_ms = 0;
  wall::time_point received() const {
    return published - std::chrono::duration_cast<wall::duration>(std::chrono::duration<double, std::milli>(since_event_ms));
  }
};

inline std::vector<published_change> published_changes(const std::string& log) {
  std::vector<published_change> out;
  simdjson::dom::parser p;
  std::istringstream in{log};
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"event_rv\"") == std::string::npos || line.find("\"msg\":\"capacity\"") == std::string::npos)
      continue;
    auto doc = p.parse(line);
    if (doc.error())
      continue;
    published_change c;
    std::string_view ts, name, rv;
    if (doc["ts"].get(ts) || doc["scale_set"].get(name) || doc["event_rv"].get(rv))
      continue;
    const auto when = runtime::parse_rfc3339(ts);
    if (!when)
      continue;
    c.published = wall::time_point{std::chrono::duration_cast<wall::duration>(std::chrono::duration<double>(*when))};
    c.scale_set = std::string{name};
    c.rv = std::string{rv};
    c.capacity = int64_t(doc["capacity"]);
    c.since_event_ms = double(doc["since_event_ms"]);
    c.event_to_monitor_ms = double(doc["event_to_monitor_ms"]);
    c.monitor_to_judged_ms = double(doc["monitor_to_judged_ms"]);
    out.push_back(std::move(c));
  }
  return out;
}

// One "the I/O thread read late" line of headroom's log: a turn of the Kubernetes transport's I/O
// thread that held its reads up (app/kubernetes_metrics.cpp). The line's ts is when the turn ended.
struct io_holdup {
  wall::time_point at{};
  int64_t busy_ms = 0, woke_late_ms = 0;
};

inline std::vector<io_holdup> io_holdups(const std::string& log) {
  std::vector<io_holdup> out;
  simdjson::dom::parser p;
  std::istringstream in{log};
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"the I/O thread read late\"") == std::string::npos)
      continue;
    auto doc = p.parse(line);
    std::string_view ts;
    int64_t busy = 0, late = 0;
    if (doc.error() || doc["ts"].get(ts) || doc["busy_ms"].get(busy) || doc["woke_late_ms"].get(late))
      continue;
    const auto when = runtime::parse_rfc3339(ts);
    if (when)
      out.push_back({wall::time_point{std::chrono::duration_cast<wall::duration>(std::chrono::duration<double>(*when))}, busy, late});
  }
  return out;
}

// Named samples in milliseconds, printed as one JSON line and a Markdown row each.
class hop_samples {
 public:
  void add(const std::string& hop, double ms) {
    if (order_.count(hop) == 0)
      order_.emplace(hop, order_.size());
    samples_[hop].push_back(ms);
  }
  void print(const char* direction) const {
    std::vector<std::pair<size_t, std::string>> hops;
    for (const auto& [hop, i] : order_)
      hops.emplace_back(i, hop);
    std::sort(hops.begin(), hops.end());
    for (const auto& [i, hop] : hops) {
      const auto& v = samples_.at(hop);
      std::printf("{\"mode\":\"hop\",\"direction\":\"%s\",\"hop\":\"%s\",\"n\":%zu,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"max_ms\":%.1f}\n",
                  direction, hop.c_str(), v.size(), percentile(v, 0.5), percentile(v, 0.99), *std::max_element(v.begin(), v.end()));
    }
  }

 private:
  std::map<std::string, size_t> order_;
  std::map<std::string, std::vector<double>> samples_;
};

}  // namespace headroom::bench
