// The Actions Service client's pure parts: config URLs, object decoders, error descriptions.
// The client's behaviour on the wire is tested against the Actions Service peer (github_*).
#include "adapters/github/actions_client.hpp"

#include <gtest/gtest.h>

#include "runtime/secrets.hpp"

using namespace headroom::github;

namespace {
config_url parsed(std::string_view url) {
  auto r = parse_config_url(url);
  if (auto* msg = std::get_if<std::string>(&r)) {
    ADD_FAILURE() << *msg;
    return {};
  }
  return std::get<config_url>(r);
}
}  // namespace

TEST(github_config_url, scopes_and_api_bases) {
  auto org = parsed("https://github.com/pytorch/");
  EXPECT_EQ(org.level, config_url::scope::organization);
  EXPECT_EQ(org.url, "https://github.com/pytorch");
  EXPECT_EQ(org.api_base, "https://api.github.com");
  EXPECT_EQ(org.registration_token_path(), "/orgs/pytorch/actions/runners/registration-token");

  auto repo = parsed("https://github.com/pytorch/pytorch");
  EXPECT_EQ(repo.level, config_url::scope::repository);
  EXPECT_EQ(repo.registration_token_path(), "/repos/pytorch/pytorch/actions/runners/registration-token");

  auto ent = parsed("https://www.github.com/enterprises/acme");
  EXPECT_EQ(ent.level, config_url::scope::enterprise);
  EXPECT_EQ(ent.api_base, "https://api.github.com");
  EXPECT_EQ(ent.registration_token_path(), "/enterprises/acme/actions/runners/registration-token");

  EXPECT_EQ(parsed("https://acme.ghe.com/org").api_base, "https://api.acme.ghe.com");
  EXPECT_EQ(parsed("https://ghes.internal:8443/org").api_base, "https://ghes.internal:8443/api/v3")
      << "GitHub Enterprise Server serves its API under /api/v3";
}

TEST(github_config_url, bad_urls_are_named) {
  for (std::string_view bad : {"github.com/org", "ftp://github.com/org", "https://github.com", "https://github.com/a/b/c",
                               "https:///org"}) {
    auto r = parse_config_url(bad);
    ASSERT_TRUE(std::holds_alternative<std::string>(r)) << bad;
    EXPECT_NE(std::get<std::string>(r).find("githubConfigUrl"), std::string::npos);
  }
}

