// Webhook intake: each answer, and that nothing but a verified, well-formed delivery is written.

#include <gtest/gtest.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <filesystem>

#include "actors/scheduler/intake.hpp"
#include "adapters/github/auth.hpp"

namespace {

using namespace headroom;
using actors::scheduler::delivery;
using actors::scheduler::take_delivery;

const std::string secret = "webhook-secret";

std::string sign(const std::string& body, const std::string& key = secret) {
  unsigned char mac[32];
  unsigned len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &len);
  return "sha256=" + github::hex(std::string_view{reinterpret_cast<const char*>(mac), len});
}

std::string job_body(const std::string& action, int64_t id, const std::string& org = "acme") {
  return R"({"action":")" + action + R"(","workflow_job":{"id":)" + std::to_string(id) +
         R"(,"run_id":77,"name":"build <script>","labels":["X64","self-hosted","linux"],"status":"queued","conclusion":null},)"
         R"("repository":{"full_name":"acme/app"})" +
         (org.empty() ? std::string{} : R"(,"organization":{"login":")" + org + R"("})") + "}";
}

delivery signed_delivery(const std::string& id, const std::string& body, const std::string& event = "workflow_job") {
  return {event, id, sign(body), body, 1000};
}

class intake : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("intake_" + std::to_string(getpid()) + "_" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    auto s = store::open_sqlite(dir_ + "/jobs.db");
    ASSERT_TRUE(std::holds_alternative<std::unique_ptr<store::store>>(s)) << std::get<store::error>(s).message;
    jobs_ = std::move(std::get<std::unique_ptr<store::store>>(s));
  }
  void TearDown() override {
    jobs_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::optional<store::job> job(int64_t id) { return std::get<std::optional<store::job>>(jobs_->get_job(id)); }
  std::string dir_;
  std::unique_ptr<store::store> jobs_;
};

TEST_F(intake, a_signed_queued_job_is_recorded_once) {
  auto a = take_delivery(signed_delivery("d-1", job_body("queued", 5)), secret, *jobs_);
  EXPECT_EQ(a.status, 202);
  EXPECT_STREQ(a.outcome, "recorded");
  auto j = job(5);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->status, store::job_status::pending);
  EXPECT_EQ(j->entity, "acme");
  EXPECT_EQ(j->labels, "linux,self-hosted,x64");
  EXPECT_EQ(j->name, "build <script>") << "stored as sent; escaped where shown";
  EXPECT_EQ(j->repository, "acme/app");
  auto again = take_delivery(signed_delivery("d-1", job_body("queued", 5)), secret, *jobs_);
  EXPECT_EQ(again.status, 202);
  EXPECT_STREQ(again.outcome, "duplicate");
}

TEST_F(intake, a_repository_webhook_has_the_repository_as_its_entity) {
  take_delivery(signed_delivery("d-1", job_body("queued", 6, "")), secret, *jobs_);
  EXPECT_EQ(job(6)->entity, "acme/app");
}

TEST_F(intake, completed_before_queued_stays_completed) {
  EXPECT_STREQ(take_delivery(signed_delivery("d-1", job_body("completed", 7)), secret, *jobs_).outcome, "recorded");
  auto late = take_delivery(signed_delivery("d-2", job_body("queued", 7)), secret, *jobs_);
  EXPECT_EQ(late.status, 202);
  EXPECT_STREQ(late.outcome, "unchanged");
  EXPECT_EQ(job(7)->status, store::job_status::completed);
}

TEST_F(intake, a_bad_or_missing_signature_is_401_and_writes_nothing) {
  auto body = job_body("queued", 8);
  delivery forged{"workflow_job", "d-1", sign(body, "not-the-secret"), body, 1};
  auto a = take_delivery(forged, secret, *jobs_);
  EXPECT_EQ(a.status, 401);
  EXPECT_EQ(a.message.find(secret), std::string::npos);
  forged.signature.clear();
  EXPECT_EQ(take_delivery(forged, secret, *jobs_).status, 401);
  delivery tampered = signed_delivery("d-2", body);
  tampered.body = job_body("queued", 9);
  EXPECT_EQ(take_delivery(tampered, secret, *jobs_).status, 401);
  EXPECT_FALSE(job(8));
  EXPECT_FALSE(job(9));
}

TEST_F(intake, malformed_deliveries_are_400_naming_what_and_write_nothing) {
  auto a = take_delivery(signed_delivery("d-1", R"({"action":"queued","workflow_job":{"id":"ten"}})"), secret, *jobs_);
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.message.find("workflow_job"), std::string::npos) << a.message;
  auto no_id = take_delivery(signed_delivery("d-2", R"({"action":"queued","workflow_job":{},"repository":{"full_name":"a/b"}})"), secret, *jobs_);
  EXPECT_EQ(no_id.status, 400);
  EXPECT_NE(no_id.message.find("workflow_job.id"), std::string::npos) << no_id.message;
  auto body = job_body("queued", 10);
  EXPECT_EQ(take_delivery({"workflow_job", "", sign(body), body, 1}, secret, *jobs_).status, 400) << "no X-GitHub-Delivery";
  EXPECT_EQ(take_delivery(signed_delivery("d-3", "{not json"), secret, *jobs_).status, 400);
  EXPECT_FALSE(job(10));
  EXPECT_TRUE(std::get<std::vector<store::job>>(jobs_->pending_jobs(10)).empty());
}

TEST_F(intake, other_events_and_actions_are_202_ignored) {
  auto ping = take_delivery(signed_delivery("d-1", R"({"zen":"hi"})", "ping"), secret, *jobs_);
  EXPECT_EQ(ping.status, 202);
  EXPECT_STREQ(ping.outcome, "ignored");
  auto waiting = take_delivery(signed_delivery("d-2", job_body("waiting", 11)), secret, *jobs_);
  EXPECT_EQ(waiting.status, 202);
  EXPECT_STREQ(waiting.outcome, "ignored");
  EXPECT_FALSE(job(11));
}

TEST_F(intake, an_oversized_body_is_413_before_anything_else) {
  actors::scheduler::intake_limits small;
  small.max_body = 64;
  auto a = take_delivery(signed_delivery("d-1", job_body("queued", 12)), secret, *jobs_, small);
  EXPECT_EQ(a.status, 413);
  EXPECT_FALSE(job(12));
}

}  // namespace
