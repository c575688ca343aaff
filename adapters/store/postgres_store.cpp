// The PostgreSQL backend through libpq: a pool of connections (a caller waits for a free one),
// each transaction on one connection, parameters sent as text and typed by the server. A
// connection that broke (the server restarted) is dropped and a new one made on next use, so the
// store recovers by itself once the server is back.

#include <libpq-fe.h>

#include <map>
#include <sys/select.h>

#include <condition_variable>
#include <mutex>

#include "adapters/store/sql.hpp"

namespace headroom::store {

namespace {

class pg_connection final : public detail::connection {
 public:
  explicit pg_connection(PGconn* c) : c_(c) {}
  ~pg_connection() override { PQfinish(c_); }
  bool ok() const { return PQstatus(c_) == CONNECTION_OK; }

  result<detail::rows> exec(const std::string& sql, const std::vector<detail::value>& params) override {
    std::vector<std::string> texts(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      if (auto* n = std::get_if<int64_t>(&params[i]))
        texts[i] = std::to_string(*n);
      else if (auto* t = std::get_if<std::string>(&params[i]))
        texts[i] = *t;
      if (!std::holds_alternative<std::nullptr_t>(params[i]))
        values[i] = texts[i].c_str();
    }
    PGresult* r = nullptr;
    if (params.empty()) {
      r = PQexecParams(c_, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0);
    } else {
      // Statements with parameters are prepared once per connection: the server parses and plans
      // the intake's two statements once, not for every delivery.
      auto it = prepared_.find(sql);
      if (it == prepared_.end()) {
        const std::string name = "h" + std::to_string(next_name_++);
        PGresult* p = PQprepare(c_, name.c_str(), sql.c_str(), static_cast<int>(params.size()), nullptr);
        const bool ok = PQresultStatus(p) == PGRES_COMMAND_OK;
        if (!ok) {
          error e{std::string{"postgres: "} + (p ? PQresultErrorMessage(p) : PQerrorMessage(c_))};
          PQclear(p);
          return trimmed(std::move(e));
        }
        PQclear(p);
        it = prepared_.emplace(sql, name).first;
      }
      r = PQexecPrepared(c_, it->second.c_str(), static_cast<int>(params.size()), values.data(), nullptr, nullptr, 0);
    }
    const auto status = PQresultStatus(r);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      // The server's message only: never the connection string (it may hold a password).
      error e{std::string{"postgres: "} + (r ? PQresultErrorMessage(r) : PQerrorMessage(c_))};
      PQclear(r);
      if (e.message.find("cached plan") != std::string::npos)
        prepared_.clear();  // another process changed the schema: prepare again under new names
      return trimmed(std::move(e));
    }
    detail::rows out;
    const int n = PQntuples(r), cols = PQnfields(r);
    out.data.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      std::vector<std::optional<std::string>> row;
      row.reserve(static_cast<size_t>(cols));
      for (int c = 0; c < cols; ++c)
        row.emplace_back(PQgetisnull(r, i, c) ? std::nullopt
                                               : std::optional<std::string>{std::string{PQgetvalue(r, i, c),
                                                                                        static_cast<size_t>(PQgetlength(r, i, c))}});
      out.data.push_back(std::move(row));
    }
    const char* affected = PQcmdTuples(r);
    out.affected = affected && *affected ? std::stoll(affected) : 0;
    PQclear(r);
    return out;
  }

 private:
  static error trimmed(error e) {
    while (!e.message.empty() && (e.message.back() == '\n' || e.message.back() == ' '))
      e.message.pop_back();
    return e;
  }
  PGconn* c_;
  std::map<std::string, std::string> prepared_;  // SQL → statement name
  uint64_t next_name_ = 0;
};

constexpr const char* channel = "headroom_jobs";

// A new connection whose server NOTICEs ("relation already exists, skipping") are not printed to
// stderr by libpq's default handler.
PGconn* open_connection(const std::string& conninfo) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  return c;
}
constexpr const char* reconcile_lock_key = "7274262";

// A session-level advisory lock on its own connection; the server releases it too when the
// holder dies (its connection closes). Released explicitly first: the server ends a closed
// connection's session after the client has gone on, so the next try_reconcile_lock (this
// process's next cycle, milliseconds later) could find its own lock still held and skip a cycle
// as if another headroom held it (store_test's lock case, once in CI).
class advisory_lock final : public store::lock {
 public:
  explicit advisory_lock(PGconn* c) : c_(c) {}
  ~advisory_lock() override {
    if (PQstatus(c_) == CONNECTION_OK)
      PQclear(PQexec(c_, (std::string{"SELECT pg_advisory_unlock("} + reconcile_lock_key + ")").c_str()));
    PQfinish(c_);
  }

 private:
  PGconn* c_;
};

class postgres_store final : public detail::sql_store {
 public:
  postgres_store(std::string conninfo, size_t pool) : conninfo_(std::move(conninfo)), max_(pool == 0 ? 1 : pool) {
    max_committers_ = std::max<size_t>(1, std::min<size_t>(2, max_ / 2));  // the rest of the pool serves reads and the reconciler
  }
  const char* backend() const override { return "postgres"; }
  ~postgres_store() override {
    if (listener_)
      PQfinish(listener_);
  }

