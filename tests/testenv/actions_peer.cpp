#include "testenv/actions_peer.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "testenv/cluster_fixture.hpp"

extern char** environ;

namespace headroom::testpeer {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of "key" in a flat JSON object of strings (ready.json is ours and simple).
std::string json_field(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":\"");
  if (at == std::string::npos)
    return {};
  const auto start = at + key.size() + 4;
  return json.substr(start, json.find('"', start) - start);
}

size_t collect(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

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

std::pair<std::string, std::string> make_app_key() {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  auto out = std::make_pair(pem_of(key, true), pem_of(key, false));
  EVP_PKEY_free(key);
  return out;
}

std::unique_ptr<actions_peer> actions_peer::start(const options& opts, std::string& why) {
  const std::string source = HEADROOM_SOURCE_DIR "/tests/peers/actions-service";
  char tmpl[] = "/tmp/headroom-actions-peer-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    why = "cannot create a temporary directory";
    return nullptr;
  }
  std::unique_ptr<actions_peer> peer{new actions_peer};
  peer->dir_ = tmpl;
  const std::string binary = peer->dir_ + "/actions-service";
  auto built = testenv::run_command({source + "/build.sh", binary});
  if (built.exit_code != 0) {
    why = "building the Actions Service peer failed: " + built.err + built.out;
    return nullptr;
  }
  std::vector<std::string> argv = {binary, "--state-dir", peer->dir_, "--app-id", opts.app_id,
                                   "--poll-hold", opts.poll_hold};
  if (!opts.app_public_key_pem.empty()) {
    std::ofstream(peer->dir_ + "/app.pub") << opts.app_public_key_pem;
    argv.insert(argv.end(), {"--app-public-key", peer->dir_ + "/app.pub"});
  }
  if (!opts.pat.empty())
    argv.insert(argv.end(), {"--pat", opts.pat});
  if (!opts.hud_token.empty())
    argv.insert(argv.end(), {"--hud-token", opts.hud_token});

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, (peer->dir_ + "/peer.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    why = "cannot start " + binary;
    return nullptr;
  }
  peer->pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::string ready;
  while (std::chrono::steady_clock::now() < deadline) {
    ready = read_file(peer->dir_ + "/ready.json");
    if (!ready.empty())
      break;
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      peer->pid_ = -1;
      why = "the peer exited at start: " + peer->log();
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (ready.empty()) {
    why = "the peer did not become ready in 20 s: " + peer->log();
    return nullptr;
  }
  peer->http_ = json_field(ready, "http");
  peer->https_ = json_field(ready, "https");
  peer->ca_pem_ = read_file(json_field(ready, "ca"));
  return peer;
}

actions_peer::~actions_peer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  if (!dir_.empty())
    testenv::run_command({"rm", "-rf", dir_});
}

http_reply actions_peer::control(std::string_view path, std::string_view body) const {
  http_reply out;
  CURL* c = curl_easy_init();
  const std::string url = http_ + "/_control" + std::string{path};
  const std::string data{body};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  if (!body.empty())
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, data.c_str());
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  return out;
}

std::string actions_peer::log() const { return read_file(dir_ + "/peer.log"); }

}  // namespace headroom::testpeer
