// The Actions Service client: running requests (retries, backoff, cancellation) and the auth chain.
#include "adapters/github/actions_client.hpp"

#include <algorithm>
#include <atomic>
#include <ctime>

#include "adapters/github/actions_internal.hpp"
#include "adapters/github/auth.hpp"
#include "runtime/log.hpp"
#include "runtime/secrets.hpp"
#include "runtime/clock.hpp"
#include "runtime/rfc3339.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::github {

using namespace detail;

// ---- the request machinery ----

actions_client::actions_client(config_url where, credentials creds, http::exchange& io, actions_options opts)
    : where_(std::move(where)), creds_(std::move(creds)), io_(io), opts_(std::move(opts)),
      admin_(std::make_unique<admin_state>()), runner_list_(std::make_shared<runner_list_share>()) {
  auto& secrets = runtime::secret_registry::global();
  secrets.add(creds_.personal_access_token);
  secrets.add(creds_.private_key_pem);
  auto tls = std::make_shared<http::tls_config>();
  tls->ca_pem = opts_.ca_pem;
  tls_ = std::move(tls);
  if (!opts_.tokens) {
    app_tokens::options t;
    t.user_agent = opts_.user_agent;
    t.timeout = opts_.request_timeout;
    t.max_retries = opts_.max_retries;
    t.retry_base = opts_.retry_base;
    t.retry_max = opts_.retry_max;
    t.unix_now = opts_.unix_now;
    opts_.tokens = app_tokens::make(io, std::move(t));
  }
}

std::shared_ptr<actions_client> actions_client::make(config_url where, credentials creds, http::exchange& io,
                                                     actions_options opts) {
  return std::make_shared<actions_client>(std::move(where), std::move(creds), io, std::move(opts));
}

int64_t actions_client::now() const {
  if (opts_.unix_now)
    return opts_.unix_now();
  return std::chrono::duration_cast<std::chrono::seconds>(io_.clock().wall().time_since_epoch()).count();
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
  if (retry_status && !req.poll && c->attempts <= opts_.max_retries) {
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
    runtime::json_writer w;
    w.begin_object().field("url", self->where_.url).field("runner_event", "register").end_object();
    c->req.body = w.take();
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

  // Step 2: a registration token for the config URL's scope. `refused`: told the bearer when GitHub
  // answers 401 (an installation token revoked early), so the next chain gets a new one.
  auto registration_step = [self, admin_step](std::string bearer, std::function<void(const std::string&)> refused) {
    auto c = std::make_shared<call>();
    c->req.operation = "get runner registration token";
    c->req.method = "POST";
    c->req.url = self->where_.api_base + self->where_.registration_token_path();
    c->req.how = request::auth::bearer;
    c->req.token = bearer;
    c->req.headers = {"Accept: application/vnd.github+json"};
    c->req.ok = {201};
    c->done = [self, admin_step, bearer, refused, op = c->req.operation](actions_result<http::http_response> res) {
      if (auto* e = std::get_if<actions_error>(&res)) {
        if (e->what == K::unauthorized && refused)
          refused(bearer);
        return self->admin_ready(*e);
      }
      auto tok = decode_issued_token(std::get<http::http_response>(res).body);
      if (auto* f = std::get_if<decode_failure>(&tok))
        return self->admin_ready(make_error(K::bad_response, op, 201, f->message));
      admin_step(std::get<issued_token>(tok).token);
    };
    self->attempt(c);
  };

  if (!creds_.personal_access_token.empty()) {
    registration_step(creds_.personal_access_token, nullptr);
    return;
  }
  // Step 1: the installation's token, from the process's one exchange (app_tokens.hpp).
  const token_endpoint at{where_.api_base, tls_};
  const app_identity app{creds_.app_id, creds_.private_key_pem};
  const int64_t installation = creds_.installation_id;
  opts_.tokens->get(at, app, installation, [self, registration_step, at, app, installation](token_result r) {
    if (auto* f = std::get_if<token_failure>(&r)) {
      if (f->signing)
        return self->admin_ready(make_error(K::config, "sign GitHub App JWT", 0, f->message));
      return self->admin_ready(make_error(kind_of_status(f->status), "get installation access token", f->status, f->message));
    }
    registration_step(std::get<installation_token>(r).token, [self, at, app, installation](const std::string& refused) {
      self->opts_.tokens->forget(at, app, installation, refused);
    });
  });
}

}  // namespace headroom::github
