#pragma once

// The GitHub REST calls of the webhook-driven scheduler (seed 003): job and run info, runner
// groups, org and repo JIT configs, runner lists and deletes, and the App webhook's deliveries
// (listed, and redelivered: GitHub never redelivers a failed delivery by itself; these are in
// rest_app_hook.cpp). Entities are whatever the webhooks name (an organization, or owner/repo for
// a personal account), so one client serves them all.
//
// Blocking: each call waits for its answer over the shared HTTP transport. Only the scheduler's
// reconciler calls it, from its own detached actor thread, where blocking is the point (its
// store calls block too). Credentials: a PAT, or a GitHub App. An App's installation is the
// configured one, or (installation_id 0, an App installed in several organizations) each
// account's own, found once per account (GET /orgs/{org}/installation, /repos/{o}/{r}/installation)
// and cached; an account the App is not installed in is asked again after a minute. With a second
// App for personal accounts (credentials::user_app_id; seed 003 has one App per account kind), a
// repository's installation is looked for with the first App, then with the second; an
// organization's with the first only. Each installation's token is cached until 5 minutes before
// it expires (app_tokens.hpp, one exchange per installation shared with the scale sets' client).
// Every token is a secret.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "adapters/github/actions_client.hpp"
#include "adapters/github/payloads.hpp"
#include "adapters/http/transport.hpp"

namespace headroom::github {

struct rest_error {
  long status = 0;          // 0: no answer (transport), or an answer that did not decode
  std::string operation;    // "generate JIT config for orgs/acme"
  std::string message;      // GitHub's message or the transport's description (redacted)
  bool rate_limited = false;  // GitHub's rate limit (a 429, or a 403 saying so), or still waiting it out
  std::string describe() const;
};

template <class T>
using rest_result = std::variant<T, rest_error>;

struct rest_job {
  int64_t id = 0, run_id = 0;
  std::string status, conclusion, runner_name;  // status: queued | in_progress | completed | waiting
};

struct rest_runner {
  int64_t id = 0;
  std::string name, status;  // status: online | offline
  bool busy = false;
};

struct rest_jit {
  int64_t runner_id = 0;
  std::string encoded_jit_config;
};

enum class runner_removal { removed, already_gone, busy };

// How far back list_app_hook_deliveries reads the App webhook's deliveries (newest first).
struct delivery_window {
  int64_t since_ms = 0;  // those delivered at or after this (ms since the epoch)
  int max_pages = 10;    // of 100 deliveries each: a bound on one look, however long the outage
};

struct hook_delivery_list {
  std::vector<hook_delivery> deliveries;  // newest first, delivered at or after since_ms
  bool complete = true;                   // false: max_pages were read before since_ms was reached
};

enum class redelivery_request { accepted, gone };

// One of the scheduler's GitHub Apps: the first (organizations, and every account without a
// second), or the second, for personal accounts (credentials::user_app_id).
enum class github_app { first, user };  // gone: 404, GitHub has no such delivery (any more)

struct rest_options {
  std::string ca_pem;
  std::chrono::milliseconds timeout{15'000};
  std::string user_agent = "headroom";
  // The Apps' installation tokens (app_tokens.hpp), shared with the process's other GitHub clients;
  // null: the client makes its own.
  std::shared_ptr<app_tokens> tokens;
};

class rest_client {
 public:
  // `api_base`: https://api.github.com, or https://host/api/v3 for GHES (see api_base_of).
  rest_client(std::string api_base, credentials creds, http::exchange& io, rest_options opts = {});

  // nullopt: GitHub answered 404 (the job is gone, or never was).
  rest_result<std::optional<rest_job>> get_job(const std::string& repository, int64_t job_id);
  // The run's status; nullopt on 404.
  rest_result<std::optional<std::string>> run_status(const std::string& repository, int64_t run_id);
  // The id of the org's runner group `name` (`org` "enterprises/<slug>": the enterprise's, for
  // every organization), created when missing: for every repository
  // (visibility all), or, with `repositories` ("owner/repo"), for the organization's listed ones
  // only (visibility selected). An existing group is used as it is (its access is the admins').
  rest_result<int64_t> ensure_runner_group(const std::string& org, const std::string& name,
                                           const std::vector<std::string>& repositories = {});
  rest_result<int64_t> repository_id(const std::string& repository);  // owner/repo → GitHub's id
  // scope: "orgs/<org>" or "repos/<owner>/<repo>". group_id is ignored for repos.
  rest_result<rest_jit> generate_jit_config(const std::string& scope, const std::string& name, int64_t group_id,
                                            const std::vector<std::string>& labels);
  rest_result<std::vector<rest_runner>> list_runners(const std::string& scope);
  // The runners of an organization's (or "enterprises/<slug>"'s) runner group (every page).
  rest_result<std::vector<rest_runner>> list_group_runners(const std::string& org, int64_t group_id);
  // busy: GitHub refused with 422 because the runner is running a job.
  rest_result<runner_removal> remove_runner(const std::string& scope, int64_t runner_id);

