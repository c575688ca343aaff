// admission_webhook (actors/gates/admission_webhook.cpp) under CAF's deterministic
// test_coordinator: it serves with the certificate it reads at start, reads it again on its reload
// timer (the injected clock's) when the files change, keeps the previous one when the new pair is
// bad, and exits abnormally (its supervisor retries) when it has no certificate to start with.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/gates/gates.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"
#include "testenv/test_certs.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace gates = actors::gates;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
}

struct webhook_fixture : test_support::actor_fixture {
  webhook_fixture() {
    dir = std::filesystem::temp_directory_path() / ("headroom-webhook-" + std::to_string(::getpid()) + "-" +
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
  }
  ~webhook_fixture() override {
    caf::anon_send_exit(webhook, caf::exit_reason::kill);
    caf::anon_send_exit(watcher, caf::exit_reason::kill);
    sched.run();
    std::filesystem::remove_all(dir);
  }

  void issue(long valid_seconds) {
    const auto cert = testenv::issue_server_cert(ca, "webhook", {"localhost"}, {"127.0.0.1"}, valid_seconds);
    write(dir / "tls.crt", cert.cert);
    write(dir / "tls.key", cert.key);
  }
  void start() {
    auto o = std::make_shared<gates::webhook_options>();
    o->listen = "127.0.0.1:0";
    o->cert_file = dir / "tls.crt";
    o->key_file = dir / "tls.key";
    o->reload_interval = 10s;
    o->threads = 2;
    o->metrics.certificate = [this](bool ok, int64_t not_after) { loads.push_back({ok, not_after}); };
    webhook = gates::spawn_admission_webhook(sys, o);
    watcher = sys.spawn(
        [](caf::event_based_actor* self, gates::admission_webhook_actor w, std::shared_ptr<std::optional<caf::error>> out) -> caf::behavior {
          self->monitor(w);
          self->set_down_handler([out](caf::down_msg& d) { *out = d.reason; });
          return {[](int) {}};
        },
        webhook, ended);
    sched.run();
  }

  std::filesystem::path dir;
  testenv::pem_pair ca = testenv::make_ca("headroom-test-ca");
  std::vector<std::pair<bool, int64_t>> loads;  // each (re)load: ok, the served certificate's notAfter
  gates::admission_webhook_actor webhook;
  caf::actor watcher;
  std::shared_ptr<std::optional<caf::error>> ended = std::make_shared<std::optional<caf::error>>();
};

TEST_F(webhook_fixture, a_changed_certificate_is_served_after_the_next_reload_and_a_bad_one_keeps_the_last) {
  issue(86'400);
  start();
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_TRUE(loads.back().first);
  const int64_t first = loads.back().second;
  sched.advance_time(10s);
  sched.run();
  EXPECT_EQ(loads.size(), 1u) << "unchanged files are not read again";
  issue(2 * 86'400);
  sched.advance_time(10s);
  sched.run();
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_TRUE(loads.back().first);
  EXPECT_GT(loads.back().second, first) << "the renewed certificate is served";
  write(dir / "tls.key", "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n");
  sched.advance_time(10s);
  sched.run();
  ASSERT_EQ(loads.size(), 3u);
  EXPECT_FALSE(loads.back().first) << "a bad pair is reported";
  EXPECT_EQ(loads.back().second, loads[1].second) << "and the previous certificate stays";
  EXPECT_FALSE(ended->has_value());
}

TEST_F(webhook_fixture, no_certificate_to_start_with_exits_abnormally_for_the_supervisor_to_retry) {
  start();  // no files
  ASSERT_TRUE(ended->has_value());
  EXPECT_TRUE(static_cast<bool>(**ended));
}

}  // namespace
