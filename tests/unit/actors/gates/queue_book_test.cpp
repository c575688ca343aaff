#include "actors/gates/queue_book.hpp"

#include <gtest/gtest.h>

#include <random>

#include "adapters/k8s/time.hpp"

// queue_book (the incremental planner) against plan_queue (the definition): random histories of
// one Queue's pods (created, changed, bound, finished, deleted, ungated, their conditions written,
// time passing), and after every step the two must agree on what to ungate, the status, the
// conditions, the expiries.

using namespace headroom;
using namespace headroom::actors::gates;

namespace {

const std::string gate{"headroom.dev/queue-allocation-gate"};
const wall_time t0 = parse_wall("2026-11-23T12:00:00Z").value();

struct pod_state {
  bool exists = false;
  bool gated = true, bound = false, opted = true, deleting = false;
  std::string phase = "Pending";
  int32_t priority = 0;
  int created_s = 0;  // seconds before t0
  int64_t cpu_milli = 1000;
  std::vector<std::string> other_gates;
  std::string gang, gang_size;
  std::optional<wall_time> ungated_at;
  std::optional<k8s::condition> condition;
  int version = 1;
};

std::shared_ptr<const k8s::pod> build(const std::string& name, const pod_state& s) {
  k8s::pod p;
  p.meta.name = name;
  p.meta.ns = "ci";
  p.meta.uid = "uid-" + name + "-" + std::to_string(s.version);
  p.meta.resource_version = std::to_string(s.version);
  p.meta.created = std::chrono::duration<double>((t0 - std::chrono::seconds{s.created_s}).time_since_epoch()).count();
  k8s::string_pairs ann;
  if (s.opted)
    ann.emplace_back(gate, "true");
  if (s.ungated_at)
    ann.emplace_back("headroom.dev/ungated-at", format_wall(*s.ungated_at));
  if (!s.gang.empty()) {
    ann.emplace_back("headroom.dev/gang", s.gang);
    ann.emplace_back("headroom.dev/gang-size", s.gang_size);
  }
  p.meta.annotations = ann;
  if (s.deleting)
    p.meta.deletion_timestamp = "2026-11-23T12:00:00Z";
  k8s::pod_spec spec;
  spec.scheduling_gates = s.other_gates;
  if (s.gated)
    spec.scheduling_gates.push_back(gate);
  spec.requests.cpu_milli = s.cpu_milli;
  p.spec = spec;
  p.priority = s.priority;
  p.phase = s.phase;
  if (s.bound)
    p.node_name = "node-1";
  std::vector<k8s::condition> conditions;
  if (s.condition)
    conditions.push_back(*s.condition);
  p.conditions = conditions;
  return std::make_shared<const k8s::pod>(std::move(p));
}

using cond_set = std::set<std::tuple<std::string, std::string, std::string, std::string>>;

struct history {
  explicit history(uint32_t seed) : rng(seed) {
    rules.spec.name = "q";
    rules.spec.generation = 3;
    rules.spec.capacity = {{"cpu", 4000}, {"pods", 6}};
    rules.spec.strict_fifo = seed % 3 == 0;
    rules.reservation_timeout = std::chrono::minutes{10};
    book.emplace(rules);
  }

  std::mt19937 rng;
  queue_rules rules;
  std::optional<queue_book> book;
  std::map<std::string, pod_state> pods;
  std::set<std::string> in_flight;
  std::set<std::string> reported_expired;
  std::vector<condition_write> last_conditions;
  wall_time now = t0;

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  std::string key(const std::string& name) const { return "ci/" + name; }

  void put(const std::string& name) {
    auto& s = pods[name];
    ++s.version;
    book->put(key(name), s.exists ? build(name, s) : nullptr, in_flight.contains(key(name)), now);
  }

  // One random change, as the informer would show it.
  void step() {
    const std::string name = "p" + std::to_string(pick(24));
    auto& s = pods[name];
    switch (pick(12)) {
      case 0:
      case 1:  // created (again), gated, maybe in a gang
        s = pod_state{};
        s.exists = true;
        s.priority = pick(3);
        s.created_s = pick(600);
        s.cpu_milli = 500 * pick(7);
        if (pick(4) == 0)
          s.other_gates = {"example.com/other"};
        if (int g = pick(6); g == 0) {
          s.gang = "g1", s.gang_size = "3";
        } else if (g == 1) {
          s.gang = "g2", s.gang_size = "2";
        } else if (g == 2 && pick(3) == 0) {
          s.gang = "g3", s.gang_size = "many";
        }
        if (pick(8) == 0)
          s.opted = false, s.gated = false;
        in_flight.erase(key(name));
        break;
      case 2:  // deleted
        s.exists = false;
        in_flight.erase(key(name));
        break;
      case 3:  // the scheduler binds an ungated pod
        if (!s.exists || s.gated || s.bound)
          return;
        s.bound = true, s.phase = "Running";
        break;
      case 4:  // it finishes
        if (!s.exists || !s.bound)
          return;
        s.phase = pick(2) ? "Succeeded" : "Failed";
        break;
      case 5:  // its priority or request changes
        if (!s.exists)
          return;
        s.priority = pick(3), s.cpu_milli = 500 * pick(7);
        break;
      case 6:  // the ungating shows in the cache
        if (!in_flight.contains(key(name)) || !s.exists)
          return;
        s.gated = false, s.ungated_at = now;
        in_flight.erase(key(name));
        break;
      case 7:  // the ungating failed (a conflict): gated as before
        if (!in_flight.erase(key(name)))
          return;
        break;
      case 8:  // another controller's gate comes off
        if (!s.exists || s.other_gates.empty())
          return;
        s.other_gates.clear();
        break;
      case 9:  // a condition written earlier shows
        if (last_conditions.empty())
          return;
        {
          const auto& c = last_conditions[pick(static_cast<int>(last_conditions.size()))];
          auto& t = pods[c.name];
          if (!t.exists)
            return;
          t.condition = k8s::condition{std::string{admitted_condition}, c.status, c.reason, c.message};
          put(c.name);
        }
        return;
      case 10:  // being deleted
        if (!s.exists)
          return;
        s.deleting = true;
        break;
      case 11:  // time passes (reservations expire)
        now += std::chrono::seconds{pick(240)};
        return;
    }
    put(name);
  }

