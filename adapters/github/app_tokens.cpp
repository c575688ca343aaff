#include "adapters/github/app_tokens.hpp"

#include <algorithm>
#include <cctype>
#include <future>

#include "adapters/github/auth.hpp"
#include "adapters/github/payloads.hpp"
#include "runtime/clock.hpp"
#include "runtime/rfc3339.hpp"
#include "runtime/secrets.hpp"  // redact

namespace headroom::github {

// One exchange for one installation: its request, re-sent on a retryable answer.
struct app_tokens::attempt_state {
  key k;
  token_endpoint at;
  std::string jwt;
  int attempts = 0;
};

std::shared_ptr<app_tokens> app_tokens::make(http::exchange& io, options opts) {
  return std::make_shared<app_tokens>(io, std::move(opts));
}

app_tokens::app_tokens(http::exchange& io, options opts) : io_(io), opts_(std::move(opts)) {}

int64_t app_tokens::now() const {
  if (opts_.unix_now)
    return opts_.unix_now();
  return io_.clock().wall_ms() / 1000;
}

void app_tokens::get(const token_endpoint& at, const app_identity& app, int64_t installation,
                     std::function<void(token_result)> then) {
  key k{at.api_base, app.id, installation};
  {
    std::unique_lock lock(mu_);
    auto& e = entries_[k];
    if (!e.token.token.empty() && e.token.expires_at - now() > opts_.refresh_margin_s) {
      auto t = e.token;
      lock.unlock();
      then(std::move(t));
      return;
    }
    e.waiters.push_back(std::move(then));
    if (e.in_flight)
      return;  // the exchange under way answers this caller too
    e.in_flight = true;
  }
  start(std::move(k), at, app);
}

token_result app_tokens::get_blocking(const token_endpoint& at, const app_identity& app, int64_t installation) {
  auto done = std::make_shared<std::promise<token_result>>();
  auto f = done->get_future();
  get(at, app, installation, [done](token_result r) { done->set_value(std::move(r)); });
  return f.get();
}

void app_tokens::forget(const token_endpoint& at, const app_identity& app, int64_t installation, const std::string& token) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key{at.api_base, app.id, installation});
  if (it != entries_.end() && it->second.token.token == token)
    it->second.token = {};
}

void app_tokens::start(key k, token_endpoint at, app_identity app) {
  auto jwt = app_jwt(app.id, app.private_key_pem, now());
  if (auto* e = std::get_if<auth_error>(&jwt))
    return settle(k, token_failure{0, true, "sign GitHub App JWT: " + e->message});
  auto a = std::make_shared<attempt_state>();
  a->k = std::move(k);
  a->at = std::move(at);
  a->jwt = std::move(std::get<std::string>(jwt));
  send(std::move(a), std::chrono::milliseconds{0});
}

void app_tokens::send(std::shared_ptr<attempt_state> a, std::chrono::milliseconds delay) {
  http::http_request req;
  req.tls = a->at.tls;
  req.method = "POST";
  req.url = a->at.api_base + "/app/installations/" + std::to_string(std::get<2>(a->k)) + "/access_tokens";
  req.headers = {"Accept: application/vnd.github+json", "Authorization: Bearer " + a->jwt, "User-Agent: " + opts_.user_agent,
                 "X-GitHub-Api-Version: 2022-11-28"};
  req.timeout = opts_.timeout;
  req.delay = delay;
  req.compressed = false;
  ++a->attempts;
  exchanges_.fetch_add(1);
  auto self = shared_from_this();
  io_.submit(std::move(req), [self, a](http::http_response r) { self->answered(a, std::move(r)); });
}

void app_tokens::answered(std::shared_ptr<attempt_state> a, http::http_response r) {
  const bool retryable = !r.cancelled && (r.status == 0 || r.status == 429 || r.status >= 500);
  if (retryable && a->attempts <= opts_.max_retries) {
    auto wait = opts_.retry_base * (1 << std::min(a->attempts - 1, 10));
    if (!r.retry_after.empty() && r.retry_after.size() < 6 &&
        std::all_of(r.retry_after.begin(), r.retry_after.end(), [](unsigned char c) { return std::isdigit(c); }))
      wait = std::max(wait, std::chrono::milliseconds{std::stoll(r.retry_after) * 1000});
    return send(std::move(a), std::min(wait, opts_.retry_max));
  }
  if (r.status == 0)
    return settle(a->k, token_failure{0, false, r.cancelled ? "cancelled" : runtime::redact(r.transport_error)});
  if (r.status != 201) {
    auto ex = decode_exception(r.body);
    return settle(a->k, token_failure{r.status, false, runtime::redact(ex.message.empty() ? r.body.substr(0, 200) : ex.message)});
  }
  auto tok = decode_issued_token(r.body);
  if (auto* f = std::get_if<decode_failure>(&tok))
    return settle(a->k, token_failure{r.status, false, "the answer did not decode: " + f->message});
  auto& t = std::get<issued_token>(tok);
  // decode_issued_token registered the token as a secret for good: an ephemeral one would be pushed
  // out by the next 256 jobs' JIT configurations while the token still has most of its hour to live.
  const auto expires = runtime::parse_rfc3339(t.expires_at);
  installation_token out{t.token, expires ? static_cast<int64_t>(*expires) : 0};
  if (out.expires_at == 0)
    out.expires_at = now() + 3600;  // GitHub's documented lifetime when expires_at is unreadable
  settle(a->k, std::move(out));
}

void app_tokens::settle(const key& k, token_result r) {
  std::vector<std::function<void(token_result)>> waiters;
  {
    std::lock_guard lock(mu_);
    auto& e = entries_[k];
    e.in_flight = false;
    if (auto* t = std::get_if<installation_token>(&r))
      e.token = *t;
    waiters.swap(e.waiters);
  }
  for (auto& w : waiters)
    w(r);
}

}  // namespace headroom::github
