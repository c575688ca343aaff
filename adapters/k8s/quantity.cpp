#include "adapters/k8s/quantity.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace headroom::k8s {

namespace {

constexpr int64_t int64_max = std::numeric_limits<int64_t>::max();

struct parsed {
  bool positive = true;
  std::string_view num;    // integer digits, leading zeros stripped
  std::string_view denom;  // fraction digits
  std::string_view suffix;
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool in_suffix_set(char c) {
  switch (c) {
    case 'e': case 'E': case 'i': case 'n': case 'u': case 'm': case 'k': case 'K': case 'M': case 'G': case 'T': case 'P':
      return true;
    default:
      return false;
  }
}

// apimachinery's parseQuantityString, step for step (including what it tolerates).
bool split(std::string_view s, parsed& out) {
  size_t pos = 0;
  const size_t end = s.size();
  if (pos < end && (s[0] == '-' || s[0] == '+')) {
    out.positive = s[0] == '+';
    ++pos;
  }
  while (pos < end && s[pos] == '0')
    ++pos;
  if (pos >= end)
    return true;  // all zeros (or just a sign): 0
  size_t i = pos;
  while (i < end && is_digit(s[i]))
    ++i;
  out.num = s.substr(pos, i - pos);
  pos = i;
  if (pos >= end)
    return true;
  if (s[pos] == '.') {
    ++pos;
    i = pos;
    while (i < end && is_digit(s[i]))
      ++i;
    out.denom = s.substr(pos, i - pos);
    pos = i;
    if (pos >= end)
      return true;
  }
  const size_t suffix_start = pos;
  i = pos;
  while (i < end && in_suffix_set(s[i]))
    ++i;
  if (i >= end) {
    out.suffix = s.substr(suffix_start);
    return true;
  }
  pos = i;
  if (s[pos] == '-' || s[pos] == '+')
    ++pos;
  for (i = pos; i < end; ++i)
    if (!is_digit(s[i]))
      return false;  // a character that is neither suffix, sign nor exponent digit
  out.suffix = s.substr(suffix_start);
  return true;
}

// The suffixer: returns base (2 or 10) and exponent, or false for an unknown suffix.
bool interpret(std::string_view suffix, int& base, int64_t& exponent) {
  static constexpr struct {
    std::string_view text;
    int base;
    int exponent;
  } table[] = {{"", 10, 0},   {"n", 10, -9},  {"u", 10, -6},  {"m", 10, -3},  {"k", 10, 3},   {"M", 10, 6},
               {"G", 10, 9},  {"T", 10, 12},  {"P", 10, 15},  {"E", 10, 18},  {"Ki", 2, 10},  {"Mi", 2, 20},
               {"Gi", 2, 30}, {"Ti", 2, 40},  {"Pi", 2, 50},  {"Ei", 2, 60}};
  for (const auto& row : table)
    if (row.text == suffix) {
      base = row.base;
      exponent = row.exponent;
      return true;
    }
  // A decimal exponent: e or E followed by a signed integer.
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view rest = suffix.substr(1);
    bool negative = false;
    if (rest[0] == '-' || rest[0] == '+') {
      negative = rest[0] == '-';
      rest.remove_prefix(1);
    }
    if (rest.empty() || rest.size() > 10)
      return false;
    int64_t v = 0;
    for (char c : rest) {
      if (!is_digit(c))
        return false;
      v = v * 10 + (c - '0');
    }
    if (v > std::numeric_limits<int32_t>::max())
      return false;  // Kubernetes parses the exponent as an int32
    base = 10;
    exponent = negative ? -v : v;
    return true;
  }
  return false;
}

// ceil(digits × 2^exp2 × 10^exp10) as a non-negative integer capped at `cap`, by decimal string
// arithmetic: exact for any input length, used when the fast path could overflow.
int64_t scaled_ceil_slow(std::string_view digits, int64_t exp2, int64_t exp10, int64_t cap) {
  std::vector<uint8_t> d;  // most significant first
  for (char c : digits)
    d.push_back(static_cast<uint8_t>(c - '0'));
  for (int64_t i = 0; i < exp2; ++i) {  // × 2
    int carry = 0;
    for (size_t j = d.size(); j-- > 0;) {
      const int v = d[j] * 2 + carry;
      d[j] = static_cast<uint8_t>(v % 10);
      carry = v / 10;
    }
    if (carry != 0)
      d.insert(d.begin(), static_cast<uint8_t>(carry));
  }
  // Integer part = all digits but the last -exp10 (or all, padded with exp10 zeros).
  std::vector<uint8_t> integer;
  bool fraction = false;
  if (exp10 >= 0) {
    if (exp10 > 40)  // ≥ 10^40 ≫ cap unless the value is zero
      return std::all_of(d.begin(), d.end(), [](uint8_t x) { return x == 0; }) ? 0 : cap;
    integer = d;
    integer.insert(integer.end(), static_cast<size_t>(exp10), 0);
  } else {
    const auto drop = static_cast<size_t>(-exp10);
    const size_t keep = d.size() > drop ? d.size() - drop : 0;
    integer.assign(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(keep));
    for (size_t j = keep; j < d.size(); ++j)
      fraction = fraction || d[j] != 0;
  }
  size_t first = 0;
  while (first < integer.size() && integer[first] == 0)
    ++first;
  if (integer.size() - first > 19)
    return cap;
  unsigned __int128 v = 0;
  for (size_t j = first; j < integer.size(); ++j)
    v = v * 10 + integer[j];
  if (fraction)
    v += 1;
  return v > static_cast<unsigned __int128>(cap) ? cap : static_cast<int64_t>(v);
}

// The same with 128-bit integers when the digits fit comfortably (nearly every real quantity).
bool scaled_ceil_fast(std::string_view digits, int64_t exp2, int64_t exp10, int64_t cap, int64_t& out) {
  if (digits.size() > 18 || exp2 > 60 || exp10 > 18 || exp10 < -38)
    return false;
  unsigned __int128 v = 0;
  for (char c : digits)
    v = v * 10 + static_cast<unsigned>(c - '0');
  v <<= exp2;  // < 2^60 × 2^60
  static const unsigned __int128 limit = static_cast<unsigned __int128>(cap);
  if (exp10 >= 0) {
    for (int64_t i = 0; i < exp10; ++i) {
      v *= 10;
      if (v > limit) {
        out = cap;
        return true;
      }
    }
  } else {
    unsigned __int128 p = 1;
    for (int64_t i = 0; i < -exp10; ++i)
      p *= 10;
    const bool remainder = v % p != 0;
    v = v / p + (remainder ? 1 : 0);
  }
  out = v > limit ? cap : static_cast<int64_t>(v);
  return true;
}

int64_t scaled_ceil(std::string_view digits, int64_t exp2, int64_t exp10, int64_t cap) {
  int64_t out = 0;
  if (scaled_ceil_fast(digits, exp2, exp10, cap, out))
    return out;
  return scaled_ceil_slow(digits, exp2, exp10, cap);
}

// The common forms, an integer of up to 15 digits and an optional "", m, k, M, G, T, Ki, Mi, Gi, Ti
// or Pi suffix, computed directly; `parse_quantity_general` handles everything (and agrees with
// this on every input this accepts: see quantity_test).
bool parse_common(std::string_view text, quantity& q) {
  if (text.empty() || text.size() > 17)
    return false;
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && is_digit(text[i])) {
    v = v * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
  }
  if (i == 0 || i > 15)
    return false;
  const std::string_view suffix = text.substr(i);
  unsigned __int128 mult = 1;  // units per 1
  bool milli_suffix = false;
  if (suffix.empty()) {
  } else if (suffix == "m") {
    milli_suffix = true;
  } else if (suffix == "k") {
    mult = 1000;
  } else if (suffix == "M") {
    mult = 1000'000;
  } else if (suffix == "G") {
    mult = 1000'000'000;
  } else if (suffix == "T") {
    mult = 1000'000'000'000;
  } else if (suffix == "Ki") {
    mult = uint64_t{1} << 10;
  } else if (suffix == "Mi") {
    mult = uint64_t{1} << 20;
  } else if (suffix == "Gi") {
    mult = uint64_t{1} << 30;
  } else if (suffix == "Ti") {
    mult = uint64_t{1} << 40;
  } else if (suffix == "Pi") {
    mult = uint64_t{1} << 50;
  } else {
    return false;
  }
  const auto cap = static_cast<unsigned __int128>(int64_max);
  auto capped = [&](unsigned __int128 x) { return static_cast<int64_t>(x > cap ? cap : x); };
  if (milli_suffix) {
    q.milli = static_cast<int64_t>(v);
    q.units = static_cast<int64_t>((v + 999) / 1000);
  } else {
    q.units = capped(v * mult);
    q.milli = capped(v * mult * 1000);  // ≤ 10^15 × 2^50 × 10^3 < 2^127
  }
  return true;
}

}  // namespace

