#pragma once

// A running headroom's footprint from /proc, sampled through a soak run, and the rule that says
// whether it ended flat. Shared by the soak benchmarks of each mode (capacity_soak_bench,
// scheduler_soak_bench, gates_bench's soak line, reactive_scaling_bench's, bigfleet_soak_bench) and
// idle_footprint_bench.
//
// Flat means a plateau after warm-up: the RSS of the run's last quarter within 3 % of its second
// quarter's (a slope of a few KiB per job shows there even when the whole run stays within 10 % of
// warm-up), the last tenth within 10 % of the tenth after warm-up, and descriptors and threads
// within 4 of warm-up.

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testenv/cluster_fixture.hpp"

namespace headroom::bench {

struct sample {
  double t = 0;  // seconds since the phase began
  double rss_mib = 0;
  int fds = 0, threads = 0;
  double cpu_s = 0;  // user + system
  double buffer_depth = 0;
  int completed = 0;
};

inline double field_kib(const std::string& status, const char* key) {
  const auto at = status.find(key);
  return at == std::string::npos ? 0 : std::stod(status.substr(at + std::strlen(key)));
}

inline sample probe(pid_t pid) {
  sample s;
  std::ifstream st("/proc/" + std::to_string(pid) + "/status");
  std::stringstream ss;
  ss << st.rdbuf();
  const auto status = ss.str();
  s.rss_mib = field_kib(status, "VmRSS:") / 1024.0;
  s.threads = static_cast<int>(field_kib(status, "Threads:"));
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (auto* e = readdir(d))
      s.fds += e->d_name[0] != '.' ? 1 : 0;
    closedir(d);
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 > line.size())
    return s;
  std::istringstream rest{line.substr(close + 2)};
  std::vector<std::string> f{std::istream_iterator<std::string>{rest}, {}};
  if (f.size() > 13)  // fields 14 and 15 of stat(5): utime, stime (after pid and comm: 11, 12)
    s.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return s;
}

// The summed depth of headroom's policy buffers (headroom_buffer_depth) in a /metrics text.
inline double buffer_depth(const std::string& metrics_text) {
  std::istringstream in{metrics_text};
  double sum = 0;
  for (std::string l; std::getline(in, l);)
    if (l.rfind("headroom_buffer_depth{", 0) == 0)
      sum += std::stod(l.substr(l.rfind(' ') + 1));
  return sum;
}

template <class F>
double mean_of(const std::vector<sample>& v, size_t from, size_t to, F f) {
  if (to <= from)
    return 0;
  double sum = 0;
  for (size_t i = from; i < to; ++i)
    sum += f(v[i]);
  return sum / static_cast<double>(to - from);
}

// The summary of one soak's samples; `warm_index` is the first sample after warm-up.
struct soak_summary {
  double rss_warm = 0, rss_end = 0, rss_max = 0, fds_warm = 0, fds_end = 0, thr_warm = 0, thr_end = 0;
  double depth_max = 0, depth_end = 0, seconds = 0, cpu_s = 0;
  double rss_by_quarter[5] = {};
  bool flat = false;

  // `"key":value` pairs (no braces) for a bench's JSON line.
  std::string json() const {
    std::ostringstream o;
    o << "\"seconds\":" << seconds << ",\"cpu_core_pct\":" << (seconds > 0 ? 100 * cpu_s / seconds : 0)
      << ",\"rss_mib_warm\":" << rss_warm << ",\"rss_mib_end\":" << rss_end << ",\"rss_mib_max\":" << rss_max
      << ",\"rss_mib_by_quarter\":[" << rss_by_quarter[1] << ',' << rss_by_quarter[2] << ',' << rss_by_quarter[3] << ','
      << rss_by_quarter[4] << "],\"fds_warm\":" << fds_warm << ",\"fds_end\":" << fds_end << ",\"threads_warm\":" << thr_warm
      << ",\"threads_end\":" << thr_end << ",\"buffer_depth_max\":" << depth_max << ",\"buffer_depth_end\":" << depth_end
      << ",\"flat\":" << (flat ? "true" : "false");
    return o.str();
  }
};

