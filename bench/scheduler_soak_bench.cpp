// Soak of the scheduler mode (seed 003), on the real thing as in tests/e2e/scheduler_e2e_test.cpp:
// the headroom binary in scheduler mode on the test control plane (three kwok nodes of four runner
// slots), the Actions Service peer delivering signed workflow_job webhooks, the runner simulator
// running each job for 1 s, and the store (SQLite, or PostgreSQL with `--store postgres`).
//
// `--jobs` jobs (2,000) are fed so that about 20 wait at any time. Every second: headroom's RSS,
// open file descriptors, threads, CPU time and the summed depth of its policy buffers
// (bench/soak_probe.hpp says what flat means). Every job must complete, each on exactly one
// worker, and no runner pod may be left behind.
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/scheduler_soak_bench [--jobs 2000] [--store sqlite]
//
// Prints one JSON line; exits 1 when a job is lost or run twice, or the footprint grew.

#include <cstdio>
#include <iostream>

#include "e2e/scheduler_world.hpp"
#include "soak_probe.hpp"

using namespace headroom;
using namespace headroom::e2e;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  int jobs = 2000;
  std::string store = "sqlite";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--jobs")
      jobs = std::stoi(argv[i + 1]);
    else if (a == "--store")
      store = argv[i + 1];
  }
  auto e = make_sched_env();
  if (!e.c || !e.peer || !e.pg) {
    std::fprintf(stderr, "environment unavailable: %s\n", e.why.c_str());
    return 2;
  }
  bool ok = false;
  {
    sched_world w{e, {.name = "sched-soak-" + store, .store = store, .job_duration = "1s", .caps = "{}"}};
    if (!w.sim || !w.start()) {
      std::fprintf(stderr, "world: %s %s\n", w.why.c_str(), w.headroom ? w.headroom->log().c_str() : "");
      return 2;
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<bench::sample> samples;
    std::vector<int64_t> ids;
    int warm_index = -1, completed = 0;
    while (completed < jobs) {
      const auto states = w.peer_jobs();
      completed = 0;
      int running = 0;
      for (const auto& [id, state] : states) {
        completed += state == "completed";
        running += state == "running";
      }
      const int waiting = static_cast<int>(ids.size()) - completed - running;
      if (static_cast<int>(ids.size()) < jobs && waiting < 20) {
        const int n = std::min(jobs - static_cast<int>(ids.size()), 20 - waiting);
        auto more = w.post_jobs("soak-org", "soak-org/app", "\"self-hosted\"", n);
        ids.insert(ids.end(), more.begin(), more.end());
      }
      auto s = bench::probe(w.headroom->pid());
      s.t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      s.buffer_depth = bench::buffer_depth(w.headroom->metrics());
      s.completed = completed;
      samples.push_back(s);
      if (warm_index < 0 && completed >= jobs / 10)
        warm_index = static_cast<int>(samples.size());
      if (!w.headroom->alive()) {
        std::cerr << "headroom exited\n" << w.headroom->log();
        return 1;
      }
      if (s.t > 3 * 3600) {
        std::cerr << "soak: only " << completed << " of " << jobs << " jobs completed in 3 h\n";
        return 1;
      }
      std::this_thread::sleep_for(1s);
    }
    bench::write_samples_csv(samples);
    const auto sum = bench::summarize(samples, warm_index);
    // Each job on exactly one worker (every page of /workers.json), and no runner pod left over.
    std::map<int64_t, int> runs;
    size_t worker_rows = 0;
    for (const auto& row : w.all_rows("/workers.json?per_page=500", "job_id")) {
      ++worker_rows;
      ++runs[std::stoll(row)];
    }
    int once = 0;
    const auto log = w.headroom->full_log();
    for (auto id : ids) {
      once += runs[id] == 1;
      if (runs[id] == 1)
        continue;
      // Each such job, and what headroom logged about it.
      std::cerr << "job " << id << ": recorded on " << runs[id] << " workers\n";
      const std::string key = "\"job\":" + std::to_string(id) + ",";
      for (size_t at = log.find(key); at != std::string::npos; at = log.find(key, at + 1)) {
        const auto from = log.rfind('\n', at) + 1;
        std::cerr << "  " << log.substr(from, log.find('\n', at) - from) << "\n";
      }
    }
    const bool pods_gone = eventually([&] {
      auto r = e.c->kubectl({"-n", w.o.name, "get", "pods", "-l", "headroom.dev/role=runner", "-o", "name"});
      return r.exit_code == 0 && r.out.empty();
    }, 120s);
    ok = sum.flat && once == jobs && worker_rows == static_cast<size_t>(jobs) && pods_gone;
    std::cout << "{\"mode\":\"scheduler_soak\",\"store\":\"" << store << "\",\"jobs\":" << jobs << ",\"completed\":" << completed
              << ",\"jobs_per_s\":" << completed / std::max(sum.seconds, 1.0) << ",\"ran_once\":" << once
              << ",\"workers\":" << worker_rows << ",\"runner_pods_gone\":" << (pods_gone ? "true" : "false") << ","
              << sum.json() << "}" << std::endl;
    if (!ok)
      std::cerr << w.headroom->log();
  }
  e.peer.reset();
  e.pg.reset();
  return ok ? 0 : 1;
}
