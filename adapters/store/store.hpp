#pragma once

// The durable job store of the webhook-driven scheduler (seed 003): one small interface over
// PostgreSQL (libpq, a connection pool) and SQLite (WAL, embedded). Every line of SQL headroom
// runs lives in adapters/store/; the schema is the same on both, versioned, and migrated forward
// at open.
//
// Invariants the SQL itself enforces (a bug elsewhere cannot break them):
// - a job only moves forward: pending → running → completed | failed (a completed webhook may
//   arrive before the queued one; the late queued one then changes nothing); `unmatched` (a job
//   no runner pool serves) is final from the start and is never demand;
// - a webhook delivery (X-GitHub-Delivery) is recorded at most once, in the same transaction as
//   what it changed, so a redelivery writes nothing and a crash never leaves half of one;
// - a worker is never deleted while active; a failed one keeps `failure_info` for as long as the
//   history is kept (prune(): only final jobs and workers, and deliveries, past the retention).
//
// Calls block on the database; the scheduler's actors call them from their own detached actor.
// A store is safe to use from several threads (SQLite: one connection behind a lock; PostgreSQL:
// a pool).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace headroom::store {

// In this order on /history (status first, then newest first): the queue, what runs, what is over,
// and last what was never the scheduler's.
enum class job_status { pending, running, completed, failed, unmatched };
const char* to_string(job_status s);
std::optional<job_status> job_status_from(std::string_view s);

enum class worker_status { creating, running, completed, failed };
const char* to_string(worker_status s);
std::optional<worker_status> worker_status_from(std::string_view s);

struct job {
  int64_t id = 0;         // GitHub's workflow job id
  int64_t run_id = 0;
  std::string entity;     // "org" or "owner/repo": whose runners may take it
  std::string labels;     // sorted, comma-separated
  std::string name, repository, conclusion;
  std::string runner_name;  // the runner GitHub gave it (from in_progress on)
  job_status status = job_status::pending;
  // Milliseconds since the epoch. created_at: GitHub's workflow_job.created_at (the queue's FIFO
  // order), never after the first delivery's receipt; that receipt when GitHub sent none.
  // updated_at: the last change (a pending job's is its first delivery's receipt).
  int64_t created_at = 0, updated_at = 0;
};

struct worker {
  std::string name;  // the runner's (and its pod's) unique name
  std::string entity, labels;
  int64_t job_id = 0;  // 0 until a job is known to run on it
  int64_t runner_id = 0;
  worker_status status = worker_status::creating;
  std::string failure_info;
  int64_t created_at = 0, updated_at = 0;
  // The health checks' memory (ms since the epoch; 0 not yet), kept so a restart does not reset
  // them: first seen Running, idle since (GitHub's view), ever seen online by GitHub.
  int64_t running_since = 0, idle_since = 0;
  bool registered = false;
};

// One workflow_job webhook, already verified and decoded.
struct job_event {
  std::string delivery_id;  // X-GitHub-Delivery
  job change;               // the job as the webhook tells it; change.status is where it moves
  int64_t at = 0;           // received, ms since the epoch
};

enum class recorded {
  applied,    // the job moved (or was first seen)
  unchanged,  // a new delivery that does not move the job forward (a late queued after completed)
  duplicate,  // this delivery id was recorded before: nothing written
};

// What one prune() deleted.
struct pruned {
  int64_t jobs = 0, workers = 0, deliveries = 0;
  bool more = false;  // stopped at its batch budget with rows still to delete
};

struct error {
  std::string message;
  bool schema_too_new = false;  // the database was migrated by a newer headroom: stop (exit 2)
};

template <class T>
using result = std::variant<T, error>;

// Keyset pagination, newest first: a page starts after the previous page's last row, by
// (created_at, id) for jobs and (created_at, name) for workers — an index seek, never an OFFSET.
struct page_query {
  size_t limit = 100;
  std::optional<int64_t> after_created_at;
  int64_t after_id = 0;        // jobs
  std::string after_name;      // workers
  job_status after_status = job_status::pending;  // jobs: the cursor's status (jobs page status first)
  int64_t since = 0, until = INT64_MAX;  // created_at range, ms
};