  // The GitHub App's webhook deliveries (GET /app/hook/deliveries, as the App: its JWT, not an
  // installation token), 100 a page, following the Link header's cursor until a page reaches back
  // before `window.since_ms`, there is no next page, or `window.max_pages` were read. Needs App
  // credentials. A failed delivery's status is not "OK" (whatever its status_code).
  rest_result<hook_delivery_list> list_app_hook_deliveries(const delivery_window& window, github_app app = github_app::first);
  // Asks GitHub to deliver `delivery_id` again (POST /app/hook/deliveries/{id}/attempts, 202): the
  // same body and X-GitHub-Delivery (guid), as a new delivery with its own id and redelivery: true.
  // Each call is one more delivery: the caller asks once per guid.
  // Delivery ids are the App's own: ask the App that listed it.
  rest_result<redelivery_request> redeliver(int64_t delivery_id, github_app app = github_app::first);
  // The Apps the credentials name, each with its own webhook (none with a PAT).
  std::vector<github_app> apps() const;

  uint64_t requests();  // calls answered so far

  // After GitHub answers 429, or 403 with "rate limit" in its message, every call fails at once
  // (rate_limited, no request sent) until its Retry-After (60 s when it gives none) has passed:
  // hammering a rate-limited API only extends the limit.
  bool rate_limited();

 private:
  struct answer {
    long status = 0;
    std::string body;
    std::string link;  // the Link header (list pages)
  };
  rest_result<answer> call(const std::string& operation, const std::string& method, const std::string& path,
                           const std::string& body = {});
  // The App's own calls (its webhook's deliveries): the App JWT instead of an installation token.
  rest_result<answer> app_call(const std::string& operation, const std::string& method, const std::string& path,
                               github_app app);
  // A rate_limited error while GitHub's rate limit is being waited out; nullopt otherwise.
  std::optional<rest_error> paused(const std::string& operation);
  struct installation_ref {
    github_app app = github_app::first;
    int64_t id = 0;
  };
  // Sends one request with `bearer`; a rate-limit answer starts the pause. `installation`: whose
  // token `bearer` is (none: a PAT or a JWT), forgotten when GitHub answers 401.
  rest_result<answer> send(const std::string& operation, const std::string& method, const std::string& path,
                           const std::string& bearer, const std::string& body, std::optional<installation_ref> installation);
  // GitHub's {"message": "…"} of an error answer, cut short; the raw start of the body otherwise.
  static std::string message_of(const std::string& body);
  // App `app`'s JWT, or why there is none.
  rest_result<std::string> jwt_of(const std::string& operation, github_app app);
  // The App JWT's request (installation lookups, installation tokens).
  rest_result<answer> app_request(const std::string& operation, const std::string& method, const std::string& path,
                                  github_app app);
  // The installation whose token a call to `path` takes.
  rest_result<installation_ref> installation_for(const std::string& path);
  // App `app`'s installation in `key` ("orgs/x", "repos/o/r"): looked up once, cached.
  rest_result<installation_ref> lookup_installation(const std::string& key, github_app app);
  rest_result<std::string> token(installation_ref installation);  // opts_.tokens, for `installation`
  token_endpoint endpoint() const;
  app_identity identity(github_app app) const;
  rest_result<std::vector<rest_runner>> list_runners_at(const std::string& op, const std::string& path);

  std::string api_base_;
  credentials creds_;
  http::exchange& io_;
  rest_options opts_;
  std::shared_ptr<const http::tls_config> tls_;
  std::mutex mu_;
  std::map<std::string, installation_ref> installations_;             // "orgs/x" or "repos/o/r" → installation
  std::map<std::pair<std::string, github_app>, int64_t> not_installed_until_;  // (key, App) → seconds since the epoch
  uint64_t requests_ = 0;
  std::chrono::steady_clock::time_point limited_until_{};
};

// https://github.com (or any github.com URL) → https://api.github.com; another host is GHES → host/api/v3.
std::string api_base_of(std::string_view github_url);
// Where an entity's runners are made: "orgs/<org>" for an organization, "repos/<owner>/<repo>".
std::string scope_of(std::string_view entity);

}  // namespace headroom::github
