#pragma once

// The cluster's budget of pending placeholder pairs (burstBudget.maxPendingPairs), shared by every
// scale set of this headroom. A pair is pending from its create until both its placeholders are
// Running: each one is a node being bought, images being pulled, caches being filled. A burst of
// queued jobs across many scale sets would otherwise start hundreds of them at once.
//
// One actor holds the budget; each capacity monitor tells it what it holds and wants
// (msg::burst_need) and gets back the most pending pairs it may hold (msg::burst_share). Shares are
// max-min fair: a scale set that wants little gets all it wants, the rest split what is left
// evenly, so a noisy scale set cannot starve the others. The budget is never overdrawn, also
// while shares change: a share that shrinks counts at its old size until the monitor says it has
// applied the new one, and only then is the room it gave up handed to others. Pairs already made
// are never withdrawn: a scale set over its new share waits until placements bring it under.

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "messages/type_ids.hpp"

namespace headroom::actors::capacity {

// One scale set, as the budget sees it.
struct burst_claim {
  int64_t pending = 0;    // pairs made, not placed
  int64_t wanted = 0;     // pending pairs it would hold with no cluster budget
  int64_t committed = 0;  // the most it may hold now: max(pending, every share it may still be using)
};

// Max-min fair split of `budget` over `wants`: each gets min(want, level), the level as high as the
// budget allows; units left by the integer division go to the lowest indices.
std::vector<int64_t> fair_split(int64_t budget, const std::vector<int64_t>& wants);

// The new share of each claim (same order). Shares above `committed` come only out of the budget
// nobody has committed; they fill from the bottom (the claim holding least gets the next pair).
// `silent`: scale sets not heard from yet (at start), each kept a fair share as if it wanted all.
std::vector<int64_t> share_burst_budget(int64_t budget, const std::vector<burst_claim>& claims, size_t silent = 0);

struct burst_budget_metrics {
  std::function<void(int64_t pending, int64_t committed, int64_t waiting)> observe;  // may be empty
};

struct burst_budget_timing {
  // At (re)start, a fair share is kept for each monitor that has not said what it holds yet, for
  // at most this long (a monitor waits for its start-up calls first): the first to speak would
  // otherwise take the whole budget.
  std::chrono::milliseconds gather{30'000};
  // Needs that arrive within this window are shared out together (0: each at once).
  std::chrono::milliseconds settle{100};
};

// The budget: told each monitor's msg::burst_need.
using burst_budget_actor = caf::typed_actor<caf::reacts_to<msg::burst_need>>;
// What the budget needs of a monitor: asked for its need (burst_atom, answered with a burst_need)
// when the budget (re)starts, and told its share (msg::burst_share).
using burst_client = caf::typed_actor<caf::reacts_to<msg::burst_atom>, caf::reacts_to<msg::burst_share>>;

// `monitors`: the capacity monitors' relays.
burst_budget_actor spawn_burst_budget(caf::actor_system& sys, int64_t max_pending_pairs, std::vector<burst_client> monitors,
                              burst_budget_metrics metrics = {}, burst_budget_timing timing = {});

}  // namespace headroom::actors::capacity
