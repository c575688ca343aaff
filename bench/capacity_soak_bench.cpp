// Soak and footprint of the scale-set path, on the real thing: the test control plane (kube-
// scheduler, Karpenter's kwok provider), the headroom binary, the Actions Service peer and the
// runner simulator, as in tests/e2e/capacity_e2e_test.cpp.
//
//   soak       `--jobs` jobs (2,000) through one scale set (5 runners, a warm pool of 2, 1 s jobs),
//              fed so that about 20 wait at any time. Every second: headroom's RSS, open file
//              descriptors, threads, CPU time and the summed depth of its policy buffers
//              (headroom_buffer_depth). Flat means: the last tenth of the run is no larger than
//              the tenth after warm-up (the first 10 % of jobs) by more than 10 % (RSS) or 4
//              (descriptors, threads). Every job must complete and the warm pool come back.
//   footprint  then `--idle-pods` (10,000) pods of the scale set (labelled for headroom's pod
//              informer, held Pending by a scheduling gate so no other component works on
//              them) are created; after they are all cached and `--settle` seconds more, RSS and
//              CPU over `--idle-seconds` (60). Goal: RSS ≤ 30 MiB + ≤ 1 KiB per cached pod, idle
//              CPU ≤ 1 % of a core.
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/capacity_soak_bench
//       [--jobs 2000] [--idle-pods 10000] [--idle-seconds 60] [--settle 20]
//
// Prints one JSON line per phase; exits 1 when a job is lost or a goal is missed.

#include <cstring>
#include <fstream>
#include <iostream>
#include <numeric>

#include "e2e/capacity_world.hpp"
#include "soak_probe.hpp"

using namespace headroom;
using namespace headroom::e2e;
using namespace std::chrono_literals;

