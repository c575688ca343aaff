// The job store on both backends, the same tests: SQLite in a temporary file and a real
// PostgreSQL server (tests/testenv/postgres_server) on loopback.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "adapters/store/sql.hpp"
#include "adapters/store/store.hpp"
#include "testenv/cluster_fixture.hpp"
#include "testenv/postgres_server.hpp"

namespace {

using namespace headroom::store;

headroom::testenv::postgres_server* postgres(std::string& why) {
  static std::string failure;
  static std::unique_ptr<headroom::testenv::postgres_server> server = headroom::testenv::postgres_server::start(failure);
  why = failure;
  return server.get();
}

template <class T>
T ok(result<T> r) {
  if (auto* e = std::get_if<error>(&r)) {
    ADD_FAILURE() << e->message;
    return T{};
  }
  return std::move(std::get<T>(r));
}

job_event event(const std::string& delivery, int64_t id, job_status s, int64_t at, const std::string& labels = "linux,x64") {
  job_event e;
  e.delivery_id = delivery;
  e.change.id = id;
  e.change.run_id = id * 10;
  e.change.entity = "acme";
  e.change.labels = labels;
  e.change.name = "build <" + std::to_string(id) + ">";
  e.change.repository = "acme/app";
  e.change.status = s;
  e.change.conclusion = s == job_status::completed ? "success" : "";
  e.at = at;
  return e;
}

class store_test : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static int n = 0;
    name_ = "store_" + std::to_string(getpid()) + "_" + std::to_string(++n);
    if (GetParam() == "postgres") {
      std::string why;
      pg_ = postgres(why);
      HEADROOM_REQUIRE_READY(pg_ != nullptr, "PostgreSQL", why);
      ASSERT_TRUE(pg_->create_database(name_, why)) << why;
    } else {
      dir_ = std::filesystem::temp_directory_path() / name_;
      std::filesystem::create_directories(dir_);
    }
  }
  void TearDown() override {
    if (!dir_.empty())
      std::filesystem::remove_all(dir_);
  }
  result<std::unique_ptr<store>> open_store() {
    return GetParam() == "postgres" ? open_postgres(pg_->conninfo(name_), 10) : open_sqlite(dir_ + "/jobs.db");
  }
  std::unique_ptr<store> open() { return ok(open_store()); }

  std::string name_, dir_;
  headroom::testenv::postgres_server* pg_ = nullptr;
};

