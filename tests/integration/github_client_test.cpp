// github_*: headroom's Actions Service and HUD clients against the Actions Service test peer
// (tests/peers/actions-service, which the real scaleset library's conformance test vouches for):
// the whole chain, every fault knob, a poll cancelled mid-flight and re-issued with a lower
// capacity, and no secret in any log line or error.

#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <set>
#include <future>
#include <mutex>
#include <thread>

#include "adapters/github/actions_client.hpp"
#include "testenv/transport_options.hpp"
#include "adapters/github/rest_client.hpp"
#include "adapters/hud/client.hpp"
#include "testenv/actions_peer.hpp"
#include "runtime/log.hpp"
#include "runtime/secrets.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/shared_env.hpp"

namespace headroom {
namespace {

using namespace std::chrono_literals;
using github::actions_error;
using K = github::actions_error::kind;

constexpr std::string_view kPat = "ghp_headroomTestPersonalAccessToken0001";
constexpr std::string_view kHudToken = "hud-bot-secret-for-headroom-tests";

struct peer_env {
  std::unique_ptr<testpeer::actions_peer> peer;
  std::string private_key, public_key;
  std::unique_ptr<http::transport> io;
  std::string why;
};

std::mutex log_mu;
std::vector<std::string>& captured() {
  static std::vector<std::string> lines;
  return lines;
}

peer_env make_env() {
  peer_env out;
  runtime::logger::global().set_level(runtime::log_level::debug);
  runtime::logger::global().set_sink([](std::string_view line) {
    std::lock_guard lock(log_mu);
    captured().emplace_back(line);
  });
  std::tie(out.private_key, out.public_key) = testpeer::make_app_key();
  testpeer::actions_peer::options opts;
  opts.app_public_key_pem = out.public_key;
  opts.pat = std::string{kPat};
  opts.hud_token = std::string{kHudToken};
  out.peer = testpeer::actions_peer::start(opts, out.why);
  out.io = std::make_unique<http::transport>(headroom::testenv::real_time_transport());
  return out;
}

void stop_env(peer_env& e) {
  e.io.reset();
  e.peer.reset();
}

testenv::shared_env<peer_env> the_env{make_env, stop_env};
peer_env& env() { return the_env.get(); }

#define REQUIRE_PEER(var) \
  auto& var = env(); \
  HEADROOM_REQUIRE_READY(var.peer, "the Actions Service peer", var.why)

// Every secret-shaped thing the peer hands out, and the ones the test owns.
void expect_no_secret(std::string_view text, std::string_view where) {
  const auto& e = env();
  std::vector<std::string> needles = {std::string{kPat}, std::string{kHudToken}, "ghs_", "AAREG", "mq-",
                                      "eyJhbGciOiJIUzI1NiIs", "eyJydW5uZXJJZCI6", "PRIVATE KEY"};
  // Each base64 line of the App's private key.
  std::string_view key = e.private_key;
  while (!key.empty()) {
    const auto nl = key.find('\n');
    const auto line = key.substr(0, nl);
    if (line.size() > 40 && line.find("-----") == std::string_view::npos)
      needles.emplace_back(line);
    if (nl == std::string_view::npos)
      break;
    key.remove_prefix(nl + 1);
  }
  for (const auto& n : needles)
    EXPECT_EQ(text.find(n), std::string_view::npos) << where << " contains a secret (" << n.substr(0, 8)
                                                    << "…): " << text;
}

template <class T>
struct waiter {
  std::shared_ptr<std::promise<github::actions_result<T>>> p = std::make_shared<std::promise<github::actions_result<T>>>();
  std::function<void(github::actions_result<T>)> callback() {
    return [p = p](github::actions_result<T> r) { p->set_value(std::move(r)); };
  }
  github::actions_result<T> get(std::chrono::seconds limit = 90s) {
    auto f = p->get_future();
    if (f.wait_for(limit) != std::future_status::ready)
      return actions_error{K::unexpected, "test", 0, "", "no answer within the test's limit"};
    auto r = f.get();
    if (auto* e = std::get_if<actions_error>(&r))
      expect_no_secret(e->describe(), "an error");
    return r;
  }
};

// Runs one client call to completion: sync<T>([&](auto cb) { client->op(…, cb); }).
template <class T, class Start>
github::actions_result<T> sync(Start&& start) {
  waiter<T> w;
  start(w.callback());
  return w.get();
}

template <class T>
const T& ok(const github::actions_result<T>& r) {
  if (auto* e = std::get_if<actions_error>(&r)) {
    ADD_FAILURE() << "unexpected error: " << e->describe() << " [" << github::to_string(e->what) << "]";
    static T empty{};
    return empty;
  }
  return std::get<T>(r);
}

template <class T>
K error_kind(const github::actions_result<T>& r) {
  if (auto* e = std::get_if<actions_error>(&r))
    return e->what;
  ADD_FAILURE() << "expected an error, got success";
  return K::unexpected;
}

github::actions_options fast_options() {
  github::actions_options o;
  o.retry_base = 20ms;
  o.retry_max = 200ms;
  o.session_conflict_backoff = 100ms;
  o.session_conflict_retries = 2;
  return o;
}

std::shared_ptr<github::actions_client> app_client(const std::string& org, github::actions_options o = fast_options()) {
  auto& e = env();
  auto where = std::get<github::config_url>(github::parse_config_url(e.peer->http_url() + "/" + org));
  github::credentials creds;
  creds.app_id = "12345";
  creds.installation_id = 42;
  creds.private_key_pem = e.private_key;
  return github::actions_client::make(where, creds, *e.io, std::move(o));
}

// The peer's state, parsed.
struct peer_state {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  explicit peer_state(const testpeer::actions_peer& p) {
    auto r = p.control("/state");
    EXPECT_EQ(r.status, 200) << r.body;
    root = parser.parse(r.body);
  }
  std::string job_state(int64_t id) {
    for (auto j : root["jobs"].get_array())
      if (int64_t(j["runnerRequestId"]) == id)
        return std::string{std::string_view(j["state"])};
    return "absent";
  }
  int64_t requests(std::string_view route) {
    auto v = root["requests"][route];
    return v.error() ? 0 : int64_t(v.value());
  }
};

std::vector<int64_t> enqueue(const testpeer::actions_peer& p, std::string_view label, int count) {
  auto r = p.control("/jobs", "{\"labels\":[\"" + std::string{label} + "\"],\"count\":" + std::to_string(count) + "}");
  EXPECT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser parser;
  std::vector<int64_t> ids;
  for (auto id : parser.parse(r.body)["ids"].get_array())
    ids.push_back(int64_t(id));
  return ids;
}

void arm(const testpeer::actions_peer& p, std::string_view faults_json) {
  auto r = p.control("/faults", faults_json);
  ASSERT_EQ(r.status, 200) << r.body;
}

github::runner_scale_set make_set(const std::shared_ptr<github::actions_client>& c, const std::string& name) {
  auto group = sync<std::optional<github::runner_group>>([&](auto cb) { c->get_runner_group("default", cb); });
  const auto& g = ok(group);
  EXPECT_TRUE(g.has_value());
  github::runner_scale_set want;
  want.name = name;
  want.runner_group_id = g ? g->id : 1;
  want.labels = {{"System", name}, {"System", "linux"}};
  auto created = sync<github::runner_scale_set>([&](auto cb) { c->create_scale_set(want, cb); });
  return ok(created);
}

github::session_ptr open_session(const std::shared_ptr<github::actions_client>& c, int64_t set_id) {
  auto s = sync<github::session_ptr>([&](auto cb) { c->create_session(set_id, "headroom-test", cb); });
  return ok(s);
}

// Polls until a message arrives (the peer holds a poll 50 s when there is nothing to say).
github::session_message next_message(const std::shared_ptr<github::actions_client>& c, const github::session_ptr& s,
                                     int64_t last, int64_t capacity) {
  for (int i = 0; i < 5; ++i) {
    auto m = sync<std::optional<github::session_message>>(
        [&](auto cb) { c->get_message(s, last, capacity, cb); });
    const auto& msg = ok(m);
    if (msg)
      return *msg;
  }
  ADD_FAILURE() << "no message after 5 polls";
  return {};
}

TEST(github, app_auth_chain_and_scale_sets) {
  REQUIRE_PEER(e);
  auto c = app_client("chain-org");
  auto set = make_set(c, "chain-set");
  ASSERT_GT(set.id, 0);
  EXPECT_EQ(set.labels.size(), 2u);
  EXPECT_EQ(set.runner_group_name, "default");

  auto by_name = sync<std::optional<github::runner_scale_set>>([&](auto cb) { c->get_scale_set(1, "chain-set", cb); });
  ASSERT_TRUE(ok(by_name).has_value());
  EXPECT_EQ(ok(by_name)->id, set.id);
  auto missing = sync<std::optional<github::runner_scale_set>>([&](auto cb) { c->get_scale_set(1, "nope", cb); });
  EXPECT_FALSE(ok(missing).has_value());

  auto update = set;
  update.labels.push_back({"System", "gpu"});
  update.disable_update = true;
  auto updated = sync<github::runner_scale_set>([&](auto cb) { c->update_scale_set(set.id, update, cb); });
  EXPECT_EQ(ok(updated).labels.size(), 3u);
  EXPECT_TRUE(ok(updated).disable_update);
  auto by_id = sync<github::runner_scale_set>([&](auto cb) { c->get_scale_set_by_id(set.id, cb); });
  EXPECT_EQ(ok(by_id).name, "chain-set");

  EXPECT_EQ(c->admin_refreshes(), 1u) << "one chain (JWT → installation → registration → admin) serves every call";
  auto gone = sync<github::done>([&](auto cb) { c->delete_scale_set(set.id, cb); });
  ok(gone);
  auto after = sync<github::runner_scale_set>([&](auto cb) { c->get_scale_set_by_id(set.id, cb); });
  EXPECT_EQ(error_kind(after), K::not_found);

  peer_state st(*e.peer);
  EXPECT_EQ(st.requests("access_token"), 1);
}

TEST(github, pat_over_https_with_custom_ca) {
  REQUIRE_PEER(e);
  auto where = std::get<github::config_url>(github::parse_config_url(e.peer->https_url() + "/enterprises/acme"));
  github::credentials pat;
  pat.personal_access_token = std::string{kPat};
  auto o = fast_options();
  o.ca_pem = e.peer->ca_pem();
  auto c = github::actions_client::make(where, pat, *e.io, o);
  auto g = sync<std::optional<github::runner_group>>([&](auto cb) { c->get_runner_group("default", cb); });
  ASSERT_TRUE(ok(g).has_value());

  // Verification is on: without the peer's CA the system store does not trust it.
  auto untrusting = github::actions_client::make(where, pat, *e.io, fast_options());
  auto refused = sync<std::optional<github::runner_group>>([&](auto cb) { untrusting->get_runner_group("default", cb); });
  ASSERT_EQ(error_kind(refused), K::transport);
  EXPECT_NE(std::get<actions_error>(refused).message.find("certificate"), std::string::npos)
      << std::get<actions_error>(refused).describe();

  github::credentials wrong;
  wrong.personal_access_token = "ghp_notTheRightToken000000";
  auto denied = github::actions_client::make(where, wrong, *e.io, o);
  auto r = sync<std::optional<github::runner_group>>([&](auto cb) { denied->get_runner_group("default", cb); });
  EXPECT_EQ(error_kind(r), K::unauthorized);
}

TEST(github, session_poll_ack_acquire_and_runner_lifecycle) {
  REQUIRE_PEER(e);
  auto c = app_client("flow-org");
  auto set = make_set(c, "flow-set");
  auto s = open_session(c, set.id);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->get().scale_set_id, set.id);
  // Tokens the service hands out are secrets from the moment they are decoded: a careless log
  // line carrying one is masked (zz_no_secret_in_any_log_line checks every captured line).
  runtime::log::info("test", "careless line", {{"token", s->get().message_queue_access_token}});

