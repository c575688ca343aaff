#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <string>

#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"

namespace headroom::runtime {

// The `http` child of the root supervisor: owns the web_server of /metrics, /healthz and /readyz for as long as it lives. A bind
// failure makes it exit abnormally, so the supervisor retries with backoff (the port may be held
// by a process that is still shutting down) and escalates if it never frees up.
// `metrics` and `ready` must outlive the actor.
// `get_atom` answers the bound port (tests and the demo start it on port 0).
using http_endpoint_actor = caf::typed_actor<caf::replies_to<caf::get_atom>::with<uint16_t>>;

http_endpoint_actor spawn_http_endpoint(caf::actor_system& sys, std::string listen, metrics& m, readiness& ready);

}  // namespace headroom::runtime
