#pragma once

// What the two backends share: a connection that runs one statement with bound parameters, and
// the store's queries written once over it (sql_store). Statements use $1, $2, … in order of first
// appearance, which libpq and SQLite both bind.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "adapters/store/store.hpp"

namespace headroom::store::detail {

using value = std::variant<std::nullptr_t, int64_t, std::string>;

struct rows {
  std::vector<std::vector<std::optional<std::string>>> data;  // text of each column; nullopt = NULL
  int64_t affected = 0;                                       // rows an INSERT/UPDATE changed
};

class connection {
 public:
  virtual ~connection() = default;
  virtual result<rows> exec(const std::string& sql, const std::vector<value>& params = {}) = 0;
};

// One migration: the statements that take the schema from version-1 to version.
struct migration {
  int version;
  std::vector<std::string> statements;
};
const std::vector<migration>& migrations();

class sql_store : public store {
 public:
  // Applies the migrations this binary knows that the database lacks, one transaction each;
  // refuses a database newer than the binary.
  std::optional<error> migrate();

  int schema_version() override;
  result<recorded> record(const job_event& e) override;
  result<bool> advance_job(int64_t id, job_status to, int64_t at) override;
  result<std::optional<job>> get_job(int64_t id) override;
  result<std::vector<job>> pending_jobs(size_t limit) override;
  result<std::vector<job>> jobs_page(const page_query& q) override;
  result<bool> add_worker(const worker& w) override;
  result<bool> advance_worker(const std::string& name, worker_status to, const std::string& failure_info, int64_t at) override;
  result<std::vector<worker>> workers_page(const page_query& q) override;
  result<std::vector<job>> active_jobs() override;
  result<std::vector<worker>> active_workers() override;
  result<bool> set_worker_runner(const std::string& name, int64_t runner_id, int64_t at) override;
  result<bool> set_worker_job(const std::string& name, int64_t job_id, int64_t at) override;
  result<bool> set_worker_health(const std::string& name, int64_t running_since, int64_t idle_since, bool registered) override;
  result<std::optional<job>> job_for_runner(const std::string& runner_name) override;
  result<pruned> prune(int64_t before, size_t batch, size_t max_batches) override;

 private:
  // Group commit: concurrent record() calls share transactions. A caller that finds fewer than
  // max_committers_ commits under way commits everything queued so far (up to max_batch) in one transaction and
  // wakes the others; each caller returns once its own delivery is durable. One fsync (SQLite) or
  // one commit round trip (PostgreSQL) then serves many deliveries.
  struct pending_record {
    const job_event* event;
    std::optional<result<recorded>> outcome;
  };
  static constexpr size_t max_batch = 256;
  // The outcome of each delivery of the batch, in order (written to the callers under batch_m_).
  std::vector<result<recorded>> commit_batch(const std::vector<pending_record*>& batch);
  std::optional<error> record_in(connection& c, const job_event& e, recorded& out);
  std::mutex batch_m_;
  std::condition_variable batch_cv_;
  std::deque<pending_record*> queued_;
  size_t committing_ = 0;

 protected:
  // How many batches may commit at once: 1 for SQLite (one writer anyway), more for PostgreSQL
  // (its pool's connections commit in parallel and the server groups their WAL flushes).
  size_t max_committers_ = 1;

 protected:
  // Runs `body(connection&, T& out)` in one transaction; `out`, or what failed.
  template <class T, class Body>
  result<T> in_transaction(Body&& body) {
    T out{};
    if (auto e = transact([&](connection& c) { return body(c, out); }))
      return *e;
    return out;
  }
  // Runs `fn` in one transaction on one connection: committed when it returns nullopt, rolled back
  // when it returns an error (or a statement failed).
  virtual std::optional<error> transact(const std::function<std::optional<error>(connection&)>& fn) = 0;
  // Inside the transaction of a delivery that changed a job: PostgreSQL queues its NOTIFY (sent
  // at commit); SQLite has nothing to do here.
  virtual std::optional<error> notify_in_transaction(connection&) { return std::nullopt; }
  // After that transaction committed: SQLite wakes this process's waiters.
  virtual void job_change_committed() {}
  // The backend's statements for "create the version table if missing", serialized against
  // another process migrating at the same time.
  virtual std::vector<std::string> version_table_ddl() const = 0;
};

}  // namespace headroom::store::detail
