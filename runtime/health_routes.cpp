#include "runtime/health_routes.hpp"

namespace headroom::runtime {

std::vector<web_route> health_routes(metrics& m, readiness& r) {
  std::vector<web_route> routes;
  routes.push_back({"GET", "/metrics", [&m](const web_request&) {
                      return web_reply{200, "text/plain; version=0.0.4; charset=utf-8", {}, m.render()};
                    }});
  routes.push_back({"GET", "/healthz", [](const web_request&) { return web_reply{200, "text/plain", {}, "ok\n"}; }});
  routes.push_back({"GET", "/readyz", [&r](const web_request&) {
                      auto report = r.check();
                      return web_reply{report.ready ? 200 : 503, "text/plain", {}, std::move(report.body)};
                    }});
  return routes;
}

web_options health_server(const std::string& listen, metrics& m, readiness& r) {
  web_options opts;
  opts.listen = listen;
  opts.routes = health_routes(m, r);
  opts.threads = 2;
  opts.keep_alive = false;
  return opts;
}

}  // namespace headroom::runtime