  auto ids = enqueue(*e.peer, "flow-set", 3);
  auto m = next_message(c, s, 0, 2);
  ASSERT_EQ(m.jobs.size(), 2u) << "capacity 2: two of three jobs offered";
  std::vector<int64_t> offered;
  for (const auto& j : m.jobs) {
    EXPECT_EQ(j.type, github::job_message::available);
    EXPECT_EQ(j.request_labels, std::vector<std::string>{"flow-set"});
    offered.push_back(j.runner_request_id);
  }
  EXPECT_EQ(m.stats.total_available_jobs, 1) << "the third job still waits";

  // Unacknowledged messages are redelivered.
  auto again = next_message(c, s, 0, 2);
  EXPECT_EQ(again.message_id, m.message_id);
  ok(sync<github::done>([&](auto cb) { c->delete_message(s, m.message_id, cb); }));
  auto acquired = sync<std::vector<int64_t>>([&](auto cb) { c->acquire_jobs(s, offered, cb); });
  EXPECT_EQ(ok(acquired), offered);

  auto assigned = next_message(c, s, m.message_id, 2);
  ASSERT_EQ(assigned.jobs.size(), 2u);
  EXPECT_EQ(assigned.jobs[0].type, github::job_message::assigned);
  EXPECT_EQ(assigned.stats.total_assigned_jobs, 2);
  ok(sync<github::done>([&](auto cb) { c->delete_message(s, assigned.message_id, cb); }));

