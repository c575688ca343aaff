#include "runtime/https_server.hpp"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "runtime/web_server.hpp"

#include "testenv/test_certs.hpp"

using namespace headroom::runtime;
using headroom::testenv::pem_pair;

namespace {

struct response {
  long status = 0;
  std::string body;
  std::string error;
};

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// A request verified against `ca` (as the API server verifies a webhook's caBundle).
response call(uint16_t port, const std::string& ca, const std::string& method, const std::string& path,
              const std::string& body = {}) {
  response r;
  CURL* h = curl_easy_init();
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + path;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_blob blob{const_cast<char*>(ca.data()), ca.size(), CURL_BLOB_COPY};
  curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  const CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK)
    r.error = curl_easy_strerror(rc);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_cleanup(h);
  return r;
}

https_options echo_options(const pem_pair& cert) {
  https_options o;
  o.listen = "127.0.0.1:0";
  o.cert_pem = cert.cert;
  o.key_pem = cert.key;
  o.max_body = 1024;
  o.routes.push_back({"/echo", [](const https_request& r) { return https_reply{200, "text/plain", r.content_type + "|" + r.body}; }});
  return o;
}

}  // namespace

TEST(https_server, serves_post_routes_over_verified_tls) {
  const auto ca = headroom::testenv::make_ca("test-ca");
  https_server server{echo_options(headroom::testenv::issue_server_cert(ca, "webhook", {"localhost"}, {"127.0.0.1"}))};
  ASSERT_NE(server.port(), 0);
  auto ok = call(server.port(), ca.cert, "POST", "/echo", "hello");
  EXPECT_EQ(ok.error, "");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "application/x-www-form-urlencoded|hello");
  EXPECT_EQ(call(server.port(), ca.cert, "GET", "/echo").status, 405);
  EXPECT_EQ(call(server.port(), ca.cert, "POST", "/echo", std::string(2048, 'x')).status, 413);
  EXPECT_EQ(call(server.port(), ca.cert, "POST", "/nothing-here", "x").status, 404);
  EXPECT_GT(server.not_after(), 0);
}

TEST(https_server, a_rotated_certificate_is_served_from_the_next_connection) {
  const auto old_ca = headroom::testenv::make_ca("old-ca");
  const auto new_ca = headroom::testenv::make_ca("new-ca");
  https_server server{echo_options(headroom::testenv::issue_server_cert(old_ca, "webhook", {}, {"127.0.0.1"}))};
  EXPECT_EQ(call(server.port(), old_ca.cert, "POST", "/echo", "a").status, 200);
  EXPECT_NE(call(server.port(), new_ca.cert, "POST", "/echo", "a").error, "") << "signed by the other CA";

  ASSERT_EQ(server.set_certificate(headroom::testenv::issue_server_cert(new_ca, "webhook", {}, {"127.0.0.1"}).cert,
                                   headroom::testenv::issue_server_cert(new_ca, "webhook", {}, {"127.0.0.1"}).key),
            std::optional<std::string>{"the key does not match the certificate"})
      << "a key from another issue must be refused";
  const auto rotated = headroom::testenv::issue_server_cert(new_ca, "webhook", {}, {"127.0.0.1"});
  ASSERT_EQ(server.set_certificate(rotated.cert, rotated.key), std::nullopt);
  EXPECT_EQ(call(server.port(), new_ca.cert, "POST", "/echo", "b").status, 200);
  EXPECT_NE(call(server.port(), old_ca.cert, "POST", "/echo", "b").error, "");
}

TEST(https_server, a_broken_certificate_is_refused_and_the_old_one_stays) {
  const auto ca = headroom::testenv::make_ca("test-ca");
  https_server server{echo_options(headroom::testenv::issue_server_cert(ca, "webhook", {}, {"127.0.0.1"}))};
  const auto problem = server.set_certificate("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", "x");
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->rfind("certificate: ", 0), 0u) << *problem;
  EXPECT_EQ(call(server.port(), ca.cert, "POST", "/echo", "still").status, 200);
  EXPECT_THROW(https_server{echo_options({"", ""})}, std::runtime_error);
}

namespace {

// One request on a handle that is kept: its connection stays open and idle in the handle's
// cache (keep-alive), as the API server's and GitHub's connections to headroom do.
CURL* idle_connection(const std::string& url, const std::string& ca = {}) {
  CURL* h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  if (!ca.empty()) {
    curl_blob blob{const_cast<char*>(ca.data()), ca.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
  }
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, "x");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &collect);
  std::string sink;
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  EXPECT_EQ(curl_easy_perform(h), CURLE_OK);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  EXPECT_EQ(status, 200);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, nullptr);
  return h;
}

template <class Server>
double seconds_to_stop(std::unique_ptr<Server>& server) {
  const auto at = std::chrono::steady_clock::now();
  server.reset();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - at).count();
}

}  // namespace

// cpp-httplib 0.11 waits out an idle keep-alive connection (5 s) before its stop returns; the
// servers end those connections' reading side instead, so a restarted actor serves again at once
// (the fault campaign's webhook took 4.1 s to restart). The port is free for the next server.
TEST(web_server, stops_at_once_with_an_idle_keep_alive_connection_open) {
  web_options o;
  o.listen = "127.0.0.1:0";
  o.routes.push_back({"POST", "/x", [](const web_request&) { return web_reply{200, "text/plain", {}, "ok"}; }});
  auto server = std::make_unique<web_server>(o);
  const uint16_t port = server->port();
  CURL* h = idle_connection("http://127.0.0.1:" + std::to_string(port) + "/x");
  EXPECT_LT(seconds_to_stop(server), 1.0);
  o.listen = "127.0.0.1:" + std::to_string(port);
  EXPECT_NO_THROW(web_server again{o}) << "the port is free again";
  curl_easy_cleanup(h);
}

TEST(https_server, stops_at_once_with_an_idle_keep_alive_connection_open) {
  const auto ca = headroom::testenv::make_ca("test-ca");
  auto server = std::make_unique<https_server>(echo_options(headroom::testenv::issue_server_cert(ca, "webhook", {"localhost"}, {"127.0.0.1"})));
  CURL* h = idle_connection("https://127.0.0.1:" + std::to_string(server->port()) + "/echo", ca.cert);
  EXPECT_LT(seconds_to_stop(server), 1.0);
  curl_easy_cleanup(h);
}