TEST_P(store_test, migrations_apply_once_and_a_newer_schema_is_refused) {
  {
    auto s = open();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->schema_version(), known_schema_version());
    EXPECT_EQ(std::string{s->backend()}, GetParam());
  }
  auto again = open();  // nothing to do the second time
  ASSERT_TRUE(again);
  EXPECT_EQ(again->schema_version(), known_schema_version());
  // A newer headroom migrated this database: this one stops instead of writing to it.
  ASSERT_EQ(ok(again->record(event("d-0", 1, job_status::pending, 1))), recorded::applied);
  again.reset();
  if (GetParam() == "postgres") {
    auto r = headroom::testenv::run_command({"psql", pg_->conninfo(name_), "-c", "INSERT INTO headroom_schema VALUES (99)"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  } else {
    auto r = headroom::testenv::run_command({"python3", "-c",
                                             "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('INSERT INTO headroom_schema VALUES (99)'); c.commit()",
                                             dir_ + "/jobs.db"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto refused = open_store();
  ASSERT_TRUE(std::holds_alternative<error>(refused));
  EXPECT_TRUE(std::get<error>(refused).schema_too_new);
  EXPECT_NE(std::get<error>(refused).message.find("version 99"), std::string::npos) << std::get<error>(refused).message;
}

// A database a release with schema 5 wrote (before jobs could be `unmatched`) is migrated with its
// jobs kept, and then takes unmatched ones.
TEST_P(store_test, a_schema_5_database_keeps_its_jobs_and_takes_unmatched_ones) {
  std::string script = "CREATE TABLE headroom_schema (version INTEGER NOT NULL);\n";
  for (const auto& m : headroom::store::detail::migrations()) {
    if (m.version > 5)
      break;
    for (const auto& st : m.statements)
      script += st + ";\n";
    script += "INSERT INTO headroom_schema VALUES (" + std::to_string(m.version) + ");\n";
  }
  script += "INSERT INTO jobs (id, run_id, entity, labels, name, repository, conclusion, status, created_at, updated_at, runner_name) "
            "VALUES (7, 70, 'acme', 'linux', 'build', 'acme/app', 'success', 'completed', 100, 200, 'r-1');\n";
  const auto file = std::filesystem::temp_directory_path() / (name_ + ".sql");
  {
    std::ofstream out{file};
    out << script;
  }
  auto r = GetParam() == "postgres"
               ? headroom::testenv::run_command({"psql", "-v", "ON_ERROR_STOP=1", pg_->conninfo(name_), "-f", file.string()})
               : headroom::testenv::run_command({"python3", "-c",
                                                 "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(open(sys.argv[2]).read()); c.commit()",
                                                 dir_ + "/jobs.db", file.string()});
  std::filesystem::remove(file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), known_schema_version());
  auto kept = ok(s->get_job(7));
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->status, job_status::completed);
  EXPECT_EQ(kept->runner_name, "r-1");
  EXPECT_EQ(kept->created_at, 100);
  EXPECT_EQ(ok(s->record(event("d-u", 8, job_status::unmatched, 300))), recorded::applied);
  EXPECT_EQ(ok(s->get_job(8))->status, job_status::unmatched);
  EXPECT_EQ(ok(s->jobs_page({})).size(), 2u);
}

TEST_P(store_test, a_job_moves_forward_only_and_a_redelivery_writes_nothing) {
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_EQ(ok(s->record(event("d-1", 7, job_status::pending, 1000))), recorded::applied);
  EXPECT_EQ(ok(s->record(event("d-1", 7, job_status::pending, 1001))), recorded::duplicate);
  EXPECT_EQ(ok(s->record(event("d-2", 7, job_status::running, 2000))), recorded::applied);
  EXPECT_EQ(ok(s->record(event("d-2", 7, job_status::completed, 2500))), recorded::duplicate) << "the delivery id decides, not the body";
  EXPECT_EQ(ok(s->record(event("d-3", 7, job_status::completed, 3000))), recorded::applied);
  EXPECT_EQ(ok(s->record(event("d-4", 7, job_status::running, 4000))), recorded::unchanged) << "never backwards";
  EXPECT_EQ(ok(s->record(event("d-5", 7, job_status::pending, 5000))), recorded::unchanged);
  auto j = ok(s->get_job(7));
  ASSERT_TRUE(j);
  EXPECT_EQ(j->status, job_status::completed);
  EXPECT_EQ(j->conclusion, "success");
  EXPECT_EQ(j->created_at, 1000);
  EXPECT_EQ(j->updated_at, 3000);
  EXPECT_EQ(j->name, "build <7>");
  EXPECT_FALSE(ok(s->advance_job(7, job_status::failed, 6000))) << "completed is final";
  EXPECT_FALSE(ok(s->advance_job(7, job_status::running, 6000)));
}

// The sync (GitHub's REST answer) moved the job before its in_progress webhook came: the webhook
// still names the job's runner, so its worker is linked to it, and the status stays where it is.
TEST_P(store_test, a_webhook_after_the_sync_still_records_the_runner_and_never_moves_back) {
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_EQ(ok(s->record(event("r-1", 8, job_status::pending, 1000))), recorded::applied);
  EXPECT_TRUE(ok(s->advance_job(8, job_status::running, 1500)));
  auto running = event("r-2", 8, job_status::running, 2000);
  running.change.runner_name = "runner-8";
  EXPECT_EQ(ok(s->record(running)), recorded::applied) << "the runner's name is news";
  auto found = ok(s->job_for_runner("runner-8"));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, 8);
  EXPECT_EQ(found->status, job_status::running);
  EXPECT_EQ(found->updated_at, 1500) << "no newer state, no new time";
  // Completed, then a late in_progress naming another runner: nothing changes.
  EXPECT_TRUE(ok(s->advance_job(8, job_status::completed, 3000)));
  auto late = event("r-3", 8, job_status::running, 4000);
  late.change.runner_name = "runner-other";
  EXPECT_EQ(ok(s->record(late)), recorded::unchanged);
  auto j = ok(s->get_job(8));
  ASSERT_TRUE(j);
  EXPECT_EQ(j->status, job_status::completed);
  EXPECT_EQ(j->runner_name, "runner-8");
}

TEST_P(store_test, completed_before_queued_stays_completed) {
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_EQ(ok(s->record(event("late-1", 9, job_status::completed, 1000))), recorded::applied);
  EXPECT_EQ(ok(s->record(event("late-2", 9, job_status::pending, 900))), recorded::unchanged);
  EXPECT_EQ(ok(s->get_job(9))->status, job_status::completed);
  EXPECT_TRUE(ok(s->pending_jobs(10)).empty());
  // The reconciler fails a job GitHub no longer knows.
  EXPECT_EQ(ok(s->record(event("q-1", 10, job_status::pending, 1000))), recorded::applied);
  EXPECT_TRUE(ok(s->advance_job(10, job_status::failed, 2000)));
  EXPECT_FALSE(ok(s->advance_job(10, job_status::failed, 2001)));
  EXPECT_EQ(ok(s->get_job(10))->status, job_status::failed);
}

TEST_P(store_test, pending_jobs_come_oldest_first) {
  auto s = open();
  ASSERT_TRUE(s);
  for (int64_t id : {5, 3, 8, 1})
    ok(s->record(event("p-" + std::to_string(id), id, job_status::pending, 100 * id)));
  ok(s->record(event("r-3", 3, job_status::running, 1000)));
  auto v = ok(s->pending_jobs(10));
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].id, 1);
  EXPECT_EQ(v[1].id, 5);
  EXPECT_EQ(v[2].id, 8);
  EXPECT_EQ(ok(s->pending_jobs(1)).size(), 1u);
}

