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

// FIFO by GitHub's creation time, not by delivery: the older job delivered second is served first.
// A time ahead of the receipt (GitHub's clock ahead of ours) is the receipt.
TEST_F(intake, pending_jobs_are_in_githubs_creation_order_not_delivery_order) {
  auto created = [](int64_t id, const char* at) {
    return R"({"action":"queued","workflow_job":{"id":)" + std::to_string(id) + R"(,"labels":["self-hosted"],"created_at":")" + at +
           R"("},"repository":{"full_name":"acme/app"},"organization":{"login":"acme"}})";
  };
  auto newer = signed_delivery("d-1", created(21, "1970-01-01T00:00:00.900Z"));
  auto older = signed_delivery("d-2", created(22, "1970-01-01T00:00:00.100Z"));
  auto ahead = signed_delivery("d-3", created(23, "2099-01-01T00:00:00Z"));
  for (auto* d : {&newer, &older, &ahead})
    EXPECT_STREQ(take_delivery(*d, secret, *jobs_).outcome, "recorded");
  auto pending = std::get<std::vector<store::job>>(jobs_->pending_jobs(10));
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[0].id, 22);
  EXPECT_EQ(pending[0].created_at, 100);
  EXPECT_EQ(pending[0].updated_at, 1000) << "the receipt";
  EXPECT_EQ(pending[1].id, 21);
  EXPECT_EQ(pending[2].id, 23);
  EXPECT_EQ(pending[2].created_at, 1000) << "never after the receipt";
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

namespace {

using actors::scheduler::serves;

// #36: the scheduler took every job as its own; a GitHub-hosted one (ubuntu-latest) became demand
// and, queued, would have got a self-hosted runner pod.
TEST(intake_labels, githubs_rule_decides_which_jobs_are_the_schedulers) {
  const std::vector<std::string> none;
  EXPECT_TRUE(serves(none, {"self-hosted", "linux"})) << "without runner labels: any job asking for self-hosted";
  EXPECT_TRUE(serves(none, {"Self-Hosted"}));
  EXPECT_FALSE(serves(none, {"ubuntu-latest"}));
  EXPECT_FALSE(serves(none, {"linux", "x64"})) << "a job that does not ask for self-hosted may be another system's";
  const std::vector<std::string> pool{"linux", "X64", "gpu"};
  EXPECT_TRUE(serves(pool, {"self-hosted", "linux", "gpu"})) << "every label asked for is the runner's (self-hosted always is)";
  EXPECT_TRUE(serves(pool, {"LINUX"}));
  EXPECT_FALSE(serves(pool, {"self-hosted", "linux", "arm64"})) << "arm64 is not the runner's";
  EXPECT_FALSE(serves(pool, {"ubuntu-latest"}));
}

}  // namespace

TEST_F(intake, a_job_for_runners_that_are_not_the_schedulers_is_answered_and_kept_as_unmatched_history) {
  const std::string hosted = R"({"action":"queued","workflow_job":{"id":41,"run_id":7,"labels":["ubuntu-latest"],"status":"queued"},)"
                             R"("repository":{"full_name":"acme/app"},"organization":{"login":"acme"}})";
  auto a = take_delivery(signed_delivery("d-hosted", hosted), secret, *jobs_);
  EXPECT_EQ(a.status, 202);
  EXPECT_STREQ(a.outcome, "unmatched");
  EXPECT_NE(a.message.find("ubuntu-latest"), std::string::npos) << a.message;
  ASSERT_TRUE(job(41).has_value()) << "kept as history";
  EXPECT_EQ(job(41)->status, store::job_status::unmatched) << "no demand, no runner";
  EXPECT_TRUE(std::get<std::vector<store::job>>(jobs_->active_jobs()).empty());
  auto again = take_delivery(signed_delivery("d-hosted", hosted), secret, *jobs_);
  EXPECT_STREQ(again.outcome, "duplicate") << "a redelivery is known";
  const std::string ran = R"({"action":"completed","workflow_job":{"id":41,"run_id":7,"labels":["ubuntu-latest"],"status":"completed",)"
                          R"("conclusion":"success"},"repository":{"full_name":"acme/app"},"organization":{"login":"acme"}})";
  EXPECT_STREQ(take_delivery(signed_delivery("d-hosted-done", ran), secret, *jobs_).outcome, "unmatched");
  EXPECT_EQ(job(41)->status, store::job_status::unmatched) << "it stays unmatched when GitHub's runner finishes it";
  actors::scheduler::intake_limits gpu_only;
  gpu_only.pools = {{"gpu"}};
  auto b = take_delivery(signed_delivery("d-2", job_body("queued", 42)), secret, *jobs_, gpu_only);
  EXPECT_STREQ(b.outcome, "unmatched") << "X64 and linux are not a gpu-only pool's";
  EXPECT_EQ(job(42)->status, store::job_status::unmatched);
  actors::scheduler::intake_limits fits;
  fits.pools = {{"linux", "x64"}};
  auto c = take_delivery(signed_delivery("d-3", job_body("queued", 43)), secret, *jobs_, fits);
  EXPECT_STREQ(c.outcome, "recorded") << c.message;
  actors::scheduler::intake_limits listed;  // runnerGroupRepositories: acme/app only
  listed.repositories = {"Acme/App"};
  EXPECT_STREQ(take_delivery(signed_delivery("d-5", job_body("queued", 45)), secret, *jobs_, listed).outcome, "recorded")
      << "acme/app is listed (any case)";
  listed.repositories = {"acme/other"};
  auto unlisted = take_delivery(signed_delivery("d-6", job_body("queued", 46)), secret, *jobs_, listed);
  EXPECT_STREQ(unlisted.outcome, "unmatched");
  EXPECT_NE(unlisted.message.find("acme/app"), std::string::npos) << unlisted.message;
  EXPECT_EQ(job(46)->status, store::job_status::unmatched);
  EXPECT_STREQ(take_delivery(signed_delivery("d-7", job_body("queued", 47, "")), secret, *jobs_, listed).outcome, "recorded")
      << "a personal account's repository has no runner group to restrict";
  actors::scheduler::intake_limits second_pool;  // a job is the scheduler's when any pool serves it
  second_pool.pools = {{"gpu"}, {"linux", "x64", "docker"}};
  auto d = take_delivery(signed_delivery("d-4", job_body("queued", 44)), secret, *jobs_, second_pool);
  EXPECT_STREQ(d.outcome, "recorded") << d.message;
}
