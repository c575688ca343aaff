// GCC 12 reports a std::string inside a std::variant built from an initializer list as "maybe
// uninitialized" at -O2 (a known false positive of its variant analysis); nothing here is.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <climits>

#include "adapters/store/sql.hpp"

namespace headroom::store {

namespace {

constexpr const char* job_states[] = {"pending", "running", "completed", "failed", "unmatched"};
constexpr const char* worker_states[] = {"creating", "running", "completed", "failed"};

// Forward only: the rank of a status; completed, failed and unmatched are all final (a pending job
// a changed configuration no longer serves becomes unmatched; a finished one stays as it ended).
int rank(job_status s) { return s == job_status::pending ? 0 : s == job_status::running ? 1 : 2; }
int rank(worker_status s) { return s == worker_status::creating ? 0 : s == worker_status::running ? 1 : 2; }

// The same rank, in SQL, of a status column.
template <size_t N>
std::string rank_sql(const std::string& column, const char* const (&names)[N]) {
  return std::string{"(CASE "} + column + " WHEN '" + names[0] + "' THEN 0 WHEN '" + names[1] + "' THEN 1 ELSE 2 END)";
}

const std::string job_columns = "id, run_id, entity, labels, name, repository, conclusion, status, created_at, updated_at, runner_name";
const std::string worker_columns = "name, entity, labels, job_id, runner_id, status, failure_info, created_at, updated_at";
// What a worker's SELECT reads: its columns and the health checks' memory (migration 5).
const std::string worker_read_columns = worker_columns + ", running_since, idle_since, registered";

int64_t num(const std::optional<std::string>& v) { return v ? std::stoll(*v) : 0; }
std::string text(const std::optional<std::string>& v) { return v ? *v : std::string{}; }

job job_of(const std::vector<std::optional<std::string>>& r) {
  job j;
  j.id = num(r[0]);
  j.run_id = num(r[1]);
  j.entity = text(r[2]);
  j.labels = text(r[3]);
  j.name = text(r[4]);
  j.repository = text(r[5]);
  j.conclusion = text(r[6]);
  j.status = job_status_from(text(r[7])).value_or(job_status::pending);
  j.created_at = num(r[8]);
  j.updated_at = num(r[9]);
  j.runner_name = text(r[10]);
  return j;
}

worker worker_of(const std::vector<std::optional<std::string>>& r) {
  worker w;
  w.name = text(r[0]);
  w.entity = text(r[1]);
  w.labels = text(r[2]);
  w.job_id = num(r[3]);
  w.runner_id = num(r[4]);
  w.status = worker_status_from(text(r[5])).value_or(worker_status::creating);
  w.failure_info = text(r[6]);
  w.created_at = num(r[7]);
  w.updated_at = num(r[8]);
  if (r.size() >= 12) {
    w.running_since = num(r[9]);
    w.idle_since = num(r[10]);
    w.registered = num(r[11]) != 0;
  }
  return w;
}

// Runs `sql` and keeps its rows; the error, if any, is returned.
std::optional<error> run(detail::connection& c, const std::string& sql, const std::vector<detail::value>& params,
                         detail::rows* out = nullptr) {
  auto r = c.exec(sql, params);
  if (auto* e = std::get_if<error>(&r))
    return *e;
  if (out)
    *out = std::move(std::get<detail::rows>(r));
  return std::nullopt;
}

// One keyset page, newest first: `select` over created_at and then `key`, after the previous
// page's last (created_at, key) when the query has one; an index seek, never an OFFSET.
// `filter` narrows it further (" AND status = 'x'", our own text, never a client's).
std::optional<error> page(detail::connection& c, const std::string& select, const char* key, detail::value after_key,
                          const page_query& q, detail::rows& out, bool use_cursor = true, const std::string& filter = "") {
  // One upper bound only, the tighter one: with two (created_at < until, and the cursor's), SQLite
  // bounds its index range by one of them and filters by the other, so a deep page scanned from
  // the top (the last of 100k rows: 17 ms). The cursor came from a page within the range, so it is
  // the tighter unless a client made it up.
  const bool cursor = use_cursor && q.after_created_at && *q.after_created_at < q.until;
  std::vector<detail::value> params{q.since};
  std::string where = " WHERE created_at >= $1" + filter;
  if (cursor) {
    // (created_at, key) < ($2, $3) as a range on created_at and a filter within it.
    where += std::string{" AND created_at <= $2 AND (created_at < $2 OR "} + key + " < $3)";
    params.push_back(*q.after_created_at);
    params.push_back(std::move(after_key));
  } else {
    where += " AND created_at < $2";
    params.push_back(q.until);
  }
  params.push_back(static_cast<int64_t>(q.limit));
  return run(c, select + where + " ORDER BY created_at DESC, " + key + " DESC LIMIT $" + std::to_string(params.size()), params, &out);
}

}  // namespace

const char* to_string(job_status s) { return job_states[static_cast<int>(s)]; }
const char* to_string(worker_status s) { return worker_states[static_cast<int>(s)]; }

std::optional<job_status> job_status_from(std::string_view s) {
  for (int i = 0; i < static_cast<int>(std::size(job_states)); ++i)
    if (s == job_states[i])
      return static_cast<job_status>(i);
  return std::nullopt;
}

std::optional<worker_status> worker_status_from(std::string_view s) {
  for (int i = 0; i < static_cast<int>(std::size(worker_states)); ++i)
    if (s == worker_states[i])
      return static_cast<worker_status>(i);
  return std::nullopt;
}

int known_schema_version() { return detail::migrations().back().version; }

namespace detail {

const std::vector<migration>& migrations() {
  static const std::vector<migration> all = {
      {1,
       {"CREATE TABLE jobs (id BIGINT PRIMARY KEY, run_id BIGINT NOT NULL, entity TEXT NOT NULL, labels TEXT NOT NULL, "
        "name TEXT NOT NULL, repository TEXT NOT NULL, conclusion TEXT NOT NULL DEFAULT '', "
        "status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed')), "
        "created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)",
        "CREATE INDEX jobs_by_created ON jobs (created_at, id)",
        "CREATE INDEX jobs_by_status ON jobs (status, created_at, id)",
        "CREATE TABLE deliveries (id TEXT PRIMARY KEY, received_at BIGINT NOT NULL)",
        "CREATE TABLE workers (name TEXT PRIMARY KEY, entity TEXT NOT NULL, labels TEXT NOT NULL, "
        "job_id BIGINT NOT NULL DEFAULT 0, runner_id BIGINT NOT NULL DEFAULT 0, "
        "status TEXT NOT NULL CHECK (status IN ('creating', 'running', 'completed', 'failed')), "
        "failure_info TEXT NOT NULL DEFAULT '', created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)",
        "CREATE INDEX workers_by_created ON workers (created_at, name)",
        "CREATE INDEX workers_by_status ON workers (status, entity, labels)"}},
      {2, {"ALTER TABLE jobs ADD COLUMN runner_name TEXT NOT NULL DEFAULT ''"}},
      {3, {"CREATE INDEX jobs_by_runner ON jobs (runner_name)"}},
      // prune(): the deliveries older than the retention, by an index seek.
      {4, {"CREATE INDEX deliveries_by_received ON deliveries (received_at)"}},
      // The health checks' memory, so a restart keeps a worker's timers.
      {5, {"ALTER TABLE workers ADD COLUMN running_since BIGINT NOT NULL DEFAULT 0",
           "ALTER TABLE workers ADD COLUMN idle_since BIGINT NOT NULL DEFAULT 0",
           "ALTER TABLE workers ADD COLUMN registered BIGINT NOT NULL DEFAULT 0"}},
      // A job no runner pool serves is kept as history (status 'unmatched'). The status CHECK is
      // part of the table (SQLite alters no constraint), so the table is rebuilt: the same on both.
      {6, {"CREATE TABLE jobs_v6 (id BIGINT PRIMARY KEY, run_id BIGINT NOT NULL, entity TEXT NOT NULL, labels TEXT NOT NULL, "
           "name TEXT NOT NULL, repository TEXT NOT NULL, conclusion TEXT NOT NULL DEFAULT '', "
           "status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'unmatched')), "
           "created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, runner_name TEXT NOT NULL DEFAULT '')",
           "INSERT INTO jobs_v6 (" + job_columns + ") SELECT " + job_columns + " FROM jobs",
           "DROP TABLE jobs",
           "ALTER TABLE jobs_v6 RENAME TO jobs",
           "CREATE INDEX jobs_by_created ON jobs (created_at, id)",
           "CREATE INDEX jobs_by_status ON jobs (status, created_at, id)",
           "CREATE INDEX jobs_by_runner ON jobs (runner_name)"}},
  };
  return all;
}

std::optional<error> sql_store::migrate() {
  return transact([&](connection& c) -> std::optional<error> {
    for (const auto& statement : version_table_ddl())
      if (auto e = run(c, statement, {}))
        return e;
    rows r;
    if (auto e = run(c, "SELECT MAX(version) FROM headroom_schema", {}, &r))
      return e;
    const int at = r.data.empty() ? 0 : static_cast<int>(num(r.data[0][0]));
    if (at > known_schema_version())
      return error{"the database's schema is version " + std::to_string(at) + ", newer than this headroom knows (" +
                       std::to_string(known_schema_version()) + "): run a newer headroom, or a database of its own",
                   true};
    for (const auto& m : migrations()) {
      if (m.version <= at)
        continue;
      for (const auto& statement : m.statements)
        if (auto e = run(c, statement, {}))
          return error{"schema migration " + std::to_string(m.version) + ": " + e->message};
      if (auto e = run(c, "INSERT INTO headroom_schema (version) VALUES ($1)", {int64_t{m.version}}))
        return e;
    }
    return std::nullopt;
  });
}

int sql_store::schema_version() {
  int v = -1;
  transact([&](connection& c) -> std::optional<error> {
    rows r;
    if (auto e = run(c, "SELECT MAX(version) FROM headroom_schema", {}, &r))
      return e;
    v = r.data.empty() ? 0 : static_cast<int>(num(r.data[0][0]));
    return std::nullopt;
  });
  return v;
}

std::optional<error> sql_store::record_in(connection& c, const job_event& e, recorded& out) {
  const auto& j = e.change;
  rows d;
  if (auto err = run(c, "INSERT INTO deliveries (id, received_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", {e.delivery_id, e.at}, &d))
    return err;
  if (d.affected == 0) {
    out = recorded::duplicate;
    return std::nullopt;
  }
  rows w;
  const std::string newer = rank_sql("jobs.status", job_states) + " < " + rank_sql("excluded.status", job_states);
  if (auto err = run(c,
                     "INSERT INTO jobs (" + job_columns +
                         ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $11, $9, $10) ON CONFLICT (id) DO UPDATE SET "
                         "status = CASE WHEN " + newer + " THEN excluded.status ELSE jobs.status END, "
                         "conclusion = CASE WHEN " + newer + " THEN excluded.conclusion ELSE jobs.conclusion END, "
                         "updated_at = CASE WHEN " + newer + " THEN excluded.updated_at ELSE jobs.updated_at END, "
                         "runner_name = CASE WHEN excluded.runner_name = '' THEN jobs.runner_name ELSE excluded.runner_name END "
                         // A job the sync already moved (GitHub's REST answer) still gets the runner the
                         // webhook names: without it the worker that ran the job was never linked to it
                         // (1 in 4,000 jobs in the scheduler soak). Its status never goes backwards.
                         "WHERE " + newer + " OR (jobs.runner_name = '' AND excluded.runner_name <> '')",
                     {j.id, j.run_id, j.entity, j.labels, j.name, j.repository, j.conclusion, std::string{to_string(j.status)}, e.at,
                      j.runner_name, j.created_at > 0 ? std::min(j.created_at, e.at) : e.at},
                     &w))
    return err;
  out = w.affected > 0 ? recorded::applied : recorded::unchanged;
  return std::nullopt;
}

// Whether a recorded change wakes the reconcilers: an unmatched job is history only (a busy
// organisation's GitHub-hosted jobs would otherwise start a cycle each).
static bool is_demand(const job_event& e) { return e.change.status != job_status::unmatched; }

// One transaction for the whole batch. When it fails, each delivery is tried in its own
// transaction, so one that cannot be written does not take the others down with it.
std::vector<result<recorded>> sql_store::commit_batch(const std::vector<pending_record*>& batch) {
  std::vector<recorded> outcomes(batch.size(), recorded::unchanged);
  bool any_applied = false;
  auto failed = transact([&](connection& c) -> std::optional<error> {
    any_applied = false;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (auto e = record_in(c, *batch[i]->event, outcomes[i]))
        return e;
      any_applied = any_applied || (outcomes[i] == recorded::applied && is_demand(*batch[i]->event));
    }
    return any_applied ? notify_in_transaction(c) : std::nullopt;
  });
  std::vector<result<recorded>> out;
  out.reserve(batch.size());
  if (!failed) {
    for (auto o : outcomes)
      out.emplace_back(o);
    if (any_applied)
      job_change_committed();
    return out;
  }
  for (const auto* p : batch) {
    recorded one = recorded::unchanged;
    auto e = transact([&](connection& c) -> std::optional<error> {
      if (auto err = record_in(c, *p->event, one))
        return err;
      return one == recorded::applied && is_demand(*p->event) ? notify_in_transaction(c) : std::nullopt;
    });
    if (e) {
      out.emplace_back(*e);
    } else {
      out.emplace_back(one);
      if (one == recorded::applied && is_demand(*p->event))
        job_change_committed();
    }
  }
  return out;
}

