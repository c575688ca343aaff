// The Actions Service client: error kinds, and mapping an answer to one.
#include "adapters/github/actions_client.hpp"

#include <algorithm>
#include <atomic>
#include <ctime>

#include "adapters/github/actions_internal.hpp"
#include "adapters/github/auth.hpp"
#include "runtime/log.hpp"
#include "runtime/secrets.hpp"

namespace headroom::github {

// ---- errors ----

std::string_view to_string(actions_error::kind k) {
  using K = actions_error::kind;
  switch (k) {
    case K::transport: return "transport";
    case K::cancelled: return "cancelled";
    case K::unauthorized: return "unauthorized";
    case K::forbidden: return "forbidden";
    case K::not_found: return "not_found";
    case K::session_conflict: return "session_conflict";
    case K::session_not_found: return "session_not_found";
    case K::runner_not_found: return "runner_not_found";
    case K::runner_exists: return "runner_exists";
    case K::job_still_running: return "job_still_running";
    case K::bad_request: return "bad_request";
    case K::conflict: return "conflict";
    case K::server: return "server";
    case K::bad_response: return "bad_response";
    case K::config: return "config";
    case K::unexpected: return "unexpected";
  }
  return "unexpected";
}

std::string actions_error::describe() const {
  std::string out = operation + ": ";
  if (status != 0)
    out += std::to_string(status) + " ";
  if (!type_name.empty()) {
    const auto dot = type_name.rfind('.');
    out += (dot == std::string::npos ? type_name : type_name.substr(dot + 1)) + ": ";
  }
  out += message.empty() ? std::string{to_string(what)} : message;
  return runtime::redact(out);
}

namespace detail {

actions_error make_error(actions_error::kind k, std::string operation, long status, std::string message,
                         std::string type_name) {
  if (message.size() > 400)
    message = message.substr(0, 400) + "…";
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r' || message.back() == ' '))
    message.pop_back();
  return actions_error{k, std::move(operation), status, std::move(type_name), runtime::redact(message)};
}

actions_error error_from_response(const std::string& operation, const http::http_response& r, bool session_op) {
  using K = actions_error::kind;
  const std::string_view body = strip_bom(r.body);
  service_exception exc;
  if (!body.empty() && body.front() == '{')
    exc = decode_exception(body);
  const std::string message = exc.message.empty() ? std::string{body} : exc.message;
  const auto& t = exc.type_name;
  auto has = [&](std::string_view s) { return t.find(s) != std::string::npos; };
  K k;
  if (has("AgentExistsException"))
    k = K::runner_exists;
  else if (has("AgentNotFoundException"))
    k = K::runner_not_found;
  else if (has("JobStillRunningException"))
    k = K::job_still_running;
  else if (has("SessionConflict") || (r.status == 409 && message.find("active session") != std::string::npos))
    k = K::session_conflict;
  else if (has("SessionNotFound") || (r.status == 404 && session_op))
    k = K::session_not_found;
  else
    k = kind_of_status(r.status);
  return make_error(k, operation, r.status, message, t);
}

actions_error::kind kind_of_status(long status) {
  using K = actions_error::kind;
  switch (status) {
    case 0: return K::transport;
    case 400: return K::bad_request;
    case 401: return K::unauthorized;
    case 403: return K::forbidden;
    case 404: return K::not_found;
    case 409: return K::conflict;
    default: return status >= 500 ? K::server : K::unexpected;
  }
}

}  // namespace detail

}  // namespace headroom::github
