#pragma once

// A plain-HTTP server for the routes people and webhooks call (the scheduler's GitHub webhook
// intake and its dashboards), on Debian's cpp-httplib like the admission webhook's HTTPS server.
// Handlers run on the server's worker threads and must be thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/clock.hpp"

namespace httplib {
class Server;
}

namespace headroom::runtime {

struct web_request {
  std::string method, path;
  std::multimap<std::string, std::string> query;  // decoded query parameters
  std::function<std::string(const char*)> header;  // a request header's value, "" when absent
  std::string body;
};

struct web_reply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct web_route {
  std::string method;  // GET or POST
  std::string path;    // exact
  std::function<web_reply(const web_request&)> handle;
};

struct web_options {
  std::string listen = ":8080";
  std::vector<web_route> routes;
  int threads = 8;
  // An idle kept-alive connection holds one of the `threads` for up to 5 s (cpp-httplib serves a
  // connection on one worker): off where few workers must always answer (the probe server).
  bool keep_alive = true;
  size_t max_body = 1 << 20;  // larger → 413 before a handler runs
  std::function<void(const std::string& path, int status, double seconds)> observe;
  const runtime::clock* clock = nullptr;  // what `observe`'s seconds are measured on: required with it
};

// A handler that throws is a 500 naming the exception (both of headroom's cpp-httplib servers).
void answer_exceptions_with_500(httplib::Server& srv);

// A request with a body method (POST, PUT, PATCH, DELETE) and neither Content-Length nor chunked
// Transfer-Encoding has no body (RFC 9112 §6.3), but cpp-httplib 0.11 reads one until the client
// closes: the client waits for an answer that never comes. Such a request is answered 411 at once.
void refuse_unframed_bodies(httplib::Server& srv);

// "port", ":port", "host:port" → (host, port); port −1 when it is not one.
std::pair<std::string, int> split_listen(const std::string& listen);

// Stops a cpp-httplib server without waiting out its idle keep-alive connections: closes the
// listening socket, ends the reading side of every connection accepted on `port`, and joins the
// accept loop. Returns the number of connections it ended.
int stop_server(httplib::Server& srv, uint16_t port, std::thread& loop);

class web_server {
 public:
  // Binds at once; throws std::runtime_error naming the address when it cannot.
  explicit web_server(web_options opts);
  ~web_server();
  web_server(const web_server&) = delete;
  web_server& operator=(const web_server&) = delete;
  uint16_t port() const { return port_; }

  struct state;

 private:
  std::unique_ptr<state> state_;
  uint16_t port_ = 0;
};

}  // namespace headroom::runtime
