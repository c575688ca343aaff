// The scheduler's demand match at scale (issue #36's goal: a reconcile cycle's p99 ≤ 200 ms with
// 10,000 queued jobs across 50 entities and 5 pools, on SQLite and on PostgreSQL).
//
// What one cycle's demandMatch does, on the real store: load the active jobs and workers
// (store::active_jobs, active_workers), split them by pool (split_by_pool: GitHub's label rule,
// first match), and match each pool in turn (match_pools: FIFO, per-key deficit, the per-account
// caps across pools, the pool's caps, its nodes' free slots counted over 500 nodes and the live
// runner pods). The GitHub and Kubernetes calls that follow for the jobs served are not in it: they
// are network round trips, bounded per cycle by the caps, measured end to end by
// scheduler_latency_bench.
//
//   scheduler_match_bench [--jobs N] [--entities E] [--workers W] [--cycles C]
//
// One JSON line per backend: {"mode":"demand_match","store":…,"jobs":…,"p50_ms":…,"p99_ms":…,
// "max_ms":…,"load_p99_ms":…,"served_per_cycle":…}. PostgreSQL is Debian's server started on
// loopback (skipped, and said, when it cannot start).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "actors/scheduler/scheduler.hpp"
#include "testenv/postgres_server.hpp"

namespace {

using namespace headroom;
using namespace headroom::actors::scheduler;
using clock_type = std::chrono::steady_clock;

struct options {
  int jobs = 10'000, entities = 50, workers = 2'000, cycles = 50;
};

// Five pools, and the label sets the jobs ask for (each served by one of them).
const std::vector<std::pair<std::string, std::vector<std::string>>> pool_labels{
    {"linux", {"linux", "x64"}}, {"arm", {"linux", "arm64"}}, {"docker", {"linux", "x64", "docker"}},
    {"gpu", {"linux", "x64", "gpu"}}, {"windows", {"windows", "x64"}}};
const std::vector<std::string> job_labels{"linux,self-hosted,x64", "arm64,linux,self-hosted", "docker,linux,self-hosted",
                                          "gpu,linux,self-hosted", "self-hosted,windows,x64"};

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string entity_of(int i) { return i % 2 ? "org-" + std::to_string(i) : "user-" + std::to_string(i) + "/repo"; }

scheduler_options make_options() {
  scheduler_options o;
  for (const auto& [name, labels] : pool_labels) {
    pool_options p;
    p.name = name;
    p.labels = labels;
    p.spec.slot_resource = "headroom.dev/runner";
    p.spec.node_selector = {{"pool", name}};
    p.max_workers = 600;
    o.pools.push_back(p);
  }
  o.default_max_workers = 60;
  return o;
}

bool fill(store::store& s, const options& opt) {
  for (int i = 0; i < opt.jobs; ++i) {
    store::job_event e;
    e.delivery_id = "d-" + std::to_string(i);
    e.at = 1'000'000 + i;
    e.change.id = i + 1;
    e.change.run_id = 100'000 + i;
    e.change.entity = entity_of(i % opt.entities);
    e.change.repository = e.change.entity.find('/') == std::string::npos ? e.change.entity + "/app" : e.change.entity;
    e.change.labels = job_labels[static_cast<size_t>(i) % job_labels.size()];
    e.change.name = "build";
    e.change.status = i < opt.workers ? store::job_status::running : store::job_status::pending;
    e.change.created_at = e.at;
    if (auto r = s.record(e); std::holds_alternative<store::error>(r)) {
      std::cerr << "record: " << std::get<store::error>(r).message << "\n";
      return false;
    }
  }
  for (int i = 0; i < opt.workers; ++i) {
    store::worker w;
    w.name = "headroom-runner-" + std::to_string(i);
    w.entity = entity_of(i % opt.entities);
    w.labels = job_labels[static_cast<size_t>(i) % job_labels.size()];
    w.job_id = i + 1;
    w.created_at = 1'000'000 + i;
    if (auto r = s.add_worker(w); std::holds_alternative<store::error>(r))
      return false;
    (void)s.advance_worker(w.name, store::worker_status::running, "", w.created_at + 1);
  }
  return true;
}

// 100 nodes per pool with 8 slots, and one runner pod per live worker on them.
void cluster(const options& opt, std::vector<std::shared_ptr<const k8s::node>>& nodes,
             std::vector<std::shared_ptr<const k8s::pod>>& pods) {
  for (size_t p = 0; p < pool_labels.size(); ++p)
    for (int i = 0; i < 100; ++i) {
      k8s::node n;
      n.meta.name = pool_labels[p].first + "-" + std::to_string(i);
      n.meta.labels = k8s::string_pairs{{"pool", pool_labels[p].first}};
      n.allocatable.add("headroom.dev/runner", 8);
      nodes.push_back(std::make_shared<const k8s::node>(std::move(n)));
    }
  for (int i = 0; i < opt.workers; ++i) {
    k8s::pod pod;
    const auto& pool = pool_labels[static_cast<size_t>(i) % pool_labels.size()].first;
    pod.meta.name = "headroom-runner-" + std::to_string(i);
    pod.meta.labels = k8s::string_pairs{{"headroom.dev/pool", pool}};
    pod.node_name = pool + "-" + std::to_string(i % 100);
    pod.phase = "Running";
    k8s::pod_spec spec;
    spec.requests.add("headroom.dev/runner", 1);
    pod.spec = spec;
    pods.push_back(std::make_shared<const k8s::pod>(std::move(pod)));
  }
}

void run(const char* backend, store::store& s, const options& opt) {
  if (!fill(s, opt))
    return;
  const auto o = make_options();
  std::vector<std::shared_ptr<const k8s::node>> nodes;
  std::vector<std::shared_ptr<const k8s::pod>> pods;
  cluster(opt, nodes, pods);
  std::vector<double> cycle_ms, load_ms;
  size_t served = 0;
  for (int c = 0; c < opt.cycles; ++c) {
    const auto t0 = clock_type::now();
    auto jobs = s.active_jobs();
    auto workers = s.active_workers();
    if (!std::holds_alternative<std::vector<store::job>>(jobs) || !std::holds_alternative<std::vector<store::worker>>(workers)) {
      std::cerr << backend << ": the store did not answer\n";
      return;
    }
    const auto t1 = clock_type::now();
    const auto split = split_by_pool(o.pools, std::get<std::vector<store::job>>(jobs), std::get<std::vector<store::worker>>(workers));
    const auto plans = match_pools(o, split, [&](const pool_options& p) {
      return free_slots(nodes, pods, p.spec.node_selector, p.spec.slot_resource, p.name);
    });
    const auto t2 = clock_type::now();
    served = 0;
    for (const auto& plan : plans)
      served += plan.provision.size();
    load_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    cycle_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
  }
  std::printf("{\"mode\":\"demand_match\",\"store\":\"%s\",\"jobs\":%d,\"entities\":%d,\"pools\":%zu,\"workers\":%d,"
              "\"cycles\":%d,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,\"load_p99_ms\":%.2f,\"served_per_cycle\":%zu}\n",
              backend, opt.jobs, opt.entities, o.pools.size(), opt.workers, opt.cycles, percentile(cycle_ms, 0.5),
              percentile(cycle_ms, 0.99), *std::max_element(cycle_ms.begin(), cycle_ms.end()), percentile(load_ms, 0.99), served);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i + 1 < argc; i += 2) {
    const int v = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--jobs"))
      opt.jobs = v;
    else if (!std::strcmp(argv[i], "--entities"))
      opt.entities = v;
    else if (!std::strcmp(argv[i], "--workers"))
      opt.workers = v;
    else if (!std::strcmp(argv[i], "--cycles"))
      opt.cycles = v;
  }
  const auto dir = std::filesystem::temp_directory_path() / ("scheduler_match_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    auto s = store::open_sqlite((dir / "jobs.db").string());
    if (auto* e = std::get_if<store::error>(&s))
      std::cerr << "sqlite: " << e->message << "\n";
    else
      run("sqlite", *std::get<0>(s), opt);
  }
  std::filesystem::remove_all(dir);
  std::string why;
  auto pg = testenv::postgres_server::start(why);
  if (!pg) {
    std::cerr << "postgresql: not measured: " << why << "\n";
    return 0;
  }
  if (!pg->create_database("match_bench", why)) {
    std::cerr << "postgresql: " << why << "\n";
    return 0;
  }
  auto s = store::open_postgres(pg->conninfo("match_bench"));
  if (auto* e = std::get_if<store::error>(&s))
    std::cerr << "postgresql: " << e->message << "\n";
  else
    run("postgresql", *std::get<0>(s), opt);
  return 0;
}