TEST_P(store_test, keyset_pages_return_every_job_once_newest_first) {
  auto s = open();
  ASSERT_TRUE(s);
  // 250 jobs, several sharing a created_at (the id breaks the tie).
  for (int64_t id = 1; id <= 250; ++id)
    ok(s->record(event("k-" + std::to_string(id), id, job_status::pending, 1000 + id / 3)));
  std::vector<int64_t> seen;
  page_query q;
  q.limit = 100;
  for (;;) {
    auto page = ok(s->jobs_page(q));
    for (const auto& j : page)
      seen.push_back(j.id);
    if (page.size() < q.limit)
      break;
    q.after_created_at = page.back().created_at;
    q.after_id = page.back().id;
  }
  ASSERT_EQ(seen.size(), 250u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 250u);
  EXPECT_EQ(seen.front(), 250);
  EXPECT_EQ(seen.back(), 1);
  page_query window;
  window.since = 1010;
  window.until = 1020;
  auto in_window = ok(s->jobs_page(window));
  EXPECT_EQ(in_window.size(), 30u);
  for (const auto& j : in_window)
    EXPECT_TRUE(j.created_at >= 1010 && j.created_at < 1020);
}

// /history's order (seed 003: "sorted by status then created_at"): pending, running, completed,
// failed, unmatched, newest first within each; pages of any size give every job once, and a page
// may end in one status and the next begin in another.
TEST_P(store_test, the_history_pages_status_first_then_newest_first) {
  auto s = open();
  ASSERT_TRUE(s);
  const job_status cycle[] = {job_status::unmatched, job_status::completed, job_status::pending, job_status::failed,
                              job_status::running};
  for (int64_t id = 1; id <= 53; ++id) {
    const auto st = cycle[id % 5];
    ok(s->record(event("q-" + std::to_string(id), id, job_status::pending, 1000 + id / 2)));
    if (st != job_status::pending)
      ok(s->record(event("m-" + std::to_string(id), id, st, 5000)));
  }
  for (size_t per_page : {1u, 7u, 10u, 11u, 100u}) {
    std::vector<job> seen;
    page_query q;
    q.limit = per_page;
    for (int guard = 0; guard < 100; ++guard) {
      auto page = ok(s->jobs_page(q));
      seen.insert(seen.end(), page.begin(), page.end());
      if (page.size() < q.limit)
        break;
      q.after_created_at = page.back().created_at;
      q.after_status = page.back().status;
      q.after_id = page.back().id;
    }
    ASSERT_EQ(seen.size(), 53u) << "per_page " << per_page;
    std::set<int64_t> ids;
    for (const auto& j : seen)
      ids.insert(j.id);
    EXPECT_EQ(ids.size(), 53u) << "per_page " << per_page << ": a job came twice";
    for (size_t i = 1; i < seen.size(); ++i) {
      const auto &a = seen[i - 1], &b = seen[i];
      const bool ordered = a.status < b.status ||
                           (a.status == b.status && (a.created_at > b.created_at || (a.created_at == b.created_at && a.id > b.id)));
      EXPECT_TRUE(ordered) << "per_page " << per_page << ", row " << i << ": job " << a.id << " (" << to_string(a.status)
                           << ") before job " << b.id << " (" << to_string(b.status) << ")";
    }
    EXPECT_EQ(seen.front().status, job_status::pending);
    EXPECT_EQ(seen.back().status, job_status::unmatched);
  }
  // The created_at window holds in every status.
  page_query window;
  window.since = 1010;
  window.until = 1020;
  auto in_window = ok(s->jobs_page(window));
  EXPECT_EQ(in_window.size(), 20u);
  for (const auto& j : in_window)
    EXPECT_TRUE(j.created_at >= 1010 && j.created_at < 1020) << j.id;
  // unmatched is final: GitHub's later deliveries for the job do not move it, and prune takes it.
  ok(s->record(event("u-late", 5, job_status::completed, 6000)));
  EXPECT_EQ(ok(s->get_job(5))->status, job_status::unmatched);
  ok(s->prune(INT64_MAX));
  EXPECT_FALSE(ok(s->get_job(5)).has_value()) << "an unmatched job is history, pruned past the retention";
}

