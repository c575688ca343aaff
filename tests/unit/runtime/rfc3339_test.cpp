#include "runtime/rfc3339.hpp"

#include <gtest/gtest.h>

namespace headroom::runtime {
namespace {

TEST(rfc3339, parses_utc_fractions_and_offsets) {
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(parse_rfc3339("2026-11-23T14:00:00Z"), 1'795'442'400.0);
  EXPECT_DOUBLE_EQ(*parse_rfc3339("2026-11-23T14:00:00.250Z"), 1'795'442'400.25);
  EXPECT_DOUBLE_EQ(*parse_rfc3339("2026-11-23T14:00:00.1234567Z"), 1'795'442'400.1234567) << "the Actions Service's 7 digits";
  EXPECT_EQ(parse_rfc3339("2026-11-23T16:00:00+02:00"), 1'795'442'400.0);
  EXPECT_EQ(parse_rfc3339("2026-11-23T09:30:00-04:30"), 1'795'442'400.0);
  EXPECT_EQ(parse_rfc3339("2026-11-23t14:00:00z"), 1'795'442'400.0);
  EXPECT_EQ(parse_rfc3339("2024-02-29T00:00:00Z"), 1'709'164'800.0) << "a leap day";
  EXPECT_EQ(parse_rfc3339("1969-12-31T23:59:59Z"), -1.0);
}

TEST(rfc3339, refuses_what_is_not_a_whole_valid_date_time) {
  for (const char* bad : {"", "2026-11-23", "2026-11-23T14:00:00", "2026-11-23T14:00:00ZX", "2026-11-23 14:00:00Z",
                          "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-11-23T24:00:00Z",
                          "2026-11-23T14:60:00Z", "2026-11-23T14:00:00.Z", "2026-11-23T14:00:00+0200", "2026-11-23T14:00:00+24:00",
                          "20x6-11-23T14:00:00Z", "2026-11-23T14:00:00.5"})
    EXPECT_FALSE(parse_rfc3339(bad).has_value()) << bad;
}

TEST(rfc3339, formats_utc_with_the_digits_asked_and_round_trips) {
  EXPECT_EQ(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(1'795'442'400.25), "2026-11-23T14:00:00.250Z");
  EXPECT_EQ(format_rfc3339(1'795'442'400.25, 6), "2026-11-23T14:00:00.250000Z");
  EXPECT_EQ(format_rfc3339(1'795'442'400.9996), "2026-11-23T14:00:01.000Z") << "rounded once, carried";
  EXPECT_EQ(format_rfc3339(1'795'442'400, 0), "2026-11-23T14:00:00Z");
  EXPECT_EQ(format_rfc3339(-1.5), "1969-12-31T23:59:58.500Z");
  for (double t : {0.0, 951'782'400.125, 1'709'164'800.5, 4'102'444'799.999})
    EXPECT_DOUBLE_EQ(*parse_rfc3339(format_rfc3339(t)), t);
}

}  // namespace
}  // namespace headroom::runtime