  std::vector<std::shared_ptr<const k8s::pod>> cache() const {
    std::vector<std::shared_ptr<const k8s::pod>> out;
    for (const auto& [name, s] : pods)
      if (s.exists)
        out.push_back(build(name, s));
    return out;
  }

  // Both plans, compared; then the ungatings are in flight, as the controller makes them.
  void check(int at, bool full) {
    SCOPED_TRACE("step " + std::to_string(at) + (full ? " (full)" : ""));
    const auto want = plan_queue(rules, cache(), now, in_flight);
    auto got = book->plan(now, full);
    std::vector<std::string> want_ungates, got_ungates;
    for (const auto& u : want.ungates)
      want_ungates.push_back(u.ns + "/" + u.name);
    for (const auto& u : got.ungates)
      got_ungates.push_back(u.ns + "/" + u.name);
    ASSERT_EQ(got_ungates, want_ungates);
    ASSERT_EQ(got.status, want.status);
    ASSERT_EQ(got.next_expiry, want.next_expiry);
    // Conditions: every pod's, as the book would write it now, against the definition's.
    cond_set want_c, got_c, got_plan_c;
    for (const auto& c : want.conditions)
      want_c.emplace(c.name, c.status, c.reason, c.message);
    for (const auto& [name, s] : pods) {
      if (auto c = book->condition_of(key(name)))
        got_c.emplace(c->name, c->status, c->reason, c->message);
    }
    for (const auto& c : got.conditions) {
      got_plan_c.emplace(c.name, c.status, c.reason, c.message);
      if (c.status == "True")
        got_c.emplace(c.name, c.status, c.reason, c.message);  // the admissions' own
    }
    ASSERT_EQ(got_c, want_c);
    // The plan wrote what changed; what it left out was already written before (or is in `want`).
    for (const auto& c : got_plan_c)
      ASSERT_TRUE(want_c.contains(c)) << std::get<0>(c) << " " << std::get<2>(c);
    for (const auto& k : got.expired)
      reported_expired.insert(k);
    for (const auto& k : want.expired)
      ASSERT_TRUE(reported_expired.contains(k)) << k << " expired but the book never said so";
    for (const auto& u : want.ungates)
      in_flight.insert(u.ns + "/" + u.name);
    last_conditions = want.conditions;
  }
};

}  // namespace

TEST(gates_queue_book, agrees_with_plan_queue_over_random_histories) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    history h(seed);
    for (int i = 0; i < 400; ++i) {
      h.step();
      // Several changes between plans now and then, as a drained buffer brings them.
      if (h.pick(3) == 0)
        continue;
      h.check(i, h.pick(20) == 0);
      if (HasFatalFailure())
        return;
    }
  }
}

TEST(gates_queue_book, a_full_queue_admits_nothing_and_only_new_pods_are_looked_at) {
  queue_rules q;
  q.spec.name = "q";
  q.spec.capacity = {{"cpu", 2000}};
  queue_book book(q);
  pod_state running;
  running.exists = true, running.gated = false, running.bound = true, running.phase = "Running", running.cpu_milli = 2000;
  book.put("ci/running", build("running", running), false, t0);
  pod_state waiting;
  waiting.exists = true;
  for (int i = 0; i < 1000; ++i)
    book.put("ci/w" + std::to_string(i), build("w" + std::to_string(i), waiting), false, t0);
  auto first = book.plan(t0);
  EXPECT_TRUE(first.ungates.empty());
  EXPECT_EQ(first.conditions.size(), 1000u) << "every new waiting pod is told why";
  EXPECT_EQ(first.status.gated_pods, 1000);
  // One more pod: only its condition is looked at, and the full Queue admits nothing.
  book.put("ci/late", build("late", waiting), false, t0);
  auto second = book.plan(t0);
  EXPECT_TRUE(second.ungates.empty());
  ASSERT_EQ(second.conditions.size(), 1u);
  EXPECT_EQ(second.conditions[0].name, "late");
  // The running pod finishes: the oldest waiting pod (then by name) gets its room.
  running.phase = "Succeeded";
  book.put("ci/running", build("running", running), false, t0);
  auto third = book.plan(t0);
  ASSERT_EQ(third.ungates.size(), 2u);
  EXPECT_EQ(third.status.reserved_pods, 2);
  EXPECT_EQ(third.status.gated_pods, 999);
}
