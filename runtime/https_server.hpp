#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/clock.hpp"

namespace headroom::runtime {

// One POST a route handles: its body (already read, within the size limit) and content type.
struct https_request {
  std::string path;
  std::string content_type;
  std::string body;
};

struct https_reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// A handler runs on one of the server's worker threads and must be thread-safe (pure functions,
// thread-safe metrics).
struct https_route {
  std::string path;
  std::function<https_reply(const https_request&)> handle;
};

struct https_options {
  std::string listen = ":9443";  // "port", ":port", "host:port"
  std::string cert_pem, key_pem;  // the serving certificate (with its chain) and its key, PEM text
  std::vector<https_route> routes;
  int threads = 16;
  size_t max_body = 4 << 20;  // larger → 413; the API server's own request limit is 3 MiB
  // After each answer: the route, the status and the time from the request read to the answer.
  std::function<void(const std::string& path, int status, double seconds)> observe;
  const runtime::clock* clock = nullptr;  // what `observe`'s seconds are measured on: required with it
};

// An HTTPS server for the API server to call (admission webhooks), on Debian's cpp-httplib (its
// civetweb cannot serve TLS with OpenSSL 3). Only POST is served; TLS 1.2 or newer; keep-alive. The certificate is chosen per handshake from the newest
// one given to set_certificate, so a rotated certificate (cert-manager, a Secret update) is served
// from the next connection on without a restart and without refusing a single request.
class https_server {
 public:
  // Binds at once; throws std::runtime_error naming the address (or the certificate) when it cannot.
  explicit https_server(https_options opts);
  ~https_server();
  https_server(const https_server&) = delete;
  https_server& operator=(const https_server&) = delete;

  uint16_t port() const { return port_; }

  // Parses and checks a certificate chain and its key (the key must match the first certificate);
  // on success new handshakes use it. Returns what is wrong otherwise, and the old one stays.
  std::optional<std::string> set_certificate(const std::string& cert_pem, const std::string& key_pem);

  // The serving certificate's notAfter (seconds since the epoch), for a metric.
  int64_t not_after() const;

  struct state;

 private:
  std::unique_ptr<state> state_;
  uint16_t port_ = 0;
};

}  // namespace headroom::runtime