TEST_P(store_test, workers_move_forward_keep_why_they_failed_and_are_never_reused) {
  auto s = open();
  ASSERT_TRUE(s);
  worker w;
  w.name = "acme-linux-1";
  w.entity = "acme";
  w.labels = "linux,x64";
  w.created_at = 100;
  EXPECT_TRUE(ok(s->add_worker(w)));
  EXPECT_FALSE(ok(s->add_worker(w))) << "a name is unique forever";
  EXPECT_TRUE(ok(s->advance_worker(w.name, worker_status::running, "", 200)));
  EXPECT_TRUE(ok(s->advance_worker(w.name, worker_status::failed, "runner_never_registered: 120 s after Running", 300)));
  EXPECT_FALSE(ok(s->advance_worker(w.name, worker_status::running, "", 400)));
  EXPECT_FALSE(ok(s->advance_worker(w.name, worker_status::completed, "", 400)));
  w.name = "acme-linux-2";
  w.created_at = 150;
  ok(s->add_worker(w));
  auto v = ok(s->workers_page({}));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].name, "acme-linux-2");
  EXPECT_EQ(v[1].status, worker_status::failed);
  EXPECT_EQ(v[1].failure_info, "runner_never_registered: 120 s after Running");
  page_query next;
  next.after_created_at = v[0].created_at;
  next.after_name = v[0].name;
  auto rest = ok(s->workers_page(next));
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].name, "acme-linux-1");
}

