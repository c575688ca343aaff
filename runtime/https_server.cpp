#include "runtime/https_server.hpp"
#include "runtime/web_server.hpp"
#include "runtime/clock.hpp"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <variant>

namespace headroom::runtime {

namespace {

// One parsed certificate chain and key; immutable once made, shared by the handshakes that use it.
struct cert_bundle {
  X509* leaf = nullptr;
  STACK_OF(X509)* chain = nullptr;
  EVP_PKEY* key = nullptr;
  int64_t not_after = 0;
  ~cert_bundle() {
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
  }
};

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0)
    return "no PEM data";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

std::variant<std::shared_ptr<cert_bundle>, std::string> parse_bundle(const std::string& cert_pem, const std::string& key_pem) {
  using result = std::variant<std::shared_ptr<cert_bundle>, std::string>;
  ERR_clear_error();
  auto b = std::make_shared<cert_bundle>();
  {
    BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
    b->leaf = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (b->leaf == nullptr) {
      BIO_free(bio);
      return result{std::in_place_index<1>, "certificate: " + openssl_error()};
    }
    b->chain = sk_X509_new_null();
    while (X509* extra = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr))
      sk_X509_push(b->chain, extra);
    ERR_clear_error();  // the end of the PEM data
    BIO_free(bio);
  }
  {
    BIO* bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    // Never a passphrase prompt: an encrypted key is an error.
    b->key = PEM_read_bio_PrivateKey(bio, nullptr, [](char*, int, int, void*) { return 0; }, nullptr);
    BIO_free(bio);
    if (b->key == nullptr)
      return result{std::in_place_index<1>, "key: " + openssl_error()};  // names no key material
  }
  if (X509_check_private_key(b->leaf, b->key) != 1) {
    ERR_clear_error();
    return result{std::in_place_index<1>, "the key does not match the certificate"};
  }
  // notAfter as seconds since the epoch: OpenSSL's own difference from the epoch, no calendar code.
  if (const ASN1_TIME* end = X509_get0_notAfter(b->leaf); end != nullptr) {
    ASN1_TIME* epoch = ASN1_TIME_set(nullptr, 0);
    int days = 0, secs = 0;
    if (epoch != nullptr && ASN1_TIME_diff(&days, &secs, epoch, end) == 1)
      b->not_after = static_cast<int64_t>(days) * 86400 + secs;
    ASN1_TIME_free(epoch);
  }
  return result{std::in_place_index<0>, std::move(b)};
}

}  // namespace

struct https_server::state {
  https_options opts;
  mutable std::mutex m;  // guards `current` only (read at each handshake, written on rotation)
  std::shared_ptr<cert_bundle> current;
  std::unique_ptr<httplib::SSLServer> server;
  std::thread loop;

  std::shared_ptr<cert_bundle> bundle() const {
    std::lock_guard lock{m};
    return current;
  }

  // At each handshake: the newest certificate.
  static int on_cert(SSL* ssl, void* arg) {
    auto b = static_cast<state*>(arg)->bundle();
    if (!b)
      return 0;
    return SSL_use_cert_and_key(ssl, b->leaf, b->key, b->chain, 1) == 1 ? 1 : 0;
  }
};

https_server::https_server(https_options opts) : state_(std::make_unique<state>()) {
  auto& st = *state_;
  st.opts = std::move(opts);
  auto& o = st.opts;
  if (o.observe && o.clock == nullptr)
    throw std::invalid_argument{"https_server: observe needs a clock"};
  if (auto problem = set_certificate(o.cert_pem, o.key_pem))
    throw std::runtime_error("serving certificate: " + *problem);
  o.cert_pem.clear();
  o.key_pem.clear();  // not kept: the parsed key lives in the bundle only

  st.server = std::make_unique<httplib::SSLServer>([&st](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_cert_cb(&ctx, &state::on_cert, &st);
    return true;
  });
  auto& srv = *st.server;
  const int threads = std::max(1, o.threads);
  srv.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  srv.set_payload_max_length(o.max_body);
  srv.set_read_timeout(10, 0);
  srv.set_write_timeout(10, 0);
  // Keep-alive: the API server reuses its connections to a webhook, which saves a handshake per call.
  // A connection holds a worker while it is open, so an idle one is closed after 5 s: with every
  // worker held by idle connections (several API servers), a new one would wait in the queue.
  srv.set_keep_alive_max_count(1000);
  srv.set_keep_alive_timeout(5);
  // Headers and body go out in separate writes: without TCP_NODELAY, Nagle holds the body until
  // the client's delayed ACK (~40 ms per review).
  srv.set_tcp_nodelay(true);
  answer_exceptions_with_500(srv);
  refuse_unframed_bodies(srv);
  for (const auto& r : o.routes) {
    srv.Post(r.path, [&r, &o](const httplib::Request& req, httplib::Response& res) {
      const auto started = o.observe ? o.clock->now() : runtime::clock::time_point{};
      https_request in;
      in.path = r.path;
      in.content_type = req.get_header_value("Content-Type");
      in.body = req.body;
      https_reply out = r.handle(in);
      res.status = out.status;
      res.set_header("Cache-Control", "no-store");
      res.set_content(std::move(out.body), out.content_type.c_str());
      if (o.observe)
        o.observe(r.path, out.status, std::chrono::duration<double>(o.clock->now() - started).count());
    });
    srv.Get(r.path, [](const httplib::Request&, httplib::Response& res) {
      res.status = 405;
      res.set_content("only POST is served here\n", "text/plain");
    });
  }

  auto [host, wanted] = split_listen(o.listen);
  if (wanted < 0)
    throw std::runtime_error("cannot listen on " + o.listen + ": not a port");
  const int bound = wanted == 0 ? srv.bind_to_any_port(host) : (srv.bind_to_port(host, wanted) ? wanted : -1);
  if (bound <= 0)
    throw std::runtime_error("cannot listen on " + o.listen + " (https)");
  port_ = static_cast<uint16_t>(bound);
  st.loop = std::thread([&srv] { srv.listen_after_bind(); });
}

https_server::~https_server() { stop_server(*state_->server, port_, state_->loop); }
std::optional<std::string> https_server::set_certificate(const std::string& cert_pem, const std::string& key_pem) {
  auto parsed = parse_bundle(cert_pem, key_pem);
  if (auto* problem = std::get_if<std::string>(&parsed))
    return *problem;
  std::lock_guard lock{state_->m};
  state_->current = std::get<0>(std::move(parsed));
  return std::nullopt;
}

int64_t https_server::not_after() const {
  auto b = state_->bundle();
  return b ? b->not_after : 0;
}

}  // namespace headroom::runtime
