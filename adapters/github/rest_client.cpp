#include "adapters/github/rest_client.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <future>

#include "adapters/github/auth.hpp"
#include "adapters/github/rest_decode.hpp"
#include "adapters/json/ondemand.hpp"
#include "runtime/secrets.hpp"
#include "runtime/clock.hpp"
#include "runtime/rfc3339.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::github {

using namespace rest_detail;

std::string rest_client::message_of(const std::string& body) {
  try {
    od::parser parser;
    simdjson::padded_string padded{body};
    auto doc = parser.iterate(padded);
    std::string out;
    fields(od::value{doc.get_value()}, [&](std::string_view k, od::value x) {
      if (k == "message")
        out = str(x);
    });
    if (!out.empty())
      return runtime::redact(out.substr(0, 300));
  } catch (...) {
  }
  return runtime::redact(body.substr(0, 200));
}

bool rest_client::rate_limited() {
  std::lock_guard lock(mu_);
  return io_.clock().now() < limited_until_;
}

std::string rest_error::describe() const {
  return operation + ": " + (status ? std::to_string(status) + " " : std::string{}) + message;
}

std::string api_base_of(std::string_view url) {
  std::string u{url};
  while (!u.empty() && u.back() == '/')
    u.pop_back();
  const auto scheme_end = u.find("://");
  if (scheme_end == std::string::npos)
    return u;
  const auto host_end = u.find('/', scheme_end + 3);
  const std::string scheme = u.substr(0, scheme_end);
  const std::string host = u.substr(scheme_end + 3, host_end == std::string::npos ? std::string::npos : host_end - scheme_end - 3);
  if (host == "github.com" || host == "www.github.com" || host == "api.github.com")
    return scheme + "://api.github.com";
  if (host.size() > 8 && host.compare(host.size() - 8, 8, ".ghe.com") == 0)
    return scheme + "://api." + host;
  return scheme + "://" + host + "/api/v3";
}

std::string scope_of(std::string_view entity) {
  return entity.find('/') == std::string_view::npos ? "orgs/" + std::string{entity} : "repos/" + std::string{entity};
}

rest_client::rest_client(std::string api_base, credentials creds, http::exchange& io, rest_options opts)
    : api_base_(std::move(api_base)), creds_(std::move(creds)), io_(io), opts_(std::move(opts)) {
  auto tls = std::make_shared<http::tls_config>();
  tls->ca_pem = opts_.ca_pem;
  tls_ = tls;
  runtime::secret_registry::global().add(creds_.personal_access_token);
  runtime::secret_registry::global().add(creds_.private_key_pem);
  runtime::secret_registry::global().add(creds_.user_app_private_key_pem);
  if (!opts_.tokens) {
    app_tokens::options t;
    t.user_agent = opts_.user_agent;
    t.timeout = opts_.timeout;
    opts_.tokens = app_tokens::make(io, std::move(t));
  }
}

std::vector<github_app> rest_client::apps() const {
  std::vector<github_app> out;
  if (!creds_.app_id.empty())
    out.push_back(github_app::first);
  if (!creds_.user_app_id.empty())
    out.push_back(github_app::user);
  return out;
}

rest_result<std::string> rest_client::jwt_of(const std::string& operation, github_app app) {
  const bool user = app == github_app::user;
  const auto& id = user ? creds_.user_app_id : creds_.app_id;
  const auto& key = user ? creds_.user_app_private_key_pem : creds_.private_key_pem;
  if (id.empty() || key.empty())
    return rest_error{0, operation,
                      user ? "no second GitHub App is configured"
                           : "needs the GitHub App's credentials (a personal access token cannot reach an App's webhook)"};
  auto jwt = app_jwt(id, key, io_.clock().wall_ms() / 1000);
  if (auto* e = std::get_if<auth_error>(&jwt))
    return rest_error{0, operation, (user ? "the second GitHub App: " : "") + e->message};
  return std::get<std::string>(jwt);
}

uint64_t rest_client::requests() {
  std::lock_guard lock(mu_);
  return requests_;
}

rest_result<rest_client::answer> rest_client::app_request(const std::string& operation, const std::string& method,
                                                          const std::string& path, github_app app) {
  auto jwt = jwt_of(operation, app);
  if (auto* e = std::get_if<rest_error>(&jwt))
    return *e;
  http::http_request req;
  req.tls = tls_;
  req.method = method;
  req.url = api_base_ + path;
  req.headers = {"Accept: application/vnd.github+json", "Authorization: Bearer " + std::get<std::string>(jwt),
                 "User-Agent: " + opts_.user_agent, "X-GitHub-Api-Version: 2022-11-28"};
  req.timeout = opts_.timeout;
  req.compressed = false;
  auto done = std::make_shared<std::promise<http::http_response>>();
  auto f = done->get_future();
  io_.submit(std::move(req), [done](http::http_response r) { done->set_value(std::move(r)); });
  auto r = f.get();
  if (r.status == 0)
    return rest_error{0, operation, runtime::redact(r.transport_error)};
  return answer{r.status, std::move(r.body), r.link};
}

