// pod_census: the capacity monitor's running count of its scale set's pods. Counted change by
// change it must equal a count from scratch over the same pods, whatever the order of changes.

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "actors/capacity/pod_census.hpp"
#include "actors/runners/pods.hpp"

namespace headroom::actors::capacity {
namespace {

using change = msg::object_change;

std::shared_ptr<const k8s::pod> pod(std::string name, std::string ns, const char* role, std::string phase,
                                    std::string node = "", bool deleting = false, std::string slot = "") {
  k8s::pod p;
  p.meta.name = std::move(name);
  p.meta.ns = std::move(ns);
  k8s::string_pairs labels;
  if (role != nullptr)
    labels.emplace_back(runners::keys::role, role);
  if (!slot.empty())
    labels.emplace_back(runners::keys::slot, slot);
  p.meta.labels = std::move(labels);
  p.phase = std::move(phase);
  p.node_name = std::move(node);
  if (deleting)
    p.meta.deletion_timestamp = "2026-11-27T00:00:00Z";
  return std::make_shared<const k8s::pod>(std::move(p));
}

const char* runner = runners::role_label(runners::role::runner);
const char* runner_ph = runners::role_label(runners::role::runner_placeholder);
const char* workflow_ph = runners::role_label(runners::role::workflow_placeholder);

TEST(pod_census, counts_runner_pods_by_state_and_keeps_placeholders_by_name) {
  pod_census c{"ns"};
  c.rebuild(std::vector<std::shared_ptr<const k8s::pod>>{
      pod("r1", "ns", runner, "Running", "n1"), pod("r2", "ns", runner, "Pending"),
      pod("r3", "ns", runner, "Succeeded", "n1"), pod("r4", "ns", runner, "Running", "n1", true),
      pod("p1", "ns", runner_ph, "Running", "n1", false, "s1"), pod("w1", "ns", workflow_ph, "Pending", "", false, "s1"),
      pod("other", "ns", nullptr, "Running", "n1"), pod("r9", "elsewhere", runner, "Running", "n1")});
  EXPECT_EQ(c.runners(), (runner_totals{.pods = 4, .placed = 1, .pending = 1, .running = 2, .failed = 0, .going = 2}));
  EXPECT_EQ(c.placeholders().size(), 2u);
  ASSERT_NE(c.runner("r3"), nullptr);
  EXPECT_FALSE(c.runner("r3")->going);
  EXPECT_EQ(c.runner("r9"), nullptr) << "another namespace's pod is not the scale set's";

  c.apply(change::modified, pod("r2", "ns", runner, "Running", "n2"));
  EXPECT_EQ(c.runners().placed, 2);
  EXPECT_EQ(c.runners().pending, 0);
  c.apply(change::deleted, pod("r1", "ns", runner, "Running", "n1"));
  EXPECT_EQ(c.runners().pods, 3);
  EXPECT_EQ(c.runner("r1"), nullptr);
  c.apply(change::modified, pod("p1", "ns", runner, "Running", "n1"));  // relabelled: now a runner
  EXPECT_EQ(c.placeholders().size(), 1u);
  EXPECT_EQ(c.runners().pods, 4);
}

// arc mode: ARC's runner pods carry ARC's labels, not headroom's role (resourcebuilder.go's
// newEphemeralRunnerPod: `actions-ephemeral-runner: "True"`); they are the scale set's runners.
TEST(pod_census, arcs_runner_pods_count_as_runners) {
  auto arc_pod = [](std::string name, const char* ephemeral, std::string phase, std::string node) {
    k8s::pod p;
    p.meta.name = std::move(name);
    p.meta.ns = "ns";
    k8s::string_pairs labels{{runners::keys::arc_scale_set_name, "linux"}, {"app.kubernetes.io/component", "runner"}};
    if (ephemeral != nullptr)
      labels.emplace_back(runners::keys::arc_ephemeral_runner, ephemeral);
    p.meta.labels = std::move(labels);
    p.phase = std::move(phase);
    p.node_name = std::move(node);
    return std::make_shared<const k8s::pod>(std::move(p));
  };
  pod_census c{"ns"};
  c.rebuild(std::vector<std::shared_ptr<const k8s::pod>>{
      arc_pod("linux-x7k2p-runner-a", "True", "Running", "n1"), arc_pod("linux-x7k2p-runner-b", "True", "Pending", ""),
      arc_pod("listener", nullptr, "Running", "n1"), arc_pod("odd", "False", "Running", "n1"),
      pod("p1", "ns", runner_ph, "Running", "n1", false, "s1")});
  EXPECT_EQ(c.runners(), (runner_totals{.pods = 2, .placed = 1, .pending = 1, .running = 1, .failed = 0, .going = 2}));
  EXPECT_NE(c.runner("linux-x7k2p-runner-a"), nullptr) << "by its name, the runner's (ARC names the pod as its runner)";
  EXPECT_EQ(c.placeholders().size(), 1u);
}

// A change the bounded feed dropped: the count is rebuilt from the cache once per new drop, and
// the cache is not even listed while nothing was dropped.
TEST(pod_census, a_dropped_change_is_mended_from_the_cache) {
  pod_census c{"ns"};
  const std::vector<std::shared_ptr<const k8s::pod>> cache{pod("r1", "ns", runner, "Running", "n1"), pod("r2", "ns", runner, "Pending")};
  c.rebuild(std::vector<std::shared_ptr<const k8s::pod>>{});  // the feed lost both adds
  int listed = 0;
  auto list = [&] {
    ++listed;
    return cache;
  };
  c.mend(0, list);
  EXPECT_EQ(listed, 0);
  EXPECT_EQ(c.runners().pods, 0);
  c.mend(2, list);
  EXPECT_EQ(listed, 1);
  EXPECT_EQ(c.runners().pods, 2);
  EXPECT_EQ(c.runners().placed, 1);
  c.mend(2, list);
  EXPECT_EQ(listed, 1) << "the same drops are mended once";
}

// 20,000 random changes over 60 pods: after each, the running count equals a count from scratch
// over the pods as they now are.
TEST(pod_census, a_running_count_equals_a_count_from_scratch_after_any_changes) {
  std::mt19937 rng(38);
  const char* roles[] = {runner, runner, runner_ph, workflow_ph, nullptr};
  const char* phases[] = {"", "Pending", "Running", "Succeeded", "Failed"};
  std::map<std::string, std::shared_ptr<const k8s::pod>> store;
  pod_census running{"ns"};
  running.rebuild(std::vector<std::shared_ptr<const k8s::pod>>{});
  for (int i = 0; i < 20'000; ++i) {
    const int which = static_cast<int>(rng() % 60);
    const std::string name = "pod-" + std::to_string(which);
    if (rng() % 4 == 0 && store.count(name) > 0) {
      running.apply(change::deleted, store[name]);
      store.erase(name);
    } else {
      // A pod never changes namespace: one in ten names lives in another one.
      auto p = pod(name, which % 10 == 0 ? "other" : "ns", roles[rng() % 5], phases[rng() % 5], rng() % 2 ? "node" : "",
                   rng() % 6 == 0, "slot-" + std::to_string(rng() % 5));
      const auto kind = store.count(name) > 0 ? change::modified : change::added;
      store[name] = p;
      running.apply(rng() % 20 == 0 ? change::resync : kind, p);
    }
    std::vector<std::shared_ptr<const k8s::pod>> now;
    for (const auto& [n, p] : store)
      now.push_back(p);
    pod_census fresh{"ns"};
    fresh.rebuild(now);
    ASSERT_EQ(running.runners(), fresh.runners()) << "after change " << i;
    ASSERT_EQ(running.placeholders(), fresh.placeholders()) << "after change " << i;
    for (const auto& [n, p] : store) {
      const auto* a = running.runner(n);
      const auto* b = fresh.runner(n);
      ASSERT_EQ(a == nullptr, b == nullptr) << n;
      if (a != nullptr) {
        ASSERT_EQ(*a, *b) << n;
      }
    }
  }
}

}  // namespace
}  // namespace headroom::actors::capacity
