#pragma once

// GET of the HUD's queued-jobs aggregate with the x-hud-internal-bot header. Failures are values
// (hud_error): the caller falls back to proactiveCapacity alone. The token is registered as a
// secret and never appears in logs or errors.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "adapters/http/transport.hpp"
#include "adapters/hud/queued_jobs.hpp"

namespace headroom::hud {

struct client_options {
  std::string url = "https://hud.pytorch.org/api/clickhouse/queued_jobs_aggregate?parameters=%5B%5D";
  std::string token;   // HUD_API_TOKEN
  std::string ca_pem;  // empty = the system store
  std::chrono::milliseconds timeout{10'000};
};

using fetch_result = std::variant<std::vector<queued_jobs>, hud_error>;

class client {
 public:
  client(http::exchange& io, client_options opts);
  // One GET; `cb` runs on the transport's I/O thread.
  void fetch(std::function<void(fetch_result)> cb);

 private:
  http::exchange& io_;
  client_options opts_;
  std::shared_ptr<const http::tls_config> tls_;
};

}  // namespace headroom::hud
