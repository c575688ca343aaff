// The client's retry and rate-limit rules against a scripted HTTP server on loopback (civetweb):
// what is retried, how long it waits, and what is never retried.
#include "adapters/k8s/client.hpp"
#include "testenv/transport_options.hpp"
#include "adapters/k8s/informer.hpp"

#include <CivetServer.h>
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using namespace headroom::k8s;

namespace {

// Answers each request with the next scripted reply (status, extra headers, body); 200 "{}" after.
class scripted final : public CivetHandler {
 public:
  struct reply {
    int status;
    std::string headers;
    std::string body;
  };
  void script(std::deque<reply> r) {
    std::lock_guard<std::mutex> g{m_};
    replies_ = std::move(r);
    hits_ = 0;
  }
  int hits() const { return hits_.load(); }
  bool handleGet(CivetServer*, mg_connection* c) override { return answer(c); }
  bool handlePost(CivetServer*, mg_connection* c) override { return answer(c); }

 private:
  bool answer(mg_connection* c) {
    ++hits_;
    reply r{200, "", "{}"};
    {
      std::lock_guard<std::mutex> g{m_};
      if (!replies_.empty()) {
        r = replies_.front();
        replies_.pop_front();
      }
    }
    mg_printf(c, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n%s",
              r.status, r.body.size(), r.headers.c_str(), r.body.c_str());
    return true;
  }
  std::mutex m_;
  std::deque<reply> replies_;
  std::atomic<int> hits_{0};
};

struct retry_fixture : ::testing::Test {
  retry_fixture() : server({"listening_ports", "127.0.0.1:0", "num_threads", "4"}) {
    server.addHandler("/", handler);
    conn.server = "http://127.0.0.1:" + std::to_string(server.getListeningPorts().front());
    conn.token = [] { return std::string{}; };
  }
  api_result call(client& c, bool post = false) {
    std::promise<api_result> p;
    auto done = [&](api_result r) { p.set_value(std::move(r)); };
    if (post)
      c.create(kinds::configmaps, "ns", R"({"metadata":{"name":"x"}})", done);
    else
      c.get(kinds::configmaps, "ns", "x", done);
    return p.get_future().get();
  }
  scripted handler;
  CivetServer server;
  connection conn;
};

const std::string status_429 = R"({"kind":"Status","status":"Failure","reason":"TooManyRequests","message":"slow down","code":429})";

// qps 10, burst 1: one request starts every 100 ms, so those waiting show their order.
transport::options one_at_a_time() {
  transport::options o;
  o.clock = &headroom::runtime::real_clock();
  o.qps = 10;
  o.burst = 1;
  return o;
}

// The order in which calls complete, from the I/O thread; `wait` until `expected` have.
struct completion_order {
  explicit completion_order(int expected) : left(expected) {}
  void record(const std::string& who) {
    bool last = false;
    {
      std::lock_guard lock{m};
      order.push_back(who);
      last = --left == 0;
    }
    if (last)  // the last touch: the test may end as soon as it is set
      all_done.set_value();
  }
  api_callback as(std::string who) {
    return [this, who](api_result) { record(who); };
  }
  bool wait() { return all_done.get_future().wait_for(10s) == std::future_status::ready; }
  std::mutex m;
  std::vector<std::string> order;
  std::promise<void> all_done;
  int left;
};

}  // namespace

TEST_F(retry_fixture, honours_retry_after_on_429) {
  transport t{headroom::testenv::real_time_transport()};
  client c{conn, t};
  handler.script({{429, "Retry-After: 1\r\n", status_429}});
  const auto start = std::chrono::steady_clock::now();
  auto r = call(c);
  EXPECT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1s) << "Retry-After: 1 was not honoured";
  EXPECT_EQ(handler.hits(), 2);
}

TEST_F(retry_fixture, retries_5xx_for_reads_but_never_a_create) {
  transport t{headroom::testenv::real_time_transport()};
  retry_policy fast;
  fast.initial = 10ms;
  client c{conn, t, fast};
  handler.script({{503, "", "{}"}, {500, "", "{}"}});
  EXPECT_TRUE(std::holds_alternative<std::string>(call(c)));
  EXPECT_EQ(handler.hits(), 3);

  handler.script({{500, "", R"({"kind":"Status","message":"etcd timeout","reason":"InternalError","code":500})"}});
  auto r = call(c, /*post=*/true);
  ASSERT_TRUE(std::holds_alternative<api_error>(r));
  EXPECT_EQ(std::get<api_error>(r).what, api_error::kind::server);
  EXPECT_EQ(std::get<api_error>(r).describe(), "create configmaps ns/x: 500 InternalError: etcd timeout");
  EXPECT_EQ(handler.hits(), 1) << "a create that may have happened is not repeated";
}

