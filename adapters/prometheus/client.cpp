#include "adapters/prometheus/client.hpp"

#include <openssl/evp.h>

#include <cstdio>

#include "runtime/secrets.hpp"

namespace headroom::prom {

namespace {

std::string base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace

client::client(http::exchange& io, client_options opts) : io_(io), opts_(std::move(opts)) {
  while (!opts_.url.empty() && opts_.url.back() == '/')
    opts_.url.pop_back();
  auto& secrets = runtime::secret_registry::global();
  if (!opts_.bearer_token.empty()) {
    secrets.add(opts_.bearer_token);
    authorization_ = "Authorization: Bearer " + opts_.bearer_token;
  } else if (!opts_.username.empty()) {
    secrets.add(opts_.password);
    const std::string encoded = base64(opts_.username + ":" + opts_.password);
    secrets.add(encoded);
    authorization_ = "Authorization: Basic " + encoded;
  }
  auto tls = std::make_shared<http::tls_config>();
  tls->ca_pem = opts_.ca_pem;
  tls_ = std::move(tls);
}

void client::query(const std::string& promql, std::optional<double> at, std::function<void(query_result)> cb) {
  http::http_request req;
  req.tls = tls_;
  req.url = opts_.url + "/api/v1/query?query=" + http::url_encode(promql);
  if (at) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", *at);
    req.url += "&time=";
    req.url += buf;
  }
  req.timeout = opts_.timeout;
  req.compressed = false;  // a few hundred bytes per answer: compressing costs both sides more than it saves
  req.headers = {"Accept: application/json", "User-Agent: headroom"};
  if (!authorization_.empty())
    req.headers.push_back(authorization_);
  io_.submit(std::move(req), [cb = std::move(cb)](http::http_response r) {
    if (r.cancelled)
      return cb(no_metric{"query cancelled"});
    if (r.status == 0)
      return cb(no_metric{runtime::redact("Prometheus unreachable: " + r.transport_error)});
    if (r.status != 200) {
      // 400 (bad_data) and 422 (execution) carry Prometheus' own error in the usual JSON body.
      std::string why = r.body.substr(0, 200);
      if (r.status == 400 || r.status == 422) {
        auto decoded = decode_query(r.body);
        if (auto* n = std::get_if<no_metric>(&decoded))
          why = n->reason;
      }
      return cb(no_metric{runtime::redact("Prometheus answered " + std::to_string(r.status) + ": " + why)});
    }
    auto decoded = decode_query(r.body);
    if (auto* n = std::get_if<no_metric>(&decoded))
      n->reason = runtime::redact(n->reason);
    cb(std::move(decoded));
  });
}

void client::read(const std::vector<raw_query>& queries, std::function<void(std::vector<query_result>)> cb) {
  http::http_request req;
  req.tls = tls_;
  req.method = "POST";
  req.url = opts_.url + "/api/v1/read";
  req.body = encode_read_request(queries);
  req.timeout = opts_.timeout;
  req.compressed = false;  // the body is snappy-compressed already
  req.headers = {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                 "X-Prometheus-Remote-Read-Version: 0.1.0", "User-Agent: headroom"};
  if (!authorization_.empty())
    req.headers.push_back(authorization_);
  const size_t n = queries.size();
  io_.submit(std::move(req), [n, cb = std::move(cb)](http::http_response r) {
    auto all = [n](std::string why) { return std::vector<query_result>(n, no_metric{runtime::redact(std::move(why))}); };
    if (r.cancelled)
      return cb(all("remote read cancelled"));
    if (r.status == 0)
      return cb(all("Prometheus unreachable: " + r.transport_error));
    if (r.status != 200) {  // Prometheus answers errors here in plain text
      std::string why = r.body.substr(0, 200);
      while (!why.empty() && (why.back() == '\n' || why.back() == '\r'))
        why.pop_back();
      return cb(all("Prometheus answered " + std::to_string(r.status) + " to the remote read: " + why));
    }
    cb(decode_read_response(r.body, n));
  });
}

}  // namespace headroom::prom
