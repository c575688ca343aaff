// listener_session (actors/listener/listener_session.cpp) under CAF's deterministic
// test_coordinator, with GitHub and the Actions Service answered by hand
// (tests/unit/support/scripted_exchange.hpp): the session opens once the monitor has answered, the
// long poll carries the monitor's capacity, a new capacity cancels the poll and re-issues it at once
// with the new value, and a failed session create is retried after the listener's backoff on the
// injected clock (1 s, then 2 s), with no server and no sleeping.
#include "actors/listener/listener_session.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;

namespace {

// An admin token the client accepts: a JWT whose payload is {"exp": 4102444800} (2100-01-01).
constexpr const char* admin_jwt = "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOiA0MTAyNDQ0ODAwfQ.c2ln";
constexpr const char* session_json =
    R"({"sessionId":"s-1","ownerName":"headroom-0","runnerScaleSet":{"id":7,"name":"set"},)"
    R"("messageQueueUrl":"https://queue.test/q/7","messageQueueAccessToken":"mq-token","statistics":{"totalAssignedJobs":0}})";

struct monitor_log {
  int asked = 0;
  std::vector<int64_t> polled;  // capacity_polled, in order
};

struct listener_fixture : test_support::actor_fixture {
  ~listener_fixture() override {
    caf::anon_send_exit(listener, caf::exit_reason::kill);
    caf::anon_send_exit(monitor, caf::exit_reason::kill);
    caf::anon_send_exit(updates_sink, caf::exit_reason::kill);
    caf::anon_send_exit(status_sink, caf::exit_reason::kill);
    sched.run();
  }