namespace {

// "/orgs/acme/actions/…" → "orgs/acme"; "/repos/o/r/actions/…" → "repos/o/r"; else "".
std::string account_key(const std::string& path) {
  const auto part = [&](size_t from) { return path.find('/', from); };
  if (path.rfind("/orgs/", 0) == 0)
    return path.substr(1, part(6) == std::string::npos ? std::string::npos : part(6) - 1);
  if (path.rfind("/repos/", 0) == 0) {
    const auto owner_end = part(7);
    if (owner_end == std::string::npos)
      return {};
    const auto repo_end = part(owner_end + 1);
    return path.substr(1, repo_end == std::string::npos ? std::string::npos : repo_end - 1);
  }
  return {};
}

}  // namespace

rest_result<rest_client::installation_ref> rest_client::installation_for(const std::string& path) {
  const auto key = account_key(path);
  const bool repository = key.rfind("repos/", 0) == 0;
  // A fixed installation serves every account but a repository a second App may hold.
  if (creds_.installation_id != 0 && !(repository && !creds_.user_app_id.empty()))
    return installation_ref{github_app::first, creds_.installation_id};
  if (key.empty())
    return rest_error{0, "find the GitHub App's installation", "no organization or repository in " + path};
  {
    std::lock_guard lock(mu_);
    if (auto it = installations_.find(key); it != installations_.end())
      return it->second;
  }
  auto found = lookup_installation(key, github_app::first);
  if (auto* e = std::get_if<rest_error>(&found); e != nullptr && e->status == 404 && repository && !creds_.user_app_id.empty()) {
    found = lookup_installation(key, github_app::user);
    if (auto* u = std::get_if<rest_error>(&found); u != nullptr && u->status == 404)
      return rest_error{404, "find the GitHub Apps' installation for " + key, "neither GitHub App is installed there (asked again after a minute)"};
  }
  if (auto* e = std::get_if<rest_error>(&found))
    return *e;
  std::lock_guard lock(mu_);
  installations_[key] = std::get<installation_ref>(found);
  return found;
}

rest_result<rest_client::installation_ref> rest_client::lookup_installation(const std::string& key, github_app app) {
  const bool user = app == github_app::user;
  const std::string op = std::string{"find the "} + (user ? "second " : "") + "GitHub App's installation for " + key;
  const int64_t now = io_.clock().wall_ms() / 1000;
  {
    std::lock_guard lock(mu_);
    if (auto it = not_installed_until_.find({key, app}); it != not_installed_until_.end() && now < it->second)
      return rest_error{404, op, "the GitHub App is not installed there (asked again after a minute)"};
  }
  auto a = app_request(op, "GET", "/" + key + "/installation", app);
  if (auto* e = std::get_if<rest_error>(&a))
    return *e;
  auto& r = std::get<answer>(a);
  if (r.status == 404) {
    std::lock_guard lock(mu_);
    not_installed_until_[{key, app}] = now + 60;
    return rest_error{404, op, "the GitHub App is not installed there"};
  }
  if (r.status != 200)
    return rest_error{r.status, op, message_of(r.body)};
  auto id = decode<int64_t>(op, r.status, r.body, [](od::value v, int64_t& out) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "id")
        out = num(x);
    });
    if (out <= 0)
      throw failure{"no installation id"};
  });
  if (auto* e = std::get_if<rest_error>(&id))
    return *e;
  return installation_ref{app, std::get<int64_t>(id)};
}

rest_result<std::string> rest_client::token(installation_ref installation) {
  auto r = opts_.tokens->get_blocking(endpoint(), identity(installation.app), installation.id);
  if (auto* f = std::get_if<token_failure>(&r))
    return rest_error{f->status, "get installation access token", f->message};
  return std::get<installation_token>(r).token;
}

token_endpoint rest_client::endpoint() const { return {api_base_, tls_}; }

app_identity rest_client::identity(github_app app) const {
  if (app == github_app::user)
    return {creds_.user_app_id, creds_.user_app_private_key_pem};
  return {creds_.app_id, creds_.private_key_pem};
}

std::optional<rest_error> rest_client::paused(const std::string& operation) {
  std::lock_guard lock(mu_);
  const auto now = io_.clock().now();
  if (now >= limited_until_)
    return std::nullopt;
  const auto left = std::chrono::duration_cast<std::chrono::seconds>(limited_until_ - now).count() + 1;
  return rest_error{429, operation, "not sent: GitHub's rate limit, " + std::to_string(left) + " s left", true};
}