namespace {

using headroom::bench::probe;
using headroom::bench::sample;

bool soak(world& w, int jobs) {
  w.start();
  int64_t set = 0;
  if (!eventually([&] { return (set = w.scale_set_id()) != 0; }, 60s) || !eventually([&] { return w.latest_capacity(set) == 2; }, 180s)) {
    std::cerr << "the warm pool never came up\n" << w.headroom->log();
    return false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<sample> samples;
  int posted = 0, warm_index = -1;
  int completed = 0;
  while (completed < jobs) {
    auto states = w.job_states();
    completed = states["completed"];
    const int waiting = posted - completed - states["running"];
    if (posted < jobs && waiting < 20) {
      const int n = std::min(jobs - posted, 20 - waiting);
      w.post_jobs(n);
      posted += n;
    }
    auto s = probe(w.headroom->pid());
    s.t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.buffer_depth = headroom::bench::buffer_depth(w.headroom->metrics());
    s.completed = completed;
    samples.push_back(s);
    if (warm_index < 0 && completed >= jobs / 10)
      warm_index = static_cast<int>(samples.size());
    if (!w.headroom->alive()) {
      std::cerr << "headroom exited\n" << w.headroom->log();
      return false;
    }
    if (s.t > 3 * 3600) {
      std::cerr << "soak: only " << completed << " of " << jobs << " jobs completed in 3 h\n";
      return false;
    }
    std::this_thread::sleep_for(1s);
  }
  const bool pool_back = eventually([&] { return w.latest_capacity(set) == 2 && w.ready_pairs() == 2; }, 180s);
  headroom::bench::write_samples_csv(samples);
  const auto sum = headroom::bench::summarize(samples, warm_index);
  const auto audit = w.audit(set);
  std::cout << "{\"phase\":\"soak\",\"jobs\":" << jobs << ",\"completed\":" << completed
            << ",\"jobs_per_s\":" << completed / std::max(sum.seconds, 1.0) << "," << sum.json()
            << ",\"warm_pool_back\":" << (pool_back ? "true" : "false") << ",\"polls_audited\":" << audit.checked
            << ",\"over_advertised\":" << audit.violations.size() << "}" << std::endl;
  for (const auto& v : audit.violations)
    std::cerr << "audit: " << v << "\n";
  return sum.flat && pool_back && audit.violations.empty();
}

// `count` gated pods labelled for the scale set's informer, created through kubectl in batches.
bool make_idle_pods(const world& w, int count) {
  for (int from = 0; from < count; from += 500) {
    std::string list = "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[";
    for (int i = from; i < std::min(count, from + 500); ++i) {
      list += std::string(i > from ? "," : "") + "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"idle-" +
              std::to_string(i) + "\",\"labels\":{\"headroom.dev/scale-set\":\"" + w.s.name +
              "\",\"app\":\"idle\"}},\"spec\":{\"schedulingGates\":[{\"name\":\"headroom.dev/idle-bench\"}],"
              "\"containers\":[{\"name\":\"c\",\"image\":\"idle:bench\",\"resources\":{\"requests\":{\"cpu\":\"10m\"}}}]}}";
    }
    list += "]}";
    auto r = w.e.c->kubectl({"-n", w.s.name, "create", "-f", "-", "-o", "name"}, list);
    if (r.exit_code != 0) {
      std::cerr << "creating idle pods: " << r.err << "\n";
      return false;
    }
  }
  return true;
}

bool footprint(world& w, int pods, int idle_seconds, int settle) {
  // A fresh process: what the soak left in the allocator is not the idle footprint.
  w.headroom->stop(SIGTERM);
  w.start();
  int64_t set = 0;
  if (!eventually([&] { return (set = w.scale_set_id()) != 0 && w.latest_capacity(set) == 2; }, 180s)) {
    std::cerr << "footprint: the restarted process never advertised its warm pool\n";
    return false;
  }
  std::this_thread::sleep_for(std::chrono::seconds(settle));
  const auto before = probe(w.headroom->pid());
  if (!make_idle_pods(w, pods))
    return false;
  std::this_thread::sleep_for(std::chrono::seconds(settle));
  const auto a = probe(w.headroom->pid());
  std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
  const auto b = probe(w.headroom->pid());
  const double cpu_pct = 100 * (b.cpu_s - a.cpu_s) / idle_seconds;
  const double per_pod_kib = pods > 0 ? (b.rss_mib - before.rss_mib) * 1024 / pods : 0;
  const double goal_mib = 30 + pods / 1024.0;
  const bool ok = b.rss_mib <= goal_mib && cpu_pct <= 1.0;
  std::cout << "{\"phase\":\"footprint\",\"cached_pods\":" << pods << ",\"rss_mib_before\":" << before.rss_mib
            << ",\"rss_mib\":" << b.rss_mib << ",\"rss_goal_mib\":" << goal_mib << ",\"kib_per_pod\":" << per_pod_kib
            << ",\"idle_cpu_core_pct\":" << cpu_pct << ",\"fds\":" << b.fds << ",\"threads\":" << b.threads
            << ",\"ok\":" << (ok ? "true" : "false") << "}" << std::endl;
  w.e.c->kubectl({"-n", w.s.name, "delete", "pods", "-l", "app=idle", "--wait=false"});
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 2000, idle_pods = 10000, idle_seconds = 60, settle = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--jobs") == 0)
      jobs = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--idle-pods") == 0)
      idle_pods = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--idle-seconds") == 0)
      idle_seconds = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--settle") == 0)
      settle = std::atoi(argv[i + 1]);
  }
  env e;
  if (!bench_env(e, "capacity_soak_bench"))
    return 2;
  bool ok = true;
  {
    world w{e, {"soak", 5, 2, "5m", "1s"}};
    if (!w.sim || !w.identity) {
      std::cerr << "world: " << w.why << "\n";
      return 2;
    }
    ok = soak(w, jobs);
    if (idle_pods > 0)
      ok = footprint(w, idle_pods, idle_seconds, settle) && ok;
    if (!ok)
      std::cerr << w.headroom->log();
  }
  e.peer.reset();
  return ok ? 0 : 1;
}