// The health checks' memory (migration 5) is kept with the worker and read back with it.
TEST_P(store_test, a_workers_health_memory_is_kept_and_read_back) {
  auto s = open();
  ASSERT_TRUE(s);
  worker w;
  w.name = "acme-health-1";
  w.entity = "acme";
  w.labels = "linux";
  w.created_at = 100;
  ASSERT_TRUE(ok(s->add_worker(w)));
  auto fresh = ok(s->active_workers());
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].running_since, 0);
  EXPECT_FALSE(fresh[0].registered);
  EXPECT_TRUE(ok(s->set_worker_health(w.name, 5'000, 9'000, true)));
  auto active = ok(s->active_workers());
  EXPECT_EQ(active[0].running_since, 5'000);
  EXPECT_EQ(active[0].idle_since, 9'000);
  EXPECT_TRUE(active[0].registered);
  EXPECT_TRUE(ok(s->set_worker_health(w.name, 5'000, 0, true)));
  EXPECT_EQ(ok(s->workers_page({}))[0].idle_since, 0) << "busy again: idle no more";
  EXPECT_FALSE(ok(s->set_worker_health("nobody", 1, 1, false)));
}

// History retention: only what is final and older than the cutoff goes, in batches (5 rows each
// here, so a prune of 13 old jobs takes three), with the deliveries received before it, and no more
// batches per call than its budget; active jobs and workers stay whatever their age, and a last
// prune finds nothing more.
TEST_P(store_test, prune_deletes_only_final_history_before_the_cutoff_in_batches) {
  auto s = open();
  ASSERT_TRUE(s);
  const int64_t cutoff = 10'000;
  for (int64_t id = 1; id <= 12; ++id) {  // old and completed: two deliveries each
    ok(s->record(event("old-q-" + std::to_string(id), id, job_status::pending, 100 + id)));
    ok(s->record(event("old-c-" + std::to_string(id), id, job_status::completed, 200 + id)));
  }
  ok(s->record(event("old-failed", 13, job_status::pending, 300)));
  EXPECT_TRUE(ok(s->advance_job(13, job_status::failed, 400)));   // old, failed by the sync: no delivery of its own
  ok(s->record(event("old-pending", 14, job_status::pending, 500)));  // old but still pending
  ok(s->record(event("old-running", 15, job_status::running, 600)));  // old but still running
  ok(s->record(event("new-c", 16, job_status::completed, cutoff + 1)));  // final but recent
  auto add = [&](const std::string& name, int64_t at, std::optional<worker_status> to) {
    worker w;
    w.name = name;
    w.entity = "acme";
    w.labels = "linux,x64";
    w.created_at = at;
    EXPECT_TRUE(ok(s->add_worker(w)));
    if (to) {
      EXPECT_TRUE(ok(s->advance_worker(name, *to, *to == worker_status::failed ? "pod_missing" : "", at + 1)));
    }
  };
  add("w-old-completed", 100, worker_status::completed);
  add("w-old-failed", 110, worker_status::failed);
  add("w-old-creating", 120, std::nullopt);
  add("w-old-running", 130, worker_status::running);
  add("w-new-failed", cutoff + 5, worker_status::failed);

  // A budget of 2 batches: 10 of the 13 jobs, and the rest is left for the next call.
  const auto first = ok(s->prune(cutoff, 5, 2));
  EXPECT_EQ(first.jobs, 10);
  EXPECT_EQ(first.workers + first.deliveries, 0);
  EXPECT_TRUE(first.more);
  const auto p = ok(s->prune(cutoff, 5, 100));
  EXPECT_FALSE(p.more);
  EXPECT_EQ(first.jobs + p.jobs, 13) << "12 completed and 1 failed before the cutoff";
  EXPECT_EQ(p.workers, 2);
  EXPECT_EQ(p.deliveries, 12 * 2 + 3) << "every delivery received before the cutoff (the pending and running jobs' too)";
  for (int64_t id = 1; id <= 13; ++id)
    EXPECT_FALSE(ok(s->get_job(id))) << "job " << id;
  for (int64_t id : {14, 15, 16})
    EXPECT_TRUE(ok(s->get_job(id))) << "job " << id << " stays";
  std::vector<std::string> names;
  for (const auto& w : ok(s->workers_page({})))
    names.push_back(w.name);
  EXPECT_EQ(names, (std::vector<std::string>{"w-new-failed", "w-old-running", "w-old-creating"}));
  EXPECT_EQ(ok(s->active_jobs()).size(), 2u);
  EXPECT_EQ(ok(s->active_workers()).size(), 2u);
  // A pruned delivery that comes again is recorded as new (hence the 72 h floor on the retention);
  // a kept one is still a duplicate.
  EXPECT_EQ(ok(s->record(event("new-c", 16, job_status::completed, cutoff + 2))), recorded::duplicate);
  EXPECT_EQ(ok(s->record(event("old-c-1", 1, job_status::completed, cutoff + 3))), recorded::applied);
  const auto again = ok(s->prune(cutoff, 5, 100));
  EXPECT_EQ(again.jobs + again.workers + again.deliveries, 0) << "nothing more before the cutoff";
}

TEST_P(store_test, concurrent_deliveries_each_record_once) {
  auto s = open();
  ASSERT_TRUE(s);
  std::atomic<int> applied{0}, duplicate{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        // Every thread delivers the same 50 deliveries (a redelivery storm) plus 50 of its own.
        for (const auto& e : {event("shared-" + std::to_string(i), 1000 + i, job_status::pending, i),
                              event("own-" + std::to_string(t) + "-" + std::to_string(i), 2000 + t * 100 + i, job_status::pending, i)}) {
          auto r = s->record(e);
          if (std::holds_alternative<error>(r))
            ++failed;
          else if (std::get<recorded>(r) == recorded::applied)
            ++applied;
          else if (std::get<recorded>(r) == recorded::duplicate)
            ++duplicate;
        }
      }
    });
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(applied.load(), 50 + 8 * 50);
  EXPECT_EQ(duplicate.load(), 7 * 50);
  EXPECT_EQ(ok(s->pending_jobs(1000)).size(), 450u);
}

TEST_P(store_test, a_delivery_that_changes_a_job_wakes_the_reconciler_and_a_redelivery_does_not) {
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_FALSE(ok(s->wait_for_jobs(std::chrono::milliseconds(50)))) << "nothing happened yet";  // (and LISTEN is set up)
  std::atomic<bool> woke{false};
  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration took{};
  std::thread waiter([&] {
    woke = ok(s->wait_for_jobs(std::chrono::seconds(10)));
    took = std::chrono::steady_clock::now() - start;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(ok(s->record(event("wake-1", 1, job_status::pending, 1))), recorded::applied);
  waiter.join();
  EXPECT_TRUE(woke.load());
  EXPECT_LT(took, std::chrono::seconds(5)) << "woken by the change, not by the timeout";
  ASSERT_EQ(ok(s->record(event("wake-1", 1, job_status::pending, 1))), recorded::duplicate);
  EXPECT_FALSE(ok(s->wait_for_jobs(std::chrono::milliseconds(300)))) << "a redelivery changed nothing";
}

// Two processes on one database: only one holds the reconcile lock; it passes on when the holder
// exits (here: killed, as a crashed headroom would be).
TEST_P(store_test, only_one_process_holds_the_reconcile_lock) {
  auto s = open();
  ASSERT_TRUE(s);
  int held[2], release[2];
  ASSERT_EQ(pipe(held), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto other = open_store();
    if (!std::holds_alternative<std::unique_ptr<store>>(other))
      _exit(3);
    auto l = std::get<std::unique_ptr<store>>(other)->try_reconcile_lock();
    if (!std::holds_alternative<std::unique_ptr<store::lock>>(l) || !std::get<std::unique_ptr<store::lock>>(l))
      _exit(4);
    char c = 'x';
    if (write(held[1], &c, 1) != 1)
      _exit(5);
    [[maybe_unused]] auto n = read(release[0], &c, 1);  // until the parent says so (or dies)
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(held[0], &c, 1), 1) << "the other process did not take the lock";
  auto mine = ok(s->try_reconcile_lock());
  EXPECT_FALSE(mine) << "two reconcilers at once";
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  std::unique_ptr<store::lock> got;
  EXPECT_TRUE(headroom::testenv::eventually([&] { return (got = ok(s->try_reconcile_lock())) != nullptr; }, std::chrono::seconds(10)))
      << "the lock did not pass on after its holder died";
  auto second = ok(s->try_reconcile_lock());
  EXPECT_FALSE(second) << "held by this process now: nobody else gets it";
  got.reset();
  EXPECT_TRUE(ok(s->try_reconcile_lock()) != nullptr) << "released";
  for (int fd : {held[0], held[1], release[0], release[1]})
    close(fd);
}

INSTANTIATE_TEST_SUITE_P(backends, store_test, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

// PostgreSQL restarted under a live store: calls fail while it is down (nothing half-written),
// and the pool reconnects by itself once it is back.
TEST(store_postgres, a_restarted_server_is_reconnected_and_nothing_is_lost) {
  std::string why;
  auto* pg = postgres(why);
  HEADROOM_REQUIRE_READY(pg != nullptr, "PostgreSQL", why);
  const std::string db = "restart_" + std::to_string(getpid());
  ASSERT_TRUE(pg->create_database(db, why)) << why;
  auto s = ok(open_postgres(pg->conninfo(db), 4));
  ASSERT_TRUE(s);
  ASSERT_EQ(ok(s->record(event("before", 1, job_status::pending, 1))), recorded::applied);
  pg->stop();
  EXPECT_TRUE(std::holds_alternative<error>(s->record(event("during", 2, job_status::pending, 2))));
  ASSERT_TRUE(pg->restart(why)) << why;
  EXPECT_EQ(ok(s->record(event("after", 3, job_status::pending, 3))), recorded::applied);
  EXPECT_EQ(ok(s->record(event("before", 1, job_status::pending, 1))), recorded::duplicate) << "the first delivery survived";
  EXPECT_FALSE(ok(s->get_job(2)).has_value()) << "the failed delivery wrote nothing";
  EXPECT_EQ(ok(s->pending_jobs(10)).size(), 2u);
}

}  // namespace