rest_result<rest_client::answer> rest_client::call(const std::string& operation, const std::string& method,
                                                   const std::string& path, const std::string& body) {
  if (auto e = paused(operation))
    return *e;
  std::optional<installation_ref> installation;
  rest_result<std::string> tok = creds_.personal_access_token;
  if (creds_.personal_access_token.empty()) {
    auto inst = installation_for(path);
    if (auto* e = std::get_if<rest_error>(&inst))
      return rest_error{e->status, operation, "no credentials: " + e->operation + ": " + e->message};
    installation = std::get<installation_ref>(inst);
    tok = token(std::get<installation_ref>(inst));
  }
  if (auto* e = std::get_if<rest_error>(&tok))
    return rest_error{e->status, operation, "no credentials: " + e->message};
  return send(operation, method, path, std::get<std::string>(tok), body, installation);
}

rest_result<rest_client::answer> rest_client::send(const std::string& operation, const std::string& method,
                                                   const std::string& path, const std::string& bearer,
                                                   const std::string& body, std::optional<installation_ref> installation) {
  http::http_request req;
  req.tls = tls_;
  req.method = method;
  req.url = api_base_ + path;
  req.headers = {"Accept: application/vnd.github+json", "Authorization: Bearer " + bearer,
                 "User-Agent: " + opts_.user_agent, "X-GitHub-Api-Version: 2022-11-28"};
  if (!body.empty()) {
    req.headers.push_back("Content-Type: application/json");
    req.body = body;
  }
  req.timeout = opts_.timeout;
  req.compressed = false;
  auto done = std::make_shared<std::promise<http::http_response>>();
  auto f = done->get_future();
  io_.submit(std::move(req), [done](http::http_response r) { done->set_value(std::move(r)); });
  auto r = f.get();
  {
    std::lock_guard lock(mu_);
    ++requests_;
  }
  if (r.status == 401 && installation)  // an installation token revoked early: a new one next time
    opts_.tokens->forget(endpoint(), identity(installation->app), installation->id, bearer);
  if (r.status == 0)
    return rest_error{0, operation, runtime::redact(r.transport_error)};
  if (r.status == 429 || (r.status == 403 && message_of(r.body).find("rate limit") != std::string::npos)) {
    long wait_s = 60;
    if (!r.retry_after.empty() && std::all_of(r.retry_after.begin(), r.retry_after.end(), ::isdigit) && r.retry_after.size() < 7)
      wait_s = std::max(1L, std::stol(r.retry_after));
    {
      std::lock_guard lock(mu_);
      limited_until_ = io_.clock().now() + std::chrono::seconds(wait_s);
    }
    return rest_error{r.status, operation, message_of(r.body) + " (pausing GitHub calls for " + std::to_string(wait_s) + " s)", true};
  }
  return answer{r.status, std::move(r.body), r.link};
}

rest_result<std::optional<rest_job>> rest_client::get_job(const std::string& repository, int64_t job_id) {
  const std::string op = "get job " + std::to_string(job_id) + " of " + repository;
  auto a = call(op, "GET", "/repos/" + repository + "/actions/jobs/" + std::to_string(job_id));
  if (auto* e = std::get_if<rest_error>(&a))
    return *e;
  auto& r = std::get<answer>(a);
  if (r.status == 404)
    return std::optional<rest_job>{};
  if (r.status != 200)
    return rest_error{r.status, op, message_of(r.body)};
  auto j = decode<rest_job>(op, r.status, r.body, [](od::value v, rest_job& out) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "id")
        out.id = num(x);
      else if (k == "run_id")
        out.run_id = num(x);
      else if (k == "status")
        out.status = str(x);
      else if (k == "conclusion")
        out.conclusion = str(x);
      else if (k == "runner_name")
        out.runner_name = str(x);
    });
  });
  if (auto* e = std::get_if<rest_error>(&j))
    return *e;
  return std::optional<rest_job>{std::get<rest_job>(j)};
}

rest_result<std::optional<std::string>> rest_client::run_status(const std::string& repository, int64_t run_id) {
  const std::string op = "get run " + std::to_string(run_id) + " of " + repository;
  auto a = call(op, "GET", "/repos/" + repository + "/actions/runs/" + std::to_string(run_id));
  if (auto* e = std::get_if<rest_error>(&a))
    return *e;
  auto& r = std::get<answer>(a);
  if (r.status == 404)
    return std::optional<std::string>{};
  if (r.status != 200)
    return rest_error{r.status, op, message_of(r.body)};
  auto s = decode<std::string>(op, r.status, r.body, [](od::value v, std::string& out) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "status")
        out = str(x);
    });
  });
  if (auto* e = std::get_if<rest_error>(&s))
    return *e;
  return std::optional<std::string>{std::get<std::string>(s)};
}


