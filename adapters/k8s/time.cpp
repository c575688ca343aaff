#include "adapters/k8s/time.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace headroom::k8s {

std::string format_rfc3339(double seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(seconds));
  const int millis = static_cast<int>(std::lround((seconds - static_cast<double>(whole)) * 1000)) % 1000;
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
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
