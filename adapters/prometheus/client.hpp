#pragma once

// Instant queries against the Prometheus HTTP API (GET /api/v1/query), and remote reads of raw
// samples (POST /api/v1/read, remote_read.hpp), over the shared libcurl transport. Basic auth or a bearer token, and a CA bundle; both secrets are registered with the
// secret registry and never reach a log or an error. Every failure — no connection, a non-2xx
// answer, a body that is not exactly one finite series — comes back as no_metric with the reason.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "adapters/http/transport.hpp"
#include "adapters/prometheus/query.hpp"
#include "adapters/prometheus/remote_read.hpp"

namespace headroom::prom {

struct client_options {
  std::string url = "http://127.0.0.1:9090";  // the server's base URL (a path prefix is kept)
  std::string username, password;             // basic auth, when username is set
  std::string bearer_token;                   // Authorization: Bearer, when set
  std::string ca_pem;                         // empty = the system store
  std::chrono::milliseconds timeout{10'000};
};

class client {
 public:
  client(http::exchange& io, client_options opts);

  // One instant query evaluated at `at` (seconds since the epoch; nullopt = the server's now).
  // `cb` runs on the transport's I/O thread.
  void query(const std::string& promql, std::optional<double> at, std::function<void(query_result)> cb);

  // One remote read (POST /api/v1/read) of many selectors' raw samples; `cb` (on the I/O thread)
  // gets one result per query, in order. A failed request makes every result no_metric.
  void read(const std::vector<raw_query>& queries, std::function<void(std::vector<query_result>)> cb);

  const std::string& url() const { return opts_.url; }

 private:
  http::exchange& io_;
  client_options opts_;
  std::string authorization_;  // the header, or ""
  std::shared_ptr<const http::tls_config> tls_;
};

}  // namespace headroom::prom
