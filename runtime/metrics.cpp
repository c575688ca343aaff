#include "runtime/metrics.hpp"

#include <dirent.h>
#include <unistd.h>

#include <prometheus/text_serializer.h>

#include <chrono>
#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

namespace headroom::runtime {

namespace {

prometheus::MetricFamily gauge_family(std::string name, std::string help, double value) {
  prometheus::MetricFamily family{std::move(name), std::move(help), prometheus::MetricType::Gauge, {}};
  prometheus::ClientMetric m;
  m.gauge.value = value;
  family.metric.push_back(std::move(m));
  return family;
}

prometheus::MetricFamily counter_family(std::string name, std::string help, double value) {
  prometheus::MetricFamily family{std::move(name), std::move(help), prometheus::MetricType::Counter, {}};
  prometheus::ClientMetric m;
  m.counter.value = value;
  family.metric.push_back(std::move(m));
  return family;
}

int count_open_fds() {
  int n = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr)
      ++n;
    closedir(dir);
    n -= 3;  // ".", ".." and the descriptor of this very listing
  }
  return n < 0 ? 0 : n;
}

}  // namespace

std::vector<prometheus::MetricFamily> process_collector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  // /proc/self/stat: fields after the parenthesised command name; see proc(5).
  std::ifstream stat_file{"/proc/self/stat"};
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  if (close == std::string::npos)
    return out;
  std::istringstream fields{stat.substr(close + 2)};
  std::vector<std::string> f{std::istream_iterator<std::string>{fields}, std::istream_iterator<std::string>{}};
  // f[0] is field 3 (state); utime=14, stime=15, num_threads=20, starttime=22, vsize=23, rss=24.
  auto field = [&](size_t n) { return n - 3 < f.size() ? std::stod(f[n - 3]) : 0.0; };
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  double boot_time = 0;
  std::ifstream proc_stat{"/proc/stat"};
  for (std::string line; std::getline(proc_stat, line);)
    if (line.rfind("btime ", 0) == 0)
      boot_time = std::stod(line.substr(6));
  out.push_back(counter_family("process_cpu_seconds_total", "User and system CPU time spent in seconds.",
                               (field(14) + field(15)) / ticks));
  out.push_back(gauge_family("process_resident_memory_bytes", "Resident memory size in bytes.", field(24) * page));
  out.push_back(gauge_family("process_virtual_memory_bytes", "Virtual memory size in bytes.", field(23)));
  out.push_back(gauge_family("process_threads", "Number of OS threads in the process.", field(20)));
  out.push_back(gauge_family("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                             boot_time + field(22) / ticks));
  out.push_back(gauge_family("process_open_fds", "Number of open file descriptors.", count_open_fds()));
  return out;
}

void buffer_collector::track(const buffer_stats_ptr& stats) {
  std::lock_guard<std::mutex> guard{mutex_};
  buffers_.push_back(stats);
}

std::vector<prometheus::MetricFamily> buffer_collector::Collect() const {
  using prometheus::MetricType;
  struct column {
    const char* name;
    const char* help;
    MetricType type;
    double (*read)(const buffer_stats&);
  };
  static const column columns[] = {
      {"headroom_buffer_depth", "Items waiting in a policy buffer.", MetricType::Gauge,
       [](const buffer_stats& s) { return static_cast<double>(s.depth.load(std::memory_order_relaxed)); }},
      {"headroom_buffer_in_flight", "Items of a policy buffer being handled.", MetricType::Gauge,
       [](const buffer_stats& s) { return static_cast<double>(s.in_flight.load(std::memory_order_relaxed)); }},
      {"headroom_buffer_accepted_total", "Items a policy buffer took in.", MetricType::Counter,
       [](const buffer_stats& s) { return static_cast<double>(s.accepted.load(std::memory_order_relaxed)); }},
      {"headroom_buffer_coalesced_total", "Items superseded by a newer item before delivery.", MetricType::Counter,
       [](const buffer_stats& s) { return static_cast<double>(s.coalesced.load(std::memory_order_relaxed)); }},
      {"headroom_buffer_dropped_total", "Items refused because a policy buffer was full.", MetricType::Counter,
       [](const buffer_stats& s) { return static_cast<double>(s.dropped.load(std::memory_order_relaxed)); }},
      {"headroom_buffer_delivered_total", "Items a policy buffer handed to its consumer.", MetricType::Counter,
       [](const buffer_stats& s) { return static_cast<double>(s.delivered.load(std::memory_order_relaxed)); }},
      {"headroom_buffer_wakeups_total", "Wake-up messages a policy buffer sent to its consumer.", MetricType::Counter,
       [](const buffer_stats& s) { return static_cast<double>(s.wakeups.load(std::memory_order_relaxed)); }},
  };
  std::vector<buffer_stats_ptr> live;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    // (Tested before it is moved from: testing after the move dropped every live buffer at its
    // first scrape, so /metrics showed the buffers once and never again.)
    std::erase_if(buffers_, [&](const std::weak_ptr<buffer_stats>& w) {
      auto s = w.lock();
      if (!s)
        return true;
      live.push_back(std::move(s));
      return false;
    });
  }
  std::vector<prometheus::MetricFamily> out;
  for (const auto& c : columns) {
    prometheus::MetricFamily family{c.name, c.help, c.type, {}};
    for (const auto& s : live) {
      prometheus::ClientMetric m;
      m.label = {{"buffer", s->name}, {"policy", s->policy}};
      if (c.type == MetricType::Gauge)
        m.gauge.value = c.read(*s);
      else
        m.counter.value = c.read(*s);
      family.metric.push_back(std::move(m));
    }
    out.push_back(std::move(family));
  }
  return out;
}