TEST_F(retry_fixture, gives_up_after_max_attempts) {
  transport t{headroom::testenv::real_time_transport()};
  retry_policy p;
  p.max_attempts = 3;
  p.initial = 5ms;
  client c{conn, t, p};
  handler.script({{503, "", "{}"}, {503, "", "{}"}, {503, "", "{}"}, {503, "", "{}"}});
  auto r = call(c);
  ASSERT_TRUE(std::holds_alternative<api_error>(r));
  EXPECT_EQ(std::get<api_error>(r).status, 503);
  EXPECT_EQ(handler.hits(), 3);
}

TEST_F(retry_fixture, a_pdb_refusal_is_not_retried) {
  transport t{headroom::testenv::real_time_transport()};
  client c{conn, t};
  handler.script({{429, "", R"({"kind":"Status","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","code":429})"}});
  std::promise<api_result> p;
  c.evict("ns", "runner-1", {}, [&](api_result r) { p.set_value(std::move(r)); });
  auto r = p.get_future().get();
  ASSERT_TRUE(std::holds_alternative<api_error>(r));
  EXPECT_EQ(std::get<api_error>(r).what, api_error::kind::disruption_blocked);
  EXPECT_EQ(handler.hits(), 1);
}

// qps 20, burst 2: ten requests need at least (10 - 2) / 20 s = 400 ms.
TEST_F(retry_fixture, client_side_rate_limit_spaces_requests) {
  transport::options o;
  o.clock = &headroom::runtime::real_clock();
  o.qps = 20;
  o.burst = 2;
  transport t{o};
  client c{conn, t};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::future<api_result>> all;
  std::vector<std::shared_ptr<std::promise<api_result>>> promises;
  for (int i = 0; i < 10; ++i) {
    auto p = std::make_shared<std::promise<api_result>>();
    all.push_back(p->get_future());
    c.get(kinds::configmaps, "ns", "x", [p](api_result r) { p->set_value(std::move(r)); });
    promises.push_back(p);
  }
  for (auto& f : all)
    EXPECT_TRUE(std::holds_alternative<std::string>(f.get()));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 380ms);
  EXPECT_LT(took, 3s);
}

// An urgent write (gate removal) goes ahead of a backlog of bulk writes waiting for the rate
// budget, and still spends a token: qps 10, burst 1, eight bulk patches then one urgent one → the
// urgent one completes second, not last.
TEST_F(retry_fixture, an_urgent_request_passes_the_waiting_bulk_ones) {
  transport t{one_at_a_time()};
  client c{conn, t};
  completion_order done{9};
  for (int i = 0; i < 8; ++i)
    c.merge_patch(kinds::configmaps, "ns", "x", "{}", done.as("bulk-" + std::to_string(i)));
  std::this_thread::sleep_for(20ms);  // all eight are waiting behind the first
  c.json_patch(kinds::pods, "ns", "p", "[]", done.as("urgent"), {}, /*urgent=*/true);
  ASSERT_TRUE(done.wait());
  ASSERT_EQ(done.order.size(), 9u);
  EXPECT_EQ(done.order[0], "bulk-0");
  EXPECT_EQ(done.order[1], "urgent");
}

// What the controller sees comes before what it writes: a watch (every watch is resumed when the
// server ends it) and an informer's list page marked urgent go ahead of a backlog of bulk writes
// waiting for the rate budget. Before, a resumed pod watch waited 4-9 s behind the writes of a
// burst of pair replacements at 1,000 scale sets, and every pod change with it.
TEST_F(retry_fixture, a_watch_and_an_urgent_list_pass_the_waiting_writes) {
  transport t{one_at_a_time()};
  client c{conn, t};
  completion_order done{10};
  for (int i = 0; i < 8; ++i)
    c.merge_patch(kinds::configmaps, "ns", "x", "{}", done.as("bulk-" + std::to_string(i)));
  std::this_thread::sleep_for(20ms);  // all eight are waiting behind the first
  watch_options wo;
  c.watch(kinds::pods, "ns", wo, [](std::string_view) {}, [&](std::optional<api_error>) { done.record("watch"); });
  list_options lo;
  lo.urgent = true;
  c.list(kinds::pods, "ns", lo, done.as("list"));
  ASSERT_TRUE(done.wait());
  ASSERT_EQ(done.order.size(), 10u);
  EXPECT_EQ(done.order[0], "bulk-0");
  EXPECT_EQ(done.order[1], "watch");
  EXPECT_EQ(done.order[2], "list");
}

