#pragma once

// RFC 3339 date-times, the one parser and formatter headroom has: Kubernetes' metav1.Time and
// MicroTime, GitHub's and the Actions Service's timestamps, the log's `ts`, annotations.

#include <optional>
#include <string>
#include <string_view>

namespace headroom::runtime {

// Seconds since the epoch as "2026-11-23T14:00:00.250Z" (UTC); `digits` of the second kept: 3 by
// default, 6 for a MicroTime, 0 for none. Rounded once, so .9996 s with 3 digits carries.
std::string format_rfc3339(double seconds, int digits = 3);

// "2026-11-23T14:00:00Z", with any number of fraction digits and "Z" or an offset ("+02:00"), "T"
// or "t"; seconds since the epoch. Nullopt for anything else: a field out of range (month 13,
// February 30), a missing part, trailing text.
std::optional<double> parse_rfc3339(std::string_view text);

}  // namespace headroom::runtime
