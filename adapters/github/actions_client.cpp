#include "adapters/github/actions_client.hpp"

#include <algorithm>
#include <atomic>
#include <ctime>

#include "adapters/github/auth.hpp"
#include "runtime/log.hpp"
#include "runtime/secrets.hpp"

namespace headroom::github {

namespace {

constexpr std::string_view actor = "actions_client";
constexpr int64_t refresh_margin_s = 60;  // refresh tokens this close to their expiry

bool has_suffix_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size())
    return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i])
      return false;
  return true;
}

bool equals_ci(std::string_view a, std::string_view b) {
  return a.size() == b.size() && has_suffix_ci(a, b);
}

// "2026-11-22T07:00:00Z" (GitHub's expires_at) → unix seconds; 0 when it is not that form.
int64_t parse_rfc3339(std::string_view t) {
  std::tm tm{};
  if (t.size() < 19 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') || t[13] != ':' || t[16] != ':')
    return 0;
  auto num = [&](size_t at, size_t n) {
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9')
        return -1;
      v = v * 10 + (t[i] - '0');
    }
    return v;
  };
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(5, 2) - 1;
  tm.tm_mday = num(8, 2);
  tm.tm_hour = num(11, 2);
  tm.tm_min = num(14, 2);
  tm.tm_sec = num(17, 2);
  if (tm.tm_year < 0 || tm.tm_mon < 0 || tm.tm_mday < 0 || tm.tm_hour < 0 || tm.tm_min < 0 || tm.tm_sec < 0)
    return 0;
  int64_t at = timegm(&tm);
  std::string_view rest = t.substr(19);
  while (!rest.empty() && (rest.front() == '.' || (rest.front() >= '0' && rest.front() <= '9')))
    rest.remove_prefix(1);
  if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {  // an offset
    int64_t off = ((rest[1] - '0') * 10 + (rest[2] - '0')) * 3600 + ((rest[4] - '0') * 10 + (rest[5] - '0')) * 60;
    at += rest[0] == '+' ? -off : off;
  }
  return at;
}

std::string join_url(std::string base, std::string_view path) {
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  while (!path.empty() && path.front() == '/')
    path.remove_prefix(1);
  return base + "/" + std::string{path};
}

std::string with_query(std::string url, std::string_view name, std::string_view value) {
  url += url.find('?') == std::string::npos ? '?' : '&';
  url += name;
  url += '=';
  url += http::url_encode(value);
  return url;
}

std::string scale_sets_path(int64_t id, std::string_view tail = {}) {
  std::string p = "_apis/runtime/runnerscalesets";
  if (id != 0)
    p += "/" + std::to_string(id);
  if (!tail.empty())
    p += "/" + std::string{tail};
  return p;
}

constexpr std::string_view agents_path = "_apis/distributedtask/pools/0/agents";

}  // namespace

// ---- config URL ----

std::variant<config_url, std::string> parse_config_url(std::string_view url) {
  std::string u{url};
  while (!u.empty() && u.back() == '/')
    u.pop_back();
  const auto scheme_end = u.find("://");
  if (scheme_end == std::string::npos || (u.compare(0, scheme_end, "https") != 0 && u.compare(0, scheme_end, "http") != 0))
    return "githubConfigUrl \"" + u + "\": must start with https:// (or http:// for a test service)";
  const auto host_end = u.find('/', scheme_end + 3);
  const std::string scheme = u.substr(0, scheme_end);
  const std::string host = u.substr(scheme_end + 3, host_end == std::string::npos ? std::string::npos : host_end - scheme_end - 3);
  if (host.empty())
    return "githubConfigUrl \"" + u + "\": has no host";
  std::vector<std::string> parts;
  if (host_end != std::string::npos) {
    std::string_view path{u};
    path.remove_prefix(host_end + 1);
    while (!path.empty()) {
      const auto slash = path.find('/');
      parts.emplace_back(path.substr(0, slash));
      if (slash == std::string_view::npos)
        break;
      path.remove_prefix(slash + 1);
    }
  }
  config_url c;
  c.url = u;
  if (parts.size() == 1 && !parts[0].empty()) {
    c.level = config_url::scope::organization;
    c.organization = parts[0];
  } else if (parts.size() == 2 && equals_ci(parts[0], "enterprises") && !parts[1].empty()) {
    c.level = config_url::scope::enterprise;
    c.enterprise = parts[1];
  } else if (parts.size() == 2 && !parts[0].empty() && !parts[1].empty()) {
    c.level = config_url::scope::repository;
    c.organization = parts[0];
    c.repository = parts[1];
  } else {
    return "githubConfigUrl \"" + u + "\": must name an organization, a repository or an enterprise";
  }
  const bool hosted = equals_ci(host, "github.com") || equals_ci(host, "www.github.com") ||
                      equals_ci(host, "github.localhost") || has_suffix_ci(host, ".ghe.com");
  if (!hosted)
    c.api_base = scheme + "://" + host + "/api/v3";
  else if (equals_ci(host, "www.github.com"))
    c.api_base = scheme + "://api.github.com";
  else
    c.api_base = scheme + "://api." + host;
  return c;
}

