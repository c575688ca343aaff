#pragma once

// What the capacity test binaries (tests/e2e/capacity_e2e_test.cpp, the chaos suite in
// tests/chaos/) share: one control plane with Karpenter and one Actions Service peer per binary,
// the precondition macros, and the every-poll audit as a test assertion. Include it once per
// binary (it declares the binary's shared environment).

#include <gtest/gtest.h>

#include <iostream>

#include "e2e/capacity_world.hpp"
#include "testenv/shared_env.hpp"

namespace headroom::e2e {

// The cluster a binary's scenarios share; a binary may define its own before including this.
// (HEADROOM_E2E_REAL_NODE: the cluster's real node beside Karpenter's, tainted so only the pods
// that ask run there; capacity_e2e_test's migration scenario runs the chart's pod on it.)
#ifndef HEADROOM_E2E_CLUSTER
#ifdef HEADROOM_E2E_REAL_NODE
#define HEADROOM_E2E_CLUSTER (cluster_options{.karpenter = true, .node = true})
#else
#define HEADROOM_E2E_CLUSTER (cluster_options{.karpenter = true})
#endif
#endif

inline env make_env() {
  env out;
  out.c = cluster::shared(HEADROOM_E2E_CLUSTER);
  if (!out.c) {
    out.why = cluster::unavailable_reason();
    return out;
  }
  testpeer::actions_peer::options o;
  o.pat = pat;
  o.poll_hold = "20s";
  o.hud_token = hud_token;
  if (!out.c->node_host_ip().empty())
    o.listen_host = out.c->node_host_ip();  // the runners on the real node reach it (runner-sim runner)
  std::tie(out.app_private_key, o.app_public_key_pem) = testpeer::make_app_key();
  out.peer = testpeer::actions_peer::start(o, out.why);
  return out;
}

inline testenv::shared_env<env> the_env{make_env, [](env& e) { e.peer.reset(); }};
inline env& shared() { return the_env.get(); }

#define REQUIRE_ENV(var)                                                          \
  auto& var = shared();                                                           \
  HEADROOM_REQUIRE_READY(var.c != nullptr && var.peer, "the control plane and the Actions Service peer", var.why)

#define REQUIRE_WORLD(w) HEADROOM_REQUIRE_READY(w.sim != nullptr && w.identity, "the runner simulator and the chart's identity", w.why)

// The audit (see capacity_world.hpp) as a test assertion; returns the number of polls checked.
inline int audited(const world& w, int64_t set) {
  auto r = w.audit(set);
  for (const auto& v : r.violations)
    ADD_FAILURE() << w.s.name << ": " << v;
  if (!r.violations.empty()) {  // what the audit judged by: the polls, the cluster's timeline, headroom's word
    std::string decisions;
    const auto log = w.headroom->full_log();
    for (size_t at = 0, end; at < log.size(); at = end + 1) {
      end = log.find('\n', at);
      if (end == std::string::npos)
        end = log.size();
      const auto line = std::string_view(log).substr(at, end - at);
      if (line.find("\"msg\":\"capacity\"") != std::string_view::npos || line.find("placeholder_pair") != std::string_view::npos)
        decisions.append(line).append("\n");
    }
    std::cout << "[audit] peer: " << w.e.peer->control("/state").body.substr(0, 20000) << "\n[audit] simulator: "
              << testpeer::http_call(w.sim->ready("http") + "/state").body.substr(0, 20000) << "\n[audit] headroom:\n" << decisions;
  }
  std::cout << "[audit] " << w.s.name << ": " << r.checked << " polls checked against the cluster, "
            << r.violations.size() << " over-advertised\n";
  return r.checked;
}

}  // namespace headroom::e2e
