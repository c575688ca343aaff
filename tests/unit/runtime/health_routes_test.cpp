#include "runtime/health_routes.hpp"
#include "runtime/web_server.hpp"

#include <arpa/inet.h>
#include <chrono>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "runtime/mailbox/bounded_fifo.hpp"

using namespace headroom::runtime;

namespace {

struct response {
  int status = 0;
  std::string body;
};

// One raw HTTP/1.1 request over loopback, read to the end: enough to check what a scraper, a
// kubelet probe or a careless client sees.
response http_send(uint16_t port, const std::string& req) {
  response r;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return r;
  }
  timeval limit{5, 0};  // a server that never answers fails the test instead of hanging it
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  (void)::write(fd, req.data(), req.size());
  std::string raw;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (raw.size() > 12)
    r.status = std::stoi(raw.substr(9, 3));
  if (auto pos = raw.find("\r\n\r\n"); pos != std::string::npos)
    r.body = raw.substr(pos + 4);
  return r;
}

response http_get(uint16_t port, const std::string& path) {
  return http_send(port, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
}

}  // namespace

TEST(health_routes, serves_metrics_health_and_readiness) {
  metrics m;
  readiness ready;
  bounded_fifo<int> outbox{"shard/outbox", [] {}, 2};
  m.buffers().track(outbox.stats());
  outbox.push(1);
  outbox.push(2);
  outbox.push(3);  // dropped
  web_server server{health_server("127.0.0.1:0", m, ready)};
  ASSERT_NE(server.port(), 0);

  auto health = http_get(server.port(), "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");

  auto metrics_page = http_get(server.port(), "/metrics");
  EXPECT_EQ(metrics_page.status, 200);
  EXPECT_NE(metrics_page.body.find("process_resident_memory_bytes "), std::string::npos);
  EXPECT_NE(metrics_page.body.find("process_threads "), std::string::npos);
  EXPECT_NE(metrics_page.body.find("process_cpu_seconds_total "), std::string::npos);
  EXPECT_NE(metrics_page.body.find("headroom_buffer_dropped_total{buffer=\"shard/outbox\",policy=\"bounded_fifo\"} 1"),
            std::string::npos)
      << metrics_page.body;
  EXPECT_NE(metrics_page.body.find("headroom_buffer_depth{buffer=\"shard/outbox\",policy=\"bounded_fifo\"} 2"),
            std::string::npos);
  // Every scrape, not the first only (the collector once dropped each live buffer as it read it).
  outbox.push(4);  // dropped again
  for (int scrape = 2; scrape <= 3; ++scrape) {
    const auto again = http_get(server.port(), "/metrics").body;
    EXPECT_NE(again.find("headroom_buffer_dropped_total{buffer=\"shard/outbox\",policy=\"bounded_fifo\"} 2"), std::string::npos)
        << "scrape " << scrape << ":\n" << again;
  }

  // Nobody reported yet → not ready; all ready → 200; one not ready → 503 naming it; shutdown → 503.
  EXPECT_EQ(http_get(server.port(), "/readyz").status, 503);
  ready.set("supervisor/root", true);
  ready.set("http", true);
  EXPECT_EQ(http_get(server.port(), "/readyz").status, 200);
  ready.set("informer/pods", false, "initial list pending");
  auto not_ready = http_get(server.port(), "/readyz");
  EXPECT_EQ(not_ready.status, 503);
  EXPECT_NE(not_ready.body.find("not-ready informer/pods: initial list pending"), std::string::npos);
  ready.remove("informer/pods");
  ready.begin_shutdown();
  EXPECT_EQ(http_get(server.port(), "/readyz").status, 503);
}

TEST(health_routes, port_in_use_is_a_clear_error) {
  metrics m;
  readiness ready;
  web_server first{health_server("127.0.0.1:0", m, ready)};
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());
  try {
    web_server second{health_server(taken, m, ready)};
    FAIL() << "second bind on " << taken << " succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string{e.what()}.find("cannot listen on " + taken), std::string::npos) << e.what();
  }
}

// cpp-httplib 0.11 reads the body of a POST that has neither Content-Length nor chunked encoding
// until the client closes, so the client (curl -X POST without data) waited for ever; such a
// request has no body (RFC 9112 6.3) and is answered 411 at once, naming what is missing.
TEST(health_routes, a_post_without_a_length_is_answered_411_at_once) {
  metrics m;
  readiness ready;
  auto opts = health_server("127.0.0.1:0", m, ready);
  opts.routes.push_back({"POST", "/echo", [](const web_request& req) { return web_reply{200, "text/plain", {}, "got " + req.body}; }});
  web_server server{opts};
  auto unframed = http_send(server.port(), "POST /echo HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(unframed.status, 411);
  EXPECT_NE(unframed.body.find("needs a Content-Length"), std::string::npos) << unframed.body;
  auto empty = http_send(server.port(), "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(empty.status, 200);
  EXPECT_EQ(empty.body, "got ");
  auto framed = http_send(server.port(), "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi");
  EXPECT_EQ(framed.body, "got hi");
}

// The probe server has two workers, and cpp-httplib serves a kept-alive connection on one worker
// until it has been idle 5 s: two scrapers keeping their connections would leave a kubelet probe
// (timeoutSeconds: 1 by default) waiting, and the pod restarted. The server closes each connection
// after its answer, as civetweb's did before (enable_keep_alive no).
TEST(health_routes, a_scrapers_connection_is_closed_after_its_answer_so_no_worker_is_held) {
  metrics m;
  readiness ready;
  web_server server{health_server("127.0.0.1:0", m, ready)};
  for (int scraper = 1; scraper <= 3; ++scraper) {
    const auto began = std::chrono::steady_clock::now();
    auto r = http_send(server.port(), "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");  // no Connection: close
    const auto took = std::chrono::steady_clock::now() - began;
    EXPECT_EQ(r.status, 200) << "scraper " << scraper;
    EXPECT_LT(took, std::chrono::seconds(2)) << "scraper " << scraper << ": the connection was held open, not closed";
  }
}
