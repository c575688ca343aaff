#pragma once

// Small statistics the benchmarks share: a percentile of samples, and a Prometheus histogram read
// from /metrics text (cumulative buckets, a quantile as its bucket's upper bound, the fraction
// within a bound).

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace headroom::bench {

inline double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

// A histogram's cumulative buckets (le → count) from Prometheus text, summed over the label sets
// of `name` whose line contains `label` (e.g. name="mpod.kb.io"; empty: all of them).
inline std::map<double, double> buckets(const std::string& text, const std::string& name, const std::string& label = "") {
  std::map<double, double> out;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "_bucket{", 0) != 0 || (!label.empty() && line.find(label) == std::string::npos))
      continue;
    const auto le = line.find("le=\"");
    if (le == std::string::npos)
      continue;
    const auto end = line.find('"', le + 4);
    const std::string bound = line.substr(le + 4, end - le - 4);
    out[bound == "+Inf" ? 1e30 : std::stod(bound)] += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return out;
}

// A counter or gauge from Prometheus text, summed over the label sets of `name` whose line contains
// `label` (empty: all of them).
inline double series_sum(const std::string& text, const std::string& name, const std::string& label = "") {
  double sum = 0;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) {
    if ((line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) ||
        (!label.empty() && line.find(label) == std::string::npos))
      continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

// Cumulative buckets minus an earlier reading of the same histogram (what a phase added).
inline std::map<double, double> buckets_since(std::map<double, double> now, const std::map<double, double>& before) {
  for (auto& [le, n] : now)
    if (auto it = before.find(le); it != before.end())
      n -= it->second;
  return now;
}

// p from cumulative buckets (the upper bound of the bucket that holds it).
inline double bucket_quantile(const std::map<double, double>& b, double p) {
  if (b.empty())
    return 0;
  const double total = b.rbegin()->second;
  for (const auto& [le, n] : b)
    if (n >= p * total)
      return le;
  return b.rbegin()->first;
}

inline double fraction_within(const std::map<double, double>& b, double bound) {
  if (b.empty() || b.rbegin()->second == 0)
    return 0;
  auto it = b.find(bound);
  return it == b.end() ? 0 : it->second / b.rbegin()->second;
}

}  // namespace headroom::bench
