// Webhook received → runner pod created (issue #14's goal: p50 ≤ 100 ms; the seed's loop waits
// for NOTIFY or up to 15 s). The headroom binary in scheduler mode on the test control plane, the
// Actions Service peer delivering signed webhooks and answering JIT at once, one job at a time on
// an idle system with free slots, SQLite and PostgreSQL in turn. The latency is headroom's own
// (its `since_webhook_ms`: from the delivery's receipt to the pod's create answered).
//
// Then, with --burst N (issue #36's provisioning throughput): N jobs at once across 10
// organizations, on a node with room for all of them, runners of the peer answering JIT at once:
// runner pods made per second, from the first runner provisioned to the last (headroom's log).
//
// With --queued N (issue #60): N jobs queued across 50 organizations capped at N/100 runners each
// (a hundredth of them get runners, made concurrently; the rest stay queued), then the cycle
// with N active jobs for a minute: headroom's own histogram of whole cycles
// (headroom_scheduler_phase_duration_seconds{phase="cycle"}, its bucket bounds), the runners made
// per second, the store's size, and the dashboards' page times with those N jobs active (each page
// fetched 10 times in a row: the median and the slowest, milliseconds, whole response).
//
//   HEADROOM_TESTENV_DIR=… scheduler_latency_bench [--jobs N] [--burst N] [--queued N]
//
// Prints {"mode":"webhook_to_pod","store":…,"jobs":…,"p50_ms":…,"p99_ms":…,"max_ms":…} per store,
// {"mode":"provision_burst","store":…,"runners":…,"seconds":…,"per_second":…} and
// {"mode":"queued","store":…,"queued":…,"runners":…,"per_second":…,"cycles":…,"cycle_p50_le_ms":…,"cycle_p99_le_ms":…,"store_bytes":…,"cycle_mean_ms":…,…}
// (each phase's mean: cycle, sync_jobs, sync_workers, demand_match)
// and {"mode":"page","store":…,"queued":…,"path":…,"status":…,"bytes":…,"p50_ms":…,"max_ms":…} per dashboard page.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "bench/histogram_text.hpp"
#include "e2e/scheduler_world.hpp"