  result<bool> wait_for_jobs(std::chrono::milliseconds timeout) override {
    std::lock_guard lock{listen_m_};
    if (listener_ && PQstatus(listener_) != CONNECTION_OK) {
      PQfinish(listener_);
      listener_ = nullptr;
    }
    if (!listener_) {
      listener_ = open_connection(conninfo_);
      PGresult* r = PQstatus(listener_) == CONNECTION_OK ? PQexec(listener_, (std::string{"LISTEN "} + channel).c_str()) : nullptr;
      const bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
      PQclear(r);
      if (!ok) {
        PQfinish(listener_);
        listener_ = nullptr;
        return error{"postgres: cannot LISTEN for job events (is the server up?)"};
      }
    }
    auto drain = [&] {
      bool any = false;
      while (PGnotify* n = PQnotifies(listener_)) {
        any = true;
        PQfreemem(n);
      }
      return any;
    };
    if (PQconsumeInput(listener_) == 0)
      return error{"postgres: the job-event connection broke"};
    if (drain())
      return true;
    const int fd = PQsocket(listener_);
    fd_set in;
    FD_ZERO(&in);
    FD_SET(fd, &in);
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    if (select(fd + 1, &in, nullptr, nullptr, &tv) <= 0)
      return false;
    if (PQconsumeInput(listener_) == 0)
      return error{"postgres: the job-event connection broke"};
    return drain();
  }

  result<std::unique_ptr<lock>> try_reconcile_lock() override {
    PGconn* c = open_connection(conninfo_);
    if (PQstatus(c) != CONNECTION_OK) {
      PQfinish(c);
      return error{"postgres: cannot connect for the reconcile lock"};
    }
    PGresult* r = PQexec(c, (std::string{"SELECT pg_try_advisory_lock("} + reconcile_lock_key + ")").c_str());
    const bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    const bool held = ok && PQntuples(r) == 1 && std::string_view{PQgetvalue(r, 0, 0)} == "t";
    PQclear(r);
    if (!ok) {
      PQfinish(c);
      return error{"postgres: pg_try_advisory_lock failed"};
    }
    if (!held) {
      PQfinish(c);
      return std::unique_ptr<lock>{};
    }
    return std::unique_ptr<lock>{std::make_unique<advisory_lock>(c)};
  }

  // A connection from the pool (waiting while all are in use), or a new one.
  result<std::unique_ptr<pg_connection>> acquire() {
    std::unique_lock lock{m_};
    freed_.wait(lock, [&] { return !idle_.empty() || open_ < max_; });
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    ++open_;
    lock.unlock();
    auto c = std::make_unique<pg_connection>(open_connection(conninfo_));
    if (!c->ok()) {
      release(nullptr);
      return error{"postgres: cannot connect (check the scheduler's database settings and that the server is up)"};
    }
    return c;
  }

  // Back to the pool; nullptr (a broken connection) frees its slot.
  void release(std::unique_ptr<pg_connection> c) {
    {
      std::lock_guard lock{m_};
      if (c && c->ok())
        idle_.push_back(std::move(c));
      else
        --open_;
    }
    freed_.notify_one();
  }

 protected:
  std::optional<error> transact(const std::function<std::optional<error>(detail::connection&)>& fn) override {
    auto got = acquire();
    if (auto* e = std::get_if<error>(&got))
      return *e;
    auto c = std::move(std::get<std::unique_ptr<pg_connection>>(got));
    if (auto r = c->exec("BEGIN", {}); std::holds_alternative<error>(r)) {
      release(c->ok() ? std::move(c) : nullptr);
      return std::get<error>(r);
    }
    auto e = fn(*c);
    if (!e) {
      if (auto r = c->exec("COMMIT", {}); std::holds_alternative<error>(r))
        e = std::get<error>(r);
    } else {
      c->exec("ROLLBACK", {});
    }
    release(c->ok() ? std::move(c) : nullptr);
    return e;
  }
  std::optional<error> notify_in_transaction(detail::connection& c) override {
    auto r = c.exec(std::string{"SELECT pg_notify('"} + channel + "', '')", {});
    if (auto* e = std::get_if<error>(&r))
      return *e;
    return std::nullopt;
  }
  std::vector<std::string> version_table_ddl() const override {
    // Two processes starting at once on one database: the lock (held to the end of the
    // transaction) makes the second wait for the first's migration, then find nothing to do.
    return {"SELECT pg_advisory_xact_lock(7274261)", "CREATE TABLE IF NOT EXISTS headroom_schema (version INTEGER NOT NULL)"};
  }

 private:
  std::string conninfo_;
  size_t max_;
  std::mutex m_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<pg_connection>> idle_;
  size_t open_ = 0;
  std::mutex listen_m_;
  PGconn* listener_ = nullptr;  // LISTENs on `channel`; made on the first wait
};

}  // namespace

result<std::unique_ptr<store>> open_postgres(const std::string& conninfo, size_t pool) {
  auto s = std::make_unique<postgres_store>(conninfo, pool);
  if (auto e = s->migrate())
    return *e;
  return std::unique_ptr<store>{std::move(s)};
}

}  // namespace headroom::store
