// listener_session against the Actions Service peer: the long poll carries the newest capacity,
// a change of the in-flight poll's value (drop or rise) re-polls at once, jobs are acked and acquired within
// capacity, statistics reach the provisioner, a lost session is replaced, and the session is
// deleted on shutdown.

#include <caf/all.hpp>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "actors/listener/listener_session.hpp"
#include "testenv/transport_options.hpp"
#include "messages/type_ids.hpp"
#include "testenv/actions_peer.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/shared_env.hpp"

namespace headroom {
namespace {

using namespace std::chrono_literals;
using testenv::eventually;

struct env {
  std::unique_ptr<testpeer::actions_peer> peer;
  std::string private_key;
  std::unique_ptr<http::transport> io;
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::string why;
};

env make_env() {
  env out;
  std::string public_key;
  std::tie(out.private_key, public_key) = testpeer::make_app_key();
  testpeer::actions_peer::options o;
  o.app_public_key_pem = public_key;
  out.peer = testpeer::actions_peer::start(o, out.why);
  out.io = std::make_unique<http::transport>(headroom::testenv::real_time_transport());
  out.cfg = std::make_unique<caf::actor_system_config>();
  out.sys = std::make_unique<caf::actor_system>(*out.cfg);
  return out;
}

// The actors first, then the I/O thread, then the peer.
void stop_env(env& e) {
  e.sys.reset();
  e.io.reset();
  e.peer.reset();
}

testenv::shared_env<env> the_env{make_env, stop_env};
env& shared() { return the_env.get(); }

#define REQUIRE_PEER(var) \
  auto& var = shared(); \
  HEADROOM_REQUIRE_READY(var.peer, "the Actions Service peer", var.why)

std::shared_ptr<github::actions_client> client_for(env& e, const std::string& org) {
  auto where = std::get<github::config_url>(github::parse_config_url(e.peer->http_url() + "/" + org));
  github::credentials creds;
  creds.app_id = "12345";
  creds.installation_id = 42;
  creds.private_key_pem = e.private_key;
  github::actions_options o;
  o.retry_base = 20ms;
  o.session_conflict_backoff = 100ms;
  o.session_conflict_retries = 1;
  return github::actions_client::make(where, creds, *e.io, o);
}

int64_t create_scale_set(const std::shared_ptr<github::actions_client>& c, const std::string& name) {
  auto p = std::make_shared<std::promise<github::actions_result<github::runner_scale_set>>>();
  github::runner_scale_set s;
  s.name = name;
  s.runner_group_id = 1;
  s.labels = {{"System", name}};
  c->create_scale_set(s, [p](auto r) { p->set_value(std::move(r)); });
  auto r = p->get_future().get();
  if (auto* e = std::get_if<github::actions_error>(&r)) {
    ADD_FAILURE() << e->describe();
    return 0;
  }
  return std::get<github::runner_scale_set>(r).id;
}

// The peer's polls of one scale set: {capacity, status} in order.
std::vector<std::pair<int64_t, int64_t>> polls(const env& e, int64_t set) {
  simdjson::dom::parser parser;
  std::vector<std::pair<int64_t, int64_t>> out;
  auto st = parser.parse(e.peer->control("/state").body);
  for (auto p : st["polls"].get_array())
    if (int64_t(p["scaleSetId"]) == set)
      out.emplace_back(int64_t(p["capacity"]), int64_t(p["status"]));
  return out;
}

std::string job_state(const env& e, int64_t id) {
  simdjson::dom::parser parser;
  for (auto j : parser.parse(e.peer->control("/state").body)["jobs"].get_array())
    if (int64_t(j["runnerRequestId"]) == id)
      return std::string{std::string_view(j["state"])};
  return "absent";
}

int64_t requests(const env& e, const char* route) {
  simdjson::dom::parser parser;
  int64_t n = 0;
  if (parser.parse(e.peer->control("/state").body)["requests"][route].get(n) != simdjson::SUCCESS)
    return 0;
  return n;
}

struct provisioner_log {
  std::mutex m;
  std::vector<msg::scale_set_update> updates;
  int64_t last_assigned() {
    std::lock_guard lock(m);
    return updates.empty() ? -1 : updates.back().stats.total_assigned_jobs;
  }
};

// Data goes in as a spawn argument, not a capture: CAF 0.17.6 dereferences a null argument tuple
// when an actor is spawned with none (UBSan flags it).
actors::update_sink spawn_provisioner(caf::actor_system& sys, std::shared_ptr<provisioner_log> log) {
  return sys.spawn(
      [](actors::update_sink::pointer, std::shared_ptr<provisioner_log> log) -> actors::update_sink::behavior_type {
        return {[log](msg::scale_set_update& u) {
          std::lock_guard lock(log->m);
          log->updates.push_back(std::move(u));
        }};
      },
      std::move(log));
}

TEST(listener_session, capacity_drop_re_polls_at_once_and_jobs_are_acquired_within_it) {
  REQUIRE_PEER(e);
  auto c = client_for(e, "listener-org");
  const int64_t set = create_scale_set(c, "listener-set");
  ASSERT_GT(set, 0);
  auto log = std::make_shared<provisioner_log>();
  auto prov = spawn_provisioner(*e.sys, log);
  actors::listener_options o;
  o.scale_set_id = set;
  o.owner = "headroom-test";
  o.initial_capacity = 3;
  auto l = actors::spawn_listener_session(*e.sys, c, actors::listener_peers{{prov}, {}}, o);

  ASSERT_TRUE(eventually([&] {
    auto p = polls(e, set);
    return !p.empty() && p.back() == std::make_pair(int64_t{3}, int64_t{0});
  }, 10s)) << "a poll advertising 3 is held by the peer";
  EXPECT_TRUE(eventually([&] { return log->last_assigned() == 0; }, 5s)) << "the session's statistics reach the provisioner";

  // The capacity monitor lowers capacity to 1: the held poll is cancelled and re-issued at once.
  const auto t0 = std::chrono::steady_clock::now();
  caf::anon_send(l, msg::set_max_capacity{1});
  ASSERT_TRUE(eventually([&] {
    auto p = polls(e, set);
    return p.size() >= 2 && p.back().first == 1;
  }, 10s));
  // A round trip takes milliseconds; the bound is loose because CI runs this beside a cluster
  // test on two cores. What it rules out is the peer's 50 s hold (capacity_propagation_bench
  // measures the latency itself).
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s) << "within one round trip, not after the 50 s hold";
  // The old poll ended by the client; after it only polls carrying 1 (a poll cancelled within the
  // reorder window has its successor issued once more when the window has passed).
  auto p = polls(e, set);
  size_t old = p.size();
  while (old > 0 && p[old - 1].first == 1)
    --old;
  ASSERT_GT(old, 0u);
  EXPECT_EQ(p[old - 1], std::make_pair(int64_t{3}, int64_t{499})) << "the old poll ended by the client";
  EXPECT_LE(p.size() - old, 2u) << "at most one re-issue";

