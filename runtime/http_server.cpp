#include "runtime/http_server.hpp"

#include <CivetServer.h>

#include <stdexcept>

namespace headroom::runtime {

namespace {

void respond(mg_connection* conn, int status, const char* content_type, const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            status, mg_get_response_code_text(conn, status), content_type, body.size());
  mg_write(conn, body.data(), body.size());
}

class metrics_handler final : public CivetHandler {
 public:
  explicit metrics_handler(metrics& m) : metrics_(m) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    respond(conn, 200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render());
    return true;
  }

 private:
  metrics& metrics_;
};

class healthz_handler final : public CivetHandler {
 public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    respond(conn, 200, "text/plain", "ok\n");
    return true;
  }
};

class readyz_handler final : public CivetHandler {
 public:
  explicit readyz_handler(readiness& r) : readiness_(r) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    const auto report = readiness_.check();
    respond(conn, report.ready ? 200 : 503, "text/plain", report.body);
    return true;
  }

 private:
  readiness& readiness_;
};

// Test-only (runtime/fault_hooks.hpp): POST /debug/fault?child=NAME.
class fault_handler final : public CivetHandler {
 public:
  explicit fault_handler(http_server::fault_trigger t) : trigger_(std::move(t)) {}
  bool handlePost(CivetServer*, mg_connection* conn) override {
    std::string child;
    if (!CivetServer::getParam(conn, "child", child) || child.empty() || child.size() > 200) {
      respond(conn, 400, "text/plain", "child: the name of a supervised actor is required\n");
      return true;
    }
    const auto hit = trigger_(child);
    respond(conn, hit < 0 ? 503 : 200, "text/plain", std::to_string(hit) + "\n");
    return true;
  }

 private:
  http_server::fault_trigger trigger_;
};

}  // namespace

struct http_server::handlers {
  handlers(metrics& m, readiness& r, fault_trigger f) : metrics_page(m), readyz(r), faults(std::move(f)) {}
  metrics_handler metrics_page;
  healthz_handler healthz;
  readyz_handler readyz;
  fault_handler faults;
};

http_server::http_server(const std::string& listen, metrics& m, readiness& r, fault_trigger faults)
    : handlers_(std::make_unique<handlers>(m, r, faults)) {
  // civetweb wants "port" or "host:port"; it does not resolve names, so map localhost ourselves.
  std::string ports = listen;
  if (ports.rfind("localhost:", 0) == 0)
    ports = "127.0.0.1:" + ports.substr(10);
  else if (!ports.empty() && ports.front() == ':')
    ports = ports.substr(1);
  const std::vector<std::string> options = {"listening_ports", ports, "num_threads", "2",
                                            "request_timeout_ms", "10000", "enable_keep_alive", "no"};
  try {
    server_ = std::make_unique<CivetServer>(options);
  } catch (const CivetException& e) {
    throw std::runtime_error("cannot listen on " + listen + ": " + e.what());
  }
  if (server_->getContext() == nullptr)
    throw std::runtime_error("cannot listen on " + listen);
  server_->addHandler("/metrics", handlers_->metrics_page);
  server_->addHandler("/healthz", handlers_->healthz);
  server_->addHandler("/readyz", handlers_->readyz);
  if (faults)
    server_->addHandler("/debug/fault", handlers_->faults);
  const auto bound = server_->getListeningPorts();
  port_ = bound.empty() ? 0 : static_cast<uint16_t>(bound.front());
}

http_server::~http_server() {
  if (server_)
    server_->close();
}

}  // namespace headroom::runtime