result<recorded> sql_store::record(const job_event& e) {
  pending_record mine{&e, std::nullopt};
  std::unique_lock lock{batch_m_};
  queued_.push_back(&mine);
  while (!mine.outcome) {
    if (committing_ >= max_committers_ || queued_.empty()) {
      batch_cv_.wait(lock);
      continue;
    }
    ++committing_;
    std::vector<pending_record*> batch;
    while (!queued_.empty() && batch.size() < max_batch) {
      batch.push_back(queued_.front());
      queued_.pop_front();
    }
    lock.unlock();
    auto outcomes = commit_batch(batch);
    lock.lock();
    for (size_t i = 0; i < batch.size(); ++i)
      batch[i]->outcome = std::move(outcomes[i]);
    --committing_;
    batch_cv_.notify_all();
  }
  return std::move(*mine.outcome);
}

result<bool> sql_store::advance_job(int64_t id, job_status to, int64_t at) {
  return in_transaction<bool>([&](connection& c, bool& moved) -> std::optional<error> {
    rows r;
    auto e = run(c, "UPDATE jobs SET status = $1, updated_at = $2 WHERE id = $3 AND " + rank_sql("status", job_states) + " < $4",
                 {std::string{to_string(to)}, at, id, int64_t{rank(to)}}, &r);
    moved = r.affected > 0;
    return e;
  });
}

