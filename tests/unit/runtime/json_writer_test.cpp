#include "runtime/json_writer.hpp"

#include <gtest/gtest.h>
#define RAPIDJSON_NOMEMBERITERATORCLASS
#include <rapidjson/document.h>

#include <cmath>
#include <limits>
#include <random>

using headroom::runtime::json_writer;

namespace {

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  EXPECT_FALSE(d.HasParseError()) << json;
  return d;
}

}  // namespace

TEST(json_writer, nests_objects_and_arrays_with_their_commas) {
  json_writer w;
  w.begin_object().field("kind", "Pod").key("metadata").begin_object().field("name", std::string{"p"}).end_object();
  w.key("items").begin_array().value(1).value(std::string_view{"two"}).begin_object().end_object().end_array();
  w.key("labels").string_map({{"a", "1"}, {"b", "2"}}).key("command").strings({"sh", "-c"});
  EXPECT_FALSE(w.complete());
  w.end_object();
  EXPECT_TRUE(w.complete());
  EXPECT_EQ(w.view(), R"({"kind":"Pod","metadata":{"name":"p"},"items":[1,"two",{}],"labels":{"a":"1","b":"2"},)"
                     R"("command":["sh","-c"]})");
}

// Whatever a string holds, it reads back the same through another parser: quotes, backslashes,
// control bytes, NUL, UTF-8 and what looks like JSON.
TEST(json_writer, strings_read_back_the_same) {
  const std::string hostile = std::string{"a\"b\\c\n\t\x01\x1f"} + '\0' + "é💥\",\"injected\":true}";
  json_writer w;
  w.begin_object().field(hostile, hostile).end_object();
  const auto d = parse(std::string{w.view()});
  ASSERT_TRUE(d.IsObject());
  ASSERT_EQ(d.MemberCount(), 1u);
  const auto& m = *d.MemberBegin();
  EXPECT_EQ(std::string(m.name.GetString(), m.name.GetStringLength()), hostile);
  EXPECT_EQ(std::string(m.value.GetString(), m.value.GetStringLength()), hostile);
}

TEST(json_writer, a_string_literal_is_a_string_and_numbers_keep_their_type) {
  json_writer w;
  w.begin_array().value("true").value(true).value(false);
  w.value(std::numeric_limits<int64_t>::min()).value(std::numeric_limits<uint64_t>::max()).value(int32_t{-7});
  w.value(0.1).value(1e21).value(std::nan("")).value(std::numeric_limits<double>::infinity()).null();
  w.end_array();
  EXPECT_EQ(w.view(), R"(["true",true,false,-9223372036854775808,18446744073709551615,-7,0.1,1e21,null,null,null])");
}

TEST(json_writer, a_raw_value_is_placed_as_written) {
  json_writer spec;
  spec.begin_object().field("replicas", 3).end_object();
  json_writer w;
  w.begin_object().key("spec").raw(spec.take()).field("after", 1).end_object();
  EXPECT_EQ(w.view(), R"({"spec":{"replicas":3},"after":1})");
  EXPECT_TRUE(parse(std::string{w.view()}).IsObject());
}

// Strings that need no escape take a copying fast path, the rest RapidJSON's escaping: 5,000
// random strings (quotes, backslashes, control bytes, UTF-8, at every offset of the eight-byte
// scan) read back the same either way, as keys and as values.
TEST(json_writer, random_strings_read_back_the_same) {
  std::mt19937 rng{7};
  const std::string alphabet = std::string{"abcXYZ019 _-./:\"\\\n\t\x01\x1f\x7f"} + "\xc3\xa9" + '\0';
  for (int round = 0; round < 5000; ++round) {
    std::string s;
    const size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i)
      s += alphabet[rng() % alphabet.size()];
    if (round % 2)  // half of them plain, for the fast path
      std::erase_if(s, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\'; });
    json_writer w;
    w.begin_object().field(s, s).end_object();
    const auto d = parse(std::string{w.view()});
    ASSERT_TRUE(d.IsObject());
    const auto& m = *d.MemberBegin();
    ASSERT_EQ(std::string(m.name.GetString(), m.name.GetStringLength()), s);
    ASSERT_EQ(std::string(m.value.GetString(), m.value.GetStringLength()), s);
  }
}
