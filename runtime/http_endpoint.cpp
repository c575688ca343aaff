#include "runtime/http_endpoint.hpp"

#include <caf/all.hpp>

#include <memory>

#include "runtime/fault_hooks.hpp"
#include "runtime/health_routes.hpp"
#include "runtime/log.hpp"
#include "runtime/web_server.hpp"

namespace headroom::runtime {

namespace {

struct http_state {
  std::unique_ptr<web_server> server;
  readiness* ready = nullptr;
  ~http_state() {
    if (ready != nullptr)
      ready->remove("http");
  }
  static inline const char* name = "headroom.http";
};

http_endpoint_actor::behavior_type http_behavior(http_endpoint_actor::stateful_pointer<http_state> self, std::string listen, metrics* m, readiness* ready) {
  try {
    auto opts = health_server(listen, *m, *ready);
    if (auto faults = fault_route(self->system()))  // headroom-faults only (runtime/fault_hooks.hpp)
      opts.routes.push_back(std::move(*faults));
    self->state.server = std::make_unique<web_server>(std::move(opts));
  } catch (const std::exception& e) {
    log::error("http", "cannot serve", {{"listen", listen}, {"error", e.what()}});
    self->quit(caf::make_error(caf::sec::runtime_error, e.what()));
    return http_endpoint_actor::behavior_type::make_empty_behavior();
  }
  self->state.ready = ready;
  ready->set("http", true);
  log::info("http", "serving /metrics /healthz /readyz",
            {{"listen", listen}, {"port", static_cast<int>(self->state.server->port())}});
  // The server runs on its own threads; this actor only holds it. It answers `get_atom`
  // with the bound port so tests and the demo can find a server started on port 0.
  return {[self](caf::get_atom) { return static_cast<uint16_t>(self->state.server->port()); }};
}

}  // namespace

http_endpoint_actor spawn_http_endpoint(caf::actor_system& sys, std::string listen, metrics& m, readiness& ready) {
  return sys.spawn(http_behavior, std::move(listen), &m, &ready);
}

}  // namespace headroom::runtime