result<std::optional<job>> sql_store::get_job(int64_t id) {
  return in_transaction<std::optional<job>>([&](connection& c, std::optional<job>& out) -> std::optional<error> {
    rows r;
    auto e = run(c, "SELECT " + job_columns + " FROM jobs WHERE id = $1", {id}, &r);
    if (!r.data.empty())
      out = job_of(r.data[0]);
    return e;
  });
}

result<std::vector<job>> sql_store::pending_jobs(size_t limit) {
  return in_transaction<std::vector<job>>([&](connection& c, std::vector<job>& out) -> std::optional<error> {
    rows r;
    auto e = run(c, "SELECT " + job_columns + " FROM jobs WHERE status = 'pending' ORDER BY created_at, id LIMIT $1",
                 {static_cast<int64_t>(limit)}, &r);
    for (const auto& row : r.data)
      out.push_back(job_of(row));
    return e;
  });
}

result<std::vector<job>> sql_store::jobs_page(const page_query& q) {
  return in_transaction<std::vector<job>>([&](connection& c, std::vector<job>& out) -> std::optional<error> {
    // One index seek per status (jobs_by_status: status, created_at, id), in job_status's order,
    // until the page is full: the cursor bounds only its own status; the statuses after it start
    // from their newest. Never an OFFSET, never a sort of the whole history.
    const int first = q.after_created_at ? static_cast<int>(q.after_status) : 0;
    for (int st = first; st < static_cast<int>(std::size(job_states)) && out.size() < q.limit; ++st) {
      page_query left = q;
      left.limit = q.limit - out.size();
      rows r;
      if (auto e = page(c, "SELECT " + job_columns + " FROM jobs", "id", detail::value{q.after_id}, left, r, st == first,
                        std::string{" AND status = '"} + job_states[st] + "'"))
        return e;
      for (const auto& row : r.data)
        out.push_back(job_of(row));
    }
    return std::nullopt;
  });
}