// headroom_kubernetes_requests_total: every attempt of a retried call is a response of its own.
TEST_F(retry_fixture, every_response_is_reported_by_verb_and_status) {
  transport t{headroom::testenv::real_time_transport()};
  retry_policy fast;
  fast.initial = 10ms;
  client c{conn, t, fast};
  std::mutex m;
  std::vector<std::pair<std::string, long>> seen;
  c.on_response([&](const std::string& verb, const std::string& resource, long status) {
    std::lock_guard lock{m};
    EXPECT_EQ(resource, "configmaps");
    seen.emplace_back(verb, status);
  });
  handler.script({{503, "", "{}"}});
  EXPECT_TRUE(std::holds_alternative<std::string>(call(c)));
  EXPECT_TRUE(std::holds_alternative<std::string>(call(c, /*post=*/true)));
  std::lock_guard lock{m};
  const std::vector<std::pair<std::string, long>> want{{"get", 503}, {"get", 200}, {"create", 200}};
  EXPECT_EQ(seen, want);
}

// headroom_kubernetes_rate_limiter_wait_seconds: qps 10, burst 1 → the third of three requests
// submitted together waits about 200 ms for its token, the first not at all.
TEST_F(retry_fixture, each_start_reports_its_wait_for_the_rate_budget) {
  transport::options o;
  o.clock = &headroom::runtime::real_clock();
  o.qps = 10;
  o.burst = 1;
  std::mutex m;
  std::vector<std::pair<std::chrono::nanoseconds, headroom::http::priority>> starts;
  o.on_start = [&](std::chrono::nanoseconds waited, headroom::http::priority p) {
    std::lock_guard lock{m};
    starts.emplace_back(waited, p);
  };
  transport t{o};
  client c{conn, t};
  std::vector<std::shared_ptr<std::promise<api_result>>> promises;
  for (int i = 0; i < 3; ++i) {
    auto p = std::make_shared<std::promise<api_result>>();
    promises.push_back(p);
    c.get(kinds::configmaps, "ns", "x", [p](api_result r) { p->set_value(std::move(r)); });
  }
  for (auto& p : promises)
    p->get_future().wait();
  std::lock_guard lock{m};
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_LT(starts[0].first, 50ms);
  EXPECT_GE(starts[2].first, 150ms);
  EXPECT_LT(starts[2].first, 2s);
  EXPECT_EQ(starts[0].second, headroom::http::priority::normal);
}

// headroom_kubernetes_informer_*: an informer reports to its client while it lives.
TEST_F(retry_fixture, an_informer_is_tracked_while_it_lives) {
  transport t{headroom::testenv::real_time_transport()};
  client c{conn, t};
  informer<pod>::options opts;
  opts.kind = kinds::pods;
  opts.ns = "runners";
  auto inf = informer<pod>::make(c, opts);
  auto tracked = c.informers();
  ASSERT_EQ(tracked.size(), 1u);
  EXPECT_EQ(tracked[0].resource, "pods");
  EXPECT_EQ(tracked[0].ns, "runners");
  EXPECT_EQ(tracked[0].stats->lists.load(), 0u);
  tracked.clear();
  inf.reset();
  EXPECT_TRUE(c.informers().empty());
}

// A client at background priority (status and Event writes) waits behind the normal writes that
// came after it: qps 10, burst 1, four background patches then four normal ones → after the first
// (it took the one token there was), the four normal ones go first.
TEST_F(retry_fixture, background_writes_wait_behind_the_normal_ones) {
  transport t{one_at_a_time()};
  client normal{conn, t};
  client background{conn, t};
  background.set_priority(headroom::http::priority::background);
  completion_order done{8};
  for (int i = 0; i < 4; ++i)
    background.merge_patch(kinds::configmaps, "ns", "status", "{}", done.as("background-" + std::to_string(i)));
  std::this_thread::sleep_for(20ms);
  for (int i = 0; i < 4; ++i)
    normal.merge_patch(kinds::pods, "ns", "p", "{}", done.as("normal-" + std::to_string(i)));
  ASSERT_TRUE(done.wait());
  const std::vector<std::string> want{"background-0", "normal-0", "normal-1", "normal-2", "normal-3",
                                      "background-1", "background-2", "background-3"};
  EXPECT_EQ(done.order, want);
}
