// The runner health checks both runner paths share (actors/runners/health): the rule at each
// timeout, and the memory that measures Running-since, registration and idleness across looks.

#include "actors/runners/health.hpp"

#include <gtest/gtest.h>

namespace {

using namespace headroom::actors::runners;

const health_timeouts seed{std::chrono::milliseconds{120'000}, std::chrono::milliseconds{600'000},
                           std::chrono::milliseconds{600'000}};

TEST(runner_health, each_check_at_its_timeout) {
  health_input in;
  in.phase = "Pending";
  in.pending_for_ms = 599'999;
  EXPECT_EQ(classify(in, seed), verdict::healthy);
  in.pending_for_ms = 600'000;
  EXPECT_EQ(classify(in, seed), verdict::pod_stuck_pending);

  in = {};
  in.phase = "Running";
  in.runner = runner_seen::absent;
  in.running_for_ms = 119'000;
  EXPECT_EQ(classify(in, seed), verdict::healthy);
  in.running_for_ms = 120'000;  // measured from Running, not from creation
  EXPECT_EQ(classify(in, seed), verdict::runner_never_registered);
  in.runner = runner_seen::unknown;  // GitHub did not answer: no verdict on a guess
  EXPECT_EQ(classify(in, seed), verdict::healthy);
  in.runner = runner_seen::offline;
  in.ever_registered = true;  // it was online once: going offline is not "never registered"
  EXPECT_EQ(classify(in, seed), verdict::healthy);

  in = {};
  in.phase = "Running";
  in.runner = runner_seen::idle;
  in.idle_for_ms = 600'000;
  EXPECT_EQ(classify(in, seed), verdict::runner_idle);
  in.runner = runner_seen::busy;
  EXPECT_EQ(classify(in, seed), verdict::healthy);
  in.phase = "Succeeded";
  EXPECT_EQ(classify(in, seed), verdict::healthy);
}

TEST(runner_health, registration_counts_from_running_not_from_creation) {
  health_memory m{seed};
  const int64_t created = 1'000'000;
  // Pending (unbound) for 500 s: not stuck yet, and no registration clock running.
  EXPECT_EQ(m.observe("p", "Pending", false, created, created + 500'000, runner_seen::unknown), verdict::healthy);
  EXPECT_EQ(m.observe("p", "Running", false, created, created + 500'000, runner_seen::unknown), verdict::healthy)
      << "Running without a node is still Pending";
  EXPECT_FALSE(m.worth_asking("p", created + 500'000));
  // Bound and Running at 550 s: 120 s from here, not from creation.
  const int64_t running = created + 550'000;
  EXPECT_EQ(m.observe("p", "Running", true, created, running, runner_seen::offline), verdict::healthy);
  EXPECT_FALSE(m.worth_asking("p", running + 119'999));
  EXPECT_TRUE(m.worth_asking("p", running + 120'000));
  EXPECT_EQ(m.observe("p", "Running", true, created, running + 120'000, runner_seen::unknown), verdict::healthy)
      << "no answer from GitHub: no verdict";
  EXPECT_EQ(m.observe("p", "Running", true, created, running + 120'000, runner_seen::offline), verdict::runner_never_registered);
}

TEST(runner_health, idle_counts_from_the_first_idle_look_and_busy_resets_it) {
  health_memory m{seed};
  const int64_t t0 = 5'000'000;
  EXPECT_EQ(m.observe("p", "Running", true, t0, t0, runner_seen::idle), verdict::healthy);
  EXPECT_TRUE(m.registered("p"));
  EXPECT_TRUE(m.worth_asking("p", t0 + 1)) << "registered: the idle check needs GitHub's answer";
  EXPECT_EQ(m.observe("p", "Running", true, t0, t0 + 300'000, runner_seen::busy), verdict::healthy);
  EXPECT_EQ(m.observe("p", "Running", true, t0, t0 + 400'000, runner_seen::idle), verdict::healthy);
  EXPECT_EQ(m.observe("p", "Running", true, t0, t0 + 900'000, runner_seen::unknown), verdict::healthy)
      << "an unanswered look keeps the idle clock without a verdict";
  EXPECT_EQ(m.observe("p", "Running", true, t0, t0 + 1'000'000, runner_seen::idle), verdict::runner_idle);
  // Offline after it was online is not "never registered".
  EXPECT_EQ(m.observe("p", "Running", true, t0, t0 + 2'000'000, runner_seen::offline), verdict::healthy);
}

TEST(runner_health, forgotten_pods_start_over) {
  health_memory m{seed};
  EXPECT_EQ(m.observe("p", "Running", true, 1, 1'000, runner_seen::idle), verdict::healthy);
  m.keep_only({"other"});
  EXPECT_FALSE(m.registered("p"));
  EXPECT_FALSE(m.worth_asking("p", 10'000'000));
  EXPECT_EQ(m.observe("p", "Running", true, 1, 10'000'000, runner_seen::offline), verdict::healthy)
      << "Running clock restarted: a forgotten pod is not judged on old times";
}

// What a restart would lose, kept and given back: the registration timeout counts from the first
// Running seen before the restart, not after it.
TEST(health_memory, recall_and_restore_carry_the_timers_across_a_restart) {
  health_memory before{{}};
  EXPECT_EQ(before.recall("p"), health_memory::remembered{});
  before.observe("p", "Running", true, 1'000, 10'000, runner_seen::unknown);
  before.observe("p", "Running", true, 1'000, 20'000, runner_seen::idle);
  const auto kept = before.recall("p");
  EXPECT_EQ(kept.running_since, 10'000);
  EXPECT_EQ(kept.idle_since, 20'000);
  EXPECT_TRUE(kept.registered);
  health_memory after{{}};
  after.restore("p", kept);
  EXPECT_EQ(after.recall("p"), kept);
  EXPECT_EQ(after.observe("p", "Running", true, 1'000, 20'000 + 600'000, runner_seen::idle), verdict::runner_idle)
      << "idle for 600 s counted from before the restart";
  health_memory fresh{{}};
  fresh.restore("q", {.running_since = 5'000});
  EXPECT_EQ(fresh.observe("q", "Running", true, 1'000, 5'000 + 120'000, runner_seen::absent), verdict::runner_never_registered);
  fresh.restore("q", {.running_since = 99'000});
  EXPECT_EQ(fresh.recall("q").running_since, 5'000) << "a value already held wins";
}

// A runner GitHub saw online, then stopped listing while its pod runs on: its registration was
// deleted. Vanished after registrationTimeout; a runner listed again in time is healthy.
TEST(health_memory, a_registered_runner_gone_from_github_for_the_registration_timeout_has_vanished) {
  health_memory m{{}};
  EXPECT_EQ(m.observe("p", "Running", true, 0, 1'000, runner_seen::busy), verdict::healthy);
  EXPECT_EQ(m.observe("p", "Running", true, 0, 10'000, runner_seen::absent), verdict::healthy);
  EXPECT_EQ(m.observe("p", "Running", true, 0, 10'000 + 119'000, runner_seen::absent), verdict::healthy);
  EXPECT_EQ(m.observe("p", "Running", true, 0, 10'000 + 119'500, runner_seen::unknown), verdict::healthy) << "not asked: no news";
  EXPECT_EQ(m.observe("p", "Running", true, 0, 10'000 + 120'000, runner_seen::absent), verdict::runner_vanished);
  EXPECT_STREQ(to_string(verdict::runner_vanished), "runner_vanished");
  health_memory back{{}};
  back.observe("q", "Running", true, 0, 1'000, runner_seen::idle);
  back.observe("q", "Running", true, 0, 2'000, runner_seen::absent);
  back.observe("q", "Running", true, 0, 100'000, runner_seen::busy);  // listed again: the clock restarts
  EXPECT_EQ(back.observe("q", "Running", true, 0, 130'000, runner_seen::absent), verdict::healthy);
}

}  // namespace
