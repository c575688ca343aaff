#pragma once

#include <string>
#include <vector>

#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"
#include "runtime/web_server.hpp"

namespace headroom::runtime {

// The routes every headroom process serves for its scraper and its kubelet, on a web_server (the
// one HTTP server library headroom serves with, cpp-httplib): GET /metrics (Prometheus text
// format), /healthz (the process answers), /readyz (aggregated readiness: 503 and what is not
// ready). `m` and `r` must outlive the server.
std::vector<web_route> health_routes(metrics& m, readiness& r);

// A web_server's options for those routes alone on `listen`: two workers (scrapes and probes are
// small and rare) and no keep-alive, so a scraper's idle connection never holds a worker a kubelet
// probe needs (each request gets its answer and the connection closes).
web_options health_server(const std::string& listen, metrics& m, readiness& r);

}  // namespace headroom::runtime
