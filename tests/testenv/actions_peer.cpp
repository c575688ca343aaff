#include "testenv/actions_peer.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace headroom::testpeer {

namespace {

std::string pem_of(EVP_PKEY* key, bool private_key) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (private_key)
    PEM_write_bio_PrivateKey_traditional(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  else
    PEM_write_bio_PUBKEY(bio, key);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(len));
  BIO_free(bio);
  return out;
}

}  // namespace

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac,
       &len);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[mac[i] >> 4];
    out += hex[mac[i] & 15];
  }
  return out;
}

std::pair<std::string, std::string> make_app_key() {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  auto out = std::make_pair(pem_of(key, true), pem_of(key, false));
  EVP_PKEY_free(key);
  return out;
}

std::unique_ptr<actions_peer> actions_peer::start(const options& opts, std::string& why) {
  // The Apps' public keys go through files the peer reads at start.
  std::vector<std::string> key_files;
  struct removed_at_end {
    std::vector<std::string>& files;
    ~removed_at_end() {
      for (const auto& f : files)
        if (!f.empty())
          std::remove(f.c_str());
    }
  } cleanup{key_files};
  const auto key_file = [&](const std::string& pem) {
    char tmpl[] = "/tmp/headroom-app-key-XXXXXX";
    const int fd = mkstemp(tmpl);
    key_files.emplace_back(fd < 0 ? "" : tmpl);  // "": none could be made (refused below)
    if (fd >= 0) {
      close(fd);
      std::ofstream(tmpl) << pem;
    }
    return key_files.back();
  };
  std::vector<std::string> args = {"--app-id", opts.app_id, "--poll-hold", opts.poll_hold, "--listen-host", opts.listen_host};
  if (!opts.app_public_key_pem.empty())
    args.insert(args.end(), {"--app-public-key", key_file(opts.app_public_key_pem)});
  if (!opts.user_app_id.empty())
    args.insert(args.end(), {"--user-app-id", opts.user_app_id, "--user-app-public-key", key_file(opts.user_app_public_key_pem),
                             "--user-installations", opts.user_installations});
  if (std::any_of(key_files.begin(), key_files.end(), [](const std::string& f) { return f.empty(); })) {
    why = "cannot create a temporary file";
    return nullptr;
  }
  if (!opts.pat.empty())
    args.insert(args.end(), {"--pat", opts.pat});
  if (!opts.hud_token.empty())
    args.insert(args.end(), {"--hud-token", opts.hud_token});
  if (!opts.installations.empty())
    args.insert(args.end(), {"--installations", opts.installations});
  auto process = peer_process::start("tests/peers/actions-service/build.sh", args, why);
  if (!process)
    return nullptr;
  std::unique_ptr<actions_peer> peer{new actions_peer};
  peer->http_ = process->ready("http");
  peer->https_ = process->ready("https");
  peer->ca_pem_ = process->read("ca.pem");
  peer->process_ = std::move(process);
  return peer;
}

http_reply actions_peer::control(std::string_view path, std::string_view body) const {
  return http_call(http_ + "/_control" + std::string{path}, body);
}

std::map<std::string, int64_t> actions_peer::request_counts() const {
  std::map<std::string, int64_t> out;
  simdjson::dom::parser p;
  simdjson::dom::object requests;
  if (p.parse(control("/state").body)["requests"].get(requests) != simdjson::SUCCESS)
    return out;
  for (auto [route, n] : requests) {
    int64_t v = 0;
    if (n.get(v) == simdjson::SUCCESS)
      out[std::string{route}] = v;
  }
  return out;
}

}  // namespace headroom::testpeer