  auto jit = sync<github::jit_config>([&](auto cb) { c->generate_jit_config(set.id, "flow-runner-1", "_work", cb); });
  ASSERT_FALSE(ok(jit).encoded_jit_config.empty());
  runtime::log::info("test", "careless line", {{"jit", ok(jit).encoded_jit_config}});
  EXPECT_EQ(ok(jit).runner.scale_set_id, set.id);
  auto connected = e.peer->control("/runners/connect", "{\"jitConfig\":\"" + ok(jit).encoded_jit_config + "\"}");
  ASSERT_EQ(connected.status, 200) << connected.body;

  auto started = next_message(c, s, assigned.message_id, 2);
  ASSERT_EQ(started.jobs.size(), 1u);
  EXPECT_EQ(started.jobs[0].type, github::job_message::started);
  EXPECT_EQ(started.jobs[0].runner_name, "flow-runner-1");
  EXPECT_EQ(started.stats.total_running_jobs, 1);
  ok(sync<github::done>([&](auto cb) { c->delete_message(s, started.message_id, cb); }));

  auto busy = sync<github::done>([&](auto cb) { c->remove_runner(ok(jit).runner.id, cb); });
  EXPECT_EQ(error_kind(busy), K::job_still_running);

  auto fin = e.peer->control("/runners/finish", "{\"runnerId\":" + std::to_string(ok(jit).runner.id) + "}");
  ASSERT_EQ(fin.status, 200) << fin.body;
  auto completed = next_message(c, s, started.message_id, 2);
  bool saw_completed = false;
  for (const auto& j : completed.jobs)
    if (j.type == github::job_message::completed) {
      saw_completed = true;
      EXPECT_EQ(j.result, "succeeded");
    }
  EXPECT_TRUE(saw_completed);
  ok(sync<github::done>([&](auto cb) { c->delete_message(s, completed.message_id, cb); }));

