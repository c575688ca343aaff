#pragma once

#include <cstdint>
#include <functional>
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
  // Fails every running actor named by its argument; the number hit (runtime/fault_hooks.hpp).
  using fault_trigger = std::function<int64_t(const std::string&)>;

  // Binds at once; throws std::runtime_error naming the address when it cannot. With `faults`
  // (test-only) it also serves POST /debug/fault?child=NAME.
  http_server(const std::string& listen, metrics& m, readiness& r, fault_trigger faults = {});
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
