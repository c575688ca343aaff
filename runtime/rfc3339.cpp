#include "runtime/rfc3339.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace headroom::runtime {

namespace {

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
// days_from_civil): no timegm, no time zone, no locale.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
}

unsigned days_in_month(int64_t y, unsigned m) {
  static constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : days[m - 1];
}

// `n` digits at `at` as a number; -1 when they are not all digits or the text is too short.
int digits(std::string_view t, size_t at, size_t n) {
  if (at + n > t.size())
    return -1;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (t[i] < '0' || t[i] > '9')
      return -1;
    v = v * 10 + (t[i] - '0');
  }
  return v;
}

}  // namespace

std::string format_rfc3339(double seconds, int digits_kept) {
  digits_kept = std::clamp(digits_kept, 0, 9);
  int64_t scale = 1;
  for (int i = 0; i < digits_kept; ++i)
    scale *= 10;
  const auto units = static_cast<int64_t>(std::llround(seconds * static_cast<double>(scale)));
  int64_t whole = units / scale, fraction = units % scale;
  if (fraction < 0) {
    fraction += scale;
    --whole;
  }
  int64_t days = whole / 86'400, rest = whole % 86'400;
  if (rest < 0) {
    rest += 86'400;
    --days;
  }
  int64_t y = 0;
  unsigned m = 0, d = 0;
  civil_from_days(days, y, m, d);
  char buf[96];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld", static_cast<long long>(y), m, d,
                        static_cast<long long>(rest / 3600), static_cast<long long>(rest / 60 % 60), static_cast<long long>(rest % 60));
  if (digits_kept > 0)
    n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), ".%0*lld", digits_kept, static_cast<long long>(fraction));
  std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), "Z");
  return buf;
}

std::optional<double> parse_rfc3339(std::string_view t) {
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') || t[13] != ':' || t[16] != ':')
    return std::nullopt;
  const int year = digits(t, 0, 4), month = digits(t, 5, 2), day = digits(t, 8, 2);
  const int hour = digits(t, 11, 2), minute = digits(t, 14, 2), second = digits(t, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 ||
      second > 60)
    return std::nullopt;
  if (static_cast<unsigned>(day) > days_in_month(year, static_cast<unsigned>(month)))
    return std::nullopt;
  size_t at = 19;
  double fraction = 0;
  if (t[at] == '.') {
    ++at;
    const size_t first = at;
    double scale = 0.1;
    for (; at < t.size() && t[at] >= '0' && t[at] <= '9'; ++at, scale /= 10)
      fraction += (t[at] - '0') * scale;
    if (at == first)
      return std::nullopt;
  }
  int64_t offset = 0;
  const std::string_view zone = t.substr(std::min(at, t.size()));
  if (zone == "Z" || zone == "z") {
    offset = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    const int oh = digits(zone, 1, 2), om = digits(zone, 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59)
      return std::nullopt;
    offset = (zone[0] == '+' ? 1 : -1) * (int64_t{oh} * 3600 + int64_t{om} * 60);
  } else {
    return std::nullopt;
  }
  const int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t whole = days * 86'400 + int64_t{hour} * 3600 + int64_t{minute} * 60 + second - offset;
  return static_cast<double>(whole) + fraction;
}

}  // namespace headroom::runtime
