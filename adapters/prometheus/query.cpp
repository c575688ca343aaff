#include "adapters/prometheus/query.hpp"

#include <simdjson.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace headroom::prom {

namespace od = simdjson::ondemand;

namespace {

struct bad {
  std::string reason;
};

// A sample pair [ <unix time as a number>, "<value as a string>" ].
sample decode_pair(od::value v, std::string_view where) {
  sample s;
  int i = 0;
  for (auto item : v.get_array()) {
    od::value x = item.value();
    if (i == 0) {
      s.t = x.get_double();
    } else if (i == 1) {
      std::string_view text = x.get_string();
      // Prometheus writes NaN, +Inf and -Inf as such; strtod reads them, then they are refused.
      std::string owned{text};
      char* end = nullptr;
      s.v = std::strtod(owned.c_str(), &end);
      if (owned.empty() || end != owned.c_str() + owned.size())
        throw bad{std::string{where} + ": value \"" + owned.substr(0, 40) + "\" is not a number"};
      if (!std::isfinite(s.v))
        throw bad{std::string{where} + ": value is " + owned + ", not a finite number"};
    }
    ++i;
  }
  if (i != 2)
    throw bad{std::string{where} + ": expected [time, \"value\"], found " + std::to_string(i) + " elements"};
  return s;
}

std::string decode_labels(od::value v) {
  std::string out = "{";
  for (auto f : v.get_object()) {
    if (out.size() > 1)
      out += ',';
    out += std::string_view{f.unescaped_key()};
    out += "=\"";
    out += std::string_view{f.value().get_string()};
    out += '"';
  }
  return out + "}";
}

// One element of a vector or matrix result.
series decode_series(od::value v, bool matrix, size_t index) {
  series s;
  const std::string where = "data.result[" + std::to_string(index) + "]";
  bool seen_values = false;
  for (auto f : v.get_object()) {
    std::string_view key = f.unescaped_key();
    od::value x = f.value();
    if (key == "metric") {
      s.labels = decode_labels(x);
    } else if (key == "value" && !matrix) {
      s.samples.push_back(decode_pair(x, where + ".value"));
      seen_values = true;
    } else if (key == "values" && matrix) {
      size_t j = 0;
      for (auto item : x.get_array()) {
        s.samples.push_back(decode_pair(item.value(), where + ".values[" + std::to_string(j) + "]"));
        ++j;
      }
      seen_values = true;
    } else if (key == "histogram" || key == "histograms") {
      throw bad{where + ": a native histogram, not a float series"};
    }
  }
  if (!seen_values)
    throw bad{where + ": no " + (matrix ? "values" : "value")};
  return s;
}

}  // namespace

query_result decode_query(std::string_view body) {
  try {
    od::parser parser;
    simdjson::padded_string padded{body};
    od::document doc = parser.iterate(padded);
    std::string status, error_type, error;
    std::string result_type;
    std::vector<series> found;
    for (auto f : doc.get_object()) {
      std::string_view key = f.unescaped_key();
      od::value x = f.value();
      if (key == "status") {
        status = std::string{std::string_view{x.get_string()}};
      } else if (key == "errorType") {
        error_type = std::string{std::string_view{x.get_string()}};
      } else if (key == "error") {
        error = std::string{std::string_view{x.get_string()}};
      } else if (key == "data") {
        // resultType comes first in what Prometheus writes; a body with it later is refused
        // rather than buffered.
        for (auto d : x.get_object()) {
          std::string_view dk = d.unescaped_key();
          od::value dv = d.value();
          if (dk == "resultType") {
            result_type = std::string{std::string_view{dv.get_string()}};
          } else if (dk == "result") {
            if (result_type == "scalar") {
              series s;
              s.samples.push_back(decode_pair(dv, "data.result"));
              found.push_back(std::move(s));
            } else if (result_type == "vector" || result_type == "matrix") {
              size_t i = 0;
              for (auto item : dv.get_array()) {
                found.push_back(decode_series(item.value(), result_type == "matrix", i));
                ++i;
              }
            } else if (result_type.empty()) {
              return no_metric{"data.result before data.resultType"};
            } else {
              return no_metric{"data.resultType \"" + result_type.substr(0, 40) + "\" is not a number type"};
            }
          }
        }
      }
    }
    if (status == "error")
      return no_metric{"Prometheus error " + error_type + ": " + error.substr(0, 300)};
    if (status != "success")
      return no_metric{status.empty() ? "no status" : "status \"" + status.substr(0, 40) + "\""};
    if (result_type.empty())
      return no_metric{"no data.resultType"};
    if (found.empty())
      return no_metric{"empty result: no series matches", true};
    if (found.size() > 1)
      return no_metric{std::to_string(found.size()) + " series (" + found[0].labels + ", " + found[1].labels +
                       ", …): the query must select exactly one"};
    if (found[0].samples.empty())
      return no_metric{"the series " + found[0].labels + " has no samples", true};
    return std::move(found[0]);
  } catch (const bad& b) {
    return no_metric{b.reason};
  } catch (const simdjson::simdjson_error& e) {
    return no_metric{std::string{"malformed answer: "} + simdjson::error_message(e.error())};
  }
}

bool is_selector(std::string_view expr) {
  size_t i = 0;
  auto skip_space = [&] {
    while (i < expr.size() && std::isspace(static_cast<unsigned char>(expr[i])))
      ++i;
  };
  skip_space();
  size_t name_start = i;
  while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '_' || expr[i] == ':'))
    ++i;
  const bool has_name = i > name_start && !std::isdigit(static_cast<unsigned char>(expr[name_start]));
  if (i > name_start && !has_name)
    return false;
  skip_space();
  if (i == expr.size())
    return has_name;
  if (expr[i] != '{')
    return false;
  // Label matchers: quoted strings may hold anything; outside them no parentheses, brackets,
  // operators beyond the matchers' own, and one closing brace at the end.
  ++i;
  while (i < expr.size() && expr[i] != '}') {
    const char c = expr[i];
    if (c == '"' || c == '\'' || c == '`') {
      const char quote = c;
      for (++i; i < expr.size() && expr[i] != quote; ++i)
        if (expr[i] == '\\' && quote != '`')
          ++i;
      if (i >= expr.size())
        return false;
    } else if (!(std::isalnum(static_cast<unsigned char>(c)) || std::isspace(static_cast<unsigned char>(c)) ||
                 c == '_' || c == '=' || c == '!' || c == '~' || c == ',')) {
      return false;
    }
    ++i;
  }
  if (i >= expr.size())
    return false;
  ++i;
  skip_space();
  return i == expr.size();
}

std::string window_query(std::string_view expr, long window_s, long step_s) {
  if (is_selector(expr))
    return std::string{expr} + "[" + std::to_string(window_s) + "s]";
  return "(" + std::string{expr} + ")[" + std::to_string(window_s) + "s:" + std::to_string(step_s) + "s]";
}

}  // namespace headroom::prom