std::string config_url::registration_token_path() const {
  switch (level) {
    case scope::organization:
      return "/orgs/" + organization + "/actions/runners/registration-token";
    case scope::enterprise:
      return "/enterprises/" + enterprise + "/actions/runners/registration-token";
    case scope::repository:
      return "/repos/" + organization + "/" + repository + "/actions/runners/registration-token";
  }
  return {};
}

// ---- errors ----

std::string_view to_string(actions_error::kind k) {
  using K = actions_error::kind;
  switch (k) {
    case K::transport: return "transport";
    case K::cancelled: return "cancelled";
    case K::unauthorized: return "unauthorized";
    case K::forbidden: return "forbidden";
    case K::not_found: return "not_found";
    case K::session_conflict: return "session_conflict";
    case K::session_not_found: return "session_not_found";
    case K::runner_not_found: return "runner_not_found";
    case K::runner_exists: return "runner_exists";
    case K::job_still_running: return "job_still_running";
    case K::bad_request: return "bad_request";
    case K::conflict: return "conflict";
    case K::server: return "server";
    case K::bad_response: return "bad_response";
    case K::config: return "config";
    case K::unexpected: return "unexpected";
  }
  return "unexpected";
}

std::string actions_error::describe() const {
  std::string out = operation + ": ";
  if (status != 0)
    out += std::to_string(status) + " ";
  if (!type_name.empty()) {
    const auto dot = type_name.rfind('.');
    out += (dot == std::string::npos ? type_name : type_name.substr(dot + 1)) + ": ";
  }
  out += message.empty() ? std::string{to_string(what)} : message;
  return runtime::redact(out);
}

namespace {

actions_error make_error(actions_error::kind k, std::string operation, long status, std::string message,
                         std::string type_name = {}) {
  if (message.size() > 400)
    message = message.substr(0, 400) + "…";
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r' || message.back() == ' '))
    message.pop_back();
  return actions_error{k, std::move(operation), status, std::move(type_name), runtime::redact(message)};
}

actions_error error_from_response(const std::string& operation, const http::http_response& r, bool session_op) {
  using K = actions_error::kind;
  const std::string_view body = strip_bom(r.body);
  service_exception exc;
  if (!body.empty() && body.front() == '{')
    exc = decode_exception(body);
  const std::string message = exc.message.empty() ? std::string{body} : exc.message;
  const auto& t = exc.type_name;
  auto has = [&](std::string_view s) { return t.find(s) != std::string::npos; };
  K k;
  if (has("AgentExistsException"))
    k = K::runner_exists;
  else if (has("AgentNotFoundException"))
    k = K::runner_not_found;
  else if (has("JobStillRunningException"))
    k = K::job_still_running;
  else if (has("SessionConflict") || (r.status == 409 && message.find("active session") != std::string::npos))
    k = K::session_conflict;
  else if (has("SessionNotFound") || (r.status == 404 && session_op))
    k = K::session_not_found;
  else if (r.status == 400)
    k = K::bad_request;
  else if (r.status == 401)
    k = K::unauthorized;
  else if (r.status == 403)
    k = K::forbidden;
  else if (r.status == 404)
    k = K::not_found;
  else if (r.status == 409)
    k = K::conflict;
  else if (r.status >= 500)
    k = K::server;
  else
    k = K::unexpected;
  return make_error(k, operation, r.status, message, t);
}

}  // namespace

