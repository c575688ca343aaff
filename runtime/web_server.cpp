#include "runtime/web_server.hpp"
#include "runtime/clock.hpp"

#include <dirent.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace headroom::runtime {

struct web_server::state {
  web_options opts;
  httplib::Server server;
  std::thread loop;
};

void answer_exceptions_with_500(httplib::Server& srv) {
  srv.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    res.status = 500;
    res.set_content("internal error: " + what + "\n", "text/plain");
  });
}

void refuse_unframed_bodies(httplib::Server& srv) {
  srv.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    const bool body_method = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE";
    if (!body_method || req.has_header("Content-Length") || req.has_header("Transfer-Encoding"))
      return httplib::Server::HandlerResponse::Unhandled;
    res.status = 411;
    res.set_content("a " + req.method + " needs a Content-Length (0 for no body) or chunked Transfer-Encoding\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
}

std::pair<std::string, int> split_listen(const std::string& listen) {
  std::string host = "0.0.0.0", port = listen;
  if (auto colon = listen.rfind(':'); colon != std::string::npos) {
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
    if (host.empty())
      host = "0.0.0.0";
    else if (host == "localhost")
      host = "127.0.0.1";
  }
  int wanted = -1;
  try {
    size_t used = 0;
    wanted = std::stoi(port, &used);
    if (used != port.size())
      wanted = -1;
  } catch (const std::exception&) {
  }
  if (wanted > 65535)
    wanted = -1;
  return {host, wanted};
}

web_server::web_server(web_options o) : state_(std::make_unique<state>()) {
  auto& st = *state_;
  st.opts = std::move(o);
  auto& srv = st.server;
  const auto& opts = st.opts;
  if (opts.observe && opts.clock == nullptr)
    throw std::invalid_argument{"web_server: observe needs a clock"};
  const int threads = std::max(1, opts.threads);
  srv.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  srv.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  srv.set_payload_max_length(opts.max_body);
  srv.set_read_timeout(10, 0);
  srv.set_write_timeout(10, 0);
  // GitHub's hookshot and dashboards reuse connections; a close after N requests costs a new
  // handshake (and, with a full accept backlog, a 1 s SYN retry), so the count is large.
  srv.set_keep_alive_max_count(opts.keep_alive ? 1'000'000 : 1);
  srv.set_keep_alive_timeout(5);
  srv.set_tcp_nodelay(true);
  answer_exceptions_with_500(srv);
  refuse_unframed_bodies(srv);
  for (const auto& r : opts.routes) {
    auto handler = [&r, &opts](const httplib::Request& req, httplib::Response& res) {
      const auto started = opts.observe ? opts.clock->now() : runtime::clock::time_point{};
      web_request in;
      in.method = req.method;
      in.path = r.path;
      for (const auto& [k, v] : req.params)
        in.query.emplace(k, v);
      in.header = [&req](const char* name) { return req.get_header_value(name); };
      in.body = req.body;
      web_reply out = r.handle(in);
      res.status = out.status;
      res.set_header("Cache-Control", "no-store");
      res.set_header("X-Content-Type-Options", "nosniff");
      for (const auto& [k, v] : out.headers)
        res.set_header(k, v);
      res.set_content(std::move(out.body), out.content_type.c_str());
      if (opts.observe)
        opts.observe(r.path, out.status, std::chrono::duration<double>(opts.clock->now() - started).count());
    };
    if (r.method == "POST")
      srv.Post(r.path, handler);
    else
      srv.Get(r.path, handler);
  }
  auto [host, wanted] = split_listen(opts.listen);
  if (wanted < 0)
    throw std::runtime_error("cannot listen on " + opts.listen + ": not a port");
  const int bound = wanted == 0 ? srv.bind_to_any_port(host) : (srv.bind_to_port(host, wanted) ? wanted : -1);
  if (bound <= 0)
    throw std::runtime_error("cannot listen on " + opts.listen);
  port_ = static_cast<uint16_t>(bound);
  st.loop = std::thread([&srv] { srv.listen_after_bind(); });
}

// cpp-httplib 0.11 (Debian's) waits in each idle keep-alive connection for up to its keep-alive
// timeout without looking at whether the server was stopped, and its stop joins those workers: a
// server with an open idle connection (the API server keeps its connections to a webhook) took
// 4.1 s to stop, so its actor's restart did too (the fault campaign's gates scenario). The
// library gives no handle on the accepted sockets, so they are found by their local port among
// the process's descriptors. shutdown(SHUT_RD) - not close - ends only the reading side: the
// waiting worker sees end of stream and closes the connection itself, a request being answered
// still gets its answer, and no descriptor is closed under another thread.
int stop_server(httplib::Server& srv, uint16_t port, std::thread& loop) {
  // stop() only ends a loop that has started: wait for it (a server made and dropped at once).
  for (int i = 0; i < 200 && !srv.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  srv.stop();  // closes the listening socket: nothing new is accepted
  int ended = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (auto* e = readdir(d)) {
      if (e->d_name[0] == '.')
        continue;
      const int fd = std::atoi(e->d_name);
      sockaddr_storage local{}, peer{};
      socklen_t local_len = sizeof local, peer_len = sizeof peer;
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0)
        continue;  // not a socket
      uint16_t local_port = 0;
      if (local.ss_family == AF_INET)
        local_port = ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
      else if (local.ss_family == AF_INET6)
        local_port = ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
      else
        continue;
      if (local_port != port || getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
        continue;  // another socket, or a listening one
      int type = 0;
      socklen_t type_len = sizeof type;
      if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM && shutdown(fd, SHUT_RD) == 0)
        ++ended;
    }
    closedir(d);
  }
  if (loop.joinable())
    loop.join();
  return ended;
}

web_server::~web_server() { stop_server(state_->server, port_, state_->loop); }

}  // namespace headroom::runtime
