#include "testenv/peer_process.hpp"

#include <strings.h>

#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

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

size_t collect(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

}  // namespace

size_t header_line(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<http_reply*>(user);
  std::string_view line{data, size * n};
  auto take = [&](std::string_view name, std::string& into) {
    if (line.size() > name.size() && strncasecmp(line.data(), name.data(), name.size()) == 0) {
      auto v = line.substr(name.size());
      while (!v.empty() && (v.front() == ' '))
        v.remove_prefix(1);
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n'))
        v.remove_suffix(1);
      into = std::string{v};
    }
  };
  take("link:", out->link);
  take("content-type:", out->content_type);
  return size * n;
}

http_reply http_call(const std::string& url, std::string_view body, const std::vector<std::string>& extra) {
  http_reply out;
  CURL* c = curl_easy_init();
  const std::string data{body};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &header_line);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &out);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  for (const auto& h : extra)
    headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  if (!body.empty())
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, data.c_str());
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  return out;
}

std::unique_ptr<peer_process> peer_process::start(const std::string& build_script, std::vector<std::string> args,
                                                  std::string& why) {
  char tmpl[] = "/tmp/headroom-peer-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    why = "cannot create a temporary directory";
    return nullptr;
  }
  std::unique_ptr<peer_process> p{new peer_process};
  p->dir_ = tmpl;
  const std::string binary = p->dir_ + "/peer";
  auto built = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/" + build_script, binary});
  if (built.exit_code != 0) {
    why = build_script + " failed: " + built.err + built.out;
    return nullptr;
  }
  std::vector<std::string> argv = {binary, "--state-dir", p->dir_};
  argv.insert(argv.end(), args.begin(), args.end());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, (p->dir_ + "/peer.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> cargs;
  for (auto& a : argv)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    why = "cannot start " + binary;
    return nullptr;
  }
  p->pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    p->ready_ = read_file(p->dir_ + "/ready.json");
    if (!p->ready_.empty())
      return p;
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      p->pid_ = -1;
      why = "the peer exited at start: " + p->log();
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  why = "the peer did not become ready in 20 s: " + p->log();
  return nullptr;
}

peer_process::~peer_process() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  if (!dir_.empty())
    testenv::run_command({"rm", "-rf", dir_});
}

std::string peer_process::ready(const std::string& key) const {
  const auto at = ready_.find("\"" + key + "\":\"");
  if (at == std::string::npos)
    return {};
  const auto start = at + key.size() + 4;
  return ready_.substr(start, ready_.find('"', start) - start);
}

std::string peer_process::log() const { return read_file(dir_ + "/peer.log"); }
std::string peer_process::read(const std::string& file) const { return read_file(dir_ + "/" + file); }

}  // namespace headroom::testpeer
