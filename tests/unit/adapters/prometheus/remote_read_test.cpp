// Selectors read into label matchers as PromQL's parser reads them, and the remote-read request
// and response (adapters/prometheus/selector.cpp, remote_read.cpp): the bytes are Prometheus'
// prompb messages, snappy-compressed; answers follow the query API's rule (one finite series).

#include <gtest/gtest.h>

#include <chrono>
#include <snappy.h>

#include <cmath>
#include <cstring>

#include "adapters/prometheus/remote_read.hpp"
#include "prometheus/remote.pb.h"

namespace headroom::prom {
namespace {

using op = label_matcher::op;

std::vector<label_matcher> selector(std::string_view s) {
  std::string why;
  auto m = parse_selector(s, why);
  EXPECT_TRUE(m) << s << ": " << why;
  return m ? *m : std::vector<label_matcher>{};
}

std::string refused(std::string_view s) {
  std::string why;
  auto m = parse_selector(s, why);
  EXPECT_FALSE(m) << s;
  return why;
}

TEST(prometheus_selector, names_and_matchers_become_label_matchers) {
  EXPECT_EQ(selector("up"), (std::vector<label_matcher>{{op::eq, "__name__", "up"}}));
  EXPECT_EQ(selector(R"( custom_metric{job="my-inference", zone!='a', pod=~"web-.*",env!~`dev|test`,} )"),
            (std::vector<label_matcher>{{op::eq, "__name__", "custom_metric"},
                                        {op::eq, "job", "my-inference"},
                                        {op::neq, "zone", "a"},
                                        {op::re, "pod", "web-.*"},
                                        {op::nre, "env", "dev|test"}}));
  EXPECT_EQ(selector(R"({__name__="x:rate5m", a="q\"\\\n\x41\u00e9"})"),
            (std::vector<label_matcher>{{op::eq, "__name__", "x:rate5m"}, {op::eq, "a", "q\"\\\nA\xc3\xa9"}}));
  EXPECT_EQ(selector(R"(m{a=`raw\n`})"), (std::vector<label_matcher>{{op::eq, "__name__", "m"}, {op::eq, "a", "raw\\n"}}));
}

TEST(prometheus_selector, anything_but_a_plain_selector_is_refused_with_the_reason) {
  EXPECT_NE(refused("rate(x[5m])").find("not a plain selector"), std::string::npos);
  EXPECT_NE(refused("x[5m]").find("offset 1"), std::string::npos);
  EXPECT_NE(refused("x + y").find("not a plain selector"), std::string::npos);
  EXPECT_NE(refused("x offset 5m").find("not a plain selector"), std::string::npos);
  EXPECT_NE(refused(R"(x{a="unterminated})").find("unterminated string"), std::string::npos);
  EXPECT_NE(refused(R"(x{a=b})").find("quoted string"), std::string::npos);
  EXPECT_NE(refused(R"(x{a<"b"})").find("expected =, !=, =~ or !~"), std::string::npos);
  EXPECT_NE(refused(R"(x{a="\q"})").find("unknown escape"), std::string::npos);
  EXPECT_NE(refused("{}").find("no metric name and no label matcher"), std::string::npos);
  EXPECT_NE(refused("").find("no metric name"), std::string::npos);
  EXPECT_NE(refused("sum(x)").find("not a plain selector"), std::string::npos);
  EXPECT_EQ(selector("sum").size(), 1u) << "alone, an aggregation's name is a metric name";
  EXPECT_NE(refused("offset").find("keyword"), std::string::npos) << "left to the query API";
}

TEST(prometheus_remote_read, the_request_is_a_snappy_read_request_with_each_query) {
  const auto body = encode_read_request({raw_query{selector(R"(m{job="a"})"), 1000, 61000}, raw_query{selector("n"), 5, 6}});
  std::string raw;
  ASSERT_TRUE(snappy::Uncompress(body.data(), body.size(), &raw));
  ::prometheus::ReadRequest req;
  ASSERT_TRUE(req.ParseFromString(raw));
  ASSERT_EQ(req.queries_size(), 2);
  EXPECT_EQ(req.accepted_response_types(0), ::prometheus::ReadRequest::SAMPLES);
  EXPECT_EQ(req.queries(0).start_timestamp_ms(), 1000);
  EXPECT_EQ(req.queries(0).end_timestamp_ms(), 61000);
  ASSERT_EQ(req.queries(0).matchers_size(), 2);
  EXPECT_EQ(req.queries(0).matchers(1).name(), "job");
  EXPECT_EQ(req.queries(0).matchers(1).value(), "a");
  EXPECT_EQ(req.queries(0).matchers(1).type(), ::prometheus::LabelMatcher::EQ);
  EXPECT_EQ(req.queries(1).matchers(0).value(), "n");
}

std::string response(const std::vector<std::vector<std::vector<std::pair<int64_t, double>>>>& results) {
  ::prometheus::ReadResponse resp;
  for (const auto& series_list : results) {
    auto* r = resp.add_results();
    int n = 0;
    for (const auto& samples : series_list) {
      auto* ts = r->add_timeseries();
      auto* l = ts->add_labels();
      l->set_name("__name__");
      l->set_value("m" + std::to_string(n++));
      for (const auto& [t, v] : samples) {
        auto* s = ts->add_samples();
        s->set_timestamp(t);
        s->set_value(v);
      }
    }
  }
  std::string out;
  const auto raw = resp.SerializeAsString();
  snappy::Compress(raw.data(), raw.size(), &out);
  return out;
}

std::string reason(const query_result& r) { return std::holds_alternative<no_metric>(r) ? std::get<no_metric>(r).reason : ""; }

TEST(prometheus_remote_read, each_query_gets_its_one_series_or_the_reason) {
  double stale = 0;
  const uint64_t bits = 0x7ff0000000000002ULL;
  std::memcpy(&stale, &bits, sizeof stale);
  const auto out = decode_read_response(response({{{{1000, 1.5}, {2000, 2.5}}},
                                                  {},
                                                  {{{1000, 1}}, {{1000, 2}}},
                                                  {{{1000, 1}, {2000, stale}}},
                                                  {{{1000, std::nan("")}}},
                                                  {{{1000, stale}}}}),
                                         6);
  ASSERT_EQ(out.size(), 6u);
  ASSERT_TRUE(std::holds_alternative<series>(out[0])) << reason(out[0]);
  EXPECT_EQ(std::get<series>(out[0]).samples, (std::vector<sample>{{1.0, 1.5}, {2.0, 2.5}}));
  EXPECT_EQ(std::get<series>(out[0]).labels, "{__name__=\"m0\"}");
  EXPECT_NE(reason(out[1]).find("empty result"), std::string::npos);
  EXPECT_NE(reason(out[2]).find("2 series"), std::string::npos);
  ASSERT_TRUE(std::holds_alternative<series>(out[3])) << "a staleness marker is dropped, as the query API drops it";
  EXPECT_EQ(std::get<series>(out[3]).samples.size(), 1u);
  EXPECT_EQ(std::get<series>(out[3]).ended_at, 2.0) << "the series ended at its staleness marker";
  EXPECT_EQ(std::get<series>(out[0]).ended_at, 0.0);
  EXPECT_NE(reason(out[4]).find("not a finite number"), std::string::npos);
  EXPECT_NE(reason(out[5]).find("ended before the window"), std::string::npos);
  EXPECT_TRUE(std::get<no_metric>(out[5]).absent);
  EXPECT_TRUE(std::get<no_metric>(out[1]).absent) << "no series is absent";
  EXPECT_FALSE(std::get<no_metric>(out[2]).absent) << "two series is a wrong query, not an absent one";
}

TEST(prometheus_remote_read, a_body_that_is_not_an_answer_fails_every_query_with_the_reason) {
  EXPECT_NE(reason(decode_read_response("not snappy at all \xff\xff\xff\xff\xff", 2).at(1)).find("snappy"), std::string::npos);
  std::string junk;
  snappy::Compress("\x0a\xff\xff", 3, &junk);
  EXPECT_NE(reason(decode_read_response(junk, 1).at(0)).find("not a ReadResponse"), std::string::npos);
  EXPECT_NE(reason(decode_read_response(response({{}}), 3).at(2)).find("1 results for 3 queries"), std::string::npos);
}

// The fuzz target's timeout: 13 bytes whose snappy header claims ~500 MiB. Refused from the claim,
// before any room is made for it (it took 12 s under ASan, allocating and clearing all of it).
TEST(prometheus_remote_read, a_tiny_body_claiming_a_huge_length_is_refused_before_any_allocation) {
  const std::string bomb{"\xff\xff\xff\x5b\xff\xff\xff\xff\xff\x41\x5f\x61\xc0", 13};
  size_t claimed = 0;
  ASSERT_TRUE(snappy::GetUncompressedLength(bomb.data(), bomb.size(), &claimed));
  EXPECT_GT(claimed, 100u << 20);
  const auto started = std::chrono::steady_clock::now();
  const auto out = decode_read_response(bomb, 2);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(100));
  EXPECT_NE(reason(out.at(0)).find("more than snappy expands to"), std::string::npos) << reason(out.at(0));
  // A real, highly compressible body still decodes: 1 MiB of zeros within the bound.
  std::string zeros(1 << 20, '\0'), packed;
  snappy::Compress(zeros.data(), zeros.size(), &packed);
  EXPECT_NE(reason(decode_read_response(packed, 1).at(0)).find("not a ReadResponse"), std::string::npos)
      << "a genuine stream passes the length bound: " << reason(decode_read_response(packed, 1).at(0));
}

}  // namespace
}  // namespace headroom::prom