std::variant<quantity, quantity_error> parse_quantity(std::string_view text) {
  quantity q;
  if (parse_common(text, q))
    return q;
  return parse_quantity_general(text);
}

std::variant<quantity, quantity_error> parse_quantity_general(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return quantity_error{"invalid quantity \"" + std::string{text.substr(0, 64)} + (text.size() > 64 ? "…" : "") +
                          "\": " + std::string{why}};
  };
  if (text.empty())
    return fail("empty");
  parsed p;
  if (!split(text, p))
    return fail("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  int base = 10;
  int64_t exponent = 0;
  if (!interpret(p.suffix, base, exponent))
    return fail("unable to parse quantity's suffix");

  // Significant digits num+denom with the decimal point moved into the exponent; trailing zeros
  // folded into the exponent so "1000000000000000000000" stays on the fast path.
  std::string digits{p.num};
  digits.append(p.denom);
  int64_t exp10 = (base == 10 ? exponent : 0) - static_cast<int64_t>(p.denom.size());
  const int64_t exp2 = base == 2 ? exponent : 0;
  size_t lead = 0;
  while (lead < digits.size() && digits[lead] == '0')
    ++lead;
  digits.erase(0, lead);
  while (!digits.empty() && digits.back() == '0') {
    digits.pop_back();
    ++exp10;
  }
  quantity q;
  if (digits.empty())
    return q;  // zero
  // Kubernetes caps the amount at 2^63-1 units; milli of a capped value saturates.
  q.units = scaled_ceil(digits, exp2, exp10, int64_max);
  q.milli = scaled_ceil(digits, exp2, exp10 + 3, int64_max);
  if (!p.positive) {
    q.units = -q.units;
    q.milli = -q.milli;
  }
  return q;
}

}  // namespace headroom::k8s
