#pragma once

// An informer's outage notes: an API server down for minutes is one line when its lists and
// watches start failing, a reminder a minute and one line when they work again, not a line per
// retry (the retries follow the informer's backoff).

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/k8s/client.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"

namespace headroom::k8s {

class informer_outage {
 public:
  informer_outage(const std::string& resource, const runtime::clock& clock) : resource_(resource), clock_(clock) {}

  void failed(std::string_view msg, const api_error& e, std::chrono::milliseconds wait) {
    const auto v = outage_.failed(clock_.now_ms());
    runtime::outage::log("k8s/informer", v, msg, msg,
                         {{"resource", resource_}, {"error", e.describe()}, {"retry_ms", static_cast<int64_t>(wait.count())},
                          {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
  }
  void succeeded() {
    if (const auto v = outage_.succeeded(clock_.now_ms()); v.log == runtime::outage::note::came_back)
      runtime::log::info("k8s/informer", "listed again after failures",
                         {{"resource", resource_}, {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
  }

 private:
  std::string resource_;
  const runtime::clock& clock_;
  runtime::outage outage_{{.reminder = std::chrono::minutes(1)}};
};

}  // namespace headroom::k8s
