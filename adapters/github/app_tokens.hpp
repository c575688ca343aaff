#pragma once

// The one way to a GitHub App installation's token, for every client that needs one: the App's JWT
// (auth.hpp) exchanged at POST /app/installations/{id}/access_tokens. The Actions Service client
// (the scale sets' registration-token step) and the REST client (the runner scheduler) both ask
// here, so a process running both modes with one App makes one exchange per installation and hour,
// and the token's decoding, expiry, refresh margin, retries and secrecy live in one place.
//
// - A token is reused until `refresh_margin_s` before its expires_at (GitHub's lifetime, an hour);
//   then the next caller's get() makes a new one.
// - Callers asking for the same installation while its exchange is in flight wait on that one
//   exchange (no thundering herd at start, when a thousand scale sets want a token at once).
// - Transport failures, 429 and 5xx are retried with exponential backoff (Retry-After honoured),
//   `max_retries` times; then every waiting caller gets the failure and the next get() tries again.
// - forget(): a token GitHub refused before its expiry (401, revoked) is dropped, once, so a newer
//   token another caller already fetched is not thrown away.
// - Every token is registered as a secret before any caller sees it; failures carry
//   GitHub's message, redacted, never key material.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "adapters/http/transport.hpp"

namespace headroom::github {

struct app_identity {
  std::string id;  // the App's id (or client id): the JWT's iss
  std::string private_key_pem;
};

// Where the exchange is made: https://api.github.com, or https://host/api/v3 (GHES), and its TLS.
struct token_endpoint {
  std::string api_base;
  std::shared_ptr<const http::tls_config> tls;
};

struct installation_token {
  std::string token;
  int64_t expires_at = 0;  // seconds since the epoch
};

struct token_failure {
  long status = 0;       // GitHub's answer; 0: no answer (transport), or no JWT could be signed
  bool signing = false;  // the App's key did not sign a JWT: a configuration error, not retried
  std::string message;   // redacted
};

using token_result = std::variant<installation_token, token_failure>;

class app_tokens : public std::enable_shared_from_this<app_tokens> {
 public:
  struct options {
    std::string user_agent = "headroom";
    std::chrono::milliseconds timeout{15'000};
    int max_retries = 4;  // transport failures, 429 and 5xx
    std::chrono::milliseconds retry_base{1'000}, retry_max{30'000};
    int64_t refresh_margin_s = 300;     // a token this close to its expiry is replaced
    std::function<int64_t()> unix_now;  // seconds; the exchange's wall clock when empty
  };

  static std::shared_ptr<app_tokens> make(http::exchange& io, options opts);
  app_tokens(http::exchange& io, options opts);

  // `then` runs once: at once when a fresh token is cached, else on the transport's thread.
  void get(const token_endpoint& at, const app_identity& app, int64_t installation, std::function<void(token_result)> then);
  // The same, waiting for the answer: for callers on their own thread (the REST client). Never
  // from the transport's thread.
  token_result get_blocking(const token_endpoint& at, const app_identity& app, int64_t installation);
  // `token` was refused (401) before its expiry: dropped unless a newer one replaced it already.
  void forget(const token_endpoint& at, const app_identity& app, int64_t installation, const std::string& token);

  uint64_t exchanges() const { return exchanges_.load(); }  // POSTs to access_tokens made, retries included

 private:
  using key = std::tuple<std::string, std::string, int64_t>;  // api base, App id, installation
  struct entry {
    installation_token token;
    bool in_flight = false;
    std::vector<std::function<void(token_result)>> waiters;
  };
  struct attempt_state;

  int64_t now() const;
  void start(key k, token_endpoint at, app_identity app);
  void send(std::shared_ptr<attempt_state> a, std::chrono::milliseconds delay);
  void answered(std::shared_ptr<attempt_state> a, http::http_response r);
  void settle(const key& k, token_result r);

  http::exchange& io_;
  options opts_;
  std::mutex mu_;
  std::map<key, entry> entries_;
  std::atomic<uint64_t> exchanges_{0};
};

}  // namespace headroom::github
