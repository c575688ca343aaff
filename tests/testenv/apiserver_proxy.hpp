#pragma once

// The API-server fault proxy (tests/peers/kube-fault-proxy) in front of the test control plane's
// kube-apiserver, for headroom's traffic only: the simulators, the peers and a test's own checks
// talk to the API server directly. Used by the fault campaign of every mode (tests/chaos and the
// `apiserver_faults` scenarios of the mode suites, which CTest runs under the `chaos` label).

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "testenv/cluster_fixture.hpp"
#include "testenv/peer_process.hpp"

namespace headroom::testenv {

struct apiserver_proxy {
  std::unique_ptr<testpeer::peer_process> p;
  std::string why;

  explicit apiserver_proxy(const cluster& c)
      : p(testpeer::peer_process::start("tests/peers/kube-fault-proxy/build.sh",
                                        {"--upstream", c.server(), "--upstream-ca", c.ca_file()}, why)) {}

  std::string post(const std::string& path, const std::string& body = "{}") const {
    return testpeer::http_call(p->ready("control") + path, body).body;
  }
  // One counter of GET /state; -1 when the proxy did not answer.
  int64_t state(const char* field) const {
    simdjson::dom::parser parser;
    int64_t n = -1;
    if (parser.parse(testpeer::http_call(p->ready("control") + "/state").body)[field].get(n) != simdjson::SUCCESS)
      return -1;
    return n;
  }

  // A kubeconfig of its own (written to `path`): the proxy's address and CA, `token` as the
  // bearer token (the proxy passes it through to the API server).
  std::string kubeconfig(const std::string& path, const std::string& token) const {
    std::ofstream(path) << "apiVersion: v1\nkind: Config\n"
                        << "clusters:\n- name: proxy\n  cluster:\n    server: " << p->ready("url")
                        << "\n    certificate-authority: " << p->ready("ca") << "\n"
                        << "users:\n- name: headroom\n  user:\n    token: " << token << "\n"
                        << "contexts:\n- name: proxy\n  context: {cluster: proxy, user: headroom}\ncurrent-context: proxy\n";
    return path;
  }

  // `kubeconfig` (server and CA as tests/testenv/chart-identity.sh writes them, quoted) pointed at
  // the proxy: the chart identity's token and RBAC, the proxy's address and CA.
  std::string through(const std::string& kubeconfig) const {
    std::ifstream in{kubeconfig};
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    auto swap = [&](const std::string& key, const std::string& value) {
      const auto at = text.find(key + ": \"");
      if (at == std::string::npos)
        return false;
      const auto start = at + key.size() + 3;
      text.replace(start, text.find('"', start) - start, value);
      return true;
    };
    const auto ca = run_command({"base64", "-w0", p->ready("ca")}).out;
    if (!swap("server", p->ready("url")) || !swap("certificate-authority-data", ca))
      return {};
    const std::string out = kubeconfig + ".proxy";
    std::ofstream(out) << text;
    return out;
  }

  // -- The three faults, each returning what the proxy reports it did ---------------------------

  // Every request answered 429 (Retry-After: 1), 503, 500 or 504 in turn for `window` (a 504 to a
  // write only after the write was made: the API server's own Timeout). Blocks for the window;
  // returns how many requests were answered with an error.
  int64_t error_storm(std::chrono::milliseconds window) const {
    const auto before = state("faulted");
    post("/faults", "{\"statuses\":[429,503,500,504],\"forMs\":" + std::to_string(window.count()) + "}");
    std::this_thread::sleep_for(window);
    return state("faulted") - before;
  }
  // Every watch stream open now stops sending without closing; returns how many.
  int64_t stall_watches() const { return std::stoll("0" + post("/stall")); }
  // How long the freshest of the last stall's streams had already been silent when it was stalled
  // (a watch carries nothing while nothing changes): a client's stall timeout, counted from the
  // last bytes it got, fires that much before the stall's own moment + the timeout.
  double stall_prior_silence_s() const { return std::max<int64_t>(0, state("stallSilentMinMs")) / 1000.0; }
  // How many of the last stall's streams the client has ended, and of those the shortest time
  // from the last bytes the proxy forwarded on one to the client's end (-1: none ended yet).
  int64_t stall_dropped() const { return state("stallDropped"); }
  double stall_dropped_min_s() const {
    const auto ms = state("stallDroppedMinMs");
    return ms < 0 ? -1.0 : static_cast<double>(ms) / 1000.0;
  }
  // Whether every stream of the last stall was given up no sooner than `timeout` after its own
  // last bytes, less a second: curl's low-speed check (CURLOPT_LOW_SPEED_TIME, how headroom times
  // a silent watch out) samples a transfer's speed about once a second. Call once all are dropped.
  bool stall_respected(int64_t stalled, std::chrono::seconds timeout) const {
    return stall_dropped() >= stalled && stall_dropped_min_s() >= static_cast<double>(timeout.count()) - 1.0;
  }
  // Every watch stream open now ends; its next watch meets a 410 Expired; returns how many.
  int64_t expire_watches() const { return std::stoll("0" + post("/expire")); }
  // Whether every open watch flows again (the stalled ones dropped by the client and reopened),
  // with at least `at_least` open.
  bool watches_flowing(int64_t at_least) const {
    const auto open = state("watchesOpen"), flowing = state("watchesFlowing");
    return open == flowing && flowing >= at_least;
  }
};

}  // namespace headroom::testenv
