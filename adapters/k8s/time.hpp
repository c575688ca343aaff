#pragma once

// metav1.Time / MicroTime text: RFC 3339 ("2026-11-23T14:00:00.250Z"), as seconds since the epoch.
// The one parser and formatter is the runtime's (runtime/rfc3339.hpp).

#include "runtime/rfc3339.hpp"

namespace headroom::k8s {

using runtime::format_rfc3339;
using runtime::parse_rfc3339;

}  // namespace headroom::k8s