// ---- the request machinery ----

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
  http::transport* io = nullptr;
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
  std::string installation_token;
  int64_t installation_exp = 0;
  bool refreshing = false;
  std::vector<std::function<void(std::optional<actions_error>)>> waiters;
  std::atomic<uint64_t> refreshes{0};
};

actions_client::actions_client(config_url where, credentials creds, http::transport& io, actions_options opts)
    : where_(std::move(where)), creds_(std::move(creds)), io_(io), opts_(std::move(opts)),
      admin_(std::make_unique<admin_state>()) {
  auto& secrets = runtime::secret_registry::global();
  secrets.add(creds_.personal_access_token);
  secrets.add(creds_.private_key_pem);
  auto tls = std::make_shared<http::tls_config>();
  tls->ca_pem = opts_.ca_pem;
  tls_ = std::move(tls);
}

std::shared_ptr<actions_client> actions_client::make(config_url where, credentials creds, http::transport& io,
                                                     actions_options opts) {
  return std::make_shared<actions_client>(std::move(where), std::move(creds), io, std::move(opts));
}

int64_t actions_client::now() const {
  if (opts_.unix_now)
    return opts_.unix_now();
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t actions_client::admin_refreshes() const { return admin_->refreshes.load(); }

void actions_client::run(std::shared_ptr<call> c) {
  c->io = &io_;
  if (c->req.url.empty() || c->req.how == request::auth::admin) {
    auto self = shared_from_this();
    with_admin([self, c](std::optional<actions_error> err) {
      if (err) {
        auto e = *err;
        e.operation = c->req.operation + ": " + e.operation;
        c->deliver(std::move(e));
      } else {
        self->attempt(c);
      }
    });
    return;
  }
  attempt(c);
}

void actions_client::attempt(std::shared_ptr<call> c) {
  http::http_request r;
  r.tls = tls_;
  r.method = c->req.method;
  r.body = c->req.body;
  r.timeout = c->req.poll ? opts_.poll_timeout : opts_.request_timeout;
  r.headers = c->req.headers;
  r.headers.push_back("User-Agent: " + opts_.user_agent);
  if (!c->req.body.empty() || c->req.how == request::auth::admin)
    r.headers.emplace_back("Content-Type: application/json");
  std::string admin_token;
  if (c->req.url.empty()) {
    std::lock_guard lock(admin_->mu);
    r.url = join_url(admin_->tenant_url, c->req.path);
    admin_token = admin_->token;
    r.url = with_query(std::move(r.url), "api-version", "6.0-preview");
  } else {
    r.url = c->req.url;
  }
  switch (c->req.how) {
    case request::auth::none:
      break;
    case request::auth::admin:
      r.headers.push_back("Authorization: Bearer " + admin_token);
      break;
    case request::auth::queue:
      r.headers.push_back("Authorization: Bearer " + c->req.session->get().message_queue_access_token);
      break;
    case request::auth::bearer:
      r.headers.push_back("Authorization: Bearer " + c->req.token);
      break;
    case request::auth::remote_auth:
      r.headers.push_back("Authorization: RemoteAuth " + c->req.token);
      break;
  }
  std::unique_lock lock(c->mu);
  if (c->cancelled) {
    lock.unlock();
    c->deliver(make_error(actions_error::kind::cancelled, c->req.operation, 0, "cancelled"));
    return;
  }
  r.delay = c->delay;
  ++c->attempts;
  auto self = shared_from_this();
  c->has_current = true;
  c->current = io_.submit(std::move(r), [self, c](http::http_response resp) { self->finish(c, std::move(resp)); });
}

void actions_client::finish(std::shared_ptr<call> c, http::http_response r) {
  using K = actions_error::kind;
  {
    std::lock_guard lock(c->mu);
    c->has_current = false;
    if (c->cancelled || r.cancelled) {
      c->cancelled = true;
    }
  }
  const auto& req = c->req;
  if (r.cancelled) {
    c->deliver(make_error(K::cancelled, req.operation, 0, "cancelled"));
    return;
  }
  const bool retry_status = r.status == 0 || r.status == 429 || r.status >= 500 ||
                            std::find(req.retry_also.begin(), req.retry_also.end(), r.status) != req.retry_also.end();
  if (retry_status && c->attempts <= opts_.max_retries) {
    auto wait = opts_.retry_base * (1 << std::min(c->attempts - 1, 10));
    if (!r.retry_after.empty() && std::all_of(r.retry_after.begin(), r.retry_after.end(), ::isdigit) &&
        r.retry_after.size() < 6)
      wait = std::max(wait, std::chrono::milliseconds{std::stoll(r.retry_after) * 1000});
    c->delay = std::min(wait, opts_.retry_max);
    runtime::log::debug(actor, "retrying", {{"operation", req.operation}, {"status", r.status},
                                            {"attempt", c->attempts}, {"delay_ms", c->delay.count()}});
    attempt(c);
    return;
  }
  c->delay = std::chrono::milliseconds{0};
  if (r.status == 0) {
    c->deliver(make_error(K::transport, req.operation, 0, r.transport_error));
    return;
  }
  if (std::find(req.ok.begin(), req.ok.end(), r.status) != req.ok.end()) {
    c->deliver(std::move(r));
    return;
  }
  if (r.status == 401 && !c->reauthed && req.how == request::auth::admin) {
    // The admin token was refused before its exp (revoked, or the service restarted): run the
    // chain again once.
    c->reauthed = true;
    {
      std::lock_guard lock(admin_->mu);
      admin_->exp = 0;
    }
    run(c);
    return;
  }
  if (r.status == 401 && !c->reauthed && req.how == request::auth::queue) {
    // The message-queue token expired: refresh the session and retry once (as the library does).
    c->reauthed = true;
    auto self = shared_from_this();
    refresh_session(req.session, [self, c](actions_result<done> res) {
      if (auto* e = std::get_if<actions_error>(&res)) {
        auto err = *e;
        err.operation = c->req.operation + ": " + err.operation;
        c->deliver(std::move(err));
      } else {
        self->attempt(c);
      }
    });
    return;
  }
  c->deliver(error_from_response(req.operation, r, req.session_op));
}

// ---- the auth chain ----

void actions_client::with_admin(std::function<void(std::optional<actions_error>)> then) {
  std::unique_lock lock(admin_->mu);
  if (!admin_->token.empty() && admin_->exp - now() > refresh_margin_s) {
    lock.unlock();
    then(std::nullopt);
    return;
  }
  admin_->waiters.push_back(std::move(then));
  if (admin_->refreshing)
    return;
  admin_->refreshing = true;
  lock.unlock();
  refresh_chain();
}

void actions_client::admin_ready(std::optional<actions_error> err) {
  std::vector<std::function<void(std::optional<actions_error>)>> waiters;
  {
    std::lock_guard lock(admin_->mu);
    admin_->refreshing = false;
    waiters.swap(admin_->waiters);
  }
  if (err)
    runtime::log::warn(actor, "could not obtain an Actions Service connection", {{"error", err->describe()}});
  for (auto& w : waiters)
    w(err);
}

void actions_client::refresh_chain() {
  auto self = shared_from_this();
  using K = actions_error::kind;

  // Step 3: the admin connection (tenant URL + admin JWT), retried on 401/403 like the library.
  auto admin_step = [self](std::string registration_token) {
    auto c = std::make_shared<call>();
    c->req.operation = "get Actions Service admin connection";
    c->req.method = "POST";
    c->req.url = self->where_.api_base + "/actions/runner-registration";
    c->req.how = request::auth::remote_auth;
    c->req.token = std::move(registration_token);
    c->req.body = "{\"url\":" + runtime::json_escape(self->where_.url) + ",\"runner_event\":\"register\"}";
    c->req.ok = {200, 201};
    c->req.retry_also = {401, 403};
    c->done = [self, op = c->req.operation](actions_result<http::http_response> res) {
      if (auto* e = std::get_if<actions_error>(&res))
        return self->admin_ready(*e);
      auto conn = decode_admin_connection(std::get<http::http_response>(res).body);
      if (auto* f = std::get_if<decode_failure>(&conn))
        return self->admin_ready(make_error(K::bad_response, op, 200, f->message));
      auto& a = std::get<admin_connection>(conn);
      const int64_t exp = jwt_expiry(a.token);
      if (exp == 0)
        return self->admin_ready(make_error(K::bad_response, op, 200, "the admin token is not a JWT with exp"));
      {
        std::lock_guard lock(self->admin_->mu);
        self->admin_->tenant_url = a.url;
        self->admin_->token = a.token;
        self->admin_->exp = exp;
      }
      self->admin_->refreshes.fetch_add(1);
      runtime::log::info(actor, "Actions Service connection refreshed",
                         {{"service", a.url}, {"expires_in_s", exp - self->now()}});
      self->admin_ready(std::nullopt);
    };
    self->attempt(c);
  };

  // Step 2: a registration token for the config URL's scope.
  auto registration_step = [self, admin_step](std::string bearer) {
    auto c = std::make_shared<call>();
    c->req.operation = "get runner registration token";
    c->req.method = "POST";
    c->req.url = self->where_.api_base + self->where_.registration_token_path();
    c->req.how = request::auth::bearer;
    c->req.token = std::move(bearer);
    c->req.headers = {"Accept: application/vnd.github+json"};
    c->req.ok = {201};
    c->done = [self, admin_step, op = c->req.operation](actions_result<http::http_response> res) {
      if (auto* e = std::get_if<actions_error>(&res))
        return self->admin_ready(*e);
      auto tok = decode_issued_token(std::get<http::http_response>(res).body);
      if (auto* f = std::get_if<decode_failure>(&tok))
        return self->admin_ready(make_error(K::bad_response, op, 201, f->message));
      admin_step(std::get<issued_token>(tok).token);
    };
    self->attempt(c);
  };

  if (!creds_.personal_access_token.empty()) {
    registration_step(creds_.personal_access_token);
    return;
  }
  {
    std::unique_lock lock(admin_->mu);
    if (!admin_->installation_token.empty() && admin_->installation_exp - now() > refresh_margin_s) {
      auto tok = admin_->installation_token;
      lock.unlock();
      registration_step(std::move(tok));
      return;
    }
  }
  // Step 1: an installation token from the App's JWT.
  auto jwt = app_jwt(creds_.app_id, creds_.private_key_pem, now());
  if (auto* e = std::get_if<auth_error>(&jwt))
    return admin_ready(make_error(K::config, "sign GitHub App JWT", 0, e->message));
  auto c = std::make_shared<call>();
  c->req.operation = "get installation access token";
  c->req.method = "POST";
  c->req.url = where_.api_base + "/app/installations/" + std::to_string(creds_.installation_id) + "/access_tokens";
  c->req.how = request::auth::bearer;
  c->req.token = std::get<std::string>(jwt);
  c->req.headers = {"Accept: application/vnd.github+json"};
  c->req.ok = {201};
  c->done = [self, registration_step, op = c->req.operation](actions_result<http::http_response> res) {
    if (auto* e = std::get_if<actions_error>(&res))
      return self->admin_ready(*e);
    auto tok = decode_issued_token(std::get<http::http_response>(res).body);
    if (auto* f = std::get_if<decode_failure>(&tok))
      return self->admin_ready(make_error(K::bad_response, op, 201, f->message));
    auto& t = std::get<issued_token>(tok);
    int64_t exp = parse_rfc3339(t.expires_at);
    if (exp == 0)
      exp = self->now() + 3600;  // GitHub's documented lifetime when expires_at is unreadable
    {
      std::lock_guard lock(self->admin_->mu);
      self->admin_->installation_token = t.token;
      self->admin_->installation_exp = exp;
    }
    registration_step(t.token);
  };
  attempt(c);
}

// ---- operations ----

namespace {

// Runs a request and decodes its body with `decode`; decode failures are bad_response errors.
template <class T, class Decode>
std::function<void(actions_result<http::http_response>)> decoding(std::string operation,
                                                                  std::function<void(actions_result<T>)> cb,
                                                                  Decode decode) {
  return [operation = std::move(operation), cb = std::move(cb), decode](actions_result<http::http_response> res) {
    if (auto* e = std::get_if<actions_error>(&res))
      return cb(std::move(*e));
    auto& r = std::get<http::http_response>(res);
    std::variant<T, std::string> v = decode(r);
    if (auto* msg = std::get_if<std::string>(&v))
      return cb(make_error(actions_error::kind::bad_response, operation, r.status, *msg));
    cb(std::move(std::get<T>(v)));
  };
}

template <class T>
std::variant<T, std::string> unwrap(decoded<T> d) {
  if (auto* f = std::get_if<decode_failure>(&d))
    return f->message;
  return std::move(std::get<T>(d));
}

}  // namespace

void actions_client::get_runner_group(std::string name, callback<std::optional<runner_group>> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get runner group \"" + name + "\"";
  c->req.path = "_apis/runtime/runnergroups/?groupName=" + http::url_encode(name);
  c->req.ok = {200};
  c->done = decoding<std::optional<runner_group>>(
      c->req.operation, std::move(cb), [](const http::http_response& r) -> std::variant<std::optional<runner_group>, std::string> {
        auto list = unwrap(decode_runner_group_list(r.body));
        if (auto* msg = std::get_if<std::string>(&list))
          return *msg;
        auto& groups = std::get<std::vector<runner_group>>(list);
        if (groups.empty())
          return std::optional<runner_group>{};
        return std::optional<runner_group>{groups.front()};
      });
  run(c);
}

void actions_client::get_scale_set(int64_t runner_group_id, std::string name,
                                   callback<std::optional<runner_scale_set>> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get scale set \"" + name + "\"";
  c->req.path = scale_sets_path(0) + "?runnerGroupId=" + std::to_string(runner_group_id) +
                "&name=" + http::url_encode(name);
  c->req.ok = {200};
  c->done = decoding<std::optional<runner_scale_set>>(
      c->req.operation, std::move(cb),
      [](const http::http_response& r) -> std::variant<std::optional<runner_scale_set>, std::string> {
        auto list = unwrap(decode_scale_set_list(r.body));
        if (auto* msg = std::get_if<std::string>(&list))
          return *msg;
        auto& sets = std::get<std::vector<runner_scale_set>>(list);
        if (sets.size() > 1)
          return "more than one scale set has this name";
        if (sets.empty())
          return std::optional<runner_scale_set>{};
        return std::optional<runner_scale_set>{std::move(sets.front())};
      });
  run(c);
}

void actions_client::get_scale_set_by_id(int64_t id, callback<runner_scale_set> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get scale set " + std::to_string(id);
  c->req.path = scale_sets_path(id);
  c->req.ok = {200};
  c->done = decoding<runner_scale_set>(c->req.operation, std::move(cb),
                                       [](const http::http_response& r) { return unwrap(decode_scale_set(r.body)); });
  run(c);
}

void actions_client::create_scale_set(runner_scale_set set, callback<runner_scale_set> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "create scale set \"" + set.name + "\"";
  c->req.method = "POST";
  c->req.path = scale_sets_path(0);
  c->req.body = encode_scale_set(set);
  c->req.ok = {200, 201};
  c->done = decoding<runner_scale_set>(c->req.operation, std::move(cb),
                                       [](const http::http_response& r) { return unwrap(decode_scale_set(r.body)); });
  run(c);
}

void actions_client::update_scale_set(int64_t id, runner_scale_set set, callback<runner_scale_set> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "update scale set " + std::to_string(id);
  c->req.method = "PATCH";
  c->req.path = scale_sets_path(id);
  c->req.body = encode_scale_set(set);
  c->req.ok = {200};
  c->done = decoding<runner_scale_set>(c->req.operation, std::move(cb),
                                       [](const http::http_response& r) { return unwrap(decode_scale_set(r.body)); });
  run(c);
}

void actions_client::delete_scale_set(int64_t id, callback<done> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "delete scale set " + std::to_string(id);
  c->req.method = "DELETE";
  c->req.path = scale_sets_path(id);
  c->req.ok = {204};
  c->done = decoding<done>(c->req.operation, std::move(cb),
                           [](const http::http_response&) -> std::variant<done, std::string> { return done{}; });
  run(c);
}

void actions_client::create_session(int64_t scale_set_id, std::string owner, callback<session_ptr> cb) {
  auto self = shared_from_this();
  auto tries = std::make_shared<int>(0);
  auto attempt_create = std::make_shared<std::function<void()>>();
  *attempt_create = [self, scale_set_id, owner, cb, tries, attempt_create]() {
    auto c = std::make_shared<call>();
    c->req.operation = "create session for scale set " + std::to_string(scale_set_id);
    c->req.method = "POST";
    c->req.path = scale_sets_path(scale_set_id, "sessions");
    c->req.body = "{\"ownerName\":" + runtime::json_escape(owner) + "}";
    c->req.ok = {200};
    c->done = [self, scale_set_id, cb, tries, attempt_create, op = c->req.operation](
                  actions_result<http::http_response> res) {
      if (auto* e = std::get_if<actions_error>(&res)) {
        if (e->what == actions_error::kind::session_conflict && *tries < self->opts_.session_conflict_retries) {
          ++*tries;
          runtime::log::warn(actor,
                             "another listener holds this scale set's session; retrying (it expires when its "
                             "owner stops polling)",
                             {{"scale_set", scale_set_id}, {"attempt", *tries},
                              {"of", self->opts_.session_conflict_retries},
                              {"retry_in_ms", self->opts_.session_conflict_backoff.count()},
                              {"error", e->describe()}});
          self->io_.after(self->opts_.session_conflict_backoff, [attempt_create] { (*attempt_create)(); });
          return;
        }
        *attempt_create = nullptr;  // break the self-reference
        return cb(std::move(*e));
      }
      *attempt_create = nullptr;
      auto s = decode_session(std::get<http::http_response>(res).body);
      if (auto* f = std::get_if<decode_failure>(&s))
        return cb(make_error(actions_error::kind::bad_response, op, 200, f->message));
      auto session = std::get<message_session>(std::move(s));
      if (session.scale_set_id == 0)
        session.scale_set_id = scale_set_id;
      cb(std::make_shared<session_handle>(std::move(session)));
    };
    self->run(c);
  };
  (*attempt_create)();
}

void actions_client::refresh_session(session_ptr s, callback<done> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "refresh session " + current.session_id;
  c->req.method = "PATCH";
  c->req.path = scale_sets_path(current.scale_set_id, "sessions/" + current.session_id);
  c->req.ok = {200};
  c->req.session_op = true;
  c->done = [s, cb = std::move(cb), scale_set_id = current.scale_set_id,
             op = c->req.operation](actions_result<http::http_response> res) {
    if (auto* e = std::get_if<actions_error>(&res))
      return cb(std::move(*e));
    auto fresh = decode_session(std::get<http::http_response>(res).body);
    if (auto* f = std::get_if<decode_failure>(&fresh))
      return cb(make_error(actions_error::kind::bad_response, op, 200, f->message));
    auto session = std::get<message_session>(std::move(fresh));
    if (session.scale_set_id == 0)
      session.scale_set_id = scale_set_id;
    s->set(std::move(session));
    cb(done{});
  };
  run(c);
}

void actions_client::delete_session(session_ptr s, callback<done> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "delete session " + current.session_id;
  c->req.method = "DELETE";
  c->req.path = scale_sets_path(current.scale_set_id, "sessions/" + current.session_id);
  c->req.ok = {204};
  c->req.session_op = true;
  c->done = decoding<done>(c->req.operation, std::move(cb),
                           [](const http::http_response&) -> std::variant<done, std::string> { return done{}; });
  run(c);
}

std::shared_ptr<pending_call> actions_client::get_message(session_ptr s, int64_t last_message_id, int64_t max_capacity,
                                                          callback<std::optional<session_message>> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "get message (capacity " + std::to_string(max_capacity) + ")";
  c->req.url = current.message_queue_url;
  if (last_message_id > 0)
    c->req.url = with_query(c->req.url, "lastMessageId", std::to_string(last_message_id));
  c->req.how = request::auth::queue;
  c->req.session = s;
  c->req.poll = true;
  c->req.session_op = true;
  c->req.ok = {200, 202};
  c->req.headers = {"Accept: application/json; api-version=6.0-preview",
                    "X-ScaleSetMaxCapacity: " + std::to_string(std::max<int64_t>(0, max_capacity))};
  c->done = decoding<std::optional<session_message>>(
      c->req.operation, std::move(cb),
      [](const http::http_response& r) -> std::variant<std::optional<session_message>, std::string> {
        if (r.status == 202)
          return std::optional<session_message>{};
        auto m = unwrap(decode_session_message(r.body));
        if (auto* msg = std::get_if<std::string>(&m))
          return *msg;
        auto& message = std::get<session_message>(m);
        if (message.message_type != "RunnerScaleSetJobMessages")
          return "unsupported message type \"" + message.message_type + "\"";
        return std::optional<session_message>{std::move(message)};
      });
  run(c);
  return c;
}

void actions_client::delete_message(session_ptr s, int64_t message_id, callback<done> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "delete message " + std::to_string(message_id);
  c->req.method = "DELETE";
  std::string base = current.message_queue_url;
  std::string query;
  if (const auto q = base.find('?'); q != std::string::npos) {
    query = base.substr(q);
    base.resize(q);
  }
  c->req.url = join_url(base, std::to_string(message_id)) + query;
  c->req.how = request::auth::queue;
  c->req.session = s;
  c->req.session_op = true;
  c->req.ok = {204, 200};
  c->done = decoding<done>(c->req.operation, std::move(cb),
                           [](const http::http_response&) -> std::variant<done, std::string> { return done{}; });
  run(c);
}

void actions_client::acquire_jobs(session_ptr s, std::vector<int64_t> ids, callback<std::vector<int64_t>> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "acquire " + std::to_string(ids.size()) + " jobs";
  c->req.method = "POST";
  c->req.path = scale_sets_path(current.scale_set_id, "acquirejobs");
  c->req.how = request::auth::queue;  // on the tenant URL, with the message-queue token
  c->req.session = s;
  std::string body = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    body += (i ? "," : "") + std::to_string(ids[i]);
  c->req.body = body + "]";
  c->req.ok = {200};
  c->done = decoding<std::vector<int64_t>>(c->req.operation, std::move(cb), [](const http::http_response& r) {
    return unwrap(decode_acquired_jobs(r.body));
  });
  run(c);
}

void actions_client::generate_jit_config(int64_t scale_set_id, std::string runner_name, std::string work_folder,
                                         callback<jit_config> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "generate JIT config for runner \"" + runner_name + "\"";
  c->req.method = "POST";
  c->req.path = scale_sets_path(scale_set_id, "generatejitconfig");
  c->req.body = "{\"name\":" + runtime::json_escape(runner_name) + ",\"workFolder\":" + runtime::json_escape(work_folder) + "}";
  c->req.ok = {200};
  c->done = decoding<jit_config>(c->req.operation, std::move(cb),
                                 [](const http::http_response& r) { return unwrap(decode_jit_config(r.body)); });
  run(c);
}

void actions_client::get_runner(int64_t runner_id, callback<runner_ref> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get runner " + std::to_string(runner_id);
  c->req.path = std::string{agents_path} + "/" + std::to_string(runner_id);
  c->req.ok = {200};
  c->done = [cb = std::move(cb), op = c->req.operation](actions_result<http::http_response> res) {
    if (auto* e = std::get_if<actions_error>(&res)) {
      if (e->what == actions_error::kind::not_found)
        e->what = actions_error::kind::runner_not_found;
      return cb(std::move(*e));
    }
    auto r = decode_runner(std::get<http::http_response>(res).body);
    if (auto* f = std::get_if<decode_failure>(&r))
      return cb(make_error(actions_error::kind::bad_response, op, 200, f->message));
    cb(std::get<runner_ref>(std::move(r)));
  };
  run(c);
}

void actions_client::get_runner_by_name(std::string name, callback<std::optional<runner_ref>> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get runner \"" + name + "\"";
  c->req.path = std::string{agents_path} + "?agentName=" + http::url_encode(name);
  c->req.ok = {200};
  c->done = decoding<std::optional<runner_ref>>(
      c->req.operation, std::move(cb),
      [](const http::http_response& r) -> std::variant<std::optional<runner_ref>, std::string> {
        auto list = unwrap(decode_runner_list(r.body));
        if (auto* msg = std::get_if<std::string>(&list))
          return *msg;
        auto& runners = std::get<std::vector<runner_ref>>(list);
        if (runners.size() > 1)
          return "more than one runner has this name";
        if (runners.empty())
          return std::optional<runner_ref>{};
        return std::optional<runner_ref>{runners.front()};
      });
  run(c);
}

void actions_client::remove_runner(int64_t runner_id, callback<done> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "remove runner " + std::to_string(runner_id);
  c->req.method = "DELETE";
  c->req.path = std::string{agents_path} + "/" + std::to_string(runner_id);
  c->req.ok = {204, 200};
  c->done = [cb = std::move(cb)](actions_result<http::http_response> res) {
    if (auto* e = std::get_if<actions_error>(&res)) {
      if (e->what == actions_error::kind::not_found)
        e->what = actions_error::kind::runner_not_found;
      return cb(std::move(*e));
    }
    cb(done{});
  };
  run(c);
}

}  // namespace headroom::github
