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
//   HEADROOM_TESTENV_DIR=… scheduler_latency_bench [--jobs N] [--burst N]
//
// Prints {"mode":"webhook_to_pod","store":…,"jobs":…,"p50_ms":…,"p99_ms":…,"max_ms":…} per store,
// and {"mode":"provision_burst","store":…,"runners":…,"seconds":…,"per_second":…}.

#include <cstdio>
#include <regex>
#include <sstream>

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

void provision_burst(headroom::e2e::sched_env& e, int n) {
  using namespace headroom::e2e;
  kube_apply(e.c, "apiVersion: v1\nkind: Node\nmetadata:\n  name: burst-node\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                  "  labels: {kubernetes.io/hostname: burst-node, type: kwok, headroom.test/pool: burst}\nstatus:\n"
                  "  allocatable: {cpu: \"1000\", memory: 4Ti, pods: \"5000\", headroom.dev/runner: \"5000\"}\n"
                  "  capacity: {cpu: \"1000\", memory: 4Ti, pods: \"5000\", headroom.dev/runner: \"5000\"}\n");
  for (const char* store : {"sqlite", "postgres"}) {
    sched_options o{.name = std::string{"sched-burst-"} + store, .store = store, .job_duration = "600s",
                    .caps = "{}", .node_selector = "headroom.test/pool: burst"};
    const int orgs = 10, per_org = (n + orgs - 1) / orgs;
    o.caps = "{";
    for (int i = 0; i < orgs; ++i)
      o.caps += std::string{i ? ", " : ""} + "burst-" + store + "-" + std::to_string(i) + ": " + std::to_string(per_org);
    o.caps += "}";
    sched_world w{e, o};
    if (!w.sim || !w.start()) {
      std::fprintf(stderr, "world: %s\n", w.why.c_str());
      return;
    }
    for (int i = 0; i < orgs; ++i) {
      const std::string org = std::string{"burst-"} + store + "-" + std::to_string(i);
      w.post_jobs(org, org + "/app", "\"self-hosted\"", per_org);
    }
    const size_t want = static_cast<size_t>(per_org * orgs);
    eventually([&] { return w.workers().size() >= want; }, std::chrono::seconds(300));
    // The peer counts a runner at its JIT config; its pod and Secret come after (several at once).
    std::vector<double> at;
    eventually([&] {
      at.clear();
      std::istringstream lines{w.headroom->full_log()};
      for (std::string line; std::getline(lines, line);)
        if (line.find("\"runner provisioned\"") != std::string::npos)
          at.push_back(ms_of_day(line));
      return at.size() >= want;
    }, std::chrono::seconds(60));
    const double seconds = at.size() > 1 ? (at.back() - at.front()) / 1000.0 : 0;
    std::printf("{\"mode\":\"provision_burst\",\"store\":\"%s\",\"runners\":%zu,\"seconds\":%.2f,\"per_second\":%.1f}\n", store,
                at.size(), seconds, seconds > 0 ? static_cast<double>(at.size() - 1) / seconds : 0.0);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace headroom::e2e;
  int jobs = 100, burst = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string{argv[i]} == "--jobs")
      jobs = std::stoi(argv[i + 1]);
    if (std::string{argv[i]} == "--burst")
      burst = std::stoi(argv[i + 1]);
  }
  auto e = make_sched_env();
  if (!e.c || !e.peer || !e.pg) {
    std::fprintf(stderr, "environment unavailable: %s\n", e.why.c_str());
    return 1;
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
