#pragma once

// The Actions Service test peer (tests/peers/actions-service, a Go program) from a C++ test:
// plain HTTP and HTTPS with a generated CA, driven through its control API.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "testenv/peer_process.hpp"

namespace headroom::testpeer {

class actions_peer {
 public:
  struct options {
    std::string app_id = "12345";
    std::string app_public_key_pem;  // RS256 JWTs of this key are accepted for app_id
    std::string pat;
    std::string hud_token;
    std::string poll_hold = "50s";
    std::string installations;  // more installations of the App: "account=id,account=id"
    // A second App (one for personal accounts): its id, key and installations ("account=id,…").
    std::string user_app_id, user_app_public_key_pem, user_installations;
    // The address it listens on; a real node's pods reach it at the cluster's node_host_ip().
    std::string listen_host = "127.0.0.1";
  };

  // Nullptr when the peer could not be built or started; `why` says why.
  static std::unique_ptr<actions_peer> start(const options& opts, std::string& why);

  const std::string& http_url() const { return http_; }
  const std::string& https_url() const { return https_; }
  const std::string& ca_pem() const { return ca_pem_; }

  // The control API (/_control/…): POST with a JSON body, or GET when body is empty.
  http_reply control(std::string_view path, std::string_view body = {}) const;
  std::string log() const { return process_->log(); }
  // How many requests the peer has answered on each route ("access_token:101", "installation_of",
  // "wrong_installation", …), read once from /_control/state; a route never asked is absent (0).
  std::map<std::string, int64_t> request_counts() const;

 private:
  std::unique_ptr<peer_process> process_;
  std::string http_, https_, ca_pem_;
};

// An RSA key pair for a test GitHub App: {private PEM (PKCS#1), public PEM (SPKI)}.
std::pair<std::string, std::string> make_app_key();

// Lower-case hex HMAC-SHA256 (a webhook's X-Hub-Signature-256 after "sha256=").
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

}  // namespace headroom::testpeer
