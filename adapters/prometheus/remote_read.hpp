#pragma once

// Prometheus' remote-read API (POST /api/v1/read): the raw samples of many selectors in one
// request, snappy-compressed protobuf both ways (messages/proto/prometheus/remote.proto). One
// request instead of one query per target per evaluation: 1,000 targets at a 1 s interval cost
// 1,000 HTTP round trips a second through the query API, and a handful this way.
//
// Each query's answer is what the query API gives for the range selector `sel[W]` evaluated at the
// end time — the raw samples in [end − W, end] — decoded to the same rule: exactly one series of
// finite float samples, or no_metric with the reason. Staleness markers (the TSDB's "this series
// ended" sample) are dropped as the query API drops them; any other NaN or ±Inf is no metric.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/prometheus/query.hpp"
#include "adapters/prometheus/selector.hpp"

namespace headroom::prom {

struct raw_query {
  std::vector<label_matcher> matchers;
  int64_t start_ms = 0, end_ms = 0;  // inclusive, milliseconds since the epoch
};

// The request body: a ReadRequest (SAMPLES responses), snappy block-compressed.
std::string encode_read_request(const std::vector<raw_query>& queries);

// A response body (snappy block-compressed ReadResponse) → one result per query. A body that is
// not one, or holds another number of results, makes every query's result no_metric, naming why.
std::vector<query_result> decode_read_response(std::string_view body, size_t queries);

}  // namespace headroom::prom