TEST(github_objects, scale_set_list_session_jit_and_tokens) {
  auto sets = decode_scale_set_list(
      "\xEF\xBB\xBF"
      R"({"count":1,"value":[{"id":7,"name":"ci","runnerGroupId":1,"runnerGroupName":"default",
          "labels":[{"type":"System","name":"ci"},{"type":"System","name":"linux"}],
          "RunnerSetting":{"disableUpdate":true},"createdOn":"2026-11-22T05:00:00Z",
          "statistics":{"totalAssignedJobs":4}}]})");
  ASSERT_TRUE(std::holds_alternative<std::vector<runner_scale_set>>(sets)) << std::get<decode_failure>(sets).message;
  const auto& s = std::get<std::vector<runner_scale_set>>(sets).at(0);
  EXPECT_EQ(s.id, 7);
  EXPECT_EQ(s.labels.size(), 2u);
  EXPECT_EQ(s.labels[1].name, "linux");
  EXPECT_TRUE(s.disable_update);
  EXPECT_EQ(s.stats.total_assigned_jobs, 4);

  auto miscounted = decode_scale_set_list(R"({"count":2,"value":[{"id":1}]})");
  ASSERT_TRUE(std::holds_alternative<decode_failure>(miscounted));
  EXPECT_NE(std::get<decode_failure>(miscounted).message.find("count 2"), std::string::npos);

  auto session = decode_session(R"({"sessionId":"b1","ownerName":"h","runnerScaleSet":{"id":7},
      "messageQueueUrl":"https://q/1","messageQueueAccessToken":"mq-token-value-123","statistics":{"totalIdleRunners":1}})");
  ASSERT_TRUE(std::holds_alternative<message_session>(session));
  EXPECT_EQ(std::get<message_session>(session).scale_set_id, 7);
  EXPECT_EQ(headroom::runtime::redact("leak mq-token-value-123"), "leak [REDACTED]")
      << "a decoded message-queue token is registered as a secret";
  auto incomplete = decode_session(R"({"sessionId":"b1"})");
  ASSERT_TRUE(std::holds_alternative<decode_failure>(incomplete));
  EXPECT_NE(std::get<decode_failure>(incomplete).message.find("session"), std::string::npos);

  auto jit = decode_jit_config(R"({"runner":{"id":9,"name":"r9","runnerScaleSetId":7},"encodedJITConfig":"ZW5jb2RlZC1qaXQ="})");
  ASSERT_TRUE(std::holds_alternative<jit_config>(jit));
  EXPECT_EQ(std::get<jit_config>(jit).runner.name, "r9");
  EXPECT_EQ(headroom::runtime::redact("ZW5jb2RlZC1qaXQ="), "[REDACTED]");

  auto tok = decode_issued_token(R"({"token":"ghs_installationtoken42","expires_at":"2026-11-22T07:00:00Z"})");
  ASSERT_TRUE(std::holds_alternative<issued_token>(tok));
  EXPECT_EQ(headroom::runtime::redact("ghs_installationtoken42"), "[REDACTED]");
  EXPECT_TRUE(std::holds_alternative<decode_failure>(decode_issued_token(R"({"expires_at":"x"})")));
  EXPECT_TRUE(std::holds_alternative<decode_failure>(decode_admin_connection(R"({"url":"https://t/"})")));

  auto acquired = decode_acquired_jobs(R"({"count":2,"value":[11,12]})");
  ASSERT_TRUE(std::holds_alternative<std::vector<int64_t>>(acquired));
  EXPECT_EQ(std::get<std::vector<int64_t>>(acquired), (std::vector<int64_t>{11, 12}));

  auto runners = decode_runner_list(R"({"count":0,"value":[]})");
  ASSERT_TRUE(std::holds_alternative<std::vector<runner_ref>>(runners));
  EXPECT_TRUE(std::get<std::vector<runner_ref>>(runners).empty());
}

TEST(github_objects, exceptions_are_best_effort) {
  auto e = decode_exception(R"({"$id":"1","typeName":"GitHub.DistributedTask.WebApi.AgentExistsException, Sdk","message":"exists"})");
  EXPECT_NE(e.type_name.find("AgentExistsException"), std::string::npos);
  EXPECT_EQ(e.message, "exists");
  EXPECT_TRUE(decode_exception("upstream error").type_name.empty());
  EXPECT_TRUE(decode_exception("[1,2]").message.empty());
}

TEST(github_objects, scale_set_encoding_round_trips) {
  runner_scale_set s;
  s.name = "ci \"quoted\"";
  s.runner_group_id = 3;
  s.labels = {{"System", "ci"}, {"System", "linux"}};
  s.disable_update = true;
  auto back = decode_scale_set(encode_scale_set(s));
  ASSERT_TRUE(std::holds_alternative<runner_scale_set>(back));
  const auto& b = std::get<runner_scale_set>(back);
  EXPECT_EQ(b.name, s.name);
  EXPECT_EQ(b.runner_group_id, 3);
  EXPECT_EQ(b.labels.size(), 2u);
  EXPECT_TRUE(b.disable_update);
}

TEST(github_errors, describe_names_operation_status_and_type_and_redacts) {
  headroom::runtime::secret_registry::global().add("super-secret-admin-token");
  actions_error e{actions_error::kind::session_conflict, "create session for scale set 7", 409,
                  "GitHub.DistributedTask.WebApi.RunnerScaleSetSessionConflictException",
                  "held by owner x; token super-secret-admin-token"};
  const auto text = e.describe();
  EXPECT_EQ(text.find("super-secret-admin-token"), std::string::npos) << text;
  EXPECT_NE(text.find("create session for scale set 7: 409 RunnerScaleSetSessionConflictException: held by owner x"),
            std::string::npos)
      << text;
  EXPECT_EQ(to_string(actions_error::kind::job_still_running), "job_still_running");
}
