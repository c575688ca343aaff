#pragma once

// Many objects created straight through the API (a large cluster's pods and nodes for the scale
// tests and benchmarks), a bounded number in flight at a time.

#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>

#include "adapters/k8s/client.hpp"

namespace headroom::e2e {

// A transport for bulk writes: the client's token bucket (50/s by default) would make 100,000
// creates take half an hour; the API server's own limits are what hold it back here.
inline k8s::transport::options bulk_transport_options() {
  k8s::transport::options o;
  o.clock = &headroom::runtime::real_clock();
  o.qps = 2'000;
  o.burst = 2'000;
  return o;
}

// Creates `n` objects, body(i) for i in [0, n), `in_flight` at a time; returns how many failed
// (an object that already exists counts as made) and prints the first failure.
inline int create_many(k8s::client& api, const k8s::resource_kind& kind, const std::string& ns, int n,
                       const std::function<std::string(int)>& body, int in_flight = 64) {
  std::mutex mu;
  std::condition_variable cv;
  int busy = 0, failed = 0;
  std::string first_error;
  for (int i = 0; i < n; ++i) {
    {
      std::unique_lock lock{mu};
      cv.wait(lock, [&] { return busy < in_flight; });
      ++busy;
    }
    api.create(kind, ns, body(i), [&](k8s::api_result r) {
      std::lock_guard lock{mu};
      --busy;
      if (auto* e = std::get_if<k8s::api_error>(&r); e && e->what != k8s::api_error::kind::already_exists && failed++ == 0)
        first_error = e->describe();
      cv.notify_all();
    });
  }
  std::unique_lock lock{mu};
  cv.wait(lock, [&] { return busy == 0; });
  if (failed > 0)
    std::fprintf(stderr, "create_many: %d of %d %s not created; the first: %s\n", failed, n, kind.plural.c_str(), first_error.c_str());
  return failed;
}

// A runner pod of scale set `set` waiting for a node, held Pending by a scheduling gate: nothing
// schedules or runs it, and headroom caches and counts it like any runner pod of the scale set.
inline std::string gated_runner_pod(const std::string& ns, const std::string& set, int i) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + set + "-runner-" + std::to_string(i) + R"(","namespace":")" + ns +
         R"(","labels":{"headroom.dev/scale-set":")" + set +
         R"(","headroom.dev/role":"runner"}},"spec":{"schedulingGates":[{"name":"headroom.test/hold"}],)"
         R"("containers":[{"name":"runner","image":"runner:test","resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}]}})";
}

}  // namespace headroom::e2e
