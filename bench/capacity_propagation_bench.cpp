// Capacity propagation: from the moment a placeholder pair becomes placed (or stops being placed)
// in the cluster to the first long poll that carries the new capacity to the Actions Service.
//
// The real thing end to end: the test control plane (kube-scheduler, kwok nodes via Karpenter), the
// headroom binary, the Actions Service peer holding each poll 50 s as the service does, and the
// runner simulator's client-go watch as the clock of "placed" (its timeline). One cycle puts a
// higher-priority pod that needs a whole node onto a node holding placeholders: the scheduler
// preempts them (decreases), the replacement pairs wait; deleting it lets them be placed
// (increases). Then the same with the stock behaviour (capacity read only when the next poll
// starts), fewer cycles because each waits out the poll hold.
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/capacity_propagation_bench
//       [--cycles 100] [--stock-cycles 5]
//
// Prints one JSON line per mode and direction: {"mode","direction","n","p50_ms","p99_ms","max_ms"}.

#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>

#include "e2e/capacity_world.hpp"

using namespace headroom;
using namespace headroom::e2e;
using namespace std::chrono_literals;

namespace {

struct latencies {
  std::vector<double> up, down;
};

// Capacities of the set's polls, in order.
std::vector<int64_t> poll_capacities(const world& w, int64_t set) {
  simdjson::dom::parser p;
  std::vector<int64_t> out;
  for (auto poll : p.parse(w.e.peer->control("/state").body)["polls"].get_array())
    if (int64_t(poll["scaleSetId"]) == set)
      out.push_back(int64_t(poll["capacity"]));
  return out;
}

std::string running_runner_placeholder(const world& w) {
  auto r = w.e.c->kubectl({"-n", w.s.name, "get", "pods", "-l", "headroom.dev/role=runner-placeholder", "-o",
                           "jsonpath={range .items[?(@.status.phase==\"Running\")]}{.metadata.name}{\"\\n\"}{end}"});
  return r.out.substr(0, r.out.find('\n'));
}

// The transitions the simulator saw after the warm pool was first complete. headroom: each is
// matched with the first poll after it that is up to date (carries at least the new value after a
// rise, at most it after a drop), before the value turns back (a change undone before any poll
// carried it is counted apart). stock: the lag
// until the next poll starts, whatever it carries (the stock listener reads capacity only then).
struct measured {
  latencies lat;
  int superseded = 0;
  std::vector<std::string> slow;  // every transition over 200 ms: direction, value, when, how long
};
measured measure(const world& w, int64_t set, int64_t pool, bool stock) {
  simdjson::dom::parser p1, p2;
  auto simst = p2.parse(testpeer::http_call(w.sim->ready("http") + "/state").body);
  auto peer = p1.parse(w.e.peer->control("/state").body);
  std::vector<std::pair<clock_type::time_point, int64_t>> polls, changes;
  for (auto poll : peer["polls"].get_array())
    if (int64_t(poll["scaleSetId"]) == set)
      polls.emplace_back(parse_time(std::string_view(poll["at"])), int64_t(poll["capacity"]));
  bool warm = false;
  for (auto t : simst["timeline"].get_array()) {
    const int64_t ready = int64_t(t["readyPairs"]);
    if (warm && (changes.empty() || changes.back().second != ready))
      changes.emplace_back(parse_time(std::string_view(t["at"])), ready);
    warm |= ready == pool;
  }
  measured out;
  int64_t prev = pool;
  for (size_t i = 0; i < changes.size(); ++i) {
    const auto [at, ready] = changes[i];
    const bool up = ready > prev;
    // The window ends when the value turns back the other way: a poll after that no longer says
    // anything about this change.
    auto until = clock_type::time_point::max();
    for (size_t k = i + 1; k < changes.size(); ++k)
      if (up ? changes[k].second < ready : changes[k].second > ready) {
        until = changes[k].first;
        break;
      }
    // headroom and the simulator watch the same events; either may see one a few ms first. A poll
    // up to 100 ms before the simulator's observation (and after the previous change) counts as 0.
    const auto from = std::max(at - 100ms, i > 0 ? changes[i - 1].first : at - 100ms);
    std::optional<double> ms;
    // Already up to date: the poll in flight when the simulator saw the change was issued after
    // the previous change and carries the new room (headroom saw the event first).
    for (auto it = polls.rbegin(); !stock && it != polls.rend(); ++it)
      if (it->first <= at) {
        if (it->first >= from && (up ? it->second >= ready : it->second <= ready))
          ms = 0.0;
        break;
      }
    for (const auto& [when, cap] : polls) {
      if (ms)
        break;
      if (when < (stock ? at : from) || (!stock && when >= until))
        continue;
      // The service is up to date once a poll carries at least the new room (a rise) or at most
      // it (a drop); a later change in the same direction may already be folded in.
      if (stock || (up ? cap >= ready : cap <= ready)) {
        ms = std::max(0.0, std::chrono::duration<double, std::milli>(when - at).count());
        break;
      }
    }
    if (ready != prev) {
      if (ms)
        (up ? out.lat.up : out.lat.down).push_back(*ms);
      else
        ++out.superseded;
      if (ms && *ms > 200) {
        const auto t = clock_type::to_time_t(at);
        char when[32];
        std::strftime(when, sizeof when, "%H:%M:%S", std::gmtime(&t));
        out.slow.push_back(std::string{up ? "rise" : "drop"} + " to " + std::to_string(ready) + " seen by the simulator at " +
                           when + "Z: " + std::to_string(static_cast<int64_t>(*ms)) + " ms to a poll carrying it");
      }
    }
    prev = ready;
  }
  return out;
}

void report(const char* mode, const char* direction, std::vector<double> v) {
  if (v.empty()) {
    std::cout << "{\"mode\":\"" << mode << "\",\"direction\":\"" << direction << "\",\"n\":0}" << std::endl;
    return;
  }
  std::sort(v.begin(), v.end());
  auto pct = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - 1)]; };
  std::printf("{\"mode\":\"%s\",\"direction\":\"%s\",\"n\":%zu,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"max_ms\":%.1f}\n", mode,
              direction, v.size(), pct(0.5), pct(0.99), v.back());
  std::fflush(stdout);
}