  // A stand-in capacity monitor: answers capacity_atom with `capacity`.
  void start(int64_t capacity) {
    monitor = sys.spawn(
        [](actors::capacity_source::pointer self, std::shared_ptr<monitor_log> log,
           int64_t capacity) -> actors::capacity_source::behavior_type {
          return {
              [self, log, capacity](msg::capacity_atom) {
                ++log->asked;
                self->send(caf::actor_cast<actors::capacity_sink>(self->current_sender()), msg::set_max_capacity{capacity});
              },
              [log](msg::capacity_polled p) { log->polled.push_back(p.capacity); },
          };
        },
        log, capacity);
    auto where = std::get<github::config_url>(github::parse_config_url("https://github.com/acme"));
    github::credentials creds;
    creds.personal_access_token = "ghp_scripted";
    github::actions_options o;
    o.retry_base = 1ms;
    client = github::actions_client::make(where, creds, io, o);
    actors::listener_options lo;
    lo.scale_set_id = by_name.empty() ? 7 : 0;
    lo.scale_set_name = by_name;
    lo.labels = labels;
    lo.owner = "headroom-0";
    lo.memo = memo;
    lo.queue_check_interval = queue_check;
    updates_sink = sys.spawn(
        [](actors::update_sink::pointer, std::shared_ptr<std::vector<msg::scale_set_update>> seen) -> actors::update_sink::behavior_type {
          return {[seen](const msg::scale_set_update& u) { seen->push_back(u); }};
        },
        updates);
    status_sink = sys.spawn(
        [](actors::session_view_sink::pointer, std::shared_ptr<std::vector<msg::session_view>> seen)
            -> actors::session_view_sink::behavior_type {
          return {[seen](const msg::session_view& v) {
            if (!v.poll_started)
              seen->push_back(v);
          }};
        },
        sessions);
    listener = actors::spawn_listener_session(sys, client, actors::listener_peers{{updates_sink}, monitor, status_sink}, lo);
    sched.run();
  }
  // GitHub's two steps to an Actions Service connection.
  void connect() {
    ASSERT_TRUE(io.answer("POST", "/orgs/acme/actions/runners/registration-token", 201,
                          R"({"token":"reg-token","expires_at":"2100-01-01T00:00:00Z"})"))
        << waiting_text();
    sched.run();
    ASSERT_TRUE(io.answer("POST", "/actions/runner-registration", 200,
                          std::string{R"({"url":"https://pipelines.test/tenant","token":")"} + admin_jwt + "\"}"))
        << waiting_text();
    sched.run();
  }
  // Resolving the scale set by name: the runner group, then `found` as the service's list of
  // scale sets by that name.
  void find_scale_set(const std::string& found) {
    start(1);
    connect();
    ASSERT_TRUE(io.answer("GET", "/_apis/runtime/runnergroups/", 200, R"({"count":1,"value":[{"id":1,"name":"default","isDefaultGroup":true}]})"))
        << waiting_text();
    sched.run();
    ASSERT_TRUE(io.answer("GET", "/_apis/runtime/runnerscalesets?", 200, found)) << waiting_text();
    sched.run();
  }
  // Runs the actors until nothing moves: cancelled requests answer (as the transport's thread
  // would), and what that sets off runs too.
  void settle() {
    do
      sched.run();
    while (io.deliver_cancelled() > 0);
  }
  // The capacity the waiting poll carries (-1: no poll waits).
  int64_t polled_capacity() const {
    for (const auto& c : io.waiting())
      if (c.request.url.find("queue.test/q/7") != std::string::npos)
        for (const auto& h : c.request.headers)
          if (h.rfind("X-ScaleSetMaxCapacity: ", 0) == 0)
            return std::stoll(h.substr(23));
    return -1;
  }

  std::string by_name;               // the scale set by name (resolved at start), not by id
  std::chrono::milliseconds queue_check{0};  // listener_options::queue_check_interval
  std::vector<std::string> labels;   // its configured labels
  std::shared_ptr<github::actions_client> client;
  std::shared_ptr<monitor_log> log = std::make_shared<monitor_log>();
  std::shared_ptr<actors::session_memo> memo = std::make_shared<actors::session_memo>();
  actors::capacity_source monitor;
  actors::listener_actor listener;
  std::shared_ptr<std::vector<msg::scale_set_update>> updates = std::make_shared<std::vector<msg::scale_set_update>>();
  std::shared_ptr<std::vector<msg::session_view>> sessions = std::make_shared<std::vector<msg::session_view>>();
  actors::update_sink updates_sink;
  actors::session_view_sink status_sink;
};

TEST_F(listener_fixture, the_poll_carries_the_monitors_capacity_and_a_new_one_re_polls_at_once) {
  start(2);
  EXPECT_EQ(log->asked, 1) << "a started listener asks the monitor first";
  connect();
  ASSERT_TRUE(io.answer("POST", "/_apis/runtime/runnerscalesets/7/sessions", 200, session_json)) << waiting_text();
  sched.run();
  EXPECT_EQ(polled_capacity(), 2);
  EXPECT_EQ(log->polled, (std::vector<int64_t>{2})) << "the monitor is told each poll as it starts";

  caf::anon_send(listener, msg::set_max_capacity{0});
  settle();
  EXPECT_EQ(polled_capacity(), 0) << "the held poll was cancelled and re-issued with the new value" << waiting_text();
  EXPECT_EQ(log->polled, (std::vector<int64_t>{2, 0}));
  caf::anon_send(listener, msg::set_max_capacity{0});
  settle();
  EXPECT_EQ(log->polled.size(), 2u) << "a repeat of the same value is not a change";

  ASSERT_TRUE(io.answer("GET", "queue.test/q/7", 202));  // the hold ended with nothing to say
  sched.run();
  EXPECT_EQ(polled_capacity(), 0) << "the next poll starts at once";
}

TEST_F(listener_fixture, a_failed_session_create_is_retried_after_the_backoff_on_the_actor_clock) {
  start(1);
  connect();
  // The client retries a 500 itself; every attempt fails, then the listener backs off.
  while (io.answer("POST", "/_apis/runtime/runnerscalesets/7/sessions", 500, R"({"message":"down"})"))
    sched.run();
  sched.run();
  const auto creates = io.submitted();
  sched.advance_time(999ms);
  sched.run();
  EXPECT_EQ(io.submitted(), creates) << "not before the backoff (1 s)";
  sched.advance_time(1ms);
  sched.run();
  EXPECT_EQ(io.submitted(), creates + 1) << "a new create after 1 s";
  while (io.answer("POST", "/_apis/runtime/runnerscalesets/7/sessions", 500, R"({"message":"down"})"))
    sched.run();
  const auto again = io.submitted();
  sched.advance_time(1999ms);
  sched.run();
  EXPECT_EQ(io.submitted(), again) << "the backoff doubled";
  sched.advance_time(1ms);
  sched.run();
  ASSERT_TRUE(io.answer("POST", "/_apis/runtime/runnerscalesets/7/sessions", 200, session_json));
  sched.run();
  EXPECT_EQ(polled_capacity(), 1) << "the session opened and the poll carries the monitor's value";
}

TEST_F(listener_fixture, a_restarted_listener_adopts_the_session_its_predecessor_left_and_goes_on_after_its_last_message) {
  // What a crashed predecessor left in the memo: its session, and the newest message it handled.
  memo->set(msg::session_held{7, "s-1", 41});
  start(1);
  connect();
  EXPECT_EQ(io.answer("POST", "/_apis/runtime/runnerscalesets/7/sessions", 200, session_json), false)
      << "no new session: " << waiting_text();
  ASSERT_TRUE(io.answer("PATCH", "/_apis/runtime/runnerscalesets/7/sessions/s-1", 200, session_json)) << waiting_text();
  sched.run();
  ASSERT_EQ(polled_capacity(), 1) << waiting_text();
  bool after_41 = false;
  for (const auto& c : io.waiting())
    after_41 = after_41 || c.request.url.find("lastMessageId=41") != std::string::npos;
  EXPECT_TRUE(after_41) << "a message the predecessor handled is not handled twice: " << waiting_text();
  EXPECT_EQ(memo->get().session_id, "s-1") << "the adopted session is remembered for the next";
}

// #61: with nothing advertised the service assigns nothing and says nothing, so the jobs queued for
// the scale set were never seen and a scale set without a HUD and without a warm pool never ran a
// job. After a poll that came back empty the listener reads the scale set, whose statistics
// (totalAvailableJobs) reach the monitor when they changed.
TEST_F(listener_fixture, an_empty_poll_reads_the_scale_sets_statistics_for_the_monitor) {
  start(0);
  connect();
  ASSERT_TRUE(io.answer("POST", "/_apis/runtime/runnerscalesets/7/sessions", 200, session_json)) << waiting_text();
  sched.run();
  ASSERT_EQ(updates->size(), 1u) << "the session's statistics";
  EXPECT_EQ(waiting("GET", "/_apis/runtime/runnerscalesets/7?"), 0u) << "no read while the poll is held";
  ASSERT_TRUE(io.answer("GET", "queue.test/q/7", 202));
  sched.run();
  EXPECT_EQ(polled_capacity(), 0) << "the next poll starts at once, beside the read";
  ASSERT_TRUE(io.answer("GET", "/_apis/runtime/runnerscalesets/7?", 200,
                        R"({"id":7,"name":"set","statistics":{"totalAvailableJobs":200,"totalAssignedJobs":0}})"))
      << waiting_text();
  sched.run();
  ASSERT_EQ(updates->size(), 2u);
  EXPECT_EQ(updates->back().stats.total_available_jobs, 200);
  EXPECT_TRUE(updates->back().jobs.empty());
  ASSERT_TRUE(io.answer("GET", "queue.test/q/7", 202));
  sched.run();
  ASSERT_TRUE(io.answer("GET", "/_apis/runtime/runnerscalesets/7?", 200,
                        R"({"id":7,"name":"set","statistics":{"totalAvailableJobs":200,"totalAssignedJobs":0}})"));
  sched.run();
  EXPECT_EQ(updates->size(), 2u) << "the same statistics again are no news";
}

// #59: a warm pool of 0 advertises nothing, so the jobs queued meanwhile were seen only when the
// held poll ended (~50 s; measured by bench/job_outcomes: queued → start p50 66 s against ARC's
// 20 s). While a poll is held with no room free the scale set is read every queue_check_interval;
// once the poll advertises room (a queued job would be offered on it, with its statistics) it is not.
TEST_F(listener_fixture, a_poll_held_with_no_room_free_reads_the_queue_every_interval_and_one_with_room_does_not) {
  queue_check = 10s;
  start(0);
  connect();
  ASSERT_TRUE(io.answer("POST", "/_apis/runtime/runnerscalesets/7/sessions", 200, session_json)) << waiting_text();
  sched.run();
  ASSERT_EQ(updates->size(), 1u) << "the session's statistics";
  sched.advance_time(9s);
  sched.run();
  EXPECT_EQ(waiting("GET", "/_apis/runtime/runnerscalesets/7?"), 0u) << "not before the interval";
  sched.advance_time(1s);
  sched.run();
  ASSERT_TRUE(io.answer("GET", "/_apis/runtime/runnerscalesets/7?", 200,
                        R"({"id":7,"name":"set","statistics":{"totalAvailableJobs":3,"totalAssignedJobs":0}})"))
      << "the queue read while the poll advertising 0 is held: " << waiting_text();
  sched.run();
  ASSERT_EQ(updates->size(), 2u);
  EXPECT_EQ(updates->back().stats.total_available_jobs, 3) << "the monitor learns the queue";
  EXPECT_EQ(polled_capacity(), 0) << "the poll is still the same one";
  sched.advance_time(10s);
  sched.run();
  EXPECT_EQ(waiting("GET", "/_apis/runtime/runnerscalesets/7?"), 1u) << "and again after another interval";
  ASSERT_TRUE(io.answer("GET", "/_apis/runtime/runnerscalesets/7?", 200,
                        R"({"id":7,"name":"set","statistics":{"totalAvailableJobs":3,"totalAssignedJobs":0}})"));
  sched.run();
  // Pairs placed: the monitor raises the capacity, the held poll is replaced by one with room.
  caf::anon_send(listener, msg::set_max_capacity{2});
  settle();
  ASSERT_EQ(polled_capacity(), 2) << waiting_text();
  sched.advance_time(30s);
  sched.run();
  EXPECT_EQ(waiting("GET", "/_apis/runtime/runnerscalesets/7?"), 0u) << "room free: a queued job is offered on the poll itself";
}

// #61: a service that accepted a poll and never answered was seen after 394 s: the client retried
// the timed-out poll four times, 70 s each. A poll's failure now reaches the listener at once: the
// ScaleSet's session says Backoff, and when the backoff ends the scale set is read beside the new
// poll, so the service's return is known without waiting for a poll hold.
TEST_F(listener_fixture, a_hung_poll_is_given_up_once_and_said_and_the_return_is_seen_at_once) {
  start(1);
  connect();
  ASSERT_TRUE(io.answer("POST", "/_apis/runtime/runnerscalesets/7/sessions", 200, session_json)) << waiting_text();
  sched.run();
  ASSERT_FALSE(sessions->empty());
  EXPECT_EQ(sessions->back().state, "Open");
  const auto before = io.submitted();
  ASSERT_TRUE(io.fail_transfer("queue.test/q/7", "Timeout was reached"));
  sched.run();
  io.fire_timers();
  sched.run();
  EXPECT_EQ(io.submitted(), before) << "the client does not retry a poll: " << waiting_text();
  EXPECT_EQ(sessions->back().state, "Backoff");
  EXPECT_NE(sessions->back().message.find("Timeout was reached"), std::string::npos) << sessions->back().message;
  sched.advance_time(1s);  // the listener's first backoff
  sched.run();
  EXPECT_EQ(polled_capacity(), 1) << "polling again after the backoff: " << waiting_text();
  ASSERT_TRUE(io.answer("GET", "/_apis/runtime/runnerscalesets/7?", 200, R"({"id":7,"name":"set","statistics":{}})"))
      << "the scale set is read beside the poll: " << waiting_text();
  sched.run();
  EXPECT_EQ(sessions->back().state, "Open") << "the service answered: the session is Open again, no poll hold later";
}

// #58: a scale set found on the service with other labels than the configured ones (the labels
// the service matches jobs against) gets the configured ones, its name first, before the session.
TEST_F(listener_fixture, a_found_scale_set_with_other_labels_gets_the_configured_ones) {
  by_name = "linux";
  labels = {"gpu", "linux", "x64"};
  find_scale_set(R"({"count":1,"value":[{"id":9,"name":"linux","runnerGroupId":1,"labels":[{"type":"System","name":"linux"},)"
                 R"({"type":"System","name":"old"}],"RunnerSetting":{"disableUpdate":true}}]})");
  const auto patch = std::find_if(io.waiting().begin(), io.waiting().end(), [](const auto& c) { return c.request.method == "PATCH"; });
  ASSERT_NE(patch, io.waiting().end()) << waiting_text();
  EXPECT_NE(patch->request.url.find("/_apis/runtime/runnerscalesets/9"), std::string::npos) << patch->request.url;
  EXPECT_NE(patch->request.body.find(R"("labels":[{"type":"System","name":"linux"},{"type":"System","name":"gpu"},{"type":"System","name":"x64"}])"),
            std::string::npos)
      << patch->request.body;
  EXPECT_NE(patch->request.body.find(R"("disableUpdate":true)"), std::string::npos) << "the scale set's other settings are kept";
  ASSERT_TRUE(io.answer("PATCH", "/_apis/runtime/runnerscalesets/9", 200, R"({"id":9,"name":"linux","runnerGroupId":1})"));
  sched.run();
  EXPECT_EQ(waiting("POST", "/_apis/runtime/runnerscalesets/9/sessions"), 1u) << "then the session\n" << waiting_text();
  ASSERT_TRUE(io.answer("POST", "/_apis/runtime/runnerscalesets/9/sessions", 200, session_json));  // (so no call holds the listener)
  settle();
}

TEST_F(listener_fixture, a_found_scale_set_with_the_configured_labels_is_taken_as_it_is) {
  by_name = "linux";
  labels = {"gpu"};
  find_scale_set(R"({"count":1,"value":[{"id":9,"name":"linux","runnerGroupId":1,"labels":[{"type":"System","name":"gpu"},)"
                 R"({"type":"System","name":"linux"}]}]})");
  EXPECT_EQ(waiting("PATCH", "/_apis/runtime/runnerscalesets/9"), 0u) << "the same labels in another order: no update";
  EXPECT_EQ(waiting("POST", "/_apis/runtime/runnerscalesets/9/sessions"), 1u) << waiting_text();
  ASSERT_TRUE(io.answer("POST", "/_apis/runtime/runnerscalesets/9/sessions", 200, session_json));  // (so no call holds the listener)
  settle();
}

}  // namespace
