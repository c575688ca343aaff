#pragma once

// The base of the deterministic actor suites: an actor system on CAF's test_coordinator (time
// moves only when the test advances it, and every actor's timers and wall time with it), and the
// outside world answered by hand through a scripted exchange: a Kubernetes client on it
// (`kube`), and any other adapter a suite builds on `io`.

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <string>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer.hpp"
#include "unit/support/scripted_exchange.hpp"

namespace headroom::test_support {

struct actor_fixture : ::testing::Test {
  static caf::actor_system_config& coordinated_config() {
    static caf::actor_system_config cfg;
    cfg.set("scheduler.policy", caf::atom("testing"));
    return cfg;
  }
  actor_fixture()
      : sys(coordinated_config()),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())),
        kube(k8s::connection{"https://api.test", {}, [] { return std::string{"token"}; }}, io) {}

  // The requests waiting for an answer whose method is `method` and whose URL holds `url_part`.
  size_t waiting(const std::string& method, const std::string& url_part = "") const {
    size_t n = 0;
    for (const auto& c : io.waiting())
      n += c.request.method == method && c.request.url.find(url_part) != std::string::npos;
    return n;
  }
  // The oldest of them (null: none).
  const http::http_request* find(const std::string& method, const std::string& url_part = "") const {
    for (const auto& c : io.waiting())
      if (c.request.method == method && c.request.url.find(url_part) != std::string::npos)
        return &c.request;
    return nullptr;
  }
  // The pods of namespace `ns` on a real informer over the scripted API server, started and
  // synced: its list is answered with `items` (pod objects, comma-separated); its watch then
  // waits for the test's io.stream("watch=true", …).
  std::shared_ptr<k8s::informer<k8s::pod>> pod_informer(const std::string& ns, const std::string& items = "") {
    k8s::informer<k8s::pod>::options o;
    o.kind = k8s::kinds::pods;
    o.ns = ns;
    auto pods = k8s::informer<k8s::pod>::make(kube, o);
    pods->start();
    EXPECT_TRUE(io.answer("GET", "/api/v1/namespaces/" + ns + "/pods", 200,
                          R"({"kind":"PodList","metadata":{"resourceVersion":"10"},"items":[)" + items + "]}"));
    io.fire_timers();
    EXPECT_TRUE(pods->synced());
    return pods;
  }
  // What waits, one request a line, for a failure's message.
  std::string waiting_text() const {
    std::string out;
    for (const auto& c : io.waiting())
      out += c.request.method + " " + c.request.url + "\n";
    return out.empty() ? "(nothing waits)" : out;
  }

  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  scripted_exchange io;
  k8s::client kube;
};

}  // namespace headroom::test_support
