#pragma once

// metav1.Time / MicroTime text: RFC 3339 in UTC ("2026-11-23T14:00:00.250Z"), as seconds since
// the epoch.

#include <optional>
#include <string>
#include <string_view>

namespace headroom::k8s {

// `digits` of the second kept: 3 (the default) "2026-11-23T14:00:00.250Z"; 6 for a MicroTime.
std::string format_rfc3339(double seconds, int digits = 3);
// "…Z" with or without a fraction; nullopt for anything else (an offset, trailing text).
std::optional<double> parse_rfc3339(std::string_view text);

}  // namespace headroom::k8s
