#pragma once

// The real Prometheus (Debian's `prometheus` package) on loopback for a test: its own storage
// directory, a 1 s scrape interval, scraping the given targets. stop() and start() again keep the
// port and the TSDB, as a restarted server would.

#include <memory>
#include <string>
#include <vector>

#include "testenv/child_process.hpp"

namespace headroom::testenv {

// One scrape job. With `ca_file`, over HTTPS verified against that CA; with `token_file`, a bearer
// token read from it (a controller-runtime metrics server authenticates each scrape with a
// TokenReview and authorizes it with a SubjectAccessReview).
struct scrape_job {
  std::string name;
  std::vector<std::string> targets;
  std::string ca_file{}, token_file{};  // empty: plain HTTP, no token
};

class prometheus_server {
 public:
  // Nullptr with `why` set when the binary is missing or the server does not become ready.
  static std::unique_ptr<prometheus_server> start(std::vector<std::string> scrape_targets, std::string& why);  // job "test"
  static std::unique_ptr<prometheus_server> start_jobs(const std::vector<scrape_job>& jobs, std::string& why);

  const std::string& url() const { return url_; }
  void stop();
  bool restart(std::string& why);
  std::string log() const { return process_ ? process_->log() : std::string{"(stopped)"}; }

 private:
  bool launch(std::string& why);
  std::string dir_, url_;
  int port_ = 0;
  std::unique_ptr<child_process> process_;
};

}  // namespace headroom::testenv
