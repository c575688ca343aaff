#pragma once

// The Grafana dashboard (deploy/grafana/headroom-dashboard.json) against a real run's /metrics:
// tests/deploy/dashboard-check.py names every metric a row queries that the run did not export.

#include <string>

#include "testenv/cluster_fixture.hpp"

namespace headroom::testenv {

// Exit code 0 when every metric of `row` is in `metrics_text`; the output says what is missing.
inline command_result dashboard_check(const std::string& row, const std::string& metrics_text) {
  const std::string src = HEADROOM_SOURCE_DIR;
  return run_command({"python3", src + "/tests/deploy/dashboard-check.py", src + "/deploy/grafana/headroom-dashboard.json", row, "-"},
                     metrics_text);
}

}  // namespace headroom::testenv
