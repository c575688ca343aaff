// What GitHub itself sends, read strictly: workflow_job webhooks, and the list of the App webhook's
// deliveries with the Link header that pages it. Each comes from the network: each field headroom
// reads has one JSON type, and a mismatch is refused with the field's path
// (`workflow_job.labels[1]: expected a string, found a number`), as is anything after the
// document. (The Actions Service decoders in payloads.cpp stay lenient: that service sends ids
// either way.)
#include <simdjson.h>

#include <cctype>
#include <optional>

#include "adapters/github/payloads.hpp"
#include "adapters/json/ondemand.hpp"
#include "runtime/rfc3339.hpp"

namespace headroom::github {

namespace {

namespace od = simdjson::ondemand;
using json::failure;
using json::fields;
using json::is_null;

const char* type_name(od::json_type t) {
  switch (t) {
    case od::json_type::array: return "an array";
    case od::json_type::object: return "an object";
    case od::json_type::number: return "a number";
    case od::json_type::string: return "a string";
    case od::json_type::boolean: return "a boolean";
    case od::json_type::null: return "null";
  }
  return "something else";
}

void expect_type(od::value& v, od::json_type want, std::string_view path) {
  const od::json_type found = v.type();
  if (found != want)
    throw failure{std::string{path} + ": expected " + type_name(want) + ", found " + type_name(found)};
}

std::string strict_string(od::value v, std::string_view path) {
  if (is_null(v))
    return {};
  expect_type(v, od::json_type::string, path);
  return std::string{std::string_view{v.get_string()}};
}

int64_t strict_id(od::value v, std::string_view path) {
  if (is_null(v))
    return 0;
  expect_type(v, od::json_type::number, path);
  int64_t out = 0;
  if (v.get_int64().get(out) != simdjson::SUCCESS)
    throw failure{std::string{path} + ": expected an integer, found " + std::string{v.raw_json_token()}.substr(0, 32)};
  return out;
}

bool strict_bool(od::value v, std::string_view path) {
  if (is_null(v))
    return false;
  expect_type(v, od::json_type::boolean, path);
  return v.get_bool();
}

// Milliseconds since the epoch of the RFC 3339 time `text` found at `path`.
int64_t time_ms(const std::string& text, std::string_view path) {
  const auto at = runtime::parse_rfc3339(text);
  if (!at || *at < 0)
    throw failure{std::string{path} + ": expected an RFC 3339 time, found '" + text.substr(0, 40) + "'"};
  return static_cast<int64_t>(*at * 1000.0);
}

template <class F>
void strict_fields(od::value v, std::string_view path, F&& fn) {
  if (is_null(v))
    return;
  expect_type(v, od::json_type::object, path);
  fields(v, fn);
}

// Parses `json` as one document (a UTF-8 byte-order mark is skipped) and runs `body` over it; a
// failure is an error value that starts with `what`.
template <class T, class Body>
decoded<T> strictly(std::string_view what, std::string_view json, Body&& body) {
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded{strip_bom(json)};
    od::document doc = parser.iterate(padded);
    // On-Demand reads one value and stops: anything after it (a second document) is refused here.
    const std::string_view whole = doc.raw_json();
    const std::string_view input{padded.data(), padded.size()};
    if (input.find_first_not_of(" \t\r\n", static_cast<size_t>(whole.data() - input.data()) + whole.size()) != std::string_view::npos)
      throw failure{"trailing content after the JSON document"};
    doc.rewind();
    T out{};
    body(od::value{doc.get_value()}, out);
    return out;
  } catch (const failure& f) {
    return decode_failure{std::string{what} + ": " + f.message};
  } catch (const simdjson::simdjson_error& e) {
    return decode_failure{std::string{what} + ": " + simdjson::error_message(e.error())};
  }
}

void read_workflow_job(od::value v, workflow_job_event& e) {
  strict_fields(v, "workflow_job", [&](std::string_view k, od::value y) {
    if (k == "id") {
      e.job_id = strict_id(y, "workflow_job.id");
    } else if (k == "run_id") {
      e.run_id = strict_id(y, "workflow_job.run_id");
    } else if (k == "runner_id") {
      e.runner_id = strict_id(y, "workflow_job.runner_id");
    } else if (k == "labels") {
      if (is_null(y))
        return;
      expect_type(y, od::json_type::array, "workflow_job.labels");
      size_t i = 0;
      for (auto item : y.get_array())
        e.labels.push_back(strict_string(od::value{item.value()}, "workflow_job.labels[" + std::to_string(i++) + "]"));
    } else if (k == "status") {
      e.status = strict_string(y, "workflow_job.status");
    } else if (k == "conclusion") {
      e.conclusion = strict_string(y, "workflow_job.conclusion");
    } else if (k == "runner_name") {
      e.runner_name = strict_string(y, "workflow_job.runner_name");
    } else if (k == "name") {
      e.name = strict_string(y, "workflow_job.name");
    } else if (k == "created_at" && !is_null(y)) {
      e.created_at_ms = time_ms(strict_string(y, "workflow_job.created_at"), "workflow_job.created_at");
    }
  });
}

// One item of GET /app/hook/deliveries; `at` is its place in the list ("[3]").
hook_delivery read_delivery(od::value v, const std::string& at) {
  hook_delivery d;
  expect_type(v, od::json_type::object, at);
  fields(v, [&](std::string_view k, od::value x) {
    if (k == "id") {
      d.id = strict_id(x, at + ".id");
    } else if (k == "guid") {
      d.guid = strict_string(x, at + ".guid");
    } else if (k == "delivered_at") {
      d.delivered_at = strict_string(x, at + ".delivered_at");
      d.delivered_at_ms = time_ms(d.delivered_at, at + ".delivered_at");
    } else if (k == "redelivery") {
      d.redelivery = strict_bool(x, at + ".redelivery");
    } else if (k == "status") {
      d.status = strict_string(x, at + ".status");
    } else if (k == "status_code") {
      const int64_t code = strict_id(x, at + ".status_code");
      if (code < 0 || code > 999)
        throw failure{at + ".status_code: expected an HTTP status, found " + std::to_string(code)};
      d.status_code = static_cast<int>(code);
    } else if (k == "event") {
      d.event = strict_string(x, at + ".event");
    } else if (k == "action") {
      d.action = strict_string(x, at + ".action");  // null for an event without actions
    }
  });
  // What finding and redelivering a delivery takes: without them an item is of no use.
  if (d.id <= 0)
    throw failure{at + ".id: a positive integer is required"};
  if (d.guid.empty())
    throw failure{at + ".guid: required"};
  if (d.delivered_at.empty())
    throw failure{at + ".delivered_at: required"};
  return d;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

// The value of query parameter `name` in `url`, percent-decoded; nullopt when absent.
std::optional<std::string> query_value(std::string_view url, std::string_view name) {
  const auto q = url.find('?');
  if (q == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = url.substr(q + 1, url.find('#') == std::string_view::npos ? std::string_view::npos : url.find('#') - q - 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) != name || eq == std::string_view::npos)
      continue;
    std::string out;
    for (size_t i = eq + 1; i < pair.size(); ++i) {
      if (pair[i] != '%') {
        out.push_back(pair[i]);
        continue;
      }
      const int hi = i + 2 < pair.size() ? hex_digit(pair[i + 1]) : -1, lo = hi >= 0 ? hex_digit(pair[i + 2]) : -1;
      if (lo < 0)
        throw failure{"a bad percent-escape in " + std::string{name} + "=" + std::string{pair.substr(eq + 1, 40)}};
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
    return out;
  }
  return std::nullopt;
}

// Whether a link's parameters (`; rel="next"; …`) name the relation "next" (RFC 8288: a
// space-separated list, case-insensitive, quoted or not).
bool is_next(std::string_view params) {
  std::string lower{params};
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto rel = lower.find("rel=");
  if (rel == std::string::npos)
    return false;
  std::string_view value = std::string_view{lower}.substr(rel + 4);
  if (!value.empty() && value.front() == '"')
    value = value.substr(1, value.find('"', 1) == std::string_view::npos ? std::string_view::npos : value.find('"', 1) - 1);
  else
    value = value.substr(0, value.find_first_of(";, "));
  while (!value.empty()) {
    const auto sp = value.find(' ');
    if (value.substr(0, sp) == "next")
      return true;
    value = sp == std::string_view::npos ? std::string_view{} : value.substr(sp + 1);
  }
  return false;
}

}  // namespace

decoded<workflow_job_event> decode_workflow_job(std::string_view json) {
  return strictly<workflow_job_event>("workflow_job", json, [](od::value root, workflow_job_event& e) {
    expect_type(root, od::json_type::object, "(document)");
    fields(root, [&](std::string_view k, od::value x) {
      if (k == "action") {
        e.action = strict_string(x, "action");
      } else if (k == "workflow_job") {
        read_workflow_job(x, e);
      } else if (k == "repository") {
        strict_fields(x, "repository", [&](std::string_view k2, od::value y) {
          if (k2 == "full_name")
            e.repository = strict_string(y, "repository.full_name");
        });
      } else if (k == "organization") {
        strict_fields(x, "organization", [&](std::string_view k2, od::value y) {
          if (k2 == "login")
            e.organization = strict_string(y, "organization.login");
        });
      }
    });
  });
}

decoded<std::vector<hook_delivery>> decode_hook_deliveries(std::string_view json) {
  return strictly<std::vector<hook_delivery>>("hook deliveries", json, [](od::value root, std::vector<hook_delivery>& out) {
    expect_type(root, od::json_type::array, "(document)");
    size_t i = 0;
    for (auto item : root.get_array())
      out.push_back(read_delivery(od::value{item.value()}, "[" + std::to_string(i++) + "]"));
  });
}

decoded<std::string> next_page_cursor(std::string_view link) {
  try {
    // <url>; rel="next", <url>; rel="prev": each link's parameters run to the next '<'.
    for (size_t open = link.find('<'); open != std::string_view::npos;) {
      const auto close = link.find('>', open);
      if (close == std::string_view::npos)
        throw failure{"a link without its closing '>'"};
      const auto next_open = link.find('<', close);
      const std::string_view url = link.substr(open + 1, close - open - 1);
      if (is_next(link.substr(close + 1, next_open == std::string_view::npos ? std::string_view::npos : next_open - close - 1))) {
        auto cursor = query_value(url, "cursor");
        if (!cursor || cursor->empty())
          throw failure{"the next page's link has no cursor: " + std::string{url.substr(0, 120)}};
        return *cursor;
      }
      open = next_open;
    }
    return std::string{};  // the last page
  } catch (const failure& f) {
    return decode_failure{"Link header: " + f.message};
  }
}

}  // namespace headroom::github