  ok(sync<github::done>([&](auto cb) { c->delete_session(s, cb); }));
  auto after = sync<github::done>([&](auto cb) { c->refresh_session(s, cb); });
  EXPECT_EQ(error_kind(after), K::session_not_found);
  peer_state st(*e.peer);
  EXPECT_NE(st.job_state(ids[0]), "absent");
}

TEST(github, poll_cancelled_mid_flight_and_reissued_with_lower_capacity) {
  REQUIRE_PEER(e);
  auto c = app_client("cancel-org");
  auto set = make_set(c, "cancel-set");
  auto s = open_session(c, set.id);

  waiter<std::optional<github::session_message>> first;
  auto poll = c->get_message(s, 0, 5, first.callback());
  auto polls_with = [&](int64_t capacity, std::string_view status_filter) {
    peer_state st(*e.peer);
    int n = 0;
    for (auto p : st.root["polls"].get_array()) {
      if (int64_t(p["scaleSetId"]) != set.id || int64_t(p["capacity"]) != capacity)
        continue;
      const int64_t status = int64_t(p["status"]);
      if (status_filter == "any" || (status_filter == "open" && status == 0) ||
          (status_filter == "cancelled" && status == 499))
        ++n;
    }
    return n;
  };
  ASSERT_TRUE(testenv::eventually([&] { return polls_with(5, "open") == 1; }, 10s)) << "the poll never reached the peer";

  const auto t0 = std::chrono::steady_clock::now();
  poll->cancel();
  auto cancelled = first.get(10s);
  EXPECT_EQ(error_kind(cancelled), K::cancelled);
  waiter<std::optional<github::session_message>> second;
  auto poll2 = c->get_message(s, 0, 1, second.callback());
  ASSERT_TRUE(testenv::eventually([&] { return polls_with(1, "any") == 1; }, 10s));
  const auto seen_after = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(seen_after, 2s) << "the peer must see the new capacity within one round trip, not after the 50 s hold";
  EXPECT_TRUE(testenv::eventually([&] { return polls_with(5, "cancelled") == 1; }, 10s))
      << "the peer saw the first poll end when the client cancelled it";

  // The new, lower capacity governs: three queued jobs, one offered.
  enqueue(*e.peer, "cancel-set", 3);
  auto m = second.get();
  ASSERT_TRUE(ok(m).has_value());
  EXPECT_EQ(ok(m)->jobs.size(), 1u);
  EXPECT_EQ(ok(m)->stats.total_available_jobs, 2);
  ok(sync<github::done>([&](auto cb) { c->delete_session(s, cb); }));
}

// The listener's storm (#18 item 1): capacity moving every few ms, each change cancelling the poll
// in flight and issuing the next one with the new value as soon as the cancel is answered. Every
// poll must reach the peer within a round trip - once in ~1,000 rises of the propagation
// benchmark a re-poll reached it only a full 50 s hold later. Every cancel is answered, every poll
// the peer saw ended there (none is left held), and the last one (never cancelled) arrives at
// once. HEADROOM_POLL_STORM_CYCLES sets the count.
TEST(github, a_storm_of_cancelled_polls_each_reaches_the_peer_and_ends_there) {
  REQUIRE_PEER(e);
  auto c = app_client("storm-org");
  auto set = make_set(c, "storm-set");
  auto s = open_session(c, set.id);
  int cycles = 600;
  if (const char* v = std::getenv("HEADROOM_POLL_STORM_CYCLES"))
    cycles = std::max(1, std::atoi(v));
  // Cancel delays, in µs: before the request can be sent, while it is sent, after it arrived.
  const int delays_us[] = {0, 50, 200, 500, 1000, 2000, 5000, 20000, 30000};
  int lost_cancels = 0;
  for (int i = 1; i <= cycles; ++i) {
    waiter<std::optional<github::session_message>> w;
    auto poll = c->get_message(s, 0, i, w.callback());
    const int d = delays_us[i % std::size(delays_us)];
    if (d > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(d));
    poll->cancel();
    auto r = w.get(5s);
    if (auto* err = std::get_if<actions_error>(&r); err && err->what == K::unexpected)
      ++lost_cancels;  // no answer to the cancel within 5 s
  }
  EXPECT_EQ(lost_cancels, 0) << "cancels answered only after the hold";
  const int64_t last = cycles + 1;
  waiter<std::optional<github::session_message>> final_poll;
  const auto t0 = std::chrono::steady_clock::now();
  auto poll = c->get_message(s, 0, last, final_poll.callback());
  auto arrived = [&](int64_t capacity) {
    peer_state st(*e.peer);
    for (auto p : st.root["polls"].get_array())
      if (int64_t(p["scaleSetId"]) == set.id && int64_t(p["capacity"]) == capacity)
        return true;
    return false;
  };
  ASSERT_TRUE(testenv::eventually([&] { return arrived(last); }, 10s)) << "the poll after the storm never reached the peer";
  const double arrival_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(arrival_s, 2.0) << "the poll after the storm reached the peer " << arrival_s << " s after it was issued";
  // Each poll the peer saw ended there (cancelled: 499) - none is still held but the last.
  ASSERT_TRUE(testenv::eventually([&] {
    peer_state st(*e.peer);
    int open = 0;
    for (auto p : st.root["polls"].get_array())
      if (int64_t(p["scaleSetId"]) == set.id && int64_t(p["status"]) == 0)
        ++open;
    return open == 1;
  }, 10s)) << "a cancelled poll is still held at the peer";
  peer_state st(*e.peer);
  std::set<int64_t> seen;
  for (auto p : st.root["polls"].get_array())
    if (int64_t(p["scaleSetId"]) == set.id)
      seen.insert(int64_t(p["capacity"]));
  std::cout << "[storm] " << cycles << " cancelled polls, " << seen.size() << " reached the peer; the next arrived "
            << arrival_s * 1000 << " ms after it was issued\n";
  poll->cancel();
  (void)final_poll.get(10s);
  ok(sync<github::done>([&](auto cb) { c->delete_session(s, cb); }));
}

// A poll held by the service, cancelled, and the next one issued at once: the next one must reach
// the service within a round trip each time. A connection whose request was cancelled mid-response
// must never carry the next request: the service still holds the old poll on it and would read the
// new one only when that hold ends (seen in capacity_propagation_bench: a drop to 0 reached the
// peer 49,990 ms late, after a cancel of a poll held for half a second).
TEST(github, a_poll_cancelled_while_held_leaves_its_connection_to_no_one) {
  REQUIRE_PEER(e);
  auto c = app_client("held-org");
  auto set = make_set(c, "held-set");
  auto s = open_session(c, set.id);
  auto open_with = [&](int64_t capacity) {
    peer_state st(*e.peer);
    for (auto p : st.root["polls"].get_array())
      if (int64_t(p["scaleSetId"]) == set.id && int64_t(p["capacity"]) == capacity && int64_t(p["status"]) == 0)
        return true;
    return false;
  };
  waiter<std::optional<github::session_message>> w;
  auto poll = c->get_message(s, 0, 1, w.callback());
  double worst = 0;
  for (int i = 2; i <= 30; ++i) {
    ASSERT_TRUE(testenv::eventually([&] { return open_with(i - 1); }, 60s)) << "poll " << i - 1 << " never held by the peer";
    poll->cancel();
    (void)w.get(5s);
    w = {};
    const auto t0 = std::chrono::steady_clock::now();
    poll = c->get_message(s, 0, i, w.callback());
    ASSERT_TRUE(testenv::eventually([&] { return open_with(i); }, 60s));
    worst = std::max(worst, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  EXPECT_LT(worst, 2.0) << "a poll issued after a held one was cancelled reached the peer " << worst << " s later";
  std::cout << "[held] 29 polls cancelled while held; the next reached the peer within " << worst * 1000 << " ms at worst\n";
  poll->cancel();
  (void)w.get(10s);
  ok(sync<github::done>([&](auto cb) { c->delete_session(s, cb); }));
}

TEST(github, scale_sets_sharing_labels_split_jobs_by_capacity) {
  REQUIRE_PEER(e);
  auto c = app_client("shared-org");
  github::runner_scale_set a, b;
  for (auto* set : {&a, &b}) {
    set->name = set == &a ? "cluster-a" : "cluster-b";
    set->runner_group_id = 1;
    set->labels = {{"System", "shared-gpu"}};
    *set = ok(sync<github::runner_scale_set>([&](auto cb) { c->create_scale_set(*set, cb); }));
  }
  auto sa = open_session(c, a.id);
  auto sb = open_session(c, b.id);
  // Both advertise before the jobs arrive: a holds 1, b holds 2; the fourth job waits.
  waiter<std::optional<github::session_message>> wa, wb;
  c->get_message(sa, 0, 1, wa.callback());
  c->get_message(sb, 0, 2, wb.callback());
  ASSERT_TRUE(testenv::eventually([&] {
    peer_state st(*e.peer);
    int open = 0;
    for (auto p : st.root["polls"].get_array())
      open += int64_t(p["status"]) == 0 && (int64_t(p["scaleSetId"]) == a.id || int64_t(p["scaleSetId"]) == b.id);
    return open == 2;
  }, 10s));
  auto ids = enqueue(*e.peer, "shared-gpu", 4);
  auto ma = wa.get();
  auto mb = wb.get();
  ASSERT_TRUE(ok(ma).has_value());
  ASSERT_TRUE(ok(mb).has_value());
  EXPECT_EQ(ok(ma)->jobs.size(), 1u);
  EXPECT_EQ(ok(mb)->jobs.size(), 2u);
  EXPECT_EQ(ok(mb)->stats.total_available_jobs, 1) << "the fourth job waits for capacity somewhere";
  peer_state st(*e.peer);
  EXPECT_EQ(st.job_state(ids[3]), "queued");
  ok(sync<github::done>([&](auto cb) { c->delete_session(sa, cb); }));
  ok(sync<github::done>([&](auto cb) { c->delete_session(sb, cb); }));
}

TEST(github, server_errors_are_retried_then_surfaced) {
  REQUIRE_PEER(e);
  auto c = app_client("retry-org");
  auto set = make_set(c, "retry-set");
  peer_state before(*e.peer);
  arm(*e.peer, R"([{"route":"scale_set","status":503,"count":2}])");
  auto got = sync<github::runner_scale_set>([&](auto cb) { c->get_scale_set_by_id(set.id, cb); });
  EXPECT_EQ(ok(got).id, set.id) << "two 503s are retried";
  peer_state after(*e.peer);
  EXPECT_EQ(after.requests("scale_set") - before.requests("scale_set"), 3);

  arm(*e.peer, R"([{"route":"scale_set","status":500,"count":5}])");  // max_retries 4 → 5 attempts
  auto failed = sync<github::runner_scale_set>([&](auto cb) { c->get_scale_set_by_id(set.id, cb); });
  EXPECT_EQ(error_kind(failed), K::server);
  EXPECT_NE(std::get<actions_error>(failed).describe().find("get scale set"), std::string::npos);
}

TEST(github, expired_queue_token_refreshes_the_session) {
  REQUIRE_PEER(e);
  auto c = app_client("token-org");
  auto set = make_set(c, "token-set");
  auto s = open_session(c, set.id);
  const auto token_before = s->get().message_queue_access_token;
  ASSERT_EQ(e.peer->control("/expire", R"({"what":"queue_tokens"})").status, 200);
  enqueue(*e.peer, "token-set", 1);
  auto m = next_message(c, s, 0, 1);
  EXPECT_EQ(m.jobs.size(), 1u);
  EXPECT_NE(s->get().message_queue_access_token, token_before) << "the session was refreshed in place";
  peer_state st(*e.peer);
  EXPECT_GE(st.requests("refresh_session"), 1);

  // Acquire with an expired token: refreshed too.
  ASSERT_EQ(e.peer->control("/expire", R"({"what":"queue_tokens"})").status, 200);
  auto acquired = sync<std::vector<int64_t>>([&](auto cb) { c->acquire_jobs(s, {m.jobs[0].runner_request_id}, cb); });
  EXPECT_EQ(ok(acquired).size(), 1u);
  ok(sync<github::done>([&](auto cb) { c->delete_session(s, cb); }));
}

TEST(github, revoked_admin_token_reruns_the_chain) {
  REQUIRE_PEER(e);
  auto c = app_client("admin-org");
  auto set = make_set(c, "admin-set");
  EXPECT_EQ(c->admin_refreshes(), 1u);
  ASSERT_EQ(e.peer->control("/expire", R"({"what":"admin_tokens"})").status, 200);
  auto got = sync<github::runner_scale_set>([&](auto cb) { c->get_scale_set_by_id(set.id, cb); });
  EXPECT_EQ(ok(got).id, set.id);
  EXPECT_EQ(c->admin_refreshes(), 2u) << "a 401 on the admin token runs the chain once more";

  // An admin token near its exp is refreshed before use (no 401 needed).
  ASSERT_EQ(e.peer->control("/settings", R"({"adminTokenTtlMs":61000})").status, 200);
  auto c2 = app_client("admin-org");
  ok(sync<github::runner_scale_set>([&](auto cb) { c2->get_scale_set_by_id(set.id, cb); }));
  std::this_thread::sleep_for(1100ms);
  ok(sync<github::runner_scale_set>([&](auto cb) { c2->get_scale_set_by_id(set.id, cb); }));
  EXPECT_EQ(c2->admin_refreshes(), 2u);
  ASSERT_EQ(e.peer->control("/settings", R"({"adminTokenTtlMs":3600000})").status, 200);
}

TEST(github, session_conflict_is_retried_a_bounded_number_of_times) {
  REQUIRE_PEER(e);
  auto c = app_client("conflict-org");
  auto set = make_set(c, "conflict-set");
  auto holder = open_session(c, set.id);
  peer_state before(*e.peer);
  auto second = sync<github::session_ptr>([&](auto cb) { c->create_session(set.id, "another-host", cb); });
  EXPECT_EQ(error_kind(second), K::session_conflict);
  peer_state after(*e.peer);
  EXPECT_EQ(after.requests("create_session") - before.requests("create_session"), 3) << "1 try + 2 retries";
  {
    std::lock_guard lock(log_mu);
    int warnings = 0;
    for (const auto& line : captured())
      warnings += line.find("another listener holds this scale set's session") != std::string::npos;
    EXPECT_GE(warnings, 2) << "each retry is logged clearly";
  }
  // The holder goes away during the retries: the next attempt succeeds.
  auto o = fast_options();
  o.session_conflict_backoff = 300ms;
  o.session_conflict_retries = 5;
  auto patient = app_client("conflict-org", o);
  waiter<github::session_ptr> w;
  patient->create_session(set.id, "patient-host", w.callback());
  std::this_thread::sleep_for(100ms);
  ok(sync<github::done>([&](auto cb) { c->delete_session(holder, cb); }));
  auto got = w.get();
  ASSERT_TRUE(ok(got));
  EXPECT_EQ(ok(got)->get().owner_name, "patient-host");
  ok(sync<github::done>([&](auto cb) { patient->delete_session(ok(got), cb); }));

  // A 409 armed as a fault carries the service's exception type.
  arm(*e.peer, R"([{"route":"create_session","status":409,"count":3}])");
  auto faulted = sync<github::session_ptr>([&](auto cb) { c->create_session(set.id, "h", cb); });
  EXPECT_EQ(error_kind(faulted), K::session_conflict);
}

TEST(github, unknown_session_is_its_own_error) {
  REQUIRE_PEER(e);
  auto c = app_client("lost-org");
  auto set = make_set(c, "lost-set");
  auto s = open_session(c, set.id);
  ASSERT_EQ(e.peer->control("/expire", R"({"what":"sessions"})").status, 200);
  auto refreshed = sync<github::done>([&](auto cb) { c->refresh_session(s, cb); });
  EXPECT_EQ(error_kind(refreshed), K::session_not_found);
  auto polled = sync<std::optional<github::session_message>>([&](auto cb) { c->get_message(s, 0, 1, cb); });
  EXPECT_EQ(error_kind(polled), K::session_not_found);
  // A new session then works.
  auto fresh = open_session(c, set.id);
  ASSERT_TRUE(fresh);
  arm(*e.peer, R"([{"route":"refresh_session","status":404}])");
  auto faulted = sync<github::done>([&](auto cb) { c->refresh_session(fresh, cb); });
  EXPECT_EQ(error_kind(faulted), K::session_not_found);
  ok(sync<github::done>([&](auto cb) { c->delete_session(fresh, cb); }));
}

TEST(github, slow_responses_time_out_and_are_retried) {
  REQUIRE_PEER(e);
  auto o = fast_options();
  o.request_timeout = 300ms;
  auto c = app_client("slow-org", o);
  auto set = make_set(c, "slow-set");
  arm(*e.peer, R"([{"route":"scale_set","delayMs":1500,"count":1}])");
  const auto t0 = std::chrono::steady_clock::now();
  auto got = sync<github::runner_scale_set>([&](auto cb) { c->get_scale_set_by_id(set.id, cb); });
  EXPECT_EQ(ok(got).id, set.id);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms) << "the slow attempt was abandoned at its timeout";
}

TEST(github, malformed_bodies_and_byte_order_marks) {
  REQUIRE_PEER(e);
  auto c = app_client("bad-org");
  auto set = make_set(c, "bad-set");
  auto s = open_session(c, set.id);
  enqueue(*e.peer, "bad-set", 1);
  arm(*e.peer, R"([{"route":"get_message","malformed":true}])");
  auto bad = sync<std::optional<github::session_message>>([&](auto cb) { c->get_message(s, 0, 1, cb); });
  ASSERT_EQ(error_kind(bad), K::bad_response);
  EXPECT_NE(std::get<actions_error>(bad).message.find("message"), std::string::npos)
      << std::get<actions_error>(bad).describe();
  // The client keeps going: the next poll returns the real message, with a BOM this time.
  arm(*e.peer, R"([{"route":"get_message","bom":true}])");
  auto m = next_message(c, s, 0, 1);
  EXPECT_EQ(m.jobs.size(), 1u);
  arm(*e.peer, R"([{"route":"scale_set","bom":true}])");
  auto got = sync<github::runner_scale_set>([&](auto cb) { c->get_scale_set_by_id(set.id, cb); });
  EXPECT_EQ(ok(got).id, set.id);
  arm(*e.peer, R"([{"route":"get_message","status":400}])");
  auto capacity_error = sync<std::optional<github::session_message>>([&](auto cb) { c->get_message(s, 0, 1, cb); });
  EXPECT_EQ(error_kind(capacity_error), K::bad_request);
  ok(sync<github::done>([&](auto cb) { c->delete_session(s, cb); }));
}

TEST(github, runner_errors_are_distinct) {
  REQUIRE_PEER(e);
  auto c = app_client("runner-org");
  auto set = make_set(c, "runner-set");
  auto jit = sync<github::jit_config>([&](auto cb) { c->generate_jit_config(set.id, "dup-runner", "_work", cb); });
  ok(jit);
  auto dup = sync<github::jit_config>([&](auto cb) { c->generate_jit_config(set.id, "dup-runner", "_work", cb); });
  EXPECT_EQ(error_kind(dup), K::runner_exists);
  auto by_name = sync<std::optional<github::runner_ref>>([&](auto cb) { c->get_runner_by_name("dup-runner", cb); });
  ASSERT_TRUE(ok(by_name).has_value());
  EXPECT_EQ(ok(by_name)->id, ok(jit).runner.id);
  auto none = sync<std::optional<github::runner_ref>>([&](auto cb) { c->get_runner_by_name("nobody", cb); });
  EXPECT_FALSE(ok(none).has_value());
  auto missing = sync<github::runner_ref>([&](auto cb) { c->get_runner(987654321, cb); });
  EXPECT_EQ(error_kind(missing), K::runner_not_found);
  ok(sync<github::done>([&](auto cb) { c->remove_runner(ok(jit).runner.id, cb); }));
  auto again = sync<github::done>([&](auto cb) { c->remove_runner(ok(jit).runner.id, cb); });
  EXPECT_EQ(error_kind(again), K::runner_not_found);
}

// The pool's runner list is one request for every caller that asks while it is in flight, and
// its answer serves callers for runner_list_reuse after; a runner registered later is in the list
// once the answer is older than that.
TEST(github, list_runners_is_shared_by_concurrent_callers_and_reused_while_fresh) {
  REQUIRE_PEER(e);
  auto o = fast_options();
  o.runner_list_reuse = 1500ms;
  auto c = app_client("list-org", o);
  auto set = make_set(c, "list-set");
  ok(sync<github::jit_config>([&](auto cb) { c->generate_jit_config(set.id, "list-runner-1", "_work", cb); }));
  constexpr int callers = 50;
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0;
  std::vector<size_t> sizes;
  for (int i = 0; i < callers; ++i)
    c->list_runners([&](github::actions_result<std::vector<github::runner_ref>> r) {
      std::lock_guard lock{mu};
      sizes.push_back(std::get_if<std::vector<github::runner_ref>>(&r) ? std::get<std::vector<github::runner_ref>>(r).size() : 0);
      ++answered;
      cv.notify_all();
    });
  {
    std::unique_lock lock{mu};
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return answered == callers; })) << answered << " of " << callers << " answered";
  }
  EXPECT_EQ(c->runner_list_requests(), 1u) << "one request for 50 concurrent callers";
  for (auto n : sizes)
    EXPECT_GE(n, 1u);
  auto has = [](const std::vector<github::runner_ref>& list, const std::string& name) {
    return std::any_of(list.begin(), list.end(), [&](const auto& r) { return r.name == name; });
  };
  ok(sync<github::jit_config>([&](auto cb) { c->generate_jit_config(set.id, "list-runner-2", "_work", cb); }));
  auto reused = sync<std::vector<github::runner_ref>>([&](auto cb) { c->list_runners(cb); });
  EXPECT_EQ(c->runner_list_requests(), 1u) << "a fresh answer is reused";
  EXPECT_FALSE(has(ok(reused), "list-runner-2")) << "the reused answer is the one fetched before it was registered";
  std::this_thread::sleep_for(1600ms);
  auto later = sync<std::vector<github::runner_ref>>([&](auto cb) { c->list_runners(cb); });
  EXPECT_EQ(c->runner_list_requests(), 2u) << "an answer past runner_list_reuse is fetched again";
  EXPECT_TRUE(has(ok(later), "list-runner-2"));
}