supervision_metrics::supervision_metrics(prometheus::Registry& registry)
    : restarts_(prometheus::BuildCounter()
                    .Name("headroom_supervisor_restarts_total")
                    .Help("Children restarted by a supervisor.")
                    .Register(registry)),
      exits_(prometheus::BuildCounter()
                 .Name("headroom_supervisor_child_exits_total")
                 .Help("Child exits seen by a supervisor, by reason.")
                 .Register(registry)),
      up_(prometheus::BuildGauge()
              .Name("headroom_supervisor_child_up")
              .Help("1 while a supervised child runs.")
              .Register(registry)),
      last_exit_(prometheus::BuildGauge()
                     .Name("headroom_supervisor_child_last_exit_info")
                     .Help("The last exit reason of a child (value 1; the reason is a label).")
                     .Register(registry)),
      escalations_(prometheus::BuildCounter()
                       .Name("headroom_supervisor_escalations_total")
                       .Help("Times a supervisor gave up on a child and exited itself.")
                       .Register(registry)) {}

void supervision_metrics::child_started(const std::string& supervisor, const std::string& child) {
  up_.Add({{"supervisor", supervisor}, {"child", child}}).Set(1);
}

void supervision_metrics::child_exited(const std::string& supervisor, const std::string& child,
                                       const std::string& reason) {
  up_.Add({{"supervisor", supervisor}, {"child", child}}).Set(0);
  exits_.Add({{"supervisor", supervisor}, {"child", child}, {"reason", reason}}).Increment();
  const std::string key = supervisor + "/" + child;
  std::lock_guard<std::mutex> guard{mutex_};
  auto it = std::find_if(last_exit_by_child_.begin(), last_exit_by_child_.end(),
                         [&](const auto& kv) { return kv.first == key; });
  if (it != last_exit_by_child_.end()) {
    last_exit_.Remove(it->second);
    last_exit_by_child_.erase(it);
  }
  auto& g = last_exit_.Add({{"supervisor", supervisor}, {"child", child}, {"reason", reason}});
  g.Set(1);
  last_exit_by_child_.emplace_back(key, &g);
}

void supervision_metrics::child_restarted(const std::string& supervisor, const std::string& child) {
  restarts_.Add({{"supervisor", supervisor}, {"child", child}}).Increment();
}

void supervision_metrics::escalated(const std::string& supervisor) {
  escalations_.Add({{"supervisor", supervisor}}).Increment();
}

metrics::metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      process_(std::make_shared<process_collector>()),
      buffers_(std::make_shared<buffer_collector>()),
      supervision_(std::make_unique<supervision_metrics>(*registry_)) {}

std::shared_ptr<prometheus::Collectable> metrics::collector(const void* key,
                                                            const std::function<std::shared_ptr<prometheus::Collectable>()>& make) {
  std::lock_guard lock{collectors_mu_};
  for (const auto& [k, c] : collectors_)
    if (k == key)
      return c;
  return collectors_.emplace_back(key, make()).second;
}

std::string metrics::render() const {
  auto families = registry_->Collect();
  std::vector<std::shared_ptr<prometheus::Collectable>> more_collectors;
  {
    std::lock_guard lock{collectors_mu_};
    for (const auto& [k, c] : collectors_)
      more_collectors.push_back(c);
  }
  auto append = [&families](const prometheus::Collectable& c) {
    auto more = c.Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  };
  append(*process_);
  append(*buffers_);
  for (const auto& c : more_collectors)
    append(*c);
  return prometheus::TextSerializer{}.Serialize(families);
}

}  // namespace headroom::runtime