  // Three jobs; the in-flight poll advertises 1: one is offered, acked and acquired.
  auto r = e.peer->control("/jobs", R"({"labels":["listener-set"],"count":3})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser parser;
  std::vector<int64_t> ids;
  for (auto id : parser.parse(r.body)["ids"].get_array())
    ids.push_back(int64_t(id));
  ASSERT_TRUE(eventually([&] { return job_state(e, ids[0]) == "acquired"; }, 10s)) << job_state(e, ids[0]);
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(job_state(e, ids[1]), "queued") << "capacity 1 holds one job";
  // A rise re-polls at once too: the new poll carries 2, a second job; never a third.
  const auto t1 = std::chrono::steady_clock::now();
  caf::anon_send(l, msg::set_max_capacity{2});
  ASSERT_TRUE(eventually([&] { return polls(e, set).back().first == 2; }, 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 10s) << "a rise reaches the service within one round trip too, not after the hold";
  EXPECT_TRUE(eventually([&] { return job_state(e, ids[1]) == "acquired"; }, 10s));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(job_state(e, ids[2]), "queued");
  EXPECT_TRUE(eventually([&] { return log->last_assigned() == 2; }, 10s)) << "statistics after the JobAssigned messages";

  // The session disappears: a new one is opened and polling goes on.
  ASSERT_EQ(e.peer->control("/expire", R"({"what":"sessions"})").status, 200);
  caf::anon_send(l, msg::set_max_capacity{0});  // cancels the held poll, which then meets the 404
  EXPECT_TRUE(eventually([&] {
    simdjson::dom::parser p2;
    auto st = p2.parse(e.peer->control("/state").body);
    for (auto s : st["sessions"].get_array())
      if (int64_t(s["scaleSetId"]) == set && int64_t(s["polling"]) == 1)
        return true;
    return false;
  }, 15s)) << e.peer->control("/state").body;

  // Shutdown deletes the session.
  caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
  EXPECT_TRUE(eventually([&] {
    simdjson::dom::parser p3;
    for (auto s : p3.parse(e.peer->control("/state").body)["sessions"].get_array())
      if (int64_t(s["scaleSetId"]) == set)
        return false;
    return true;
  }, 10s));
  caf::anon_send_exit(prov, caf::exit_reason::user_shutdown);
}

// What a stand-in capacity monitor heard from the listener, and the capacity it answers with.
struct monitor_log {
  std::mutex m;
  int asked = 0;                  // capacity_atom questions
  std::vector<int64_t> polled;    // capacity_polled values, in order
  std::vector<int64_t> polled_copy() {
    std::lock_guard lock(m);
    return polled;
  }
};

actors::capacity_source spawn_monitor(caf::actor_system& sys, std::shared_ptr<monitor_log> log, int64_t capacity) {
  return sys.spawn(
      [](actors::capacity_source::pointer self, std::shared_ptr<monitor_log> log,
         int64_t capacity) -> actors::capacity_source::behavior_type {
        return {
            [self, log, capacity](msg::capacity_atom) {
              {
                std::lock_guard lock(log->m);
                ++log->asked;
              }
              self->send(caf::actor_cast<actors::capacity_sink>(self->current_sender()), msg::set_max_capacity{capacity});
            },
            [log](msg::capacity_polled p) {
              std::lock_guard lock(log->m);
              log->polled.push_back(p.capacity);
            },
        };
      },
      std::move(log), capacity);
}

TEST(listener_session, a_started_listener_asks_the_monitor_and_reports_each_poll) {
  REQUIRE_PEER(e);
  auto c = client_for(e, "listener-ask-org");
  const int64_t set = create_scale_set(c, "listener-ask-set");
  ASSERT_GT(set, 0);
  auto log = std::make_shared<monitor_log>();
  auto monitor = spawn_monitor(*e.sys, log, 2);
  actors::listener_options o;
  o.scale_set_id = set;
  o.owner = "headroom-test";
  o.initial_capacity = 0;  // nothing confirmed until the monitor answers
  auto l = actors::spawn_listener_session(*e.sys, c, actors::listener_peers{{}, monitor}, o);

  // The monitor's answer reaches the service: a poll carries 2, and the monitor hears of it.
  ASSERT_TRUE(eventually([&] {
    auto p = polls(e, set);
    return !p.empty() && p.back().first == 2;
  }, 10s));
  EXPECT_TRUE(eventually([&] {
    auto p = log->polled_copy();
    return !p.empty() && p.back() == 2;
  }, 5s)) << "each poll start is told back to the monitor";
  {
    std::lock_guard lock(log->m);
    EXPECT_EQ(log->asked, 1) << "asked once, at start";
  }
  // A repeat of the value the held poll carries changes nothing: no cancel, no new poll.
  const size_t before = polls(e, set).size();
  caf::anon_send(l, msg::set_max_capacity{2});
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(polls(e, set).size(), before) << "the same capacity again does not re-poll";

  caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(monitor, caf::exit_reason::user_shutdown);
}

// The propagation benchmark's storm (#18 item 1): the capacity falls to 0 and climbs back 1, 2, 3
// within a millisecond, over and over, while jobs come and go. After each burst the poll carrying
// the final value must reach the service within a round trip, never after a hold (a lost re-poll
// once waited a whole 50 s hold in the benchmark). Bursts of a second or more (the listener's 1 s
// give-up guard, or a machine too busy to run the test) are printed with the peer's last polls;
// they fail the test only at 10 s, as CI runs it beside a cluster test on two cores (the latency
// itself is capacity_propagation_bench's). HEADROOM_LISTENER_STORM_BURSTS sets the count.
TEST(listener_session, a_storm_of_capacity_changes_each_ends_in_one_poll_carrying_the_last_value) {
  REQUIRE_PEER(e);
  auto c = client_for(e, "listener-storm-org");
  const int64_t set = create_scale_set(c, "listener-storm-set");
  ASSERT_GT(set, 0);
  auto log = std::make_shared<provisioner_log>();
  auto prov = spawn_provisioner(*e.sys, log);
  actors::listener_options o;
  o.scale_set_id = set;
  o.owner = "headroom-test";
  o.initial_capacity = 3;
  auto l = actors::spawn_listener_session(*e.sys, c, actors::listener_peers{{prov}, {}}, o);
  ASSERT_TRUE(eventually([&] {
    auto p = polls(e, set);
    return !p.empty() && p.back() == std::make_pair(int64_t{3}, int64_t{0});
  }, 10s));
  int bursts = 150;
  if (const char* v = std::getenv("HEADROOM_LISTENER_STORM_BURSTS"))
    bursts = std::max(1, std::atoi(v));
  double worst = 0;
  int slow = 0;   // >= 1 s: printed
  int held = 0;   // >= 10 s: a hold, not scheduling
  for (int i = 0; i < bursts; ++i) {
    if (i % 10 == 0)  // messages, acks and acquisitions interleave with the cancels
      e.peer->control("/jobs", R"({"labels":["listener-storm-set"],"count":1})");
    const int64_t top = 3 + i % 2;  // alternate, so each burst ends on a value the last did not
    caf::anon_send(l, msg::set_max_capacity{0});
    std::this_thread::sleep_for(std::chrono::microseconds(100 * (i % 7)));
    for (int64_t v = 1; v <= top; ++v)
      caf::anon_send(l, msg::set_max_capacity{v});
    const auto t0 = std::chrono::steady_clock::now();
    const bool arrived = eventually([&] {
      auto p = polls(e, set);
      return !p.empty() && p.back() == std::make_pair(top, int64_t{0});
    }, 60s);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(arrived) << "burst " << i << ": no poll carrying " << top << " is held by the peer";
    worst = std::max(worst, took);
    if (took >= 10.0)
      ++held;
    if (took >= 1.0) {
      ++slow;
      simdjson::dom::parser parser;
      auto st = parser.parse(e.peer->control("/state").body);
      std::vector<std::string> tail;
      for (auto p : st["polls"].get_array())
        if (int64_t(p["scaleSetId"]) == set)
          tail.push_back(std::to_string(int64_t(p["capacity"])) + "/" + std::to_string(int64_t(p["status"])) + "@" +
                         std::string{std::string_view(p["at"])} + " from " + std::string{std::string_view(p["client"])});
      std::cout << "[storm] burst " << i << " took " << took << " s; the peer's last polls:\n";
      for (size_t k = tail.size() > 6 ? tail.size() - 6 : 0; k < tail.size(); ++k)
        std::cout << "  " << tail[k] << "\n";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(i % 5));
  }
  std::cout << "[storm] " << bursts << " bursts; the last value reached the peer within " << worst * 1000
            << " ms at worst; " << slow << " took 1 s or more\n";
  EXPECT_EQ(held, 0) << "bursts whose last value came only after 10 s or more (a hold)";
  // Quiet again: the held poll stays held - a re-issue never schedules another.
  std::this_thread::sleep_for(500ms);
  const size_t settled = polls(e, set).size();
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(polls(e, set).size(), settled) << "polls keep being re-issued with no capacity change";
  caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(prov, caf::exit_reason::user_shutdown);
}

// A listener killed (a crash: no session delete) leaves its session in the service; its successor
// learns of it from the session memo and adopts it, instead of meeting 409s until the service expires
// it (minutes; the chaos suite saw the burst stall 150 s) or deleting it, which lost the job
// messages queued in it (the chaos suite counted 5 job starts of 6). Here a job starts and
// completes while no listener runs: both transitions reach the successor. A session that cannot
// be adopted (expired meanwhile) is replaced at once.
TEST(listener_session, a_restarted_listener_adopts_the_session_its_crashed_predecessor_left) {
  REQUIRE_PEER(e);
  auto c = client_for(e, "listener-crash-org");
  const int64_t set = create_scale_set(c, "listener-crash-set");
  ASSERT_GT(set, 0);
  auto log = std::make_shared<monitor_log>();
  auto monitor = spawn_monitor(*e.sys, log, 1);
  auto updates = std::make_shared<provisioner_log>();
  auto prov = spawn_provisioner(*e.sys, updates);
  std::mutex jobs_m;
  std::vector<msg::job_transition> jobs;  // every transition any of the listeners handled
  actors::listener_options o;
  o.scale_set_id = set;
  o.owner = "headroom-test";
  o.job = [&](const msg::job_transition& t) {
    std::lock_guard lock(jobs_m);
    jobs.push_back(t);
  };
  auto transitions = [&](int64_t id) {
    std::lock_guard lock(jobs_m);
    std::vector<msg::job_transition::kind> out;
    for (const auto& t : jobs)
      if (t.runner_request_id == id)
        out.push_back(t.type);
    return out;
  };
  // The listener's memory across its restarts, as the wiring keeps one per scale set.
  o.memo = std::make_shared<actors::session_memo>();
  auto held = [&] { return o.memo->get(); };
  auto first = actors::spawn_listener_session(*e.sys, c, actors::listener_peers{{prov}, monitor}, o);
  auto sessions = [&] {
    simdjson::dom::parser p;
    std::vector<std::string> out;
    for (auto s : p.parse(e.peer->control("/state").body)["sessions"].get_array())
      if (int64_t(s["scaleSetId"]) == set)
        out.emplace_back(std::string_view(s["sessionId"]));
    return out;
  };
  ASSERT_TRUE(eventually([&] { return !polls(e, set).empty(); }, 10s));
  auto r = e.peer->control("/jobs", R"({"labels":["listener-crash-set"],"count":1})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser parser;
  const int64_t id = int64_t(parser.parse(r.body)["ids"].at(0));
  ASSERT_TRUE(eventually([&] { return job_state(e, id) == "acquired" && updates->last_assigned() == 1; }, 10s))
      << job_state(e, id);
  const std::string old_id = held().session_id;
  ASSERT_FALSE(old_id.empty()) << "the listener remembers which session it holds";
  ASSERT_TRUE(eventually([&] { return held().last_message_id > 0; }, 5s)) << "and the newest message it handled";
  const int64_t handled = held().last_message_id;
  ASSERT_EQ(sessions(), std::vector<std::string>{old_id});
  const auto acquires = requests(e, "acquire_jobs");

  caf::anon_send_exit(first, caf::exit_reason::kill);  // no exit handler runs: the session stays
  std::this_thread::sleep_for(200ms);
  ASSERT_EQ(sessions(), std::vector<std::string>{old_id}) << "a killed listener deletes nothing";
  EXPECT_TRUE(eventually([&] {
    simdjson::dom::parser p;
    for (auto se : p.parse(e.peer->control("/state").body)["sessions"].get_array())
      if (int64_t(se["scaleSetId"]) == set)
        return int64_t(se["polling"]) == 0;
    return false;
  }, 2s)) << "but its poll ends with it, not held beside its successor's";
  // While no listener runs, a runner takes the job and finishes it: JobStarted and JobCompleted
  // wait in the session.
  r = e.peer->control("/runners/register", R"({"scaleSetId":)" + std::to_string(set) + R"(,"name":"crash-runner","online":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  const int64_t runner = int64_t(parser.parse(r.body)["id"]);
  ASSERT_TRUE(eventually([&] { return job_state(e, id) == "running"; }, 5s)) << job_state(e, id);
  ASSERT_EQ(e.peer->control("/runners/finish", R"({"runnerId":)" + std::to_string(runner) + "}").status, 200);
  ASSERT_EQ(job_state(e, id), "completed");
  ASSERT_TRUE(transitions(id).empty()) << "nothing handled them yet";

  const size_t before = polls(e, set).size();
  auto second = actors::spawn_listener_session(*e.sys, c, actors::listener_peers{{prov}, monitor}, o);
  EXPECT_TRUE(eventually([&] { return polls(e, set).size() > before; }, 5s))
      << "the successor polls at once, not after the old session expires";
  EXPECT_EQ(sessions(), std::vector<std::string>{old_id}) << "the old session was adopted, no new one made";
  EXPECT_TRUE(eventually([&] { return transitions(id).size() == 2; }, 10s)) << "the messages queued in it are read";
  using kind = msg::job_transition::kind;
  EXPECT_EQ(transitions(id), (std::vector<kind>{kind::started, kind::completed})) << "each once";
  {
    simdjson::dom::parser p;
    int64_t first_last = -1;
    int64_t n = 0;
    for (auto q : p.parse(e.peer->control("/state").body)["polls"].get_array())
      if (int64_t(q["scaleSetId"]) == set && n++ == int64_t(before))
        first_last = int64_t(q["lastMessageId"]);
    EXPECT_EQ(first_last, handled) << "the successor goes on after the predecessor's newest message";
  }
  EXPECT_EQ(requests(e, "acquire_jobs"), acquires) << "nothing acquired twice";
  EXPECT_TRUE(eventually([&] { return held().last_message_id > handled; }, 5s)) << "the memo keeps the successor's progress";

  // Killed again, and its session expires before the next successor starts: adopting it meets a
  // 404, and a new session is opened at once.
  caf::anon_send_exit(second, caf::exit_reason::kill);
  ASSERT_EQ(e.peer->control("/expire", R"({"what":"sessions"})").status, 200);
  ASSERT_TRUE(sessions().empty());
  const size_t before3 = polls(e, set).size();
  auto third = actors::spawn_listener_session(*e.sys, c, actors::listener_peers{{prov}, monitor}, o);
  EXPECT_TRUE(eventually([&] { return polls(e, set).size() > before3; }, 5s)) << "the third listener polls at once";
  auto now = sessions();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], old_id) << "the expired session was replaced";
  caf::anon_send_exit(third, caf::exit_reason::user_shutdown);
  EXPECT_TRUE(eventually([&] { return sessions().empty(); }, 5s));
  // The monitor hears of it after the service does (the delete's answer comes first): waited for,
  // not read at once (a fresh-clone CI run read it in between).
  EXPECT_TRUE(eventually([&] { return held().session_id.empty(); }, 5s)) << "an orderly stop leaves nothing to delete";
  caf::anon_send_exit(monitor, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(prov, caf::exit_reason::user_shutdown);
}


// The ack of a message fails (503 through every retry), so the service sends the message again:
// the listener acks it once more and does not handle it twice (its jobs are acquired once, its
// started/completed transitions counted once).
TEST(listener_session, a_message_whose_ack_failed_comes_again_and_is_handled_once) {
  REQUIRE_PEER(e);
  auto c = client_for(e, "listener-reack-org");
  const int64_t set = create_scale_set(c, "listener-reack-set");
  ASSERT_GT(set, 0);
  auto log = std::make_shared<provisioner_log>();
  auto prov = spawn_provisioner(*e.sys, log);
  actors::listener_options o;
  o.scale_set_id = set;
  o.owner = "headroom-test";
  o.initial_capacity = 1;
  auto l = actors::spawn_listener_session(*e.sys, c, actors::listener_peers{{prov}, {}}, o);
  ASSERT_TRUE(eventually([&] { return !polls(e, set).empty(); }, 10s));
  const auto acks = requests(e, "delete_message"), acquires = requests(e, "acquire_jobs");
  // One more 503 than the client's retries (4): the ack fails for good.
  ASSERT_EQ(e.peer->control("/faults", R"([{"route":"delete_message","status":503,"count":5}])").status, 200);
  auto r = e.peer->control("/jobs", R"({"labels":["listener-reack-set"],"count":1})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser parser;
  const int64_t id = int64_t(parser.parse(r.body)["ids"].at(0));
  ASSERT_TRUE(eventually([&] { return job_state(e, id) == "acquired"; }, 10s)) << job_state(e, id);
  // The redelivered message is acked (the 6th delete) and not acquired again.
  ASSERT_TRUE(eventually([&] { return requests(e, "delete_message") - acks >= 6; }, 10s))
      << "deletes: " << requests(e, "delete_message") - acks;
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(requests(e, "acquire_jobs") - acquires, 1) << "the message's jobs were acquired once";
  caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(prov, caf::exit_reason::user_shutdown);
}

// The acquire of a message's jobs fails (503 through every retry): the message is not acked, so
// it is read and handled again after the listener's backoff, and its job acquired then - not left
// for the service to re-offer after its run timeout. Acked once, acquired once it succeeds.
TEST(listener_session, a_message_whose_acquire_failed_is_handled_again) {
  REQUIRE_PEER(e);
  auto c = client_for(e, "listener-reacquire-org");
  const int64_t set = create_scale_set(c, "listener-reacquire-set");
  ASSERT_GT(set, 0);
  actors::listener_options o;
  o.scale_set_id = set;
  o.owner = "headroom-test";
  o.initial_capacity = 1;
  o.backoff_initial = 200ms;
  auto l = actors::spawn_listener_session(*e.sys, c, actors::listener_peers{{}, {}}, o);
  ASSERT_TRUE(eventually([&] { return !polls(e, set).empty(); }, 10s));
  const auto acks = requests(e, "delete_message"), acquires = requests(e, "acquire_jobs");
  // One more 503 than the client's retries (4): the first acquire fails for good.
  ASSERT_EQ(e.peer->control("/faults", R"([{"route":"acquire_jobs","status":503,"count":5}])").status, 200);
  auto r = e.peer->control("/jobs", R"({"labels":["listener-reacquire-set"],"count":1})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser parser;
  const int64_t id = int64_t(parser.parse(r.body)["ids"].at(0));
  ASSERT_TRUE(eventually([&] { return job_state(e, id) == "acquired"; }, 10s)) << job_state(e, id);
  EXPECT_EQ(requests(e, "acquire_jobs") - acquires, 6) << "5 refused (one call and its 4 retries), then the second call";
  // Its JobAvailable message acked once, after the acquire; then the JobAssigned one.
  EXPECT_TRUE(eventually([&] { return requests(e, "delete_message") - acks == 2; }, 5s))
      << "deletes: " << requests(e, "delete_message") - acks;
  caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace headroom
