#pragma once

// The Kubernetes client speaks through headroom's shared HTTP transport.
#include "adapters/http/transport.hpp"

namespace headroom::k8s {
using http::http_request;
using http::http_response;
using http::request_id;
using http::tls_config;
using http::transport;
}  // namespace headroom::k8s