result<bool> sql_store::add_worker(const worker& w) {
  return in_transaction<bool>([&](connection& c, bool& added) -> std::optional<error> {
    rows r;
    auto e = run(c, "INSERT INTO workers (" + worker_columns + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (name) DO NOTHING",
                 {w.name, w.entity, w.labels, w.job_id, w.runner_id, std::string{to_string(w.status)}, w.failure_info, w.created_at}, &r);
    added = r.affected > 0;
    return e;
  });
}

result<bool> sql_store::advance_worker(const std::string& name, worker_status to, const std::string& failure_info, int64_t at) {
  return in_transaction<bool>([&](connection& c, bool& moved) -> std::optional<error> {
    rows r;
    auto e = run(c,
                 "UPDATE workers SET status = $1, failure_info = $2, updated_at = $3 WHERE name = $4 AND " +
                     rank_sql("status", worker_states) + " < $5",
                 {std::string{to_string(to)}, failure_info, at, name, int64_t{rank(to)}}, &r);
    moved = r.affected > 0;
    return e;
  });
}

result<std::vector<worker>> sql_store::workers_page(const page_query& q) {
  return in_transaction<std::vector<worker>>([&](connection& c, std::vector<worker>& out) -> std::optional<error> {
    rows r;
    auto e = page(c, "SELECT " + worker_read_columns + " FROM workers", "name", detail::value{q.after_name}, q, r);
    for (const auto& row : r.data)
      out.push_back(worker_of(row));
    return e;
  });
}

