#include "adapters/k8s/time.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>

namespace headroom::k8s {

std::string format_rfc3339(double seconds, int digits) {
  digits = std::clamp(digits, 0, 9);
  int64_t scale = 1;
  for (int i = 0; i < digits; ++i)
    scale *= 10;
  // Rounded once, as a whole number of units, so .9996 s carries into the next second.
  const auto units = static_cast<int64_t>(std::llround(seconds * static_cast<double>(scale)));
  int64_t whole = units / scale, fraction = units % scale;
  if (fraction < 0) {
    fraction += scale;
    --whole;
  }
  const auto t = static_cast<std::time_t>(whole);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                        tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (digits > 0)
    n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), ".%0*lld", digits, static_cast<long long>(fraction));
  std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), "Z");
  return buf;
}

std::optional<double> parse_rfc3339(std::string_view text) {
  const std::string s{text};
  std::tm tm{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr)
    return std::nullopt;
  double frac = 0;
  if (*rest == '.') {
    double scale = 0.1;
    ++rest;
    if (*rest < '0' || *rest > '9')
      return std::nullopt;
    for (; *rest >= '0' && *rest <= '9'; ++rest, scale /= 10)
      frac += (*rest - '0') * scale;
  }
  if (std::string_view{rest} != "Z")
    return std::nullopt;
  return static_cast<double>(timegm(&tm)) + frac;
}

}  // namespace headroom::k8s
