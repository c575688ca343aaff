#pragma once

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/mailbox/buffer_stats.hpp"

namespace headroom::runtime {

// Process metrics in the standard names (process_resident_memory_bytes, process_cpu_seconds_total,
// process_threads, process_open_fds, process_start_time_seconds), read from /proc at scrape time
// so nothing runs between scrapes.
class process_collector final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

// Depth, in-flight and counters of every policy buffer, labelled {buffer, policy}. Buffers are held
// weakly: a buffer whose owner died disappears from the next scrape.
class buffer_collector final : public prometheus::Collectable {
 public:
  void track(const buffer_stats_ptr& stats);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::weak_ptr<buffer_stats>> buffers_;
};

// Restart counts and last exit reasons of supervised children.
class supervision_metrics {
 public:
  explicit supervision_metrics(prometheus::Registry& registry);

  void child_started(const std::string& supervisor, const std::string& child);
  void child_exited(const std::string& supervisor, const std::string& child, const std::string& reason);
  void child_restarted(const std::string& supervisor, const std::string& child);
  void escalated(const std::string& supervisor);

 private:
  prometheus::Family<prometheus::Counter>& restarts_;
  prometheus::Family<prometheus::Counter>& exits_;
  prometheus::Family<prometheus::Gauge>& up_;
  prometheus::Family<prometheus::Gauge>& last_exit_;
  prometheus::Family<prometheus::Counter>& escalations_;
  std::mutex mutex_;
  std::vector<std::pair<std::string, prometheus::Gauge*>> last_exit_by_child_;  // key: supervisor/child
};

// Everything headroom exports: one registry, the process and buffer collectors, supervision.
class metrics {
 public:
  metrics();

  prometheus::Registry& registry() { return *registry_; }
  buffer_collector& buffers() { return *buffers_; }
  supervision_metrics& supervision() { return *supervision_; }

  // A collector rendered with everything else, made once per `key` by `make` (a table of
  // per-object series, modes/shared/series_table.hpp, is one collector for all its objects).
  std::shared_ptr<prometheus::Collectable> collector(const void* key,
                                                      const std::function<std::shared_ptr<prometheus::Collectable>()>& make);

  // Prometheus text exposition format of everything above.
  std::string render() const;

 private:
  mutable std::mutex collectors_mu_;
  std::vector<std::pair<const void*, std::shared_ptr<prometheus::Collectable>>> collectors_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<process_collector> process_;
  std::shared_ptr<buffer_collector> buffers_;
  std::unique_ptr<supervision_metrics> supervision_;
};

}  // namespace headroom::runtime