class store {
 public:
  virtual ~store() = default;
  virtual const char* backend() const = 0;
  virtual int schema_version() = 0;

  // Records one delivery and its job change in one transaction; durable when it returns.
  virtual result<recorded> record(const job_event& e) = 0;
  // Moves a job forward (the reconciler: GitHub 404 → failed); false when it was already there or past.
  virtual result<bool> advance_job(int64_t id, job_status to, int64_t at) = 0;
  virtual result<std::optional<job>> get_job(int64_t id) = 0;
  // Pending jobs, oldest first (FIFO by created_at).
  virtual result<std::vector<job>> pending_jobs(size_t limit) = 0;
  // The job history as the seed's /history shows it: by status (job_status's order), then newest
  // first; a keyset page after (after_status, after_created_at, after_id).
  virtual result<std::vector<job>> jobs_page(const page_query& q) = 0;
  // Jobs not yet final (pending or running), oldest first: the reconciler's demand.
  virtual result<std::vector<job>> active_jobs() = 0;

  // A new worker; false when the name is taken (names are unique for as long as the history keeps them).
  virtual result<bool> add_worker(const worker& w) = 0;
  // Moves a worker forward (creating → running → completed | failed), with why when failed.
  virtual result<bool> advance_worker(const std::string& name, worker_status to, const std::string& failure_info,
                                      int64_t at) = 0;
  virtual result<std::vector<worker>> workers_page(const page_query& q) = 0;
  // Workers not yet final (creating or running), oldest first: the reconciler's supply.
  virtual result<std::vector<worker>> active_workers() = 0;
  // Records the GitHub runner a worker's JIT config made, and the job it ran once known.
  virtual result<bool> set_worker_runner(const std::string& name, int64_t runner_id, int64_t at) = 0;
  virtual result<bool> set_worker_job(const std::string& name, int64_t job_id, int64_t at) = 0;
  // The health checks' memory of a worker (running_since, idle_since, registered), as it changes.
  virtual result<bool> set_worker_health(const std::string& name, int64_t running_since, int64_t idle_since, bool registered) = 0;
  // The job GitHub ran on the runner `runner_name` (from its in_progress or completed webhook), if any.
  virtual result<std::optional<job>> job_for_runner(const std::string& runner_name) = 0;

  // History retention: deletes the final (completed, failed or unmatched) jobs and workers created before
  // `before`, and the deliveries received before it, `batch` rows per transaction so that no
  // delivery waits long behind a big delete, and at most `max_batches` transactions per call so
  // that the caller is not held long either (`more` then says to call again). A pending or running
  // job and a creating or running worker are never deleted, whatever their age. A delivery
  // forgotten here is no longer recognised when it comes again, so `before` must lie beyond
  // GitHub's redelivery window (3 days).
  virtual result<pruned> prune(int64_t before, size_t batch = 1000, size_t max_batches = 20) = 0;

  // Blocks until a delivery changed a job (PostgreSQL: NOTIFY on the queue-event channel, from any
  // process; SQLite: from this process) or `timeout` passes; true when woken. The reconciler's
  // poll interval is the timeout, so a missed wake-up costs at most one interval.
  virtual result<bool> wait_for_jobs(std::chrono::milliseconds timeout) = 0;

  // Only one reconciler may touch workers at a time, across processes: a held lock, released when
  // the returned object is destroyed or the process dies. nullptr when another holder has it.
  class lock {
   public:
    virtual ~lock() = default;
  };
  virtual result<std::unique_ptr<lock>> try_reconcile_lock() = 0;
};

// The schema version this binary knows; a database at a higher one is refused.
int known_schema_version();

// `path`: the database file (created when missing), in WAL mode.
result<std::unique_ptr<store>> open_sqlite(const std::string& path);
// `conninfo`: a libpq connection string; `pool` connections at most.
result<std::unique_ptr<store>> open_postgres(const std::string& conninfo, size_t pool = 10);

}  // namespace headroom::store
