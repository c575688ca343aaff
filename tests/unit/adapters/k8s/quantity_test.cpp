#include "adapters/k8s/quantity.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

using headroom::k8s::parse_quantity;
using headroom::k8s::quantity;
using headroom::k8s::quantity_error;

namespace {

constexpr int64_t max64 = std::numeric_limits<int64_t>::max();

quantity ok(std::string_view s) {
  auto r = parse_quantity(s);
  if (auto* e = std::get_if<quantity_error>(&r)) {
    ADD_FAILURE() << s << ": " << e->message;
    return {};
  }
  return std::get<quantity>(r);
}

std::string err(std::string_view s) {
  auto r = parse_quantity(s);
  if (std::holds_alternative<quantity>(r)) {
    ADD_FAILURE() << "accepted " << s;
    return "";
  }
  return std::get<quantity_error>(r).message;
}

}  // namespace

TEST(quantity, plain_and_decimal_si) {
  EXPECT_EQ(ok("0"), (quantity{0, 0}));
  EXPECT_EQ(ok("1"), (quantity{1000, 1}));
  EXPECT_EQ(ok("100m"), (quantity{100, 1}));
  EXPECT_EQ(ok("2500m"), (quantity{2500, 3}));
  EXPECT_EQ(ok("1k"), (quantity{1'000'000, 1000}));
  EXPECT_EQ(ok("4M"), (quantity{4'000'000'000, 4'000'000}));
  EXPECT_EQ(ok("2G"), (quantity{2'000'000'000'000, 2'000'000'000}));
  EXPECT_EQ(ok("1T").units, 1'000'000'000'000);
  EXPECT_EQ(ok("1P").units, 1'000'000'000'000'000);
  EXPECT_EQ(ok("1E").units, 1'000'000'000'000'000'000) << "E alone is exa";
  EXPECT_EQ(ok("1u"), (quantity{1, 1})) << "micro rounds up to 1m and 1";
  EXPECT_EQ(ok("1n"), (quantity{1, 1}));
  EXPECT_EQ(ok("1000000n"), (quantity{1, 1}));
  EXPECT_EQ(ok("1000001n"), (quantity{2, 1}));
}

TEST(quantity, binary_si) {
  EXPECT_EQ(ok("1Ki").units, 1024);
  EXPECT_EQ(ok("512Mi").units, 512ll << 20);
  EXPECT_EQ(ok("4Gi").units, 4ll << 30);
  EXPECT_EQ(ok("1Ti").units, 1ll << 40);
  EXPECT_EQ(ok("1Pi").units, 1ll << 50);
  EXPECT_EQ(ok("1Ei").units, 1ll << 60);
  EXPECT_EQ(ok("1.5Ki").units, 1536);
  EXPECT_EQ(ok("1.5Gi").units, 3ll << 29);
  EXPECT_EQ(ok("0.5Ki"), (quantity{512'000, 512}));
  EXPECT_EQ(ok("1Ei").milli, max64) << "milli of 2^60 saturates";
}

TEST(quantity, decimal_exponents) {
  EXPECT_EQ(ok("1e3").units, 1000);
  EXPECT_EQ(ok("1E3").units, 1000);
  EXPECT_EQ(ok("1e+3").units, 1000);
  EXPECT_EQ(ok("12e6").units, 12'000'000);
  EXPECT_EQ(ok("1e-3"), (quantity{1, 1}));
  EXPECT_EQ(ok("1E-3"), (quantity{1, 1}));
  EXPECT_EQ(ok("1.5e2"), (quantity{150'000, 150}));
}

TEST(quantity, fraction_forms) {
  EXPECT_EQ(ok(".5"), (quantity{500, 1}));
  EXPECT_EQ(ok("5."), (quantity{5000, 5}));
  EXPECT_EQ(ok("1.G").units, 1'000'000'000) << "Kubernetes tolerates an empty fraction";
  EXPECT_EQ(ok("0.25"), (quantity{250, 1}));
  EXPECT_EQ(ok("007"), (quantity{7000, 7}));
  EXPECT_EQ(ok("."), (quantity{0, 0})) << "as apimachinery parses it";
}

TEST(quantity, rounds_up_away_from_zero) {
  EXPECT_EQ(ok("0.1m"), (quantity{1, 1}));
  EXPECT_EQ(ok("1.0001"), (quantity{1001, 2}));
  EXPECT_EQ(ok("0.000000001"), (quantity{1, 1}));
  EXPECT_EQ(ok("1e-100"), (quantity{1, 1}));
  EXPECT_EQ(ok("-0.1m"), (quantity{-1, -1}));
  EXPECT_EQ(ok("-1.5"), (quantity{-1500, -2}));
}

TEST(quantity, signs) {
  EXPECT_EQ(ok("+1"), (quantity{1000, 1}));
  EXPECT_EQ(ok("-1"), (quantity{-1000, -1}));
  EXPECT_EQ(ok("-"), (quantity{0, 0})) << "as apimachinery parses it";
  EXPECT_EQ(ok("+"), (quantity{0, 0}));
  EXPECT_EQ(ok("-0"), (quantity{0, 0}));
}

TEST(quantity, caps_at_int64_units) {
  EXPECT_EQ(ok("9223372036854775807").units, max64);
  EXPECT_EQ(ok("9223372036854775808").units, max64);
  EXPECT_EQ(ok("1e100").units, max64);
  EXPECT_EQ(ok("100000000000000000000000000000000000000000000").units, max64);
  EXPECT_EQ(ok("9223372036854775807").milli, max64);
  EXPECT_EQ(ok("8Ei").units, max64) << "2^63 is one past the cap";
}

// Digits beyond what 128 bits hold take the exact slow path.
TEST(quantity, long_inputs_stay_exact) {
  EXPECT_EQ(ok("1.0000000000000000000000000000000000000000001"), (quantity{1001, 2}));
  EXPECT_EQ(ok("0.0000000000000000000000000000000000000000001Ei"), (quantity{1, 1}));
  EXPECT_EQ(ok("1.50000000000000000001Ei").units, (3ll << 59) + 1);
  EXPECT_EQ(ok("123456789012345678901234e-20").milli, 1234568);
}

TEST(quantity, rejects_invalid_forms_with_a_clear_message) {
  EXPECT_EQ(err(""), "invalid quantity \"\": empty");
  EXPECT_EQ(err("1K"), "invalid quantity \"1K\": unable to parse quantity's suffix");
  EXPECT_EQ(err("1e"), "invalid quantity \"1e\": unable to parse quantity's suffix");
  EXPECT_NE(err("1Gib").find("must match the regular expression"), std::string::npos) << "b is not a suffix letter";
  EXPECT_EQ(err("1Mx"), "invalid quantity \"1Mx\": quantities must match the regular expression "
                        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  EXPECT_EQ(err("1iM"), "invalid quantity \"1iM\": unable to parse quantity's suffix");
  EXPECT_NE(err("1kb").find("must match the regular expression"), std::string::npos);
  EXPECT_NE(err("1.2.3").find("must match the regular expression"), std::string::npos);
  EXPECT_NE(err("1 Gi").find("must match"), std::string::npos);
  EXPECT_NE(err("abc").find("invalid quantity \"abc\""), std::string::npos);
  EXPECT_NE(err("1e3000000000").find("suffix"), std::string::npos) << "exponent beyond int32";
  EXPECT_EQ(ok("1e1000000").units, max64);
  EXPECT_EQ(ok("1e-1000000"), (quantity{1, 1}));
  // A hostile length is parsed in linear time and capped, not rejected.
  EXPECT_EQ(ok(std::string(100'000, '9')).units, max64);
}

// parse_quantity computes the common forms (integer + common suffix) directly; on every input the
// result must be exactly what the general parser gives.
TEST(quantity, common_forms_agree_with_the_general_parser) {
  const char* suffixes[] = {"", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
                            "n", "u", "K", "e3", "Kib", "mm", "i", "-", "."};
  std::vector<std::string> numbers{"0", "00", "1", "7", "999", "1000", "1001", "1500", "0999"};
  uint64_t x = 1;
  for (int digits = 1; digits <= 18; ++digits) {
    x = x * 10 + static_cast<uint64_t>(digits % 7);
    numbers.push_back(std::to_string(x));
    numbers.push_back(std::string(static_cast<size_t>(digits), '9'));
  }
  int compared = 0;
  for (const auto& n : numbers) {
    for (const char* s : suffixes) {
      const std::string text = n + s;
      const auto fast = headroom::k8s::parse_quantity(text);
      const auto general = headroom::k8s::parse_quantity_general(text);
      ASSERT_EQ(fast.index(), general.index()) << text;
      if (const auto* q = std::get_if<quantity>(&fast)) {
        EXPECT_EQ(*q, std::get<quantity>(general)) << text;
      }
      ++compared;
    }
  }
  EXPECT_EQ(compared, 45 * 23);
}
