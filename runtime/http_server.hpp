#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"

class CivetServer;

namespace headroom::runtime {

// headroom's HTTP endpoints on civetweb (Debian's libcivetweb, the server prometheus-cpp's own
// exposer embeds): /metrics (Prometheus text format), /healthz (the process answers), /readyz
// (aggregated readiness). Later dashboards add handlers here. Two worker threads: scrapes and
// probes are small and rare.
class http_server {
 public:
  // Binds at once; throws std::runtime_error naming the address when it cannot.
  http_server(const std::string& listen, metrics& m, readiness& r);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  // The bound port (useful with port 0).
  uint16_t port() const { return port_; }

 private:
  struct handlers;
  std::unique_ptr<handlers> handlers_;
  std::unique_ptr<CivetServer> server_;
  uint16_t port_ = 0;
};

}  // namespace headroom::runtime
