// The Prometheus query answer decoder (adapters/prometheus/query.cpp): one finite series, or no
// metric with the reason — never a number from anything else. The bodies are Prometheus 2.42's.
#include <gtest/gtest.h>

#include "adapters/prometheus/query.hpp"

namespace headroom::prom {
namespace {

std::string reason_of(const query_result& r) {
  auto* n = std::get_if<no_metric>(&r);
  return n ? n->reason : "";
}

TEST(prometheus_query, a_matrix_of_one_series_decodes_in_order) {
  auto r = decode_query(R"({"status":"success","data":{"resultType":"matrix","result":[
    {"metric":{"__name__":"load","job":"exp"},"values":[[1800000000,"1.5"],[1800000001.25,"2"],[1800000002,"-3e2"]]}]}})");
  ASSERT_TRUE(std::holds_alternative<series>(r)) << reason_of(r);
  const auto& s = std::get<series>(r);
  EXPECT_EQ(s.labels, R"({__name__="load",job="exp"})");
  ASSERT_EQ(s.samples.size(), 3u);
  EXPECT_EQ(s.samples[1], (sample{1800000001.25, 2}));
  EXPECT_EQ(s.samples[2].v, -300);
}

TEST(prometheus_query, vectors_and_scalars_give_one_sample) {
  auto v = decode_query(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1800000000.5,"7"]}]}})");
  ASSERT_TRUE(std::holds_alternative<series>(v)) << reason_of(v);
  EXPECT_EQ(std::get<series>(v).samples, (std::vector<sample>{{1800000000.5, 7}}));
  auto s = decode_query(R"({"status":"success","data":{"resultType":"scalar","result":[1800000000,"0.25"]}})");
  ASSERT_TRUE(std::holds_alternative<series>(s)) << reason_of(s);
  EXPECT_EQ(std::get<series>(s).samples[0].v, 0.25);
}

TEST(prometheus_query, anything_but_one_finite_series_is_no_metric_with_the_reason) {
  struct c {
    const char* body;
    const char* says;
  };
  const c cases[] = {
      {R"({"status":"success","data":{"resultType":"vector","result":[]}})", "empty result"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[1,"1"]},{"metric":{"a":"2"},"value":[1,"2"]}]}})",
       "2 series"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}})", "NaN"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"+Inf"]}]}})", "+Inf"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[2,"-Inf"]]}]}})", "values[1]"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"12abc"]}]}})", "not a number"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,""]}]}})", "not a number"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}})", "expected [time"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{}]}]}})", "histogram"},
      {R"({"status":"success","data":{"resultType":"string","result":[1,"x"]}})", "not a number type"},
      {R"({"status":"success","data":{"result":[],"resultType":"vector"}})", "before data.resultType"},
      {R"({"status":"error","errorType":"bad_data","error":"parse error at char 4"})", "bad_data: parse error"},
      {R"({"status":"success"})", "no data.resultType"},
      {R"({"data":{}})", "no status"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[]}]}})", "no samples"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}])", "malformed"},
      {"", "malformed"},
      {"[1,2,3]", "malformed"},
  };
  for (const auto& k : cases) {
    auto r = decode_query(k.body);
    ASSERT_TRUE(std::holds_alternative<no_metric>(r)) << k.body;
    EXPECT_NE(reason_of(r).find(k.says), std::string::npos) << k.body << " → " << reason_of(r);
  }
}

TEST(prometheus_query, selectors_read_raw_samples_and_expressions_a_subquery) {
  EXPECT_TRUE(is_selector("load"));
  EXPECT_TRUE(is_selector(R"(custom_metric{job="my-inference"})"));
  EXPECT_TRUE(is_selector(R"( queue_depth{job=~"a|b", x!="}(" } )"));
  EXPECT_TRUE(is_selector(R"({__name__="x"})"));
  EXPECT_FALSE(is_selector("sum(load)"));
  EXPECT_FALSE(is_selector("load * 2"));
  EXPECT_FALSE(is_selector("rate(x[1m])"));
  EXPECT_FALSE(is_selector("load offset 1m"));
  EXPECT_FALSE(is_selector("9load"));
  EXPECT_FALSE(is_selector(R"(x{a="unterminated})"));
  EXPECT_EQ(window_query(R"(q{job="a"})", 120, 15), R"(q{job="a"}[120s])");
  EXPECT_EQ(window_query("avg(q)", 120, 15), "(avg(q))[120s:15s]");
}

}  // namespace
}  // namespace headroom::prom