inline soak_summary summarize(const std::vector<sample>& samples, int warm_index) {
  soak_summary out;
  if (samples.empty())
    return out;
  const size_t n = samples.size(), tenth = std::max<size_t>(1, n / 10);
  const size_t warm_from = std::min(n - 1, static_cast<size_t>(std::max(warm_index, 0))), warm_to = std::min(n, warm_from + tenth);
  auto rss = [](const sample& s) { return s.rss_mib; };
  auto fds = [](const sample& s) { return static_cast<double>(s.fds); };
  auto thr = [](const sample& s) { return static_cast<double>(s.threads); };
  out.rss_warm = mean_of(samples, warm_from, warm_to, rss);
  out.rss_end = mean_of(samples, n - tenth, n, rss);
  out.fds_warm = mean_of(samples, warm_from, warm_to, fds);
  out.fds_end = mean_of(samples, n - tenth, n, fds);
  out.thr_warm = mean_of(samples, warm_from, warm_to, thr);
  out.thr_end = mean_of(samples, n - tenth, n, thr);
  for (const auto& s : samples) {
    out.depth_max = std::max(out.depth_max, s.buffer_depth);
    out.rss_max = std::max(out.rss_max, s.rss_mib);
  }
  out.depth_end = samples.back().buffer_depth;
  for (int q = 1; q <= 4; ++q) {  // RSS at the end of each quarter (the mean of the tenth before it)
    const size_t to = n * static_cast<size_t>(q) / 4, from = to > tenth ? to - tenth : 0;
    out.rss_by_quarter[q] = mean_of(samples, from, to, rss);
  }
  out.seconds = samples.back().t - samples.front().t;
  out.cpu_s = samples.back().cpu_s - samples.front().cpu_s;
  out.flat = out.rss_by_quarter[4] <= out.rss_by_quarter[2] * 1.03 && out.rss_end <= out.rss_warm * 1.10 &&
             out.fds_end <= out.fds_warm + 4 && out.thr_end <= out.thr_warm + 4;
  return out;
}

// Every sample as CSV, when HEADROOM_SOAK_SAMPLES names a file (for a closer look).
inline void write_samples_csv(const std::vector<sample>& samples) {
  const char* path = std::getenv("HEADROOM_SOAK_SAMPLES");
  if (path == nullptr)
    return;
  std::ofstream csv(path);
  csv << "t,rss_mib,fds,threads,cpu_s,buffer_depth,completed\n";
  for (const auto& s : samples)
    csv << s.t << ',' << s.rss_mib << ',' << s.fds << ',' << s.threads << ',' << s.cpu_s << ',' << s.buffer_depth << ','
        << s.completed << '\n';
}

// Samples `pid` every second on a thread of its own, from construction until `stop()`: /proc, the
// summed policy-buffer depth of its `/metrics` at `metrics_url`, and the caller's progress count.
class sampler {
 public:
  sampler(pid_t pid, std::string metrics_url, const std::atomic<int>& progress)
      : thread_{[this, pid, url = std::move(metrics_url), &progress] {
          const auto t0 = std::chrono::steady_clock::now();
          while (running_) {
            auto x = probe(pid);
            x.t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            x.buffer_depth = buffer_depth(testenv::run_command({"curl", "-fsS", url}).out);
            x.completed = progress;
            samples_.push_back(x);
            std::this_thread::sleep_for(std::chrono::seconds(1));
          }
        }} {}
  sampler(const sampler&) = delete;
  sampler& operator=(const sampler&) = delete;
  ~sampler() { stop(); }

  // Ends the sampling; the samples taken (empty on a second call).
  std::vector<sample> stop() {
    running_ = false;
    if (thread_.joinable())
      thread_.join();
    return std::move(samples_);
  }

 private:
  std::atomic<bool> running_{true};
  std::vector<sample> samples_;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace headroom::bench
