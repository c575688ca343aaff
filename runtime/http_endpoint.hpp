#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <string>

#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"

namespace headroom::runtime {

// The `http` child of the root supervisor: owns the http_server for as long as it lives. A bind
// failure makes it exit abnormally, so the supervisor retries with backoff (the port may be held
// by a process that is still shutting down) and escalates if it never frees up.
// `metrics` and `ready` must outlive the actor.
caf::actor spawn_http_endpoint(caf::actor_system& sys, std::string listen, metrics& m, readiness& ready);

}  // namespace headroom::runtime
