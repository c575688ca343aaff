#include "testenv/prometheus_server.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "testenv/cluster_fixture.hpp"
#include "testenv/peer_process.hpp"

namespace headroom::testenv {

namespace {
constexpr const char* binary = "/usr/bin/prometheus";
}

std::unique_ptr<prometheus_server> prometheus_server::start(std::vector<std::string> scrape_targets, std::string& why) {
  return start_jobs({{"test", std::move(scrape_targets)}}, why);
}

std::unique_ptr<prometheus_server> prometheus_server::start_jobs(const std::vector<scrape_job>& jobs, std::string& why) {
  if (access(binary, X_OK) != 0) {
    why = std::string{binary} + " is missing (Debian package prometheus; scripts/install-deps installs it)";
    return nullptr;
  }
  std::unique_ptr<prometheus_server> p{new prometheus_server};
  char tmpl[] = "/tmp/headroom-prometheus-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    why = "cannot create a temporary directory";
    return nullptr;
  }
  p->dir_ = tmpl;
  std::string config = "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n";
  for (const auto& job : jobs) {
    std::string targets;
    for (const auto& t : job.targets)
      targets += (targets.empty() ? "'" : ", '") + t + "'";
    config += "  - job_name: " + job.name + "\n";
    if (!job.ca_file.empty())
      config += "    scheme: https\n    tls_config: {ca_file: '" + job.ca_file + "'}\n";
    if (!job.token_file.empty())
      config += "    authorization: {credentials_file: '" + job.token_file + "'}\n";
    config += "    static_configs:\n      - targets: [" + targets + "]\n";
  }
  std::ofstream(p->dir_ + "/prometheus.yml") << config;
  p->port_ = free_port();
  p->url_ = "http://127.0.0.1:" + std::to_string(p->port_);
  if (!p->launch(why))
    return nullptr;
  return p;
}

bool prometheus_server::launch(std::string& why) {
  process_ = std::make_unique<child_process>(
      std::vector<std::string>{binary, "--config.file=" + dir_ + "/prometheus.yml", "--storage.tsdb.path=" + dir_ + "/data",
                               "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"},
      std::vector<std::string>{"PATH=/usr/bin:/bin"}, dir_ + "/prometheus.log");
  const bool ready = eventually([&] { return testpeer::http_call(url_ + "/-/ready").status == 200 || !process_->alive(); },
                                std::chrono::seconds(60));
  if (!ready || !process_->alive()) {
    why = "Prometheus did not become ready on " + url_ + ": " + process_->log(2000);
    return false;
  }
  return true;
}

void prometheus_server::stop() {
  if (process_)
    process_->stop();
  process_.reset();
}

bool prometheus_server::restart(std::string& why) {
  stop();
  return launch(why);
}

}  // namespace headroom::testenv
