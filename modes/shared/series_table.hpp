#pragma once

// Each mode's per-object series (a scale set's gha_* and headroom_capacity_* metrics, a reactive
// target's): a table of names and help texts, and one row of values per object with its labels,
// looked up by name from the actors through plain functions (actors know no prometheus-cpp).
//
// One collector holds every object's row and renders the series at scrape time. Registering each
// series with prometheus-cpp kept a label map per series: about 1 KiB each, 45 MiB of a thousand
// scale sets' 46 series (measured: a thousand scale sets idled at 186 MiB). A row is its labels
// once and a value per name.

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/metrics.hpp"

namespace headroom::modes {

struct series {
  const char* name;
  const char* help;
};

// The series of one table (its gauges, then its counters) for every object that has a row.
class series_table final : public prometheus::Collectable {
 public:
  class row {
   public:
    row(std::shared_ptr<const series_table> table, const std::map<std::string, std::string>& labels)
        : table_(std::move(table)), values_(table_->names_.size()) {
      for (const auto& [k, v] : labels)
        labels_.push_back({k, v});
    }
    // A gauge's new value, or a counter's increment; an unknown name does nothing.
    void set(std::string_view name, double v) {
      if (auto i = table_->gauge(name))
        values_[*i].store(v, std::memory_order_relaxed);
    }
    void add(std::string_view name, double v) {
      if (auto i = table_->counter(name))
        values_[*i].fetch_add(v, std::memory_order_relaxed);
    }

   private:
    friend class series_table;
    std::shared_ptr<const series_table> table_;
    std::vector<prometheus::ClientMetric::Label> labels_;
    std::vector<std::atomic<double>> values_;
  };

  series_table(std::span<const series> gauges, std::span<const series> counters) : gauges_(gauges.size()) {
    for (const auto* list : {&gauges, &counters})
      for (const auto& s : *list) {
        index_.emplace(s.name, names_.size());
        names_.push_back(s);
      }
  }

  // The table of `gauges`/`counters` in `m`: made at the first call, rendered with m's series.
  static std::shared_ptr<series_table> in(runtime::metrics& m, std::span<const series> gauges, std::span<const series> counters) {
    return std::static_pointer_cast<series_table>(
        m.collector(gauges.data(), [&] { return std::make_shared<series_table>(gauges, counters); }));
  }

  // A row for one object; its series are rendered while the row lives.
  static std::shared_ptr<row> add(const std::shared_ptr<series_table>& table, const std::map<std::string, std::string>& labels) {
    auto r = std::make_shared<row>(table, labels);
    std::lock_guard lock{table->mu_};
    std::erase_if(table->rows_, [](const auto& w) { return w.expired(); });
    table->rows_.push_back(r);
    return r;
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<std::shared_ptr<const row>> live;
    {
      std::lock_guard lock{mu_};
      for (const auto& w : rows_)
        if (auto r = w.lock())
          live.push_back(std::move(r));
    }
    std::vector<prometheus::MetricFamily> out(names_.size());
    for (size_t i = 0; i < names_.size(); ++i) {
      auto& f = out[i];
      f.name = names_[i].name;
      f.help = names_[i].help;
      f.type = i < gauges_ ? prometheus::MetricType::Gauge : prometheus::MetricType::Counter;
      f.metric.reserve(live.size());
      for (const auto& r : live) {
        prometheus::ClientMetric m;
        m.label = r->labels_;
        const double v = r->values_[i].load(std::memory_order_relaxed);
        if (i < gauges_)
          m.gauge.value = v;
        else
          m.counter.value = v;
        f.metric.push_back(std::move(m));
      }
    }
    return out;
  }

 private:
  std::optional<size_t> gauge(std::string_view name) const {
    auto it = index_.find(name);
    return it != index_.end() && it->second < gauges_ ? std::optional<size_t>{it->second} : std::nullopt;
  }
  std::optional<size_t> counter(std::string_view name) const {
    auto it = index_.find(name);
    return it != index_.end() && it->second >= gauges_ ? std::optional<size_t>{it->second} : std::nullopt;
  }

  size_t gauges_;
  std::vector<series> names_;
  std::unordered_map<std::string_view, size_t> index_;
  mutable std::mutex mu_;
  mutable std::vector<std::weak_ptr<const row>> rows_;
};

// One object's series in its mode's table (the handle the actors' metric functions hold).
class series_set {
 public:
  series_set(runtime::metrics& m, std::span<const series> gauges, std::span<const series> counters,
             const std::map<std::string, std::string>& labels)
      : row_(series_table::add(series_table::in(m, gauges, counters), labels)) {}
  void set(const char* name, double v) const { row_->set(name, v); }
  void add(const char* name, double v) const { row_->add(name, v); }

 private:
  std::shared_ptr<series_table::row> row_;
};

}  // namespace headroom::modes
