#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace headroom::testenv {

struct command_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv without a shell, feeding `input` on stdin; captures stdout and stderr.
command_result run_command(const std::vector<std::string>& argv, const std::string& input = "");

struct cluster_options {
  bool karpenter = false;
  // A real node beside the kwok nodes (tests/testenv/node): kubelet, containerd, runc; needs root.
  bool node = false;
};

// The real control plane of one test binary (tests/testenv/cluster): started on first use, stopped
// when the binary exits (and by a watchdog if it crashes). Each component's log is printed when a
// test fails.
class cluster {
 public:
  // Nullptr when the control plane could not be started; `unavailable_reason()` says why.
  static cluster* shared(cluster_options opts = {});
  static const std::string& unavailable_reason();
  // True when CI demands the control plane (HEADROOM_REQUIRE_TESTENV=1): no skipping then.
  static bool required();

  const std::string& dir() const { return dir_; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  const std::string& server() const { return server_; }
  const std::string& ca_file() const { return ca_file_; }
  const std::string& admin_token() const { return admin_token_; }
  const std::string& user_token() const { return user_token_; }
  bool karpenter() const { return karpenter_; }
  // The real node (cluster_options::node): its name, where the host pushes images to its registry
  // ("10.250.N.2:5000") and the prefix its pods pull them by ("localhost:5000"); empty without one.
  const std::string& node_name() const { return node_name_; }
  const std::string& node_push() const { return node_push_; }
  const std::string& node_images() const { return node_images_; }
  // This machine's address on the node's network: what the node's pods reach a test peer by.
  const std::string& node_host_ip() const { return node_host_ip_; }

  // kubectl as the admin (or, with as_user, as the plain user).
  command_result kubectl(std::vector<std::string> args, const std::string& input = "", bool as_user = false) const;
  // The last `lines` lines of every component's log.
  std::string logs(int lines = 60) const;
  // Stops kube-apiserver and starts it again on the same port; returns once it is ready.
  bool restart_apiserver() const;

  ~cluster();

 private:
  cluster() = default;
  std::string dir_, kubeconfig_, server_, ca_file_, admin_token_, user_token_, kubectl_;
  std::string node_name_, node_push_, node_images_, node_host_ip_;
  bool karpenter_ = false;
};

// Polls `done` every 200 ms until it holds or `limit` passes. Integration tests wait on a real
// cluster, so this is wall-clock time by necessity; unit tests never do this.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit);

}  // namespace headroom::testenv

// In an integration test: when `ready` is false, a loud failure in CI (HEADROOM_REQUIRE_TESTENV=1)
// or a clear skip elsewhere; `what` names the missing part and `why` says what went wrong.
#define HEADROOM_REQUIRE_READY(ready, what, why)                                                      \
  if (!(ready)) {                                                                                     \
    if (::headroom::testenv::cluster::required())                                                     \
      FAIL() << "HEADROOM_REQUIRE_TESTENV=1 but " << (what) << " is unavailable: " << (why);          \
    GTEST_SKIP() << (what) << " unavailable (set HEADROOM_REQUIRE_TESTENV=1 to fail instead): " << (why); \
  }

// In an integration test: the shared cluster, or a loud failure in CI / a clear skip elsewhere.
#define HEADROOM_REQUIRE_CLUSTER(var, ...)                                   \
  auto* var = ::headroom::testenv::cluster::shared(__VA_ARGS__);             \
  HEADROOM_REQUIRE_READY(var != nullptr, "the control plane",                \
                         ::headroom::testenv::cluster::unavailable_reason())
