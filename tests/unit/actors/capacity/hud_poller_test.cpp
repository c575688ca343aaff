// hud_poller (actors/capacity/hud_poller.cpp) under CAF's deterministic test_coordinator, with the
// HUD answered by hand (tests/unit/support/scripted_exchange.hpp): each scale set's monitor gets
// the jobs queued for its labels; a failed fetch tells them so (they fall back to
// proactiveCapacity) and the poller keeps going; the next fetch waits for the interval on the
// injected clock.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "actors/capacity/capacity.hpp"
#include "adapters/hud/client.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;

namespace {

constexpr const char* rows = R"([
  {"runner_label":"linux.2xlarge","org":"pytorch","repo":"pytorch","num_queued_jobs":7,"min_queue_time_minutes":1,"max_queue_time_minutes":12},
  {"runner_label":"linux.4xlarge","org":"pytorch","repo":"vision","num_queued_jobs":3,"min_queue_time_minutes":0,"max_queue_time_minutes":2},
  {"runner_label":"windows.4xlarge","org":"pytorch","repo":"pytorch","num_queued_jobs":9,"min_queue_time_minutes":0,"max_queue_time_minutes":1}])";

struct poller_fixture : test_support::actor_fixture {
  ~poller_fixture() override {
    caf::anon_send_exit(poller, caf::exit_reason::user_shutdown);
    for (auto& m : monitors)
      caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
    sched.run();
  }

  // A stand-in capacity monitor: what it was told, in order.
  actors::capacity::monitor_actor monitor(std::shared_ptr<std::vector<msg::queued_jobs>> seen) {
    auto a = sys.spawn(
        [](caf::event_based_actor*, std::shared_ptr<std::vector<msg::queued_jobs>> seen) -> caf::behavior {
          return {[seen](const msg::queued_jobs& q) { seen->push_back(q); }};
        },
        seen);
    monitors.push_back(a);
    return caf::actor_cast<actors::capacity::monitor_actor>(a);
  }

  void start(actors::capacity::hud_metrics metrics = {}, hud::queue_share share = {},
             std::shared_ptr<const actors::capacity::hud_target_registry> more = nullptr) {
    hud::client_options o;
    o.url = "https://hud.test/api/queued_jobs";
    o.token = "hud-token";
    auto client = std::make_shared<hud::client>(io, o);
    std::vector<actors::capacity::hud_target> targets{{{"linux.2xlarge", "linux.4xlarge"}, monitor(linux), share},
                                                       {{"macos"}, monitor(mac), share}};
    poller = actors::capacity::spawn_hud_poller(sys, client, targets, 30s, std::move(metrics), std::move(more));
    sched.run();
  }

  std::vector<caf::actor> monitors;
  std::shared_ptr<std::vector<msg::queued_jobs>> linux = std::make_shared<std::vector<msg::queued_jobs>>();
  std::shared_ptr<std::vector<msg::queued_jobs>> mac = std::make_shared<std::vector<msg::queued_jobs>>();
  actors::capacity::hud_poller_actor poller;
};

TEST_F(poller_fixture, each_monitor_gets_the_jobs_queued_for_its_labels_every_interval) {
  start();
  ASSERT_EQ(io.waiting().size(), 1u) << "a fetch at start";
  const auto& req = io.waiting().front().request;
  EXPECT_EQ(req.method, "GET");
  EXPECT_NE(std::find(req.headers.begin(), req.headers.end(), "x-hud-internal-bot: hud-token"), req.headers.end());
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 200, rows));
  sched.run();
  ASSERT_EQ(linux->size(), 1u);
  EXPECT_TRUE(linux->back().ok);
  EXPECT_EQ(linux->back().count, 10);
  ASSERT_EQ(mac->size(), 1u);
  EXPECT_EQ(mac->back().count, 0);

  sched.advance_time(29s);
  sched.run();
  EXPECT_TRUE(io.waiting().empty()) << "the next fetch waits for the interval";
  sched.advance_time(1s);
  sched.run();
  EXPECT_EQ(io.waiting().size(), 1u);
}

