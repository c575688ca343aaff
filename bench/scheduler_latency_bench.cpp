// Webhook received → runner pod created (issue #14's goal: p50 ≤ 100 ms; the seed's loop waits
// for NOTIFY or up to 15 s). The headroom binary in scheduler mode on the test control plane, the
// Actions Service peer delivering signed webhooks and answering JIT at once, one job at a time on
// an idle system with free slots, SQLite and PostgreSQL in turn. The latency is headroom's own
// (its `since_webhook_ms`: from the delivery's receipt to the pod's create answered).
//
//   HEADROOM_TESTENV_DIR=… scheduler_latency_bench [--jobs N]
//
// Prints {"mode":"webhook_to_pod","store":…,"jobs":…,"p50_ms":…,"p99_ms":…,"max_ms":…} per store.

#include <cstdio>
#include <regex>

#include "e2e/scheduler_world.hpp"

int main(int argc, char** argv) {
  using namespace headroom::e2e;
  int jobs = 100;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::string{argv[i]} == "--jobs")
      jobs = std::stoi(argv[i + 1]);
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
  return 0;
}