// One installation token for every GitHub client of the process (adapters/github/app_tokens.hpp):
// the scale sets' Actions Service client and the scheduler's REST client, given the same
// app_tokens, make one exchange between them.
github::app_tokens::options fast_token_options() {
  github::app_tokens::options o;
  o.retry_base = 20ms;
  o.retry_max = 200ms;
  return o;
}

TEST(github_tokens, one_exchange_serves_the_scale_sets_client_and_the_schedulers_client) {
  REQUIRE_PEER(e);
  auto tokens = github::app_tokens::make(*e.io, fast_token_options());
  const auto before = e.peer->request_counts()["access_token:42"];
  auto o = fast_options();
  o.tokens = tokens;
  auto c = app_client("tokens-org", o);
  auto set = make_set(c, "tokens-set");
  ASSERT_GT(set.id, 0);
  github::credentials creds;
  creds.app_id = "12345";
  creds.installation_id = 42;
  creds.private_key_pem = e.private_key;
  github::rest_options ro;
  ro.tokens = tokens;
  github::rest_client gh{github::api_base_of(e.peer->http_url()), creds, *e.io, ro};
  auto runners = gh.list_runners("orgs/tokens-org");
  ASSERT_TRUE(std::holds_alternative<std::vector<github::rest_runner>>(runners)) << std::get<github::rest_error>(runners).describe();
  EXPECT_EQ(e.peer->request_counts()["access_token:42"] - before, 1) << "one installation token for both clients";
  EXPECT_EQ(tokens->exchanges(), 1u);
  ok(sync<github::done>([&](auto cb) { c->delete_scale_set(set.id, cb); }));
}

