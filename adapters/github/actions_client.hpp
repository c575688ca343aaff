#pragma once

// The GitHub Actions scale-set protocol client (../shared/reference/actions-scaleset-protocol.md):
// the auth chain (App JWT or PAT → registration token → admin connection, refreshed before the
// admin token's exp), scale sets, runner groups, message sessions, the long poll with
// X-ScaleSetMaxCapacity (cancellable mid-poll), acks, job acquisition, JIT configs and runners.
//
// Asynchronous over the shared HTTP transport: callbacks run on its I/O thread and must be short
// (hand the result to an actor). No call blocks a thread. Secrets (private key, PAT, every token
// and JIT config) are registered with the secret registry the moment they are read or received.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "adapters/github/app_tokens.hpp"
#include "adapters/github/payloads.hpp"
#include "adapters/http/transport.hpp"

namespace headroom::github {

// https://github.com/{org} | /{owner}/{repo} | /enterprises/{enterprise}; a host that is not
// github.com (or *.ghe.com) is GitHub Enterprise Server, whose API lives under /api/v3.
struct config_url {
  enum class scope { organization, repository, enterprise };
  std::string url;       // as configured, without trailing slashes
  std::string api_base;  // https://api.github.com | https://host/api/v3
  scope level = scope::organization;
  std::string organization, repository, enterprise;

  std::string registration_token_path() const;
};
std::variant<config_url, std::string> parse_config_url(std::string_view url);

// Exactly one of: a personal access token, or a GitHub App (id, installation, private key).
struct credentials {
  std::string personal_access_token;
  std::string app_id;
  int64_t installation_id = 0;
  std::string private_key_pem;
  // The scheduler's second App, for personal accounts (seed 003 has one App per account kind).
  // Its installations are always found per account; empty: the first App serves every account.
  std::string user_app_id;
  std::string user_app_private_key_pem;
};

struct actions_error {
  enum class kind {
    transport,          // no response (refused, TLS verification failed, timeout)
    cancelled,          // the caller cancelled (a long poll re-issued with a new capacity)
    unauthorized,       // 401 that a token refresh did not cure
    forbidden,          // 403
    not_found,          // 404
    session_conflict,   // 409: another listener holds the scale set's session
    session_not_found,  // 404 on a session: create a new one
    runner_not_found,   // AgentNotFoundException
    runner_exists,      // AgentExistsException
    job_still_running,  // JobStillRunningException: leave the runner alone
    bad_request,        // 400 (a "capacity error" is one)
    conflict,           // other 409s
    server,             // 5xx after every retry
    bad_response,       // a success status whose body did not decode
    config,             // the configuration cannot work (bad URL, unreadable key)
    unexpected,
  };
  kind what = kind::unexpected;
  std::string operation;  // "create session for scale set 7"
  long status = 0;
  std::string type_name;  // the service's exception type, if it sent one
  std::string message;    // the service's message or the transport's description (redacted)