namespace {

// Milliseconds of the day of a log line's "ts" (…THH:MM:SS.mmmZ); -1 when absent.
double ms_of_day(const std::string& line) {
  const auto at = line.find("\"ts\":\"");
  if (at == std::string::npos || line.size() < at + 29)
    return -1;
  const auto t = line.substr(at + 17, 12);  // HH:MM:SS.mmm
  return ((std::stod(t.substr(0, 2)) * 60 + std::stod(t.substr(3, 2))) * 60 + std::stod(t.substr(6))) * 1000;
}

// A kwok node of `pool` (headroom.test/pool) with room for 5,000 runners.
void big_node(headroom::e2e::sched_env& e, const std::string& pool) {
  headroom::e2e::kube_apply(e.c, "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + pool + "-node\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                  "  labels: {kubernetes.io/hostname: " + pool + "-node, type: kwok, headroom.test/pool: " + pool + "}\nstatus:\n"
                  "  allocatable: {cpu: \"1000\", memory: 4Ti, pods: \"5000\", headroom.dev/runner: \"5000\"}\n"
                  "  capacity: {cpu: \"1000\", memory: 4Ti, pods: \"5000\", headroom.dev/runner: \"5000\"}\n");
}

// maxWorkers.entities for organizations PREFIX-0 … PREFIX-(orgs-1), each capped at `cap`.
std::string org_caps(const std::string& prefix, int orgs, int cap) {
  std::string caps = "{";
  for (int i = 0; i < orgs; ++i)
    caps += std::string{i ? ", " : ""} + prefix + "-" + std::to_string(i) + ": " + std::to_string(cap);
  return caps + "}";
}

// `per_org` queued jobs for each of those organizations, delivered as webhooks by the peer.
void post_to_orgs(const headroom::e2e::sched_world& w, const std::string& prefix, int orgs, int per_org) {
  for (int i = 0; i < orgs; ++i) {
    const std::string org = prefix + "-" + std::to_string(i);
    w.post_jobs(org, org + "/app", "\"self-hosted\"", per_org);
  }
}

// When each "runner provisioned" line of headroom's log was written (ms of the day), once there
// are `want` of them or `limit` has passed.
std::vector<double> provisioned_times(const headroom::e2e::sched_world& w, size_t want, std::chrono::seconds limit) {
  std::vector<double> at;
  headroom::e2e::eventually([&] {
    at.clear();
    std::istringstream lines{w.headroom->full_log()};
    for (std::string line; std::getline(lines, line);)
      if (line.find("\"runner provisioned\"") != std::string::npos)
        at.push_back(ms_of_day(line));
    return at.size() >= want;
  }, limit);
  return at;
}

void provision_burst(headroom::e2e::sched_env& e, int n) {
  using namespace headroom::e2e;
  big_node(e, "burst");
  for (const char* store : {"sqlite", "postgres"}) {
    sched_options o{.name = std::string{"sched-burst-"} + store, .store = store, .job_duration = "600s",
                    .caps = "{}", .node_selector = "headroom.test/pool: burst"};
    const int orgs = 10, per_org = (n + orgs - 1) / orgs;
    const std::string prefix = std::string{"burst-"} + store;
    o.caps = org_caps(prefix, orgs, per_org);
    sched_world w{e, o};
    if (!w.sim || !w.start()) {
      std::fprintf(stderr, "world: %s\n", w.why.c_str());
      return;
    }
    post_to_orgs(w, prefix, orgs, per_org);
    const size_t want = static_cast<size_t>(per_org * orgs);
    eventually([&] { return w.workers().size() >= want; }, std::chrono::seconds(300));
    // The peer counts a runner at its JIT config; its pod and Secret come after (several at once).
    const auto at = provisioned_times(w, want, std::chrono::seconds(60));
    const double seconds = at.size() > 1 ? (at.back() - at.front()) / 1000.0 : 0;
    std::printf("{\"mode\":\"provision_burst\",\"store\":\"%s\",\"runners\":%zu,\"seconds\":%.2f,\"per_second\":%.1f}\n", store,
                at.size(), seconds, seconds > 0 ? static_cast<double>(at.size() - 1) / seconds : 0.0);
    std::fflush(stdout);
  }
}

// Each dashboard page fetched 10 times in a row from `base` (the dashboards' listener): the status,
// the body's size, the median and slowest whole-response time.
void page_times(const std::string& base, const char* store, int queued) {
  const std::vector<std::string> paths = {"/usage",      "/usage.json",   "/jobs",      "/jobs.json?per_page=1000",
                                          "/jobs?page=50", "/history",     "/workers",   "/workers.json?per_page=1000"};
  for (const auto& path : paths) {
    std::vector<double> ms;
    headroom::testpeer::http_reply r;
    for (int i = 0; i < 10; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      r = headroom::testpeer::http_call(base + path);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("{\"mode\":\"page\",\"store\":\"%s\",\"queued\":%d,\"path\":\"%s\",\"status\":%ld,\"bytes\":%zu,\"p50_ms\":%.1f,"
                "\"max_ms\":%.1f}\n",
                store, queued, path.c_str(), static_cast<long>(r.status), r.body.size(), ms[ms.size() / 2], ms.back());
  }
  std::fflush(stdout);
}

void queued_cycle(headroom::e2e::sched_env& e, int n) {
  using namespace headroom::e2e;
  big_node(e, "queued");
  for (const char* store : {"sqlite", "postgres"}) {
    const int orgs = 50, per_org = (n + orgs - 1) / orgs, cap = std::max(1, n / 100 / orgs);
    const std::string prefix = std::string{"queued-"} + store;
    sched_options o{.name = std::string{"sched-queued-"} + store, .store = store, .job_duration = "3600s",
                    .caps = org_caps(prefix, orgs, cap), .node_selector = "headroom.test/pool: queued"};
    sched_world w{e, o};
    if (!w.sim || !w.start()) {
      std::fprintf(stderr, "world: %s\n", w.why.c_str());
      return;
    }
    post_to_orgs(w, prefix, orgs, per_org);
    const size_t want = static_cast<size_t>(cap * orgs);
    const auto at = provisioned_times(w, want, std::chrono::seconds(600));
    const double seconds = at.size() > 1 ? (at.back() - at.front()) / 1000.0 : 0;
    // A minute of cycles with every job active: the webhooks all recorded, the runners made.
    using headroom::bench::buckets;
    const std::string series = "headroom_scheduler_phase_duration_seconds", whole = "phase=\"cycle\"";
    const std::string text_before = w.headroom->metrics();
    const auto before = buckets(text_before, series, whole);
    std::this_thread::sleep_for(std::chrono::seconds(60));
    const std::string text_after = w.headroom->metrics();
    const auto minute = headroom::bench::buckets_since(buckets(text_after, series, whole), before);
    // Each phase's mean over the minute (its _sum and _count): finer than the buckets' bounds.
    std::string means;
    for (const char* phase : {"cycle", "sync_jobs", "sync_workers", "demand_match"}) {
      const std::string label = std::string{"phase=\""} + phase + "\"";
      auto added = [&](const std::string& suffix) {
        return headroom::bench::series_sum(text_after, series + suffix, label) - headroom::bench::series_sum(text_before, series + suffix, label);
      };
      const double count = added("_count");
      char buf[64];
      std::snprintf(buf, sizeof buf, ",\"%s_mean_ms\":%.1f", phase, count > 0 ? added("_sum") / count * 1000 : 0.0);
      means += buf;
    }
    const double cycles = minute.empty() ? 0 : minute.rbegin()->second;
    uintmax_t bytes = 0;
    for (const auto& f : std::filesystem::directory_iterator(w.dir))
      if (f.path().filename().string().rfind("jobs.db", 0) == 0)
        bytes += f.file_size();
    if (std::string{store} == "postgres") {
      auto r = headroom::testenv::run_command({"psql", w.dsn, "-tAc", "SELECT pg_database_size(current_database())"});
      bytes = r.exit_code == 0 && !r.out.empty() ? std::stoull(r.out) : 0;
    }
    std::printf("{\"mode\":\"queued\",\"store\":\"%s\",\"queued\":%d,\"runners\":%zu,\"per_second\":%.1f,\"cycles\":%.0f,"
                "\"cycle_p50_le_ms\":%.0f,\"cycle_p99_le_ms\":%.0f,\"store_bytes\":%ju%s}\n",
                store, per_org * orgs, at.size(), seconds > 0 ? static_cast<double>(at.size() - 1) / seconds : 0.0, cycles,
                headroom::bench::bucket_quantile(minute, 0.5) * 1000, headroom::bench::bucket_quantile(minute, 0.99) * 1000, bytes, means.c_str());
    std::fflush(stdout);
    page_times(w.pages, store, per_org * orgs);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace headroom::e2e;
  int jobs = 100, burst = 0, queued = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string{argv[i]} == "--jobs")
      jobs = std::stoi(argv[i + 1]);
    if (std::string{argv[i]} == "--burst")
      burst = std::stoi(argv[i + 1]);
    if (std::string{argv[i]} == "--queued")
      queued = std::stoi(argv[i + 1]);
  }
  auto e = make_sched_env();
  if (!e.c || !e.peer || !e.pg) {
    std::fprintf(stderr, "environment unavailable: %s\n", e.why.c_str());
    return 1;
  }
  if (queued > 0) {
    queued_cycle(e, queued);
    return 0;
  }
  for (const char* store : {"sqlite", "postgres"}) {
    sched_world w{e, {.name = std::string{"sched-bench-"} + store, .store = store, .job_duration = "1s"}};
    if (!w.sim || !w.start()) {
      std::fprintf(stderr, "world: %s %s\n", w.why.c_str(), w.headroom ? w.headroom->log().c_str() : "");
      return 1;
    }
    for (int i = 0; i < jobs; ++i) {
      const auto ids = w.post_jobs("bench-org", "bench-org/app", "\"self-hosted\"", 1);
      // One at a time: the next after this one's worker exists (an idle loop each time).
      eventually([&] { return w.workers().size() >= static_cast<size_t>(i + 1); }, std::chrono::seconds(30));
    }
    std::vector<double> ms;
    const std::regex latency{"\"since_webhook_ms\":([0-9]+)"};
    const auto log = w.headroom->full_log();
    for (std::sregex_iterator it{log.begin(), log.end(), latency}, end; it != end; ++it)
      ms.push_back(std::stod((*it)[1]));
    std::sort(ms.begin(), ms.end());
    auto at = [&](double p) { return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<size_t>(p * static_cast<double>(ms.size())))]; };
    std::printf("{\"mode\":\"webhook_to_pod\",\"store\":\"%s\",\"jobs\":%zu,\"p50_ms\":%.0f,\"p99_ms\":%.0f,\"max_ms\":%.0f}\n", store,
                ms.size(), at(0.5), at(0.99), at(1.0));
    std::fflush(stdout);
  }
  if (burst > 0)
    provision_burst(e, burst);
  return 0;
}
