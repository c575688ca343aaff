#pragma once

// What the parts of the Actions Service client share, private to adapters/github: URL and time
// helpers (actions_url.cpp), error mapping (actions_errors.cpp), and the request machinery's
// types (actions_client.cpp runs requests and the auth chain; actions_operations.cpp builds them).

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/github/actions_client.hpp"

namespace headroom::github {

namespace detail {

inline constexpr std::string_view actor = "actions_client";
inline constexpr int64_t refresh_margin_s = 60;  // refresh tokens this close to their expiry
inline constexpr std::string_view agents_path = "_apis/distributedtask/pools/0/agents";

bool has_suffix_ci(std::string_view s, std::string_view suffix);
bool equals_ci(std::string_view a, std::string_view b);
std::string join_url(std::string base, std::string_view path);
std::string with_query(std::string url, std::string_view name, std::string_view value);
std::string scale_sets_path(int64_t id, std::string_view tail = {});

// An error with its message trimmed to 400 characters and passed through the secret registry.
actions_error make_error(actions_error::kind k, std::string operation, long status, std::string message,
                         std::string type_name = {});
// The service's answer mapped to an error kind (exception type names first, then the status).
// The kind a status says when the body names no exception (0: no answer).
actions_error::kind kind_of_status(long status);
actions_error error_from_response(const std::string& operation, const http::http_response& r, bool session_op);

}  // namespace detail

struct actions_client::request {
  enum class auth { none, admin, queue, bearer, remote_auth };
  std::string operation;
  std::string method = "GET";
  std::string url;   // absolute, or empty when `path` is relative to the tenant (Actions Service) URL
  std::string path;  // "_apis/…" with its own query; api-version is added
  std::string body;
  auth how = auth::admin;
  std::string token;     // bearer / remote_auth
  session_ptr session;   // queue: its message-queue token; a 401 refreshes it
  std::vector<long> ok;  // success statuses
  std::vector<long> retry_also;  // statuses retried like 5xx (the admin connection retries 401/403)
  bool poll = false;
  bool session_op = false;  // a 404 means the session is gone
  std::vector<std::string> headers;
};

struct actions_client::call : pending_call {
  request req;
  std::function<void(actions_result<http::http_response>)> done;
  http::exchange* io = nullptr;
  std::mutex mu;
  bool cancelled = false, finished = false, has_current = false, reauthed = false;
  http::request_id current = 0;
  int attempts = 0;
  std::chrono::milliseconds delay{0};

  void cancel() override {
    std::lock_guard lock(mu);
    cancelled = true;
    if (has_current)
      io->cancel(current);
  }
  // Delivers once; false when it had already been delivered.
  void deliver(actions_result<http::http_response> r) {
    {
      std::lock_guard lock(mu);
      if (finished)
        return;
      finished = true;
    }
    done(std::move(r));
  }
};

struct actions_client::admin_state {
  std::mutex mu;
  std::string tenant_url, token;
  int64_t exp = 0;
  bool refreshing = false;
  std::vector<std::function<void(std::optional<actions_error>)>> waiters;
  std::atomic<uint64_t> refreshes{0};
};

// list_runners' shared request: the callers waiting for the one in flight, and the last answer.
struct actions_client::runner_list_share {
  std::mutex mu;
  bool in_flight = false;
  std::vector<callback<std::vector<runner_ref>>> waiting;
  std::shared_ptr<const std::vector<runner_ref>> last;  // null until an answer came
  std::chrono::steady_clock::time_point last_at{};
  std::atomic<uint64_t> requests{0};
};

}  // namespace headroom::github
