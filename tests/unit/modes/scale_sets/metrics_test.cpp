// The scale sets' series as ARC's listener exports them (cmd/ghalistener/metrics): the names, the
// labels, the buckets; and every query of ARC's published dashboard that reads a listener series
// finds one here, with each label it selects by.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "modes/scale_sets/mode.hpp"
#include "runtime/metrics.hpp"

namespace headroom::modes::scale_sets {
namespace {

struct exposition {
  runtime::metrics m;
  actors::capacity::scale_set_metrics series;

  exposition() {
    scale_set_spec spec;
    spec.name = "linux";
    spec.ns = "runners";
    auto where = github::parse_config_url("https://github.com/acme/widgets");
    series = make_metrics(m, spec, std::get<github::config_url>(where));
  }
  std::string text() const { return m.render(); }
};

msg::job_transition job(msg::job_transition::kind k) {
  msg::job_transition j;
  j.type = k;
  j.repository = "widgets";
  j.owner = "acme";
  j.job_name = "build (ubuntu)";
  j.event_name = "push";
  j.scale_set_assign_time = "2026-11-26T10:00:00Z";
  j.runner_assign_time = "2026-11-26T10:00:07.5Z";
  j.finish_time = "2026-11-26T10:02:07.5Z";
  j.result = "succeeded";
  return j;
}

bool has_line(const std::string& text, const std::string& prefix) {
  return text.find("\n" + prefix) != std::string::npos || text.rfind(prefix, 0) == 0;
}

TEST(arc_metrics, scale_set_series_carry_arc_labels) {
  exposition e;
  e.series.set("gha_assigned_jobs", 3);
  const auto t = e.text();
  EXPECT_TRUE(has_line(t, "gha_assigned_jobs{actions_github_com_scale_set_name=\"linux\",actions_github_com_scale_set_namespace="
                          "\"runners\",enterprise=\"\",name=\"linux\",namespace=\"runners\",organization=\"acme\",repository=\"widgets\"} 3"))
      << t;
  for (const char* name : {"gha_running_jobs", "gha_registered_runners", "gha_busy_runners", "gha_idle_runners", "gha_min_runners",
                           "gha_max_runners", "gha_desired_runners", "headroom_capacity_advertised_max_runners"})
    EXPECT_TRUE(has_line(t, std::string{name} + "{")) << name;
  EXPECT_EQ(t.find("gha_capacity_"), std::string::npos) << "headroom's own series are headroom_*";
}

TEST(arc_metrics, job_series_carry_the_jobs_labels_and_arcs_buckets) {
  exposition e;
  e.series.job(job(msg::job_transition::started));
  e.series.job(job(msg::job_transition::completed));
  const auto t = e.text();
  const std::string base = "actions_github_com_scale_set_name=\"linux\",actions_github_com_scale_set_namespace=\"runners\","
                           "enterprise=\"\",event_name=\"push\",job_name=\"build (ubuntu)\"";
  EXPECT_TRUE(has_line(t, "gha_started_jobs_total{" + base + ",name=\"linux\",namespace=\"runners\",organization=\"acme\","
                          "repository=\"widgets\"} 1"))
      << t;
  EXPECT_TRUE(has_line(t, "gha_completed_jobs_total{" + base + ",job_result=\"succeeded\",name=\"linux\",namespace=\"runners\","
                          "organization=\"acme\",repository=\"widgets\"} 1"))
      << t;
  // 7.5 s from the scale set's assignment to the runner's: in ARC's (7, 8] bucket, not (5, 10].
  const std::string started_labels = base + ",name=\"linux\",namespace=\"runners\",organization=\"acme\",repository=\"widgets\"";
  EXPECT_TRUE(has_line(t, "gha_job_startup_duration_seconds_bucket{" + started_labels + ",le=\"7\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "gha_job_startup_duration_seconds_bucket{" + started_labels + ",le=\"8\"} 1")) << t;
  EXPECT_NE(t.find("gha_job_startup_duration_seconds_sum{" + base + ",name=\"linux\",namespace=\"runners\",organization=\"acme\","
                   "repository=\"widgets\"} 7.5"),
            std::string::npos)
      << t;
  // 120 s from the runner's assignment to the finish.
  EXPECT_NE(t.find("gha_job_execution_duration_seconds_sum{" + base + ",job_result=\"succeeded\",name=\"linux\",namespace=\"runners\","
                   "organization=\"acme\",repository=\"widgets\"} 120"),
            std::string::npos)
      << t;
  // ARC's 45 bucket bounds and +Inf.
  size_t buckets = 0;
  for (size_t at = t.find("gha_job_startup_duration_seconds_bucket{"); at != std::string::npos;
       at = t.find("gha_job_startup_duration_seconds_bucket{", at + 1))
    ++buckets;
  EXPECT_EQ(buckets, 46u);
}

TEST(arc_metrics, every_listener_query_of_arcs_dashboard_finds_its_series_and_labels) {
  exposition e;
  e.series.set("gha_assigned_jobs", 1);
  e.series.job(job(msg::job_transition::started));
  e.series.job(job(msg::job_transition::completed));
  const auto t = e.text();
  std::ifstream in{HEADROOM_ARC_DASHBOARD_QUERIES};
  ASSERT_TRUE(in) << HEADROOM_ARC_DASHBOARD_QUERIES;
  const std::regex selector{R"((gha_[a-z_]+)\{([^}]*)\})"}, matcher{R"(([a-z_]+)\s*=~?\s*")"};
  int queries = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    ++queries;
    for (std::sregex_iterator s{line.begin(), line.end(), selector}, end; s != end; ++s) {
      const std::string name = (*s)[1], inner = (*s)[2];
      // A line of that series whose labels include every label the query selects by.
      bool found = false;
      for (size_t at = t.find("\n" + name + "{"); at != std::string::npos && !found; at = t.find("\n" + name + "{", at + 1)) {
        const std::string series = t.substr(at + 1, t.find('}', at) - at);
        bool all = true;
        for (std::sregex_iterator m{inner.begin(), inner.end(), matcher}; m != end; ++m)
          all = all && series.find((*m)[1].str() + "=\"") != std::string::npos;
        found = all;
      }
      EXPECT_TRUE(found) << name << " with the labels of " << line;
    }
  }
  EXPECT_EQ(queries, 12);
}

}  // namespace
}  // namespace headroom::modes::scale_sets
