// The cluster's burst budget (actors/capacity/burst_budget.hpp): max-min fair shares, never
// overdrawn while shares change; and the actor, under CAF's deterministic test_coordinator, with
// monitors that take their shares as the capacity monitor does.
#include "actors/capacity/burst_budget.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>

#include "messages/type_ids.hpp"

using namespace headroom;
using actors::capacity::burst_claim;
using actors::capacity::fair_split;
using actors::capacity::share_burst_budget;

namespace {

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

TEST(fair_split, who_wants_little_gets_it_and_the_rest_split_evenly) {
  EXPECT_EQ(fair_split(60, {100, 2, 2, 2}), (std::vector<int64_t>{54, 2, 2, 2}));
  EXPECT_EQ(fair_split(10, {100, 100, 100}), (std::vector<int64_t>{4, 3, 3})) << "the remainder goes to the lowest index";
  EXPECT_EQ(fair_split(10, {1, 100, 0, 100}), (std::vector<int64_t>{1, 5, 0, 4}));
  EXPECT_EQ(fair_split(100, {3, 4}), (std::vector<int64_t>{3, 4})) << "never more than wanted";
  EXPECT_EQ(fair_split(0, {3, 4}), (std::vector<int64_t>{0, 0}));
  EXPECT_TRUE(fair_split(5, {}).empty());
}

TEST(fair_split, is_within_the_budget_and_max_min_fair_for_any_wants) {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    const int n = 1 + static_cast<int>(rng() % 30);
    const int64_t budget = rng() % 200;
    std::vector<int64_t> wants(n);
    for (auto& w : wants)
      w = rng() % 40;
    const auto got = fair_split(budget, wants);
    ASSERT_LE(sum(got), budget);
    const int64_t level = *std::max_element(got.begin(), got.end());
    for (int i = 0; i < n; ++i) {
      ASSERT_LE(got[i], wants[i]);
      // Whoever got less than it wanted got at least the level minus the remainder's one.
      if (got[i] < wants[i]) {
        ASSERT_GE(got[i], level - 1) << "round " << round;
      }
    }
    if (sum(got) < budget) {  // budget left: everyone has all it wanted
      ASSERT_EQ(got, wants);
    }
  }
}

TEST(share_burst_budget, grows_only_out_of_uncommitted_room_and_shrinks_at_once) {
  // A noisy scale set holds 30 of 40; two quiet ones arrive wanting 10 each. The fair shares are
  // 20/10/10, but only the 10 nobody holds can be handed out now: they fill from the bottom.
  auto shares = share_burst_budget(40, {{30, 100, 30}, {0, 10, 0}, {0, 10, 0}});
  EXPECT_EQ(shares[0], 20) << "the noisy one's share shrinks to its fair share (it makes nothing more)";
  EXPECT_EQ(shares[1], 5);
  EXPECT_EQ(shares[2], 5);
  // Its pairs get placed (pending 12): room frees, the quiet ones grow to what they want.
  shares = share_burst_budget(40, {{12, 100, 20}, {5, 10, 5}, {5, 10, 5}});
  EXPECT_EQ(shares, (std::vector<int64_t>{20, 10, 10}));
}

TEST(share_burst_budget, keeps_a_fair_share_for_each_scale_set_not_heard_from_yet) {
  // At start the noisy one speaks first: 19 others are still silent, so it gets 60/20, not 60.
  EXPECT_EQ(share_burst_budget(60, {{0, 100, 0}}, 19), (std::vector<int64_t>{3}));
  EXPECT_EQ(share_burst_budget(60, {{0, 100, 0}}, 0), (std::vector<int64_t>{60}));
}

TEST(share_burst_budget, never_overdraws_while_committed_shares_exceed_the_fair_ones) {
  std::mt19937 rng(11);
  for (int round = 0; round < 2000; ++round) {
    const int n = 1 + static_cast<int>(rng() % 20);
    const int64_t budget = 1 + rng() % 100;
    std::vector<burst_claim> claims(n);
    int64_t committed = 0;
    for (auto& c : claims) {
      c.pending = rng() % 10;
      c.committed = c.pending + rng() % 5;
      c.wanted = rng() % 30;
      committed += c.committed;
    }
    const auto shares = share_burst_budget(budget, claims);
    int64_t grown = 0;
    for (int i = 0; i < n; ++i)
      grown += std::max<int64_t>(0, shares[i] - claims[i].committed);
    ASSERT_LE(grown, std::max<int64_t>(0, budget - committed)) << "round " << round;
    const auto fair = fair_split(budget, [&] {
      std::vector<int64_t> w;
      for (const auto& c : claims)
        w.push_back(c.wanted);
      return w;
    }());
    for (int i = 0; i < n; ++i)
      ASSERT_LE(shares[i], std::max(fair[i], claims[i].committed)) << "round " << round;
  }
}

