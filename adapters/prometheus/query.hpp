#pragma once

// The Prometheus HTTP API's query answer (/api/v1/query), decoded with simdjson: exactly one
// series of finite float samples, or "no metric" with the reason. Anything else — an error status,
// an empty result, more than one series, NaN or ±Inf, a native histogram, a malformed body — is
// never a number: the caller skips its decision.

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace headroom::prom {

struct sample {
  double t = 0;  // seconds since the epoch (the TSDB's timestamp)
  double v = 0;
  friend bool operator==(const sample&, const sample&) = default;
};

// One series: a matrix's values, a vector's or a scalar's single value.
struct series {
  std::string labels;            // {job="x",…} for messages
  std::vector<sample> samples;   // in time order, as the TSDB returns them
  double ended_at = 0;           // > 0: the series ended then (its last sample is a staleness marker)
};

struct no_metric {
  std::string reason;
  bool absent = false;  // Prometheus answered: no series matches, or the series has no samples in the window
};

using query_result = std::variant<series, no_metric>;

query_result decode_query(std::string_view body);

// Whether `expr` is a plain instant-vector selector (`name`, `name{…}` or `{…}`), whose raw samples
// a range selector `expr[30s]` returns; anything else is evaluated as a subquery.
bool is_selector(std::string_view expr);

// The query for the samples of `expr` over the last `window_s` seconds: the raw samples for a
// selector, a subquery at `step_s` otherwise.
std::string window_query(std::string_view expr, long window_s, long step_s);

}  // namespace headroom::prom
