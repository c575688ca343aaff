#include "adapters/prometheus/remote_read.hpp"

#include <snappy.h>

#include <cmath>
#include <cstring>

#include "prometheus/remote.pb.h"

namespace headroom::prom {

namespace {

// Prometheus' staleness marker: a NaN with this exact bit pattern (model/value.StaleNaN).
constexpr uint64_t stale_nan_bits = 0x7ff0000000000002ULL;

bool is_stale_marker(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits == stale_nan_bits;
}

::prometheus::LabelMatcher::Type wire_type(label_matcher::op o) {
  switch (o) {
    case label_matcher::op::eq: return ::prometheus::LabelMatcher::EQ;
    case label_matcher::op::neq: return ::prometheus::LabelMatcher::NEQ;
    case label_matcher::op::re: return ::prometheus::LabelMatcher::RE;
    case label_matcher::op::nre: return ::prometheus::LabelMatcher::NRE;
  }
  return ::prometheus::LabelMatcher::EQ;
}

query_result decode_result(const ::prometheus::QueryResult& r) {
  if (r.timeseries_size() == 0)
    return no_metric{"no series (empty result)", true};
  if (r.timeseries_size() > 1)
    return no_metric{std::to_string(r.timeseries_size()) + " series; the metric must select exactly one"};
  const auto& ts = r.timeseries(0);
  series out;
  out.labels = "{";
  for (const auto& l : ts.labels()) {
    if (out.labels.size() > 1)
      out.labels += ',';
    out.labels += l.name() + "=\"" + l.value() + "\"";
  }
  out.labels += "}";
  out.samples.reserve(static_cast<size_t>(ts.samples_size()));
  for (const auto& s : ts.samples()) {
    // A staleness marker: the target stopped exporting the series (its pods are gone). It ends the
    // series until a later sample starts it again.
    if (is_stale_marker(s.value())) {
      out.ended_at = static_cast<double>(s.timestamp()) / 1000.0;
      continue;
    }
    out.ended_at = 0;
    if (!std::isfinite(s.value()))
      return no_metric{out.labels + ": a sample is " + std::to_string(s.value()) + ", not a finite number"};
    out.samples.push_back(sample{static_cast<double>(s.timestamp()) / 1000.0, s.value()});
  }
  if (out.samples.empty())
    return no_metric{out.labels + (out.ended_at > 0 ? ": ended before the window" : ": no samples in the window"), true};
  return out;
}

}  // namespace

std::string encode_read_request(const std::vector<raw_query>& queries) {
  ::prometheus::ReadRequest req;
  req.add_accepted_response_types(::prometheus::ReadRequest::SAMPLES);
  for (const auto& q : queries) {
    auto* out = req.add_queries();
    out->set_start_timestamp_ms(q.start_ms);
    out->set_end_timestamp_ms(q.end_ms);
    for (const auto& m : q.matchers) {
      auto* w = out->add_matchers();
      w->set_type(wire_type(m.type));
      w->set_name(m.name);
      w->set_value(m.value);
    }
    // Raw samples, no function: the server must not downsample.
    out->mutable_hints()->set_start_ms(q.start_ms);
    out->mutable_hints()->set_end_ms(q.end_ms);
  }
  std::string raw = req.SerializeAsString();
  std::string compressed;
  snappy::Compress(raw.data(), raw.size(), &compressed);
  return compressed;
}

std::vector<query_result> decode_read_response(std::string_view body, size_t queries) {
  auto all = [queries](std::string why) { return std::vector<query_result>(queries, no_metric{std::move(why)}); };
  size_t length = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &length))
    return all("remote read: the body is not snappy-compressed");
  if (length > (512u << 20))
    return all("remote read: the body would be " + std::to_string(length) + " bytes uncompressed");
  // The length is the sender's claim: a 13-byte body claiming hundreds of MiB made Uncompress
  // allocate and clear all of it before finding the stream short (found by the fuzz target: 12 s
  // per input under ASan, and that much RSS in the agent). No snappy stream expands more than ~22
  // times (a 3-byte copy element writes at most 64 bytes), and the stream is checked - without
  // writing anything - before any room is made for it.
  if (length > body.size() * 24 + 64)
    return all("remote read: the body claims " + std::to_string(length) + " bytes uncompressed from " +
               std::to_string(body.size()) + ", more than snappy expands to");
  if (!snappy::IsValidCompressedBuffer(body.data(), body.size()))
    return all("remote read: the snappy body is corrupt");
  std::string raw;
  if (!snappy::Uncompress(body.data(), body.size(), &raw))
    return all("remote read: the snappy body is corrupt");
  ::prometheus::ReadResponse resp;
  if (!resp.ParseFromString(raw))
    return all("remote read: the body is not a ReadResponse");
  if (static_cast<size_t>(resp.results_size()) != queries)
    return all("remote read: " + std::to_string(resp.results_size()) + " results for " + std::to_string(queries) + " queries");
  std::vector<query_result> out;
  out.reserve(queries);
  for (const auto& r : resp.results())
    out.push_back(decode_result(r));
  return out;
}

}  // namespace headroom::prom