// A scale set declared by a ScaleSet object joins the fetches once it runs, and leaves them once stopped.
TEST_F(poller_fixture, a_scale_set_started_while_the_poller_runs_gets_its_demand_from_the_next_fetch) {
  auto more = std::make_shared<actors::capacity::hud_target_registry>();
  start({}, {}, more);
  auto declared = std::make_shared<std::vector<msg::queued_jobs>>();
  more->set({{"gpu", actors::capacity::hud_target{{"linux.2xlarge"}, monitor(declared), {}}}});
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 200, rows));
  sched.run();
  EXPECT_TRUE(declared->empty()) << "the fetch in flight was asked for the targets of its start";
  sched.advance_time(30s);
  sched.run();
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 200, rows));
  sched.run();
  ASSERT_EQ(declared->size(), 1u);
  EXPECT_GT(declared->back().count, 0);
  more->set({});
  sched.advance_time(30s);
  sched.run();
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 200, rows));
  sched.run();
  EXPECT_EQ(declared->size(), 1u) << "stopped: no more demand";
  EXPECT_EQ(linux->size(), 3u);
}

// Two clusters on one HUD (hud.share): each monitor gets this cluster's share of the queue, and
// the two clusters' shares add up to the queue.
TEST_F(poller_fixture, with_a_share_each_monitor_gets_this_clusters_part_of_the_queue) {
  start({}, hud::queue_share{1, 2, 0});
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 200, rows));
  sched.run();
  ASSERT_EQ(linux->size(), 1u);
  const auto mine = linux->back().count;
  const auto decoded = hud::decode_queued_jobs(rows);
  const auto theirs = hud::queued_for_labels(std::get<std::vector<hud::queued_jobs>>(decoded), {"linux.2xlarge", "linux.4xlarge"},
                                             hud::queue_share{0, 2, 0});
  EXPECT_EQ(mine + theirs, 10) << "the two shares are the queue";
  EXPECT_GE(mine, 4);
  EXPECT_LE(mine, 6);
}

TEST_F(poller_fixture, a_failed_fetch_tells_every_monitor_and_the_poller_keeps_going) {
  start();
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 503, "unavailable"));
  sched.run();
  ASSERT_EQ(linux->size(), 1u);
  EXPECT_FALSE(linux->back().ok) << "the monitor falls back to proactiveCapacity alone";
  ASSERT_EQ(mac->size(), 1u);
  EXPECT_FALSE(mac->back().ok);
  sched.advance_time(30s);
  sched.run();
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 200, R"([{"runner_label":"x","num_queued_jobs":"many"}])"));
  sched.run();
  EXPECT_FALSE(linux->back().ok) << "a malformed answer is a failure too";
  sched.advance_time(30s);
  sched.run();
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 200, rows));
  sched.run();
  EXPECT_TRUE(linux->back().ok);
  EXPECT_EQ(linux->back().count, 10);
  EXPECT_EQ(io.submitted(), 3u);
}

// A HUD down for minutes: one warning when it goes, a reminder after 5 minutes (not a line per
// fetch), one line when it is back; each fetch's duration observed by outcome (the design's
// "HUD API latency" metric), measured on the actor's clock.
TEST_F(poller_fixture, a_hud_down_for_minutes_is_said_once_with_a_reminder_and_each_fetch_is_timed) {
  auto seen = std::make_shared<std::vector<std::pair<double, bool>>>();
  std::vector<std::string> lines;
  runtime::logger::global().set_sink([&lines](std::string_view line) {
    if (line.find("\"actor\":\"hud_poller\"") != std::string_view::npos)
      lines.emplace_back(line);
  });
  start({[seen](double seconds, bool ok) { seen->emplace_back(seconds, ok); }});
  sched.advance_time(2s);  // the HUD takes 2 s to answer the first fetch
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 200, rows));
  sched.run();
  for (int i = 0; i < 12; ++i) {  // six minutes of failed fetches, 30 s apart
    sched.advance_time(30s);
    sched.run();
    ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 503, "unavailable"));
    sched.run();
  }
  sched.advance_time(30s);
  sched.run();
  ASSERT_TRUE(io.answer("GET", "/api/queued_jobs", 200, rows));
  sched.run();
  runtime::logger::global().set_sink(nullptr);
  ASSERT_EQ(seen->size(), 14u);
  EXPECT_DOUBLE_EQ(seen->front().first, 2.0);
  EXPECT_TRUE(seen->front().second);
  EXPECT_FALSE(seen->at(1).second);
  EXPECT_TRUE(seen->back().second);
  ASSERT_EQ(lines.size(), 3u) << "went down, a reminder at 5 minutes, back";
  EXPECT_NE(lines[0].find("HUD fetch failed"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("HUD still unavailable"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("HUD available again"), std::string::npos) << lines[2];
}

}  // namespace
