#include "testenv/postgres_server.hpp"

#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "testenv/cluster_fixture.hpp"

namespace headroom::testenv {

namespace {

// Debian installs the server's binaries per major version.
std::string find_bin() {
  std::string best;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const auto bin = d.path() / "bin";
    if (access((bin / "postgres").c_str(), X_OK) == 0 && (best.empty() || bin.string() > best))
      best = bin.string();
  }
  return best;
}

}  // namespace

std::vector<std::string> postgres_server::as_owner(std::vector<std::string> argv) const {
  if (geteuid() != 0)
    return argv;
  std::vector<std::string> out{"/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::unique_ptr<postgres_server> postgres_server::start(std::string& why) {
  std::unique_ptr<postgres_server> p{new postgres_server};
  p->bin_ = find_bin();
  if (p->bin_.empty()) {
    why = "/usr/lib/postgresql/*/bin/postgres is missing (Debian package postgresql; scripts/install-deps installs it)";
    return nullptr;
  }
  char tmpl[] = "/tmp/headroom-postgres-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    why = "cannot create a temporary directory";
    return nullptr;
  }
  p->dir_ = tmpl;
  if (geteuid() == 0) {
    const passwd* pw = getpwnam("postgres");
    if (pw == nullptr || chown(p->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      why = "running as root needs the postgres system user (Debian package postgresql) to own the data";
      return nullptr;
    }
  }
  auto init = run_command(p->as_owner({p->bin_ + "/initdb", "-D", p->dir_ + "/data", "-U", "headroom", "--auth=trust", "-E", "UTF8",
                                       "--locale=C", "--no-sync"}));
  if (init.exit_code != 0) {
    why = "initdb failed: " + init.err;
    return nullptr;
  }
  p->port_ = free_port();
  if (!p->launch(why))
    return nullptr;
  return p;
}

postgres_server::~postgres_server() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool postgres_server::launch(std::string& why) {
  process_ = std::make_unique<child_process>(
      as_owner({bin_ + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port_), "-k", dir_, "-c", "listen_addresses=127.0.0.1",
                "-c", "max_connections=60", "-c", "fsync=on"}),
      std::vector<std::string>{"PATH=/usr/bin:/bin"}, dir_ + "/postgres.log");
  const bool ready = eventually(
      [&] {
        return !process_->alive() ||
               run_command({bin_ + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", std::to_string(port_)}).exit_code == 0;
      },
      std::chrono::seconds(60));
  if (!ready || !process_->alive()) {
    why = "PostgreSQL did not become ready on port " + std::to_string(port_) + ": " + process_->log(2000);
    return false;
  }
  return true;
}

std::string postgres_server::conninfo(const std::string& dbname) const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " user=headroom dbname=" + dbname + " connect_timeout=5";
}

bool postgres_server::create_database(const std::string& name, std::string& why) const {
  auto r = run_command({bin_ + "/createdb", "-h", "127.0.0.1", "-p", std::to_string(port_), "-U", "headroom", name});
  if (r.exit_code != 0)
    why = "createdb " + name + ": " + r.err;
  return r.exit_code == 0;
}

void postgres_server::stop() {
  if (process_)
    process_->stop(SIGINT);  // a fast shutdown: open sessions are ended (SIGTERM would wait for them)
  process_.reset();
}

bool postgres_server::restart(std::string& why) {
  stop();
  return launch(why);
}

}  // namespace headroom::testenv
