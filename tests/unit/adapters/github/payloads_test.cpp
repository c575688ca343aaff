#include "adapters/github/payloads.hpp"

#include <gtest/gtest.h>

#include "adapters/hud/queued_jobs.hpp"

using namespace headroom::github;

namespace {
const char* poll_response =
    "\xEF\xBB\xBF"  // the service may send a UTF-8 byte-order mark
    R"({"messageId":42,"messageType":"RunnerScaleSetJobMessages",
    "statistics":{"totalAvailableJobs":3,"totalAcquiredJobs":2,"totalAssignedJobs":5,"totalRunningJobs":1,
                  "totalRegisteredRunners":4,"totalBusyRunners":1,"totalIdleRunners":3},
    "body":"[{\"messageType\":\"JobAvailable\",\"runnerRequestId\":1001,\"repositoryName\":\"pytorch\",\"ownerName\":\"pytorch\",\"jobWorkflowRef\":\"pytorch/pytorch/.github/workflows/pull.yml@refs/heads/main\",\"jobDisplayName\":\"linux-build\",\"workflowRunId\":77,\"eventName\":\"pull_request\",\"requestLabels\":[\"linux.2xlarge\"],\"queueTime\":\"2026-11-22T05:00:00Z\",\"acquireJobUrl\":\"https://pipelines.example/acquire\"},{\"messageType\":\"JobStarted\",\"runnerRequestId\":1000,\"runnerId\":9,\"runnerName\":\"runner-abc\",\"jobId\":\"j-1\"},{\"messageType\":\"JobCompleted\",\"runnerRequestId\":999,\"result\":\"canceled\",\"runnerId\":0,\"runnerName\":\"\"},{\"messageType\":\"SomethingNew\"}]"})";
}  // namespace

TEST(github_messages, poll_response_with_bom_and_encoded_body) {
  auto r = decode_session_message(poll_response);
  ASSERT_TRUE(std::holds_alternative<session_message>(r)) << std::get<decode_failure>(r).message;
  const auto& m = std::get<session_message>(r);
  EXPECT_EQ(m.message_id, 42);
  EXPECT_EQ(m.stats.total_assigned_jobs, 5);
  EXPECT_EQ(m.stats.total_idle_runners, 3);
  ASSERT_EQ(m.jobs.size(), 4u);
  EXPECT_EQ(m.jobs[0].type, job_message::available);
  EXPECT_EQ(m.jobs[0].runner_request_id, 1001);
  EXPECT_EQ(m.jobs[0].request_labels, (std::vector<std::string>{"linux.2xlarge"}));
  EXPECT_EQ(m.jobs[0].acquire_job_url, "https://pipelines.example/acquire");
  EXPECT_EQ(m.jobs[1].type, job_message::started);
  EXPECT_EQ(m.jobs[1].runner_name, "runner-abc");
  EXPECT_EQ(m.jobs[2].type, job_message::completed);
  EXPECT_EQ(m.jobs[2].result, "canceled");
  EXPECT_EQ(m.jobs[3].type, job_message::unknown) << "an unknown kind is kept, not an error";
  EXPECT_EQ(m.jobs[3].message_type, "SomethingNew");
}

TEST(github_messages, malformed_input_is_named) {
  auto bad_body = decode_session_message(R"({"messageId":7,"body":"{not json"})");
  ASSERT_TRUE(std::holds_alternative<decode_failure>(bad_body));
  EXPECT_EQ(std::get<decode_failure>(bad_body).message.rfind("message 7: message body: ", 0), 0u)
      << std::get<decode_failure>(bad_body).message;
  auto not_array = decode_session_message(R"({"messageId":8,"body":"{\"a\":1}"})");
  ASSERT_TRUE(std::holds_alternative<decode_failure>(not_array));
  EXPECT_EQ(std::get<decode_failure>(not_array).message, "message 8: message body: expected an array of job messages");
  auto bad_id = decode_session_message(R"({"messageId":"x1"})");
  ASSERT_TRUE(std::holds_alternative<decode_failure>(bad_id));
  EXPECT_EQ(std::get<decode_failure>(bad_id).message, "message: expected a number, found \"x1\"");
  EXPECT_TRUE(std::holds_alternative<decode_failure>(decode_session_message("")));
  auto stats = decode_statistics(R"({"totalAssignedJobs":"12"})");
  ASSERT_TRUE(std::holds_alternative<statistics>(stats));
  EXPECT_EQ(std::get<statistics>(stats).total_assigned_jobs, 12) << "numbers sent as strings are accepted";
  // Found by the fuzzer: a digit string beyond int64 is an error, not an overflow.
  auto huge = decode_statistics(R"({"totalAssignedJobs":"59999999999999999999"})");
  ASSERT_TRUE(std::holds_alternative<decode_failure>(huge));
  EXPECT_EQ(std::get<decode_failure>(huge).message, "statistics: number out of range: \"59999999999999999999\"");
}

TEST(github_messages, workflow_job_webhook) {
  auto r = decode_workflow_job(R"({"action":"queued","workflow_job":{"id":123,"run_id":456,"labels":["self-hosted","linux.2xlarge"],
    "status":"queued","conclusion":null,"runner_name":null},"repository":{"full_name":"pytorch/pytorch"},
    "organization":{"login":"pytorch"}})");
  ASSERT_TRUE(std::holds_alternative<workflow_job_event>(r)) << std::get<decode_failure>(r).message;
  const auto& e = std::get<workflow_job_event>(r);
  EXPECT_EQ(e.action, "queued");
  EXPECT_EQ(e.job_id, 123);
  EXPECT_EQ(e.labels, (std::vector<std::string>{"self-hosted", "linux.2xlarge"}));
  EXPECT_EQ(e.repository, "pytorch/pytorch");
  EXPECT_EQ(e.organization, "pytorch");
  EXPECT_TRUE(e.conclusion.empty());
  EXPECT_EQ(e.created_at_ms, 0) << "absent";
}

