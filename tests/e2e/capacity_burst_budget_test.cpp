// The cluster's burst budget end to end (burstBudget.maxPendingPairs, actors/capacity/burst_budget.hpp):
// twenty scale sets in one headroom burst at once on the real control plane. One is noisy (30
// warm pairs wanted), nineteen are quiet (2 each); the budget is 60 pending pairs. No node can take
// the placeholders at first (their nodeSelector names a pool with no node), so every pair made
// stays pending: the shares are what headroom made. Then a node of that pool arrives and every
// pair is placed, still never more than 60 pending at once.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "e2e/capacity_suite.hpp"

namespace headroom::e2e {
namespace {

using namespace std::chrono_literals;

constexpr int quiet_sets = 19, quiet_pairs = 2, noisy_pairs = 30, budget = 60;

std::string set_name(int i) { return "burst-shared-" + std::string(i < 10 ? "0" : "") + std::to_string(i); }

TEST(capacity_e2e, twenty_scale_sets_bursting_share_the_cluster_burst_budget_fairly) {
  REQUIRE_ENV(e);
  scenario sc;
  sc.name = "burst-shared";
  sc.chart_install = true;  // this scenario writes its own values and configuration below
  world w{e, sc};
  REQUIRE_WORLD(w);
  // headroom runs as the chart's ServiceAccount for these values (20 scale sets, one namespace).
  std::ostringstream values, sets;
  values << "config:\n  github: {configUrl: " << e.peer->http_url() << "/headroom-org}\n  burstBudget: {maxPendingPairs: " << budget
         << "}\n  scaleSets:\n";
  for (int i = 0; i <= quiet_sets; ++i) {
    values << "    - {name: " << set_name(i) << ", namespace: " << sc.name << "}\n";
    sets << "  - name: " << set_name(i) << "\n    namespace: " << sc.name << "\n    maxRunners: 40\n"
         << "    runner: {image: runner:e2e, resources: {cpu: 500m, memory: 512Mi}, serviceAccountName: e2e-" << sc.name
         << "-headroom-runner, nodeSelector: {pool: " << sc.name << "}}\n"
         << "    capacityAware: {proactiveCapacity: " << (i == 0 ? noisy_pairs : quiet_pairs)
         << ", recalculateInterval: 2s, placeholderReadyTimeout: 10m, workflowResources: {cpu: 500m, memory: 512Mi}}\n";
  }
  values << "github: {existingSecret: e2e-github}\n"
            "priorityClasses: {placeholderRunner: placeholder-runner, runner: arc-runner, placeholderWorkflow: placeholder-workflow, "
            "workflow: arc-workflow}\n";
  std::ofstream(w.dir + "/values.yaml") << values.str();
  auto id = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/chart-identity.sh", e.c->kubeconfig(),
                                  w.dir + "/values.yaml", "e2e-" + sc.name, "headroom-e2e", w.dir + "/chart.kubeconfig"});
  ASSERT_EQ(id.exit_code, 0) << id.err;
  w.headroom = std::make_unique<agent>(w.dir, "kubernetes:\n  kubeconfig: " + w.dir + "/chart.kubeconfig\n"
                                              "leaderElection:\n  enabled: false\ngithub:\n  configUrl: " + e.peer->http_url() +
                                              "/headroom-org\nburstBudget:\n  maxPendingPairs: " + std::to_string(budget) +
                                              "\nscaleSets:\n" + sets.str());

  // Runner placeholders of each scale set, and how many of them are not Running (pending pairs).
  auto count = [&] { return count_pairs(e.c, sc.name); };
  int most_pending = 0;
  pair_count now;
  auto shared_fairly = [&] {
    now = count();
    most_pending = std::max(most_pending, now.total_pending);
    if (now.pairs[set_name(0)] != budget - quiet_sets * quiet_pairs)
      return false;
    for (int i = 1; i <= quiet_sets; ++i)
      if (now.pairs[set_name(i)] != quiet_pairs)
        return false;
    return true;
  };
  ASSERT_TRUE(eventually(shared_fairly, 180s)) << [&] {
    std::string out = "pairs per scale set:";
    for (const auto& [set, n] : now.pairs)
      out += " " + set + "=" + std::to_string(n);
    return out + "\n" + w.headroom->log();
  }();
  // It stays so: nobody makes more while nothing is placed.
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(1s);
    now = count();
    most_pending = std::max(most_pending, now.total_pending);
  }
  EXPECT_EQ(now.total_pending, budget);
  EXPECT_LE(most_pending, budget) << "more pairs were pending than the cluster's budget";
  EXPECT_TRUE(eventually([&] { return w.headroom->sample("headroom_burst_budget_pairs{state=\"pending\"}") == budget; }, 30s));
  EXPECT_EQ(w.headroom->sample("headroom_burst_budget_pairs{state=\"waiting\"}"), noisy_pairs - (budget - quiet_sets * quiet_pairs));
  EXPECT_EQ(w.headroom->sample("headroom_capacity_burst_share{name=\"" + set_name(0) + "\"}"), budget - quiet_sets * quiet_pairs);
  // The noisy scale set's ScaleSet says why its other pairs wait; a quiet one has nothing to say.
  auto waits = [&](const std::string& set) {
    return e.c->kubectl({"-n", sc.name, "get", "events", "--field-selector",
                         "reason=PairsWaitForBurstBudget,involvedObject.kind=ScaleSet,involvedObject.name=" + set, "-o",
                         "jsonpath={.items[*].message}"})
        .out;
  };
  std::string note;
  EXPECT_TRUE(eventually([&] { return (note = waits(set_name(0))).find("burstBudget.maxPendingPairs") != std::string::npos; }, 30s))
      << "no PairsWaitForBurstBudget Event naming the cluster's budget on " << set_name(0) << ": '" << note << "'";
  EXPECT_EQ(waits(set_name(1)), "");

  // A node for the pool: every pair is placed, the noisy scale set's last 8 only as room frees.
  e.c->kubectl({"apply", "-f", "-"}, "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + sc.name + "-node\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                  "  labels: {kubernetes.io/hostname: " + sc.name + "-node, type: kwok, pool: " + sc.name + "}\nstatus:\n"
                  "  allocatable: {cpu: \"200\", memory: 1000Gi, pods: \"500\"}\n  capacity: {cpu: \"200\", memory: 1000Gi, pods: \"500\"}\n");
  EXPECT_TRUE(eventually([&] {
    now = count();
    most_pending = std::max(most_pending, now.total_pending);
    return now.pairs[set_name(0)] == noisy_pairs && now.total_pending == 0;
  }, 180s)) << "the noisy scale set has " << now.pairs[set_name(0)] << " pairs, " << now.total_pending << " pending\n"
            << w.headroom->log();
  EXPECT_LE(most_pending, budget) << "more pairs were pending than the cluster's budget";
  EXPECT_TRUE(eventually([&] { return w.headroom->sample("headroom_burst_budget_pairs{state=\"waiting\"}") == 0; }, 30s));
  e.c->kubectl({"delete", "node", sc.name + "-node", "--wait=false"});
}

}  // namespace
}  // namespace headroom::e2e
