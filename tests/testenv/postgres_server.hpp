#pragma once

// The real PostgreSQL (Debian's `postgresql` package) on loopback for a test: initdb into a
// temporary directory, the server on a free port, trust authentication for the test's own user
// `headroom` on 127.0.0.1 only. As root it runs as the `postgres` system user (PostgreSQL refuses
// root). stop() and restart() keep the data, as a restarted server would.

#include <memory>
#include <string>

#include "testenv/child_process.hpp"

namespace headroom::testenv {

class postgres_server {
 public:
  // Nullptr with `why` set when the binaries are missing or the server does not become ready.
  static std::unique_ptr<postgres_server> start(std::string& why);
  ~postgres_server();

  // A libpq connection string for `dbname`.
  std::string conninfo(const std::string& dbname = "postgres") const;
  // Creates a fresh database (each test its own).
  bool create_database(const std::string& name, std::string& why) const;
  void stop();
  bool restart(std::string& why);
  std::string log() const { return process_ ? process_->log() : std::string{"(stopped)"}; }

 private:
  bool launch(std::string& why);
  std::vector<std::string> as_owner(std::vector<std::string> argv) const;
  std::string dir_, bin_;
  int port_ = 0;
  std::unique_ptr<child_process> process_;
};

}  // namespace headroom::testenv
