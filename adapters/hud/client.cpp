#include "adapters/hud/client.hpp"

#include "runtime/secrets.hpp"

namespace headroom::hud {

client::client(http::exchange& io, client_options opts) : io_(io), opts_(std::move(opts)) {
  runtime::secret_registry::global().add(opts_.token);
  auto tls = std::make_shared<http::tls_config>();
  tls->ca_pem = opts_.ca_pem;
  tls_ = std::move(tls);
}

void client::fetch(std::function<void(fetch_result)> cb) {
  http::http_request req;
  req.tls = tls_;
  req.url = opts_.url;
  req.timeout = opts_.timeout;
  req.headers = {"Accept: application/json", "User-Agent: headroom"};
  if (!opts_.token.empty())
    req.headers.push_back("x-hud-internal-bot: " + opts_.token);
  io_.submit(std::move(req), [cb = std::move(cb)](http::http_response r) {
    if (r.status == 0)
      return cb(hud_error{runtime::redact("HUD request failed: " + r.transport_error)});
    if (r.status != 200) {
      std::string body = r.body.substr(0, 200);
      return cb(hud_error{runtime::redact("HUD answered " + std::to_string(r.status) + ": " + body)});
    }
    cb(decode_queued_jobs(r.body));
  });
}

}  // namespace headroom::hud