TEST(github_messages, workflow_job_created_at_is_githubs_time_and_a_bad_one_is_refused) {
  auto r = decode_workflow_job(R"({"action":"queued","workflow_job":{"id":1,"created_at":"2026-11-26T10:00:00.250Z"}})");
  ASSERT_TRUE(std::holds_alternative<workflow_job_event>(r)) << std::get<decode_failure>(r).message;
  EXPECT_EQ(std::get<workflow_job_event>(r).created_at_ms, 1795687200250);
  auto with_offset = decode_workflow_job(R"({"action":"queued","workflow_job":{"id":1,"created_at":"2026-11-26T12:00:00+02:00"}})");
  EXPECT_EQ(std::get<workflow_job_event>(with_offset).created_at_ms, 1795687200000);
  auto null = decode_workflow_job(R"({"action":"queued","workflow_job":{"id":1,"created_at":null}})");
  EXPECT_EQ(std::get<workflow_job_event>(null).created_at_ms, 0);
  auto bad = decode_workflow_job(R"({"action":"queued","workflow_job":{"id":1,"created_at":"yesterday"}})");
  ASSERT_TRUE(std::holds_alternative<decode_failure>(bad));
  EXPECT_EQ(std::get<decode_failure>(bad).message, "workflow_job: workflow_job.created_at: expected an RFC 3339 time, found 'yesterday'");
}

// #40: a type mismatch in a webhook is refused with the field's path (labels as a string was
// refused with simdjson's bare "does not have the requested type"; numeric labels, a string id and
// bytes after the document were accepted).
TEST(github_messages, workflow_job_webhook_type_mismatches_name_the_field_and_trailing_bytes_are_refused) {
  auto message = [](std::string_view json) {
    auto r = decode_workflow_job(json);
    return std::holds_alternative<decode_failure>(r) ? std::get<decode_failure>(r).message : std::string{"(accepted)"};
  };
  EXPECT_EQ(message(R"({"action":"queued","workflow_job":{"id":1,"labels":"self-hosted"}})"),
            "workflow_job: workflow_job.labels: expected an array, found a string");
  EXPECT_EQ(message(R"({"action":"queued","workflow_job":{"id":1,"labels":["linux",7]}})"),
            "workflow_job: workflow_job.labels[1]: expected a string, found a number");
  EXPECT_EQ(message(R"({"action":"queued","workflow_job":{"id":"12"}})"),
            "workflow_job: workflow_job.id: expected a number, found a string");
  EXPECT_EQ(message(R"({"action":"queued","workflow_job":{"id":1.5}})"), "workflow_job: workflow_job.id: expected an integer, found 1.5");
  EXPECT_EQ(message(R"({"action":7,"workflow_job":{"id":1}})"), "workflow_job: action: expected a string, found a number");
  EXPECT_EQ(message(R"({"action":"queued","workflow_job":[]})"), "workflow_job: workflow_job: expected an object, found an array");
  EXPECT_EQ(message(R"({"action":"queued","repository":{"full_name":["a"]}})"),
            "workflow_job: repository.full_name: expected a string, found an array");
  EXPECT_EQ(message(R"({"action":"queued","workflow_job":{"id":1}} trailing)"), "workflow_job: trailing content after the JSON document");
  EXPECT_EQ(message(R"({"action":"queued","workflow_job":{"id":1}}{"action":"completed"})"),
            "workflow_job: trailing content after the JSON document");
  EXPECT_EQ(message(R"([1,2])"), "workflow_job: (document): expected an object, found an array");
  EXPECT_EQ(message(R"({"action":"queued","workflow_job":{"id":1,"runner_id":null,"labels":null}} )"), "(accepted)")
      << "nulls and trailing whitespace are fine";
}

