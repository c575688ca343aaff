#include "testenv/cluster_fixture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

extern char** environ;

namespace headroom::testenv {

namespace {

std::unique_ptr<cluster>& instance() {
  static std::unique_ptr<cluster> c;
  return c;
}

std::string& failure() {
  static std::string reason;
  return reason;
}

bool& attempted() {
  static bool tried = false;
  return tried;
}

std::map<std::string, std::string> read_env_file(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in{path};
  for (std::string line; std::getline(in, line);)
    if (auto eq = line.find('='); eq != std::string::npos)
      out[line.substr(0, eq)] = line.substr(eq + 1);
  return out;
}

// Prints the components' logs after any failed test of a binary that uses the cluster.
class log_dumper final : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed() && instance())
      std::fprintf(stderr, "\n===== control plane logs after %s.%s =====\n%s\n", info.test_suite_name(), info.name(),
                   instance()->logs(40).c_str());
  }
};

}  // namespace

command_result run_command(const std::vector<std::string>& argv, const std::string& input) {
  command_result r;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    return r;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    r.err = "cannot start " + argv[0];
    return r;
  }
  std::thread writer([fd = in_pipe[1], &input] {
    size_t off = 0;
    while (off < input.size()) {
      const ssize_t n = write(fd, input.data() + off, input.size() - off);
      if (n <= 0)
        break;
      off += static_cast<size_t>(n);
    }
    close(fd);
  });
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[8192];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0)
        continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  writer.join();
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

bool cluster::required() {
  const char* v = std::getenv("HEADROOM_REQUIRE_TESTENV");
  return v != nullptr && std::string{v} == "1";
}

const std::string& cluster::unavailable_reason() { return failure(); }

cluster* cluster::shared(cluster_options opts) {
  if (instance()) {
    if (opts.karpenter && !instance()->karpenter_) {
      failure() = "this test binary's cluster was started without Karpenter";
      return nullptr;
    }
    if (opts.node && instance()->node_name_.empty()) {
      failure() = "this test binary's cluster was started without a real node";
      return nullptr;
    }
    return instance().get();
  }
  if (attempted())
    return nullptr;
  attempted() = true;

  const std::string source = HEADROOM_SOURCE_DIR;
  auto check = run_command({source + "/tests/testenv/build.sh", "--check"});
  if (check.exit_code != 0) {
    failure() = "control plane binaries are not built: " + check.err;
    return nullptr;
  }
  std::string testenv_dir = check.out.substr(0, check.out.find('\n'));
  setenv("HEADROOM_TESTENV_DIR", testenv_dir.c_str(), 1);

  char tmpl[] = "/tmp/headroom-testenv-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    failure() = "cannot create a temporary directory";
    return nullptr;
  }
  std::vector<std::string> up = {source + "/tests/testenv/cluster", "up", tmpl, "--owner", std::to_string(getpid())};
  if (opts.karpenter)
    up.push_back("--karpenter");
  if (opts.node)
    up.push_back("--node");
  auto started = run_command(up);
  if (started.exit_code != 0) {
    failure() = "tests/testenv/cluster up failed (exit " + std::to_string(started.exit_code) + "):\n" + started.err;
    run_command({source + "/tests/testenv/cluster", "down", tmpl});
    return nullptr;
  }
  std::fprintf(stderr, "%s", started.err.c_str());
  auto env = read_env_file(std::string{tmpl} + "/env");
  std::unique_ptr<cluster> c{new cluster};
  c->dir_ = tmpl;
  c->kubeconfig_ = env["KUBECONFIG"];
  c->server_ = env["HEADROOM_TESTENV_SERVER"];
  c->ca_file_ = env["HEADROOM_TESTENV_CA"];
  c->admin_token_ = env["HEADROOM_TESTENV_ADMIN_TOKEN"];
  c->user_token_ = env["HEADROOM_TESTENV_USER_TOKEN"];
  c->kubectl_ = env["HEADROOM_TESTENV_KUBECTL"];
  c->karpenter_ = env["HEADROOM_TESTENV_KARPENTER"] == "true";
  c->node_name_ = env["HEADROOM_TESTENV_NODE"];
  c->node_push_ = env["HEADROOM_TESTENV_NODE_PUSH"];
  c->node_images_ = env["HEADROOM_TESTENV_NODE_IMAGES"];
  c->node_host_ip_ = env["HEADROOM_TESTENV_NODE_HOST_IP"];
  instance() = std::move(c);
  ::testing::UnitTest::GetInstance()->listeners().Append(new log_dumper);
  return instance().get();
}

cluster::~cluster() {
  run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/cluster", "down", dir_});
  run_command({"rm", "-rf", dir_});
}

command_result cluster::kubectl(std::vector<std::string> args, const std::string& input, bool as_user) const {
  std::vector<std::string> argv = {kubectl_, "--kubeconfig", kubeconfig_, "--context", as_user ? "user" : "admin"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, input);
}

std::string cluster::logs(int lines) const {
  return run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/cluster", "logs", dir_, std::to_string(lines)})
      .out;
}

bool cluster::restart_apiserver() const {
  auto r = run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/cluster", "restart-apiserver", dir_});
  if (r.exit_code != 0)
    std::fprintf(stderr, "restart-apiserver failed: %s\n", r.err.c_str());
  return r.exit_code == 0;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (done())
      return true;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace headroom::testenv