// The actor with fake monitors: each holds `pending` pairs, wants `wanted`, makes pairs up to the
// share it got at once (as a capacity monitor's recompute does) and tells the budget.
struct budget_fixture : ::testing::Test {
  static caf::actor_system_config& make_cfg() {
    static caf::actor_system_config cfg;
    cfg.set("scheduler.policy", caf::atom("testing"));
    return cfg;
  }
  budget_fixture() : sys(make_cfg()), sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}
  ~budget_fixture() override {
    caf::anon_send_exit(budget, caf::exit_reason::kill);
    for (auto& [name, m] : monitors)
      caf::anon_send_exit(m.actor, caf::exit_reason::kill);
    sched.run();
  }

  struct fake {
    caf::actor actor;
    int64_t pending = 0, wanted = 0, cap = 0;
    uint64_t applied = 0;
    int asked = 0;
  };

  void add(const std::string& name, int64_t wanted) {
    auto& f = monitors[name];
    f.wanted = wanted;
    // (An argument, not only captures: CAF 0.17 spawns an argument-less function through a null
    // tuple, which UBSan reports.)
    f.actor = sys.spawn([this](caf::event_based_actor* self, std::string name) -> caf::behavior {
      return {
          [this, self, name](msg::burst_atom) {
            ++monitors[name].asked;
            tell(self, name);
          },
          [this, self, name](const msg::burst_share& s) {
            auto& m = monitors[name];
            if (s.seq <= m.applied)
              return;
            m.cap = s.cap;
            m.applied = s.seq;
            m.pending = std::max(m.pending, std::min(m.cap, m.wanted));  // makes what the share allows
            tell(self, name);
          },
          [this, self, name](caf::get_atom) { tell(self, name); },
      };
    }, name);
  }
  void tell(caf::event_based_actor* self, const std::string& name) {
    auto& m = monitors[name];
    self->send(budget, msg::burst_need{name, m.pending, m.wanted, m.cap, m.applied});
  }
  void start(int64_t limit) {
    std::vector<actors::capacity::burst_client> handles;
    for (auto& [name, m] : monitors)
      handles.push_back(caf::actor_cast<actors::capacity::burst_client>(m.actor));  // a stand-in monitor
    budget = actors::capacity::spawn_burst_budget(sys, limit, handles, {[this](int64_t p, int64_t c, int64_t w) {
                                                    seen_pending = p;
                                                    seen_committed = c;
                                                    seen_waiting = w;
                                                    max_committed = std::max(max_committed, c);
                                                  }},
                                                  {std::chrono::milliseconds{2'000}, std::chrono::milliseconds{0}});
    sched.run();
  }
  // `name`'s pairs get placed: `placed` fewer pending, and it tells the budget.
  void place(const std::string& name, int64_t placed) {
    auto& m = monitors[name];
    m.pending -= placed;
    m.wanted -= placed;
    m.pending = std::max(m.pending, std::min(m.cap, m.wanted));  // makes what its share still allows
    caf::anon_send(m.actor, caf::get_atom_v);
    sched.run();
  }
  int64_t total_pending() const {
    int64_t n = 0;
    for (const auto& [name, m] : monitors)
      n += m.pending;
    return n;
  }

  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  actors::capacity::burst_budget_actor budget;
  std::map<std::string, fake> monitors;
  int64_t seen_pending = -1, seen_committed = -1, seen_waiting = -1, max_committed = 0;
};

}  // namespace

TEST_F(budget_fixture, twenty_scale_sets_bursting_share_it_fairly_and_never_overdraw) {
  add("noisy", 100);
  for (int i = 0; i < 19; ++i)
    add("quiet-" + std::to_string(i), 2);
  start(60);
  for (const auto& [name, m] : monitors)
    EXPECT_EQ(m.asked, 1) << name << " was asked what it holds when the budget started";
  EXPECT_EQ(total_pending(), 60);
  for (int i = 0; i < 19; ++i)
    EXPECT_EQ(monitors["quiet-" + std::to_string(i)].pending, 2) << "a quiet scale set got all it wanted";
  EXPECT_EQ(monitors["noisy"].pending, 22) << "the noisy one got the rest, no more";
  EXPECT_EQ(seen_waiting, 78);
  EXPECT_LE(max_committed, 60);
  // The quiet ones' pairs get placed: their room goes to the noisy one, one placement at a time.
  for (int i = 0; i < 19; ++i) {
    place("quiet-" + std::to_string(i), 2);
    ASSERT_LE(total_pending(), 60);
  }
  EXPECT_EQ(monitors["noisy"].pending, 60);
  EXPECT_LE(max_committed, 60);
}

TEST_F(budget_fixture, a_newcomer_is_served_as_the_noisy_ones_pairs_are_placed) {
  add("noisy", 100);
  start(40);
  EXPECT_EQ(monitors["noisy"].pending, 40);
  // A second scale set starts wanting 10: nothing is free, its share grows as noisy's pairs land.
  add("late", 10);
  caf::anon_send(monitors["late"].actor, caf::get_atom_v);
  sched.run();
  EXPECT_EQ(monitors["late"].pending, 0);
  EXPECT_EQ(monitors["noisy"].cap, 30) << "noisy's share shrank to its fair share at once";
  place("noisy", 10);  // 30 pending, at its share: the 10 placed go to the newcomer
  EXPECT_EQ(monitors["late"].pending, 10);
  EXPECT_EQ(total_pending(), 40);
  place("noisy", 5);  // 25 pending: its share is 30, so it makes 5 again
  EXPECT_EQ(monitors["noisy"].pending, 30);
  EXPECT_LE(max_committed, 40);
}

TEST_F(budget_fixture, a_restarted_budget_learns_the_shares_held_and_does_not_hand_them_out_twice) {
  add("a", 10);
  add("b", 10);
  start(10);
  EXPECT_EQ(monitors["a"].pending + monitors["b"].pending, 10);
  caf::anon_send_exit(budget, caf::exit_reason::kill);
  sched.run();
  max_committed = 0;
  start(10);  // a new incarnation: both say what they hold; nothing new is made
  EXPECT_EQ(monitors["a"].pending + monitors["b"].pending, 10);
  EXPECT_EQ(seen_committed, 10);
  place("a", 5);
  EXPECT_EQ(monitors["a"].pending + monitors["b"].pending, 10) << "the room a gave up is used again, once";
  EXPECT_LE(max_committed, 10);
}
