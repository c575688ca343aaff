#pragma once

// Each mode's per-object series (a scale set's gha_* metrics, a reactive target's): a table of
// names and help texts, registered once per object with its labels, and looked up by name from
// the actors through plain functions (actors know no prometheus-cpp).

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <span>
#include <string>

namespace headroom::modes {

struct series {
  const char* name;
  const char* help;
};

// The gauges and counters of `table` for one label set; set/add on an unknown name do nothing.
class series_set {
 public:
  series_set(prometheus::Registry& reg, std::span<const series> gauges, std::span<const series> counters,
             const std::map<std::string, std::string>& labels) {
    for (const auto& s : gauges)
      gauges_[s.name] = &prometheus::BuildGauge().Name(s.name).Help(s.help).Register(reg).Add(labels);
    for (const auto& s : counters)
      counters_[s.name] = &prometheus::BuildCounter().Name(s.name).Help(s.help).Register(reg).Add(labels);
  }
  void set(const char* name, double v) const {
    if (auto it = gauges_.find(name); it != gauges_.end())
      it->second->Set(v);
  }
  void add(const char* name, double v) const {
    if (auto it = counters_.find(name); it != counters_.end())
      it->second->Increment(v);
  }

 private:
  std::map<std::string, prometheus::Gauge*, std::less<>> gauges_;
  std::map<std::string, prometheus::Counter*, std::less<>> counters_;
};

}  // namespace headroom::modes
