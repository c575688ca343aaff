// The embedded backend: one SQLite database file in WAL mode, one connection behind a lock (SQLite
// writes one transaction at a time anyway). synchronous=FULL: a commit is on disk before record()
// returns, as the webhook's 202 promises.

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>

#include "adapters/store/sql.hpp"

namespace headroom::store {

namespace {

class sqlite_connection final : public detail::connection {
 public:
  explicit sqlite_connection(sqlite3* db) : db_(db) {}

  result<detail::rows> exec(const std::string& sql, const std::vector<detail::value>& params) override {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK)
      return fail("prepare");
    for (size_t i = 0; i < params.size(); ++i) {
      const int at = sqlite3_bind_parameter_index(stmt, ("$" + std::to_string(i + 1)).c_str());
      if (at == 0)
        continue;  // not used by this statement
      const auto& v = params[i];
      int rc = SQLITE_OK;
      if (std::holds_alternative<std::nullptr_t>(v))
        rc = sqlite3_bind_null(stmt, at);
      else if (auto* n = std::get_if<int64_t>(&v))
        rc = sqlite3_bind_int64(stmt, at, *n);
      else {
        const auto& t = std::get<std::string>(v);
        rc = sqlite3_bind_text(stmt, at, t.data(), static_cast<int>(t.size()), SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) {
        sqlite3_finalize(stmt);
        return fail("bind");
      }
    }
    detail::rows out;
    for (;;) {
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE)
        break;
      if (rc != SQLITE_ROW) {
        auto e = fail("step");
        sqlite3_finalize(stmt);
        return e;
      }
      std::vector<std::optional<std::string>> row;
      const int n = sqlite3_column_count(stmt);
      for (int c = 0; c < n; ++c) {
        if (sqlite3_column_type(stmt, c) == SQLITE_NULL) {
          row.emplace_back(std::nullopt);
        } else {
          const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
          row.emplace_back(std::string{t, static_cast<size_t>(sqlite3_column_bytes(stmt, c))});
        }
      }
      out.data.push_back(std::move(row));
    }
    out.affected = sqlite3_changes(db_);
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  error fail(const char* what) { return error{std::string{"sqlite "} + what + ": " + sqlite3_errmsg(db_)}; }
  sqlite3* db_;
};

// An exclusive flock on a file beside the database: released by the kernel when the holder
// closes it or dies.
class file_lock final : public store::lock {
 public:
  explicit file_lock(int fd) : fd_(fd) {}
  ~file_lock() override { close(fd_); }

 private:
  int fd_;
};

class sqlite_store final : public detail::sql_store {
 public:
  sqlite_store(sqlite3* db, std::string path) : db_(db), conn_(db), path_(std::move(path)) {}
  ~sqlite_store() override { sqlite3_close_v2(db_); }
  const char* backend() const override { return "sqlite"; }

  // Another process's deliveries do not wake this one (SQLite has no notifications): its
  // reconciler finds them at the next timeout.
  result<bool> wait_for_jobs(std::chrono::milliseconds timeout) override {
    // A change committed since the last wait returned counts too (none is lost between waits).
    std::unique_lock lock{wake_m_};
    const bool woken = wake_.wait_for(lock, timeout, [&] { return changes_ != waited_; });
    waited_ = changes_;
    return woken;
  }

  result<std::unique_ptr<lock>> try_reconcile_lock() override {
    const std::string file = path_ + ".reconcile-lock";
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
      return error{"cannot open " + file};
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);
      return std::unique_ptr<lock>{};
    }
    return std::unique_ptr<lock>{std::make_unique<file_lock>(fd)};
  }

 protected:
  std::optional<error> transact(const std::function<std::optional<error>(detail::connection&)>& fn) override {
    std::lock_guard lock{m_};
    // IMMEDIATE: the write lock up front, so two processes on one file queue (busy_timeout)
    // instead of failing at their first write.
    if (auto r = conn_.exec("BEGIN IMMEDIATE", {}); std::holds_alternative<error>(r))
      return std::get<error>(r);
    auto e = fn(conn_);
    if (e) {
      conn_.exec("ROLLBACK", {});
      return e;
    }
    if (auto r = conn_.exec("COMMIT", {}); std::holds_alternative<error>(r)) {
      conn_.exec("ROLLBACK", {});
      return std::get<error>(r);
    }
    return std::nullopt;
  }
  std::vector<std::string> version_table_ddl() const override {
    return {"CREATE TABLE IF NOT EXISTS headroom_schema (version INTEGER NOT NULL)"};
  }
  void job_change_committed() override {
    {
      std::lock_guard lock{wake_m_};
      ++changes_;
    }
    wake_.notify_all();
  }

 private:
  std::mutex m_;
  sqlite3* db_;
  sqlite_connection conn_;
  std::string path_;
  std::mutex wake_m_;
  std::condition_variable wake_;
  uint64_t changes_ = 0, waited_ = 0;  // under wake_m_
};

}  // namespace

result<std::unique_ptr<store>> open_sqlite(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    error e{"sqlite open " + path + ": " + (db ? sqlite3_errmsg(db) : "out of memory")};
    sqlite3_close_v2(db);
    return e;
  }
  sqlite3_busy_timeout(db, 5000);
  // cache_size: SQLite's page cache is 2,000 KiB by default and fills as the tables grow, so a
  // long-running agent's RSS rose by that much over its first thousands of jobs (the scheduler
  // soak: about 0.5 MiB per 500 jobs until it was full). The reconciler reads by index (active jobs
  // and workers, one page of the dashboards), and the pages it misses are in the OS's cache, so
  // 512 KiB fills early and holds what it reads.
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON",
                             "PRAGMA cache_size=-512"}) {
    char* msg = nullptr;
    if (sqlite3_exec(db, pragma, nullptr, nullptr, &msg) != SQLITE_OK) {
      error e{std::string{"sqlite "} + pragma + ": " + (msg ? msg : "failed")};
      sqlite3_free(msg);
      sqlite3_close_v2(db);
      return e;
    }
  }
  auto s = std::make_unique<sqlite_store>(db, path);
  if (auto e = s->migrate())
    return *e;
  return std::unique_ptr<store>{std::move(s)};
}

}  // namespace headroom::store