result<std::vector<job>> sql_store::active_jobs() {
  return in_transaction<std::vector<job>>([&](connection& c, std::vector<job>& out) -> std::optional<error> {
    rows r;
    auto e = run(c, "SELECT " + job_columns + " FROM jobs WHERE status IN ('pending', 'running') ORDER BY created_at, id", {}, &r);
    for (const auto& row : r.data)
      out.push_back(job_of(row));
    return e;
  });
}

result<std::vector<worker>> sql_store::active_workers() {
  return in_transaction<std::vector<worker>>([&](connection& c, std::vector<worker>& out) -> std::optional<error> {
    rows r;
    auto e = run(c, "SELECT " + worker_read_columns + " FROM workers WHERE status IN ('creating', 'running') ORDER BY created_at, name", {}, &r);
    for (const auto& row : r.data)
      out.push_back(worker_of(row));
    return e;
  });
}

result<bool> sql_store::set_worker_runner(const std::string& name, int64_t runner_id, int64_t at) {
  return in_transaction<bool>([&](connection& c, bool& changed) -> std::optional<error> {
    rows r;
    auto e = run(c, "UPDATE workers SET runner_id = $1, updated_at = $2 WHERE name = $3 AND runner_id = 0", {runner_id, at, name}, &r);
    changed = r.affected > 0;
    return e;
  });
}

result<bool> sql_store::set_worker_job(const std::string& name, int64_t job_id, int64_t at) {
  return in_transaction<bool>([&](connection& c, bool& changed) -> std::optional<error> {
    rows r;
    auto e = run(c, "UPDATE workers SET job_id = $1, updated_at = $2 WHERE name = $3 AND job_id = 0", {job_id, at, name}, &r);
    changed = r.affected > 0;
    return e;
  });
}

result<bool> sql_store::set_worker_health(const std::string& name, int64_t running_since, int64_t idle_since, bool registered) {
  return in_transaction<bool>([&](connection& c, bool& changed) -> std::optional<error> {
    rows r;
    auto e = run(c, "UPDATE workers SET running_since = $1, idle_since = $2, registered = $3 WHERE name = $4",
                 {running_since, idle_since, int64_t{registered ? 1 : 0}, name}, &r);
    changed = r.affected > 0;
    return e;
  });
}

result<std::optional<job>> sql_store::job_for_runner(const std::string& runner_name) {
  return in_transaction<std::optional<job>>([&](connection& c, std::optional<job>& out) -> std::optional<error> {
    rows r;
    auto e = run(c, "SELECT " + job_columns + " FROM jobs WHERE runner_name = $1 ORDER BY created_at LIMIT 1", {runner_name}, &r);
    if (!r.data.empty())
      out = job_of(r.data[0]);
    return e;
  });
}

result<pruned> sql_store::prune(int64_t before, size_t batch, size_t max_batches) {
  // DELETE … LIMIT is SQLite's only (and optional there): a keyed sub-select bounds each batch on
  // both backends, each an index range (jobs_by_created, workers_by_created, deliveries_by_received).
  struct step {
    const char* sql;
    int64_t pruned::*count;
  };
  static constexpr step steps[] = {
      {"DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE created_at < $1 AND status IN ('completed', 'failed', 'unmatched') "
       "ORDER BY created_at LIMIT $2)",
       &pruned::jobs},
      {"DELETE FROM workers WHERE name IN (SELECT name FROM workers WHERE created_at < $1 AND status IN ('completed', 'failed') "
       "ORDER BY created_at LIMIT $2)",
       &pruned::workers},
      {"DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE received_at < $1 ORDER BY received_at LIMIT $2)",
       &pruned::deliveries},
  };
  const int64_t limit = static_cast<int64_t>(std::max<size_t>(batch, 1));
  pruned out;
  size_t budget = std::max<size_t>(max_batches, 1);
  for (const auto& s : steps) {
    for (;;) {
      if (budget == 0) {
        out.more = true;
        return out;
      }
      --budget;
      rows r;
      if (auto e = transact([&](connection& c) { return run(c, s.sql, {before, limit}, &r); }))
        return *e;
      out.*s.count += r.affected;
      if (r.affected < limit)
        break;
    }
  }
  return out;
}

}  // namespace detail

}  // namespace headroom::store
