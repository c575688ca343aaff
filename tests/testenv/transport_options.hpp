#pragma once

// Transport options for a test that runs in real time: the process's real clock, which the
// production code is only ever handed by main (scripts/check-layers), and tests may take.

#include "adapters/http/transport.hpp"

namespace headroom::testenv {

inline http::transport::options real_time_transport(http::transport::options o = {}) {
  o.clock = &runtime::real_clock();
  return o;
}

}  // namespace headroom::testenv