TEST(github_tokens, callers_at_once_share_one_exchange_and_a_refused_token_is_replaced_once) {
  REQUIRE_PEER(e);
  auto tokens = github::app_tokens::make(*e.io, fast_token_options());
  const github::token_endpoint at{github::api_base_of(e.peer->http_url()), nullptr};
  const github::app_identity app{"12345", e.private_key};
  std::vector<std::future<github::token_result>> answers;
  for (int i = 0; i < 16; ++i) {
    auto p = std::make_shared<std::promise<github::token_result>>();
    answers.push_back(p->get_future());
    tokens->get(at, app, 42, [p](github::token_result r) { p->set_value(std::move(r)); });
  }
  std::set<std::string> seen;
  for (auto& f : answers) {
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    auto r = f.get();
    ASSERT_TRUE(std::holds_alternative<github::installation_token>(r)) << std::get<github::token_failure>(r).message;
    seen.insert(std::get<github::installation_token>(r).token);
    EXPECT_GT(std::get<github::installation_token>(r).expires_at, 0);
  }
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(tokens->exchanges(), 1u) << "16 callers, one exchange";
  const auto first = *seen.begin();
  expect_no_secret(runtime::redact(first), "a redacted token");  // registered as a secret before anyone saw it

  tokens->forget(at, app, 42, "ghs_some_older_token_refused");  // not the cached one: kept
  auto again = tokens->get_blocking(at, app, 42);
  ASSERT_TRUE(std::holds_alternative<github::installation_token>(again));
  EXPECT_EQ(std::get<github::installation_token>(again).token, first);
  EXPECT_EQ(tokens->exchanges(), 1u);
  tokens->forget(at, app, 42, first);  // refused (401) before its expiry: a new one
  auto fresh = tokens->get_blocking(at, app, 42);
  ASSERT_TRUE(std::holds_alternative<github::installation_token>(fresh));
  EXPECT_NE(std::get<github::installation_token>(fresh).token, first);
  EXPECT_EQ(tokens->exchanges(), 2u);
}