// hud.share: the shares of n over every cluster add up to n, each n / count or one more, and the
// remainder lands on different clusters for different keys.
TEST(hud, shares_of_a_queue_add_up_and_the_remainder_rotates) {
  using headroom::hud::queue_share;
  for (uint32_t count = 1; count <= 6; ++count)
    for (int64_t n = 0; n <= 40; ++n)
      for (const char* key : {"", "linux.2xlarge\npytorch\npytorch", "gpu\norg\nrepo"}) {
        int64_t sum = 0;
        for (uint32_t i = 0; i < count; ++i) {
          const int64_t mine = headroom::hud::share_of(n, headroom::hud::rotation_of(key), queue_share{i, count, 0});
          EXPECT_TRUE(mine == n / count || mine == n / count + 1) << n << " over " << count << ": " << mine;
          sum += mine;
        }
        EXPECT_EQ(sum, n) << n << " over " << count;
      }
  int first = 0;
  for (int k = 0; k < 200; ++k)
    first += headroom::hud::share_of(1, headroom::hud::rotation_of("label-" + std::to_string(k)), queue_share{0, 2, 0});
  EXPECT_GT(first, 60) << "one job per key: cluster 0 takes about half, not all or none";
  EXPECT_LT(first, 140);
}

TEST(hud, with_a_share_old_jobs_are_every_clusters) {
  auto r = headroom::hud::decode_queued_jobs(R"([
    {"runner_label":"ci","org":"o","repo":"young","num_queued_jobs":4,"min_queue_time_minutes":0,"max_queue_time_minutes":1},
    {"runner_label":"ci","org":"o","repo":"some-old","num_queued_jobs":4,"min_queue_time_minutes":1,"max_queue_time_minutes":12},
    {"runner_label":"ci","org":"o","repo":"all-old","num_queued_jobs":3,"min_queue_time_minutes":11,"max_queue_time_minutes":30}])");
  const auto& rows = std::get<std::vector<headroom::hud::queued_jobs>>(r);
  using headroom::hud::queue_share;
  // young: 2 of 4; some-old: 2 + 1 for its oldest; all-old: all 3.
  EXPECT_EQ(headroom::hud::queued_for_labels(rows, {"ci"}, queue_share{0, 2, 10}), 2 + 3 + 3);
  EXPECT_EQ(headroom::hud::queued_for_labels(rows, {"ci"}, queue_share{1, 2, 10}), 2 + 3 + 3);
  EXPECT_EQ(headroom::hud::queued_for_labels(rows, {"ci"}, queue_share{1, 2, 0}), 4 + headroom::hud::share_of(3, headroom::hud::rotation_of("ci\no\nall-old"), queue_share{1, 2, 0}))
      << "no takeAllAfter: shares alone";
  EXPECT_EQ(headroom::hud::queued_for_labels(rows, {"ci"}), 11) << "one cluster: the whole queue";
}

TEST(hud, queued_jobs_sum_over_a_scale_sets_labels) {
  auto r = headroom::hud::decode_queued_jobs(R"([
    {"runner_label":"linux.2xlarge","org":"pytorch","repo":"pytorch","num_queued_jobs":7,"min_queue_time_minutes":1.5,"max_queue_time_minutes":12},
    {"runner_label":"linux.4xlarge","org":"pytorch","repo":"vision","num_queued_jobs":3,"min_queue_time_minutes":0,"max_queue_time_minutes":2},
    {"runner_label":"linux.2xlarge","org":"pytorch","repo":"audio","num_queued_jobs":2,"min_queue_time_minutes":0,"max_queue_time_minutes":1},
    {"runner_label":"windows.4xlarge","org":"pytorch","repo":"pytorch","num_queued_jobs":9,"min_queue_time_minutes":0,"max_queue_time_minutes":1}])");
  ASSERT_TRUE((std::holds_alternative<std::vector<headroom::hud::queued_jobs>>(r)));
  const auto& rows = std::get<std::vector<headroom::hud::queued_jobs>>(r);
  EXPECT_EQ(rows.size(), 4u);
  EXPECT_EQ(headroom::hud::queued_for_labels(rows, {"linux.2xlarge", "linux.4xlarge"}), 12);
  EXPECT_EQ(headroom::hud::queued_for_labels(rows, {"macos"}), 0);
  auto bad = headroom::hud::decode_queued_jobs(R"([{"runner_label":"x","num_queued_jobs":"many"}])");
  ASSERT_TRUE(std::holds_alternative<headroom::hud::hud_error>(bad));
  EXPECT_EQ(std::get<headroom::hud::hud_error>(bad).message.rfind("HUD queued jobs: [0].num_queued_jobs: ", 0), 0u)
      << std::get<headroom::hud::hud_error>(bad).message;
  auto negative = headroom::hud::decode_queued_jobs(R"([{"runner_label":"x","num_queued_jobs":-1}])");
  EXPECT_TRUE(std::holds_alternative<headroom::hud::hud_error>(negative));
}