rest_result<int64_t> rest_client::repository_id(const std::string& repository) {
  const std::string op = "get repository " + repository;
  auto a = call(op, "GET", "/repos/" + repository);
  if (auto* e = std::get_if<rest_error>(&a))
    return *e;
  auto& r = std::get<answer>(a);
  if (r.status != 200)
    return rest_error{r.status, op, message_of(r.body)};
  return decode<int64_t>(op, r.status, r.body, [](od::value v, int64_t& out) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "id")
        out = num(x);
    });
    if (out <= 0)
      throw failure{"no id"};
  });
}

rest_result<int64_t> rest_client::ensure_runner_group(const std::string& org, const std::string& name,
                                                      const std::vector<std::string>& repositories) {
  const std::string op = "find runner group \"" + name + "\" of " + org;
  auto a = call(op, "GET", owner_path(org) + "/actions/runner-groups?per_page=100");
  if (auto* e = std::get_if<rest_error>(&a))
    return *e;
  auto& r = std::get<answer>(a);
  if (r.status != 200)
    return rest_error{r.status, op, message_of(r.body)};
  auto found = decode<int64_t>(op, r.status, r.body, [&](od::value v, int64_t& out) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k != "runner_groups")
        return;
      json::items(x, [&](size_t, od::value g) {
        int64_t id = 0;
        std::string n;
        fields(g, [&](std::string_view k2, od::value y) {
          if (k2 == "id")
            id = num(y);
          else if (k2 == "name")
            n = str(y);
        });
        if (n == name)
          out = id;
      });
    });
  });
  if (auto* e = std::get_if<rest_error>(&found))
    return *e;
  if (std::get<int64_t>(found) != 0)
    return std::get<int64_t>(found);
  const std::string create_op = "create runner group \"" + name + "\" in " + org;
  runtime::json_writer w;
  w.begin_object().field("name", name);
  if (!repositories.empty() && org.rfind("enterprises/", 0) != 0) {  // only the organization's listed repositories may use it
    w.field("visibility", "selected").key("selected_repository_ids").begin_array();
    for (const auto& repo : repositories) {
      if (repo.rfind(org + "/", 0) != 0)
        continue;
      auto id = repository_id(repo);
      if (auto* e = std::get_if<rest_error>(&id))
        return *e;
      w.value(std::get<int64_t>(id));
    }
    w.end_array();
  } else {
    w.field("visibility", "all");
  }
  w.end_object();
  const std::string body = w.take();
  auto c = call(create_op, "POST", owner_path(org) + "/actions/runner-groups", body);
  if (auto* e = std::get_if<rest_error>(&c))
    return *e;
  auto& cr = std::get<answer>(c);
  if (cr.status != 201)
    return rest_error{cr.status, create_op, message_of(cr.body)};
  return decode<int64_t>(create_op, cr.status, cr.body, [](od::value v, int64_t& out) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "id")
        out = num(x);
    });
    if (out == 0)
      throw failure{"no id"};
  });
}

rest_result<rest_jit> rest_client::generate_jit_config(const std::string& scope, const std::string& name, int64_t group_id,
                                                       const std::vector<std::string>& labels) {
  const std::string op = "generate JIT config for " + scope;
  runtime::json_writer w;
  w.begin_object().field("name", name).key("labels").strings(labels).field("work_folder", "_work");
  if (scope.rfind("repos/", 0) != 0)  // organizations and enterprises have runner groups
    w.field("runner_group_id", group_id);
  w.end_object();
  const std::string body = w.take();
  auto a = call(op, "POST", "/" + scope + "/actions/runners/generate-jitconfig", body);
  if (auto* e = std::get_if<rest_error>(&a))
    return *e;
  auto& r = std::get<answer>(a);
  if (r.status != 201)
    return rest_error{r.status, op, message_of(r.body)};
  auto out = decode<rest_jit>(op, r.status, r.body, [](od::value v, rest_jit& j) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "encoded_jit_config") {
        j.encoded_jit_config = str(x);
      } else if (k == "runner") {
        fields(x, [&](std::string_view k2, od::value y) {
          if (k2 == "id")
            j.runner_id = num(y);
        });
      }
    });
    if (j.encoded_jit_config.empty() || j.runner_id == 0)
      throw failure{"runner.id or encoded_jit_config missing"};
  });
  if (auto* j = std::get_if<rest_jit>(&out))
    runtime::secret_registry::global().add_ephemeral(j->encoded_jit_config);  // single use
  return out;
}

}  // namespace headroom::github
