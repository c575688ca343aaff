#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "runtime/clock.hpp"
#include <string>
#include <string_view>
#include <vector>

namespace headroom::http {

// TLS material for a connection (the API server, GitHub, the HUD). Verification is always on: there is no switch to
// turn it off (a kubeconfig asking for insecure-skip-tls-verify is refused by the loader).
struct tls_config {
  std::string ca_pem;           // trusted CA bundle (PEM); empty = the system store
  std::string client_cert_pem;  // optional client certificate …
  std::string client_key_pem;   // … and its key (registered as a secret by the loader)
};

// Where a request waits for the rate budget among the others waiting; each still spends a token.
enum class priority : uint8_t {
  urgent,      // what the controller sees and a scheduling gate's removal: before all the others
  normal,      // the controller's writes (placeholder pods, scaling)
  background,  // writes nobody waits on (status, Events): after all the others, coalesced meanwhile
};

std::string_view to_string(priority p);

struct http_request {
  std::shared_ptr<const tls_config> tls;  // the connection's CA and client certificate
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  std::chrono::milliseconds timeout{30'000};  // whole request; 0 = none (watches)
  bool stream = false;                        // deliver the body in chunks as it arrives
  std::chrono::milliseconds delay{0};         // start no earlier than this from now (retries)
  std::chrono::seconds stall_timeout{0};      // streams: abort when no byte arrived for this long
  bool compressed = true;                     // offer gzip/deflate (off for small, frequent answers)
  // Started before every waiting request of a lower priority (within the rate budget): a
  // resumed watch does not queue behind a backlog of writes, nor a pod write behind status writes.
  http::priority priority = http::priority::normal;
  // A 2xx body larger than this fails the transfer (a transport error naming the limit): it never
  // arrives cut short. Another status's body is cut at this size instead (only its message is read).
  size_t max_body_bytes = size_t{64} << 20;
};

struct http_response {
  long status = 0;             // 0 when the transfer failed before a response
  std::string body;            // for streams: only the body of a non-2xx response
  std::string transport_error; // curl's description when status == 0
  std::string retry_after;     // the Retry-After header, if any
  std::string content_type;    // the Content-Type header, if any
  std::string link;            // the Link header, if any (GitHub's paging: rel="next")
  bool cancelled = false;
};

using request_id = uint64_t;
using on_chunk = std::function<void(std::string_view)>;
using on_done = std::function<void(http_response)>;

// What the adapters need of HTTP. `transport` below is the real one; a test scripts its own
// (tests/support/scripted_exchange.hpp) to answer an actor's calls on the test's thread, so the
// actor runs under CAF's deterministic test_coordinator with no server and no sleeping.
class exchange {
 public:
  virtual ~exchange() = default;
  // Starts a request; `done` runs once with its response (or its failure or cancellation).
  virtual request_id submit(http_request req, on_done done, on_chunk chunk = {}) = 0;
  virtual void cancel(request_id id) = 0;
  // Runs `fn` after `delay` (timers for informers and leader election).
  virtual void after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  // The clock its delays and timers run on: the clock of everything built over it (the Kubernetes
  // and GitHub clients, informers, leader election), so a test that gives one drives them all.
  virtual const runtime::clock& clock() const = 0;
};

// HTTP for headroom's adapters (Kubernetes, GitHub, the HUD): one I/O thread owns a libcurl multi handle and serves every
// request and long-lived watch (HTTP/2 multiplexed when the server offers it).
//
// - submit() is safe from any thread; callbacks run on the I/O thread and must be short (hand the
//   result to an actor or a policy buffer).
// - A client-side token bucket (qps/burst, default 50/100) spaces request starts; waiting
//   requests hold no thread. They start by priority (see `priority`), in order within one.
// - cancel() stops a request or watch at once; its completion callback then reports cancelled.
class transport final : public exchange {
 public:
  struct options {
    double qps = 50;
    double burst = 100;
    std::chrono::milliseconds connect_timeout{10'000};
    // How the I/O thread drives libcurl. false: curl_multi_perform and curl_multi_poll, which
    // visit every open transfer on each turn: right for a few transfers multiplexed on one HTTP/2
    // connection (the Kubernetes watches). true: event-driven (epoll and
    // curl_multi_socket_action): only the sockets that are ready and the timers that are due are
    // visited, for many transfers that are mostly idle (a long poll per scale set). libcurl 7.88
    // left watch events on the Kubernetes transport's HTTP/2-over-TLS connection unread for up to
    // 8 s when driven this way (many_scale_sets_bench at 1,000 scale sets), so it is not the
    // default.
    bool event_driven = false;
    // The longest the I/O thread waits for a socket, a timer or a submit before it drives libcurl
    // again. libcurl 7.88 can leave HTTP/2 frames it has already read off the socket unprocessed
    // until the next socket event or timeout: with a watch and writes multiplexed on one
    // connection, a watch event waited for the next one (many_scale_sets_bench at 1,000 scale sets:
    // read p50 170 ms after a Go client's watch of the same events with 1 s here, 0 ms with 5 ms;
    // #62). The Kubernetes transport sets 5 ms; the cost is one curl_multi_perform over its few
    // transfers per wait.
    std::chrono::milliseconds max_wait{1000};
    // libcurl's read buffer per transfer (bytes; 0: libcurl's 16 KiB). Every long poll held open
    // keeps one, and their answers are a few KiB.
    long read_buffer_bytes = 0;
    // Called on the I/O thread as each request starts, with how long it waited for the rate
    // budget (from when it could have started: its submit, or the end of its retry delay) and
    // its priority (headroom_kubernetes_rate_limiter_wait_seconds). Must be short.
    std::function<void(std::chrono::nanoseconds waited, http::priority)> on_start;
    // Called on the I/O thread once per turn of its loop: how long the turn kept it busy (starting
    // requests, running timers, driving libcurl, the handlers of every line and answer it
    // delivered), and how much later than it asked its wait for sockets returned (the thread was
    // runnable but the machine's CPU was elsewhere). A watch event read waits behind both
    // (headroom_kubernetes_io_busy_seconds, headroom_kubernetes_io_wake_late_seconds). Must be short.
    std::function<void(std::chrono::nanoseconds busy, std::chrono::nanoseconds late)> on_turn;
    // The monotonic time of request delays, the rate budget, timers and libcurl's timeouts. The
    // I/O thread still waits in real time (epoll, curl_multi_poll): this is a real clock in
    // production and where the loop runs; a test gives its own to see the times it reports.
    // Required: the composition root passes the process's clock.
    const runtime::clock* clock = nullptr;
  };
  using on_chunk = http::on_chunk;
  using on_done = http::on_done;

  explicit transport(options opts);
  ~transport();
  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;

  request_id submit(http_request req, on_done done, on_chunk chunk = {}) override;
  void cancel(request_id id) override;
  // Runs `fn` on the I/O thread after `delay`.
  void after(std::chrono::milliseconds delay, std::function<void()> fn) override;
  const runtime::clock& clock() const override;

  // Requests started so far (after rate limiting), for tests and metrics.
  uint64_t started() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// Percent-encodes everything but RFC 3986 unreserved characters (query values, path segments).
std::string url_encode(std::string_view text);

}  // namespace headroom::http
