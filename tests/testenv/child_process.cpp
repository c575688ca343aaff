#include "testenv/child_process.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include <thread>

namespace headroom::testenv {

child_process::child_process(std::vector<std::string> argv, std::vector<std::string> env, std::string log_path)
    : log_path_(std::move(log_path)) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args, envp;
  for (auto& a : argv)
    args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  if (posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), envp.data()) != 0)
    pid_ = -1;
  posix_spawn_file_actions_destroy(&fa);
}

child_process::~child_process() { stop(SIGKILL); }

int child_process::stop(int sig) {
  if (pid_ <= 0)
    return -1;
  kill(pid_, sig);
  int status = 0;
  for (int i = 0; i < 300 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (waitpid(pid_, &status, WNOHANG) == 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  return status;
}

bool child_process::alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

std::string child_process::log(size_t bytes) const {
  std::ifstream in{log_path_};
  std::stringstream ss;
  ss << in.rdbuf();
  auto s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

namespace {

// Binds a loopback socket to `port` (0: the kernel picks one) and closes it: the port it had, or -1.
int try_bind(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof addr;
  int bound = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    bound = ntohs(addr.sin_port);
  close(fd);
  return bound;
}

}  // namespace

// Below the kernel's ephemeral range, as tests/testenv/free-port does and for its reason: a port
// bind(0) hands out is one the kernel also gives an outgoing connection's local end, which may take
// it before the server binds it. Where the range leaves nothing below it, bind(0).
int free_port() {
  int low = 0;
  std::ifstream range{"/proc/sys/net/ipv4/ip_local_port_range"};
  range >> low;
  std::random_device seed;
  std::mt19937 rng{seed()};
  for (int i = 0; low > 11000 && i < 200; ++i) {
    const int port = std::uniform_int_distribution<int>{10000, low - 1}(rng);
    if (try_bind(port) == port)
      return port;
  }
  return try_bind(0);
}

double cpu_seconds(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const auto close = stat.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string::npos || close + 2 > stat.size())
    return 0;
  std::istringstream fields{stat.substr(close + 2)};
  std::vector<std::string> f{std::istream_iterator<std::string>{fields}, {}};
  if (f.size() <= 12)
    return 0;
  return static_cast<double>(std::stoll(f[11]) + std::stoll(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace headroom::testenv