TEST(github_tokens, server_errors_are_retried_and_refusals_are_not) {
  REQUIRE_PEER(e);
  auto tokens = github::app_tokens::make(*e.io, fast_token_options());
  const github::token_endpoint at{github::api_base_of(e.peer->http_url()), nullptr};
  const github::app_identity app{"12345", e.private_key};
  arm(*e.peer, R"([{"route":"access_token","status":503,"count":2}])");
  auto got = tokens->get_blocking(at, app, 42);
  EXPECT_TRUE(std::holds_alternative<github::installation_token>(got)) << "two 503s are retried";
  EXPECT_EQ(tokens->exchanges(), 3u);

  auto stranger = tokens->get_blocking(at, app, 999);  // not an installation of this App: 404, final
  ASSERT_TRUE(std::holds_alternative<github::token_failure>(stranger));
  EXPECT_EQ(std::get<github::token_failure>(stranger).status, 404);
  EXPECT_EQ(tokens->exchanges(), 4u);

  auto unsigned_key = tokens->get_blocking(at, {"54321", "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n"}, 42);
  ASSERT_TRUE(std::holds_alternative<github::token_failure>(unsigned_key));
  const auto& f = std::get<github::token_failure>(unsigned_key);
  EXPECT_TRUE(f.signing);
  EXPECT_EQ(f.message.find("bm90IGEga2V5"), std::string::npos) << f.message;
  EXPECT_EQ(tokens->exchanges(), 4u) << "no request without a JWT";
}

TEST(github, hud_queued_jobs) {
  REQUIRE_PEER(e);
  enqueue(*e.peer, "hud-cpu", 3);
  enqueue(*e.peer, "hud-gpu", 2);
  auto fetch = [&](std::string token) {
    hud::client_options o;
    o.url = e.peer->http_url() + "/api/clickhouse/queued_jobs_aggregate?parameters=%5B%5D";
    o.token = std::move(token);
    hud::client hc(*e.io, o);
    auto p = std::make_shared<std::promise<hud::fetch_result>>();
    hc.fetch([p](hud::fetch_result r) { p->set_value(std::move(r)); });
    return p->get_future().get();
  };
  auto rows = fetch(std::string{kHudToken});
  ASSERT_TRUE(std::holds_alternative<std::vector<hud::queued_jobs>>(rows)) << std::get<hud::hud_error>(rows).message;
  const auto& r = std::get<std::vector<hud::queued_jobs>>(rows);
  EXPECT_EQ(hud::queued_for_labels(r, {"hud-cpu"}), 3);
  EXPECT_EQ(hud::queued_for_labels(r, {"hud-cpu", "hud-gpu"}), 5);
  EXPECT_EQ(hud::queued_for_labels(r, {"nothing"}), 0);

  auto denied = fetch("hud-wrong-token-value");
  ASSERT_TRUE(std::holds_alternative<hud::hud_error>(denied));
  EXPECT_NE(std::get<hud::hud_error>(denied).message.find("401"), std::string::npos);
  expect_no_secret(std::get<hud::hud_error>(denied).message, "a HUD error");
  arm(*e.peer, R"([{"route":"hud","malformed":true}])");
  auto garbled = fetch(std::string{kHudToken});
  EXPECT_TRUE(std::holds_alternative<hud::hud_error>(garbled));
}

// Last (GoogleTest runs a file's tests in order): nothing any test did put a secret in a log line.
TEST(github, zz_no_secret_in_any_log_line) {
  REQUIRE_PEER(e);
  std::lock_guard lock(log_mu);
  ASSERT_GT(captured().size(), 10u) << "the client logged (debug level) while the tests ran";
  for (const auto& line : captured())
    expect_no_secret(line, "a log line");
}

}  // namespace
}  // namespace headroom

