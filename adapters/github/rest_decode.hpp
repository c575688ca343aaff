#pragma once

// What the GitHub REST client's files share (rest_client.cpp, rest_runners.cpp): reading an answer
// into a value or a rest_error naming what was malformed, and the paths they build. Internal to
// adapters/github/.

#include <string>

#include "adapters/github/rest_client.hpp"
#include "adapters/json/ondemand.hpp"
#include "runtime/rfc3339.hpp"

namespace headroom::github::rest_detail {

namespace od = simdjson::ondemand;
using json::failure;
using json::fields;
using json::is_null;

inline int64_t num(od::value v) {
  if (is_null(v))
    return 0;
  if (v.type() != od::json_type::number)
    throw failure{"expected a number"};
  return v.get_int64();
}

inline std::string str(od::value v) { return json::text(v); }

// Runs `body` over the parsed document; a malformed answer is a rest_error naming what.
template <class T, class Body>
rest_result<T> decode(const std::string& operation, long status, const std::string& text, Body&& body) {
  try {
    od::parser parser;
    simdjson::padded_string padded{text};
    auto doc = parser.iterate(padded);
    T out{};
    body(od::value{doc.get_value()}, out);
    return out;
  } catch (const failure& f) {
    return rest_error{status, operation, "malformed answer: " + f.message};
  } catch (const simdjson::simdjson_error& e) {
    return rest_error{status, operation, std::string{"malformed answer: "} + simdjson::error_message(e.error())};
  }
}

inline int64_t parse_time(const std::string& t) {
  const auto at = runtime::parse_rfc3339(t);
  return at ? static_cast<int64_t>(*at) : 0;
}

// An organization's path, or an enterprise's ("enterprises/<slug>" is passed whole).
inline std::string owner_path(const std::string& owner) {
  return owner.rfind("enterprises/", 0) == 0 ? "/" + owner : "/orgs/" + owner;
}

}  // namespace headroom::github::rest_detail