bool run(env& e, const char* mode, bool repoll, int cycles) {
  const int64_t pool = 3;
  scenario s;
  s.name = std::string{"prop-"} + mode;
  s.max_runners = 10;
  s.proactive = static_cast<int>(pool);
  s.repoll = repoll;
  world w{e, s};
  if (!w.sim || !w.identity) {
    std::cerr << "runner simulator or the chart's identity: " << w.why << "\n";
    return false;
  }
  w.start();
  int64_t set = 0;
  if (!eventually([&] { return (set = w.scale_set_id()) != 0; }, 60s) ||
      !eventually([&] { return w.latest_capacity(set) == pool; }, 180s)) {
    std::cerr << "no warm pool:\n" << w.headroom->log() << "\n";
    return false;
  }
  for (int i = 0; i < cycles; ++i) {
    // A decrease as it happens in a busy cluster: a pod of higher priority (arc-workflow, 20) that
    // needs a whole node preempts the placeholders there. The replacement pairs wait for room.
    const auto victim = running_runner_placeholder(w);
    const auto node = w.e.c->kubectl({"-n", s.name, "get", "pod", victim, "-o", "jsonpath={.spec.nodeName}"}).out;
    const auto cpu = w.e.c->kubectl({"get", "node", node, "-o", "jsonpath={.status.allocatable.cpu}"}).out;
    if (victim.empty() || node.empty() || cpu.empty()) {
      std::cerr << "cycle " << i << ": no placed pair to take away\n";
      return false;
    }
    const std::string blocker = "blocker-" + std::to_string(i);
    const std::string yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: " + blocker + ", namespace: " + s.name +
                             "}\nspec:\n  priorityClassName: arc-workflow\n  terminationGracePeriodSeconds: 0\n"
                             "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                             "[{matchFields: [{key: metadata.name, operator: In, values: [" + node + "]}]}]}}}\n"
                             "  containers: [{name: c, image: busybox, resources: {requests: {cpu: \"" + cpu + "\"}}}]\n";
    if (w.e.c->kubectl({"apply", "-f", "-"}, yaml).exit_code != 0) {
      std::cerr << "cycle " << i << ": cannot create the blocker\n";
      return false;
    }
    const size_t before = poll_capacities(w, set).size();
    auto dipped = [&] {
      auto caps = poll_capacities(w, set);
      for (size_t k = before; k < caps.size(); ++k)
        if (caps[k] < pool)
          return true;
      return false;
    };
    const bool blocked = eventually([&] {
      return w.e.c->kubectl({"-n", s.name, "get", "pod", blocker, "-o", "jsonpath={.status.phase}"}).out == "Running";
    }, 60s);
    if (repoll)
      eventually(dipped, 30s);
    else  // spread the stock samples over the poll hold's phase
      std::this_thread::sleep_for(std::chrono::milliseconds(3'000 + 1'000 * (i * 7 % 11)));
    w.e.c->kubectl({"-n", s.name, "delete", "pod", blocker, "--grace-period=0", "--wait=false"});
    if (!blocked)
      std::cerr << "cycle " << i << ": the blocker was not placed within 60 s\n";
    if (!eventually([&] { return w.latest_capacity(set) == pool; }, 120s)) {
      std::cerr << "cycle " << i << ": capacity did not come back\n" << w.headroom->log() << "\n";
      return false;
    }
    if (!repoll)
      std::this_thread::sleep_for(std::chrono::milliseconds(3'000 + 1'000 * (i * 5 % 11)));
  }
  if (!repoll)
    std::this_thread::sleep_for(55s);  // the last transitions' next poll
  const auto m = measure(w, set, pool, !repoll);
  report(mode, "increase", m.lat.up);
  report(mode, "decrease", m.lat.down);
  if (m.superseded > 0)
    std::cerr << mode << ": " << m.superseded << " transitions were superseded before a poll carried them\n";
  // Each slow transition, to trace in headroom's log, which is kept (the cluster's directory goes).
  for (const auto& line : m.slow)
    std::cerr << mode << ": slow " << line << "\n";
  if (!m.slow.empty()) {
    const std::string kept = "/tmp/capacity_propagation_" + std::string{mode} + ".log";
    std::ofstream(kept) << w.headroom->full_log();
    std::cerr << mode << ": headroom's log: " << kept << "\n";
  }
  w.headroom->stop();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int cycles = 100, stock_cycles = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--cycles") == 0)
      cycles = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--stock-cycles") == 0)
      stock_cycles = std::atoi(argv[i + 1]);
  }
  env e;
  if (!bench_env(e, "capacity_propagation_bench"))
    return 2;
  const bool ok = run(e, "headroom", true, cycles) && (stock_cycles == 0 || run(e, "stock", false, stock_cycles));
  e.peer.reset();
  return ok ? 0 : 1;
}