  // "create session for scale set 7: 409 RunnerScaleSetSessionConflictException: …"
  std::string describe() const;
};
std::string_view to_string(actions_error::kind k);

template <class T>
using actions_result = std::variant<T, actions_error>;
struct done {};  // success without a value

struct actions_options {
  std::string ca_pem;  // trust this CA bundle instead of the system store (GHES, test peers)
  int max_retries = 4;  // 5xx, 429 and transport failures, like the scaleset library
  std::chrono::milliseconds retry_base{1'000}, retry_max{30'000};
  std::chrono::milliseconds request_timeout{30'000};
  // The service holds a poll about 50 s; one unanswered 10 s past that is hung. A poll is never
  // retried here: its failure goes to the listener at once, which backs off, says so (log, metric,
  // the ScaleSet's SessionOpen condition) and polls again. Retried here, a service that accepted
  // polls and never answered was seen only after five timeouts, 394 s (#61).
  std::chrono::milliseconds poll_timeout{60'000};
  // 409 on session create: another listener (or a crashed one of ours whose session has not
  // expired yet) holds it. Bounded retries, then the error: never a crash loop.
  int session_conflict_retries = 10;
  std::chrono::milliseconds session_conflict_backoff{30'000};
  std::string user_agent = "headroom";
  std::function<int64_t()> unix_now;  // seconds; the wall clock when empty
  // list_runners: the pool's whole list is shared by every scale set's caller; an answer this
  // young is handed to a new caller instead of another request (0: always ask).
  std::chrono::milliseconds runner_list_reuse{10'000};
  // The App's installation tokens (app_tokens.hpp), shared with the process's other GitHub clients;
  // null: the client makes its own.
  std::shared_ptr<app_tokens> tokens;
};

// One message session (the service's), shared by the calls that use it: a 401 refreshes its
// message-queue token in place.
class session_handle {
 public:
  explicit session_handle(message_session s) : s_(std::move(s)) {}
  message_session get() const {
    std::lock_guard lock(mu_);
    return s_;
  }
  void set(message_session s) {
    std::lock_guard lock(mu_);
    s_ = std::move(s);
  }

 private:
  mutable std::mutex mu_;
  message_session s_;
};
using session_ptr = std::shared_ptr<session_handle>;

// A call in flight; cancel() ends it (and any retry it was waiting for) with kind::cancelled.
class pending_call {
 public:
  virtual ~pending_call() = default;
  virtual void cancel() = 0;
};

class actions_client : public std::enable_shared_from_this<actions_client> {
 public:
  template <class T>
  using callback = std::function<void(actions_result<T>)>;

  static std::shared_ptr<actions_client> make(config_url where, credentials creds, http::exchange& io,
                                              actions_options opts = {});

  void get_runner_group(std::string name, callback<std::optional<runner_group>> cb);
  void get_scale_set(int64_t runner_group_id, std::string name, callback<std::optional<runner_scale_set>> cb);
  void get_scale_set_by_id(int64_t id, callback<runner_scale_set> cb);
  void create_scale_set(runner_scale_set set, callback<runner_scale_set> cb);
  void update_scale_set(int64_t id, runner_scale_set set, callback<runner_scale_set> cb);
  void delete_scale_set(int64_t id, callback<done> cb);

  void create_session(int64_t scale_set_id, std::string owner, callback<session_ptr> cb);
  void refresh_session(session_ptr s, callback<done> cb);  // 404 → session_not_found
  void delete_session(session_ptr s, callback<done> cb);

  // The long poll. nullopt = 202, nothing to say. A 401 refreshes the session and retries once.
  std::shared_ptr<pending_call> get_message(session_ptr s, int64_t last_message_id, int64_t max_capacity,
                                            callback<std::optional<session_message>> cb);
  void delete_message(session_ptr s, int64_t message_id, callback<done> cb);
  void acquire_jobs(session_ptr s, std::vector<int64_t> runner_request_ids, callback<std::vector<int64_t>> cb);

  void generate_jit_config(int64_t scale_set_id, std::string runner_name, std::string work_folder,
                           callback<jit_config> cb);
  void get_runner(int64_t runner_id, callback<runner_ref> cb);  // runner_not_found when absent
  void get_runner_by_name(std::string name, callback<std::optional<runner_ref>> cb);
  // Every runner of the pool (the agents list without a name filter), each with its scale set id.
  // One request serves every caller that asks while it is in flight, and its answer serves callers
  // for `runner_list_reuse` after it: a thousand scale sets sweeping every 30 s would otherwise each
  // fetch the same whole list (33 requests a second, each growing with the pool).
  void list_runners(callback<std::vector<runner_ref>> cb);
  uint64_t runner_list_requests() const;  // requests sent for list_runners (tests)
  void remove_runner(int64_t runner_id, callback<done> cb);

  // Requests whose admin token was obtained by running the whole chain, for tests and metrics.
  uint64_t admin_refreshes() const;

  struct request;  // one logical call (internal)
  struct call;
  actions_client(config_url where, credentials creds, http::exchange& io, actions_options opts);

 private:
  struct admin_state;
  struct runner_list_share;
  void fetch_runner_list();
  void run(std::shared_ptr<call> c);
  void attempt(std::shared_ptr<call> c);
  void finish(std::shared_ptr<call> c, http::http_response r);
  void with_admin(std::function<void(std::optional<actions_error>)> then);
  void refresh_chain();
  void admin_ready(std::optional<actions_error> err);
  int64_t now() const;

  config_url where_;
  credentials creds_;
  http::exchange& io_;
  actions_options opts_;
  std::shared_ptr<const http::tls_config> tls_;
  std::unique_ptr<admin_state> admin_;
  std::shared_ptr<runner_list_share> runner_list_;
};

}  // namespace headroom::github
