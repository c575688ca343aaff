#include "runtime/yaml_json.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <regex>

namespace headroom::runtime {

namespace {

using writer = rapidjson::Writer<rapidjson::StringBuffer>;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool write_integer(writer& w, const std::string& s) {
  // A leading 0 is octal, as kubectl reads it (defaultMode: 0644 is 420).
  static const std::regex dec{"[-+]?(0|[1-9][0-9]*)"}, hex{"0x[0-9a-fA-F]+"}, oct{"0o?[0-7]+"};
  int base = 0;
  std::string digits = s;
  if (std::regex_match(s, dec)) {
    base = 10;
    if (digits[0] == '+')
      digits.erase(0, 1);
  } else if (std::regex_match(s, hex)) {
    base = 16;
    digits = s.substr(2);
  } else if (std::regex_match(s, oct)) {
    base = 8;
    digits = s.substr(s[1] == 'o' ? 2 : 1);
  } else {
    return false;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (ec != std::errc{} || end != digits.data() + digits.size())
    return false;  // past int64: a float, as kubectl reads it
  w.Int64(v);
  return true;
}

bool write_float(writer& w, const std::string& s) {
  static const std::regex num{"[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?"};
  if (!std::regex_match(s, num))
    return false;
  // .inf and .nan have no JSON form: they stay strings (and the API server names the field).
  w.Double(std::strtod(s.c_str(), nullptr));
  return true;
}

void write_scalar(writer& w, const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "!") {  // plain, not quoted
    const auto l = lower(s);
    if (s.empty() || l == "null" || s == "~")
      return static_cast<void>(w.Null());
    if (l == "true" || l == "false")
      return static_cast<void>(w.Bool(l == "true"));
    if (write_integer(w, s) || write_float(w, s))
      return;
  }
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

std::optional<yaml_json_error> walk(writer& w, const YAML::Node& n, const std::string& where, int depth) {
  if (depth <= 0)
    return yaml_json_error{where, "nested too deeply"};
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      w.Null();
      return std::nullopt;
    case YAML::NodeType::Scalar:
      write_scalar(w, n);
      return std::nullopt;
    case YAML::NodeType::Sequence: {
      w.StartArray();
      size_t i = 0;
      for (const auto& item : n)
        if (auto e = walk(w, item, where + "[" + std::to_string(i++) + "]", depth - 1))
          return e;
      w.EndArray();
      return std::nullopt;
    }
    case YAML::NodeType::Map: {
      w.StartObject();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar())
          return yaml_json_error{where, "a key that is not a string"};
        const std::string& key = kv.first.Scalar();
        w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
        if (auto e = walk(w, kv.second, where.empty() ? key : where + "." + key, depth - 1))
          return e;
      }
      w.EndObject();
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::variant<std::string, yaml_json_error> yaml_to_json(const YAML::Node& node, int max_depth) {
  rapidjson::StringBuffer out;
  writer w{out};
  if (auto e = walk(w, node, "", max_depth))
    return *e;
  return std::string{out.GetString(), out.GetSize()};
}

}  // namespace headroom::runtime
