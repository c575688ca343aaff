#pragma once

// Small helpers over simdjson On-Demand shared by headroom's flat decoders (GitHub, HUD,
// BigFleet). The Kubernetes decoder keeps its own, which also track the field path.

#include <simdjson.h>

#include <string>
#include <string_view>

namespace headroom::json {

namespace od = simdjson::ondemand;

// A decoder's own failure, with the message it reports (the caller prefixes where).
struct failure {
  std::string message;
};

inline bool is_null(od::value& v) { return v.type() == od::json_type::null && v.is_null(); }

// A string, or a number's literal text (ids and int-or-string fields come either way); "" for null.
inline std::string text(od::value v) {
  if (is_null(v))
    return {};
  if (v.type() == od::json_type::number)
    return std::string{v.raw_json_token()};
  return std::string{std::string_view{v.get_string()}};
}

// Calls fn(key, value) for each field of an object; nothing for null.
template <class F>
void fields(od::value v, F&& fn) {
  if (is_null(v))
    return;
  for (auto field : v.get_object()) {
    std::string_view key = field.unescaped_key();
    fn(key, od::value{field.value()});
  }
}

// Calls fn(index, value) for each element of an array; nothing for null.
template <class F>
void items(od::value v, F&& fn) {
  if (is_null(v))
    return;
  size_t i = 0;
  for (auto item : v.get_array())
    fn(i++, od::value{item.value()});
}

}  // namespace headroom::json