namespace headroom {
namespace {

// The scheduler's REST client with an App installed in two organizations and no installation id:
// each organization's installation is found once and its token used for that organization only
// (the peer refuses another's, as GitHub does); an account without the App is a clear error, asked
// again only after a minute; the private key and the tokens never reach the log.
TEST(github_rest, an_app_in_several_organizations_uses_each_ones_installation) {
  auto [private_key, public_key] = testpeer::make_app_key();
  testpeer::actions_peer::options opts;
  opts.app_public_key_pem = public_key;
  opts.installations = "org-one=101,org-two=102";
  std::string why;
  auto peer = testpeer::actions_peer::start(opts, why);
  HEADROOM_REQUIRE_READY(peer != nullptr, "the Actions Service peer", why);
  http::transport io{headroom::testenv::real_time_transport()};
  github::credentials creds;
  creds.app_id = "12345";
  creds.private_key_pem = private_key;  // installation_id 0: found per organization
  github::rest_client gh{peer->http_url(), creds, io};
  for (int round = 0; round < 2; ++round)
    for (const char* org : {"org-one", "org-two"}) {
      auto g = gh.ensure_runner_group(org, "headroom");
      ASSERT_TRUE(std::holds_alternative<int64_t>(g)) << org << ": " << std::get<github::rest_error>(g).describe();
      auto jit = gh.generate_jit_config(std::string{"orgs/"} + org, std::string{"r-"} + org + std::to_string(round), std::get<int64_t>(g),
                                        {"self-hosted"});
      ASSERT_TRUE(std::holds_alternative<github::rest_jit>(jit)) << org << ": " << std::get<github::rest_error>(jit).describe();
    }
  auto repo = gh.list_runners("repos/org-two/app");
  EXPECT_TRUE(std::holds_alternative<std::vector<github::rest_runner>>(repo)) << "a repository's installation is its owner's";
  auto stranger = gh.ensure_runner_group("not-installed", "headroom");
  ASSERT_TRUE(std::holds_alternative<github::rest_error>(stranger));
  const auto& e = std::get<github::rest_error>(stranger);
  EXPECT_EQ(e.status, 404);
  EXPECT_NE(e.describe().find("not installed"), std::string::npos) << e.describe();
  (void)gh.ensure_runner_group("not-installed", "headroom");

  auto counts = peer->request_counts();
  auto count = [&](const char* route) { return counts[route]; };
  EXPECT_EQ(count("access_token:101"), 1) << "one token per installation, cached";
  EXPECT_EQ(count("access_token:102"), 1);
  EXPECT_EQ(count("installation_of"), 4) << "org-one, org-two, org-two/app, not-installed once (the second asks nobody)";
  EXPECT_EQ(count("wrong_installation"), 0) << "no token went to another organization";
  std::lock_guard lock(log_mu);
  for (const auto& line : captured())
    EXPECT_EQ(line.find("PRIVATE KEY"), std::string::npos) << line;
}


// Two Apps, one per account kind (seed 003): the first installed in an organization, the second in
// a personal account. An organization and its repositories take the first App's installation, a
// personal account's repository the second's (found after the first App's lookup says 404), each
// looked up once; an account neither App is in is a clear 404. The peer refuses an App's JWT for
// the other App's installation and a token on another account's paths, as GitHub does.
TEST(github_rest, a_second_app_serves_personal_accounts) {
  auto [org_key, org_public_key] = testpeer::make_app_key();
  auto [user_key, user_public_key] = testpeer::make_app_key();
  testpeer::actions_peer::options opts;
  opts.app_public_key_pem = org_public_key;
  opts.installations = "org-one=101";
  opts.user_app_id = "67890";
  opts.user_app_public_key_pem = user_public_key;
  opts.user_installations = "dana=501";
  std::string why;
  auto peer = testpeer::actions_peer::start(opts, why);
  HEADROOM_REQUIRE_READY(peer != nullptr, "the Actions Service peer", why);
  http::transport io{headroom::testenv::real_time_transport()};
  github::credentials creds;
  creds.app_id = "12345";
  creds.private_key_pem = org_key;
  creds.user_app_id = "67890";
  creds.user_app_private_key_pem = user_key;
  github::rest_client gh{peer->http_url(), creds, io};
  EXPECT_EQ(gh.apps(), (std::vector<github::github_app>{github::github_app::first, github::github_app::user}));
  for (int round = 0; round < 2; ++round) {
    auto g = gh.ensure_runner_group("org-one", "headroom");
    ASSERT_TRUE(std::holds_alternative<int64_t>(g)) << std::get<github::rest_error>(g).describe();
    auto org_jit = gh.generate_jit_config("orgs/org-one", "r-org-" + std::to_string(round), std::get<int64_t>(g), {"self-hosted"});
    ASSERT_TRUE(std::holds_alternative<github::rest_jit>(org_jit)) << std::get<github::rest_error>(org_jit).describe();
    auto user_jit = gh.generate_jit_config("repos/dana/tool", "r-dana-" + std::to_string(round), 0, {"self-hosted"});
    ASSERT_TRUE(std::holds_alternative<github::rest_jit>(user_jit)) << std::get<github::rest_error>(user_jit).describe();
    auto org_repo = gh.list_runners("repos/org-one/app");
    EXPECT_TRUE(std::holds_alternative<std::vector<github::rest_runner>>(org_repo))
        << std::get<github::rest_error>(org_repo).describe();
  }
  auto stranger = gh.list_runners("repos/erin/x");
  ASSERT_TRUE(std::holds_alternative<github::rest_error>(stranger));
  EXPECT_EQ(std::get<github::rest_error>(stranger).status, 404);
  EXPECT_NE(std::get<github::rest_error>(stranger).describe().find("neither GitHub App is installed there"), std::string::npos)
      << std::get<github::rest_error>(stranger).describe();
  // Each App lists its own webhook's deliveries with its own JWT.
  for (auto app : gh.apps()) {
    auto listed = gh.list_app_hook_deliveries({}, app);
    EXPECT_TRUE(std::holds_alternative<github::hook_delivery_list>(listed)) << std::get<github::rest_error>(listed).describe();
  }

  auto counts = peer->request_counts();
  auto count = [&](const char* route) { return counts[route]; };
  EXPECT_EQ(count("access_token:101"), 1) << "the first App's token for org-one, cached";
  EXPECT_EQ(count("access_token:501"), 1) << "the second App's token for dana, cached";
  // org-one, repos/org-one/app (first App); repos/dana/tool (first: 404, then second); erin (both).
  EXPECT_EQ(count("installation_of"), 6);
  EXPECT_EQ(count("wrong_installation"), 0) << "no token went to another account";
}

}  // namespace
}  // namespace headroom
