#include "actors/capacity/burst_budget.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <string>

#include "messages/type_ids.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::capacity {

std::vector<int64_t> fair_split(int64_t budget, const std::vector<int64_t>& wants) {
  const size_t n = wants.size();
  std::vector<int64_t> out(n, 0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return wants[a] < wants[b]; });
  int64_t left = std::max<int64_t>(0, budget);
  for (size_t k = 0; k < n; ++k) {
    const auto rest = static_cast<int64_t>(n - k);
    const int64_t level = left / rest;
    const int64_t want = std::max<int64_t>(0, wants[order[k]]);
    if (want <= level) {
      out[order[k]] = want;
      left -= want;
      continue;
    }
    // Everyone from here on wants more than the level: each gets it, and what the division left
    // over goes one pair each to the lowest indices.
    std::vector<size_t> capped(order.begin() + static_cast<std::ptrdiff_t>(k), order.end());
    std::sort(capped.begin(), capped.end());
    int64_t extra = left - level * rest;
    for (size_t i : capped) {
      out[i] = level + (extra > 0 && wants[i] > level ? 1 : 0);
      extra -= out[i] > level ? 1 : 0;
    }
    break;
  }
  return out;
}

std::vector<int64_t> share_burst_budget(int64_t budget, const std::vector<burst_claim>& claims, size_t silent) {
  std::vector<int64_t> wants;
  wants.reserve(claims.size() + silent);
  int64_t committed = 0;
  for (const auto& c : claims) {
    wants.push_back(c.wanted);
    committed += std::max(c.committed, c.pending);
  }
  wants.insert(wants.end(), silent, budget);  // each silent one may want it all: its fair share is kept
  const auto fair = fair_split(budget, wants);
  std::vector<int64_t> out(claims.size());
  using entry = std::pair<int64_t, size_t>;  // (level, index): the lowest level grows first
  std::priority_queue<entry, std::vector<entry>, std::greater<>> growing;
  for (size_t i = 0; i < claims.size(); ++i) {
    const int64_t held = std::max(claims[i].committed, claims[i].pending);
    out[i] = fair[i] <= held ? fair[i] : held;
    if (fair[i] > held)
      growing.emplace(held, i);
  }
  for (int64_t free = budget - committed; free > 0 && !growing.empty(); --free) {
    auto [level, i] = growing.top();
    growing.pop();
    out[i] = level + 1;
    if (out[i] < fair[i])
      growing.emplace(out[i], i);
  }
  return out;
}

namespace {

constexpr std::string_view actor_name = "burst_budget";

struct claim_record {
  caf::actor_addr who;  // the monitor incarnation that sent the last need
  burst_client to;
  int64_t pending = 0, wanted = 0;
  uint64_t seq = 0;       // of the last share sent
  int64_t cap_sent = 0;
  int64_t unacked_max = 0;  // the largest share it may still be using (shares not yet applied, and the applied one)
};

struct budget_state {
  int64_t budget = 0;
  size_t monitors = 0;
  burst_budget_timing timing;
  bool gathering = true;   // at start: a fair share is kept for each monitor not heard from yet (until timing.gather)
  bool settling = false;   // a reallocation is due at the end of timing.settle
  std::map<std::string, claim_record> claims;
  burst_budget_metrics metrics;
  bool waiting_logged = false;
  static inline const char* name = "headroom.burst_budget";
};

// Its timers: the gathering window at start, the settle window after a need.
using budget_impl = burst_budget_actor::extend<caf::reacts_to<msg::gather_atom>, caf::reacts_to<msg::settle_atom>>;
using budget_self = budget_impl::stateful_base<budget_state>;

void reallocate(budget_self* self) {
  auto& st = self->state;
  std::vector<burst_claim> claims;
  claims.reserve(st.claims.size());
  for (const auto& [name, r] : st.claims)
    claims.push_back({r.pending, r.wanted, r.unacked_max});
  const size_t silent = st.gathering && st.monitors > st.claims.size() ? st.monitors - st.claims.size() : 0;
  const auto shares = share_burst_budget(st.budget, claims, silent);
  int64_t pending = 0, committed = 0, waiting = 0;
  size_t i = 0;
  for (auto& [name, r] : st.claims) {
    const int64_t share = shares[i++];
    if (share != r.cap_sent || r.seq == 0) {  // a monitor never answered gets its first share even if 0
      r.cap_sent = share;
      r.unacked_max = std::max(r.unacked_max, share);
      self->send(r.to, msg::burst_share{++r.seq, share});
    }
    pending += r.pending;
    committed += std::max(r.pending, r.unacked_max);
    waiting += std::max<int64_t>(0, r.wanted - std::max(r.pending, share));
  }
  if (st.metrics.observe)
    st.metrics.observe(pending, committed, waiting);
  if ((waiting > 0) != st.waiting_logged) {
    st.waiting_logged = waiting > 0;
    if (st.waiting_logged)
      runtime::log::info(actor_name, "pairs wait for the cluster's burst budget",
                         {{"waiting", waiting}, {"pending", pending}, {"max_pending_pairs", st.budget}});
    else
      runtime::log::info(actor_name, "no pair waits for the cluster's burst budget any more", {{"pending", pending}});
  }
}

void on_need(budget_self* self, const msg::burst_need& n) {
  auto& st = self->state;
  const auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
  if (!sender)
    return;
  auto& r = st.claims[n.scale_set];
  if (r.who != sender) {
    // A monitor heard of for the first time, or a restarted one (or this budget restarted): take
    // the share it says it holds as the one sent, so nothing is counted twice or forgotten.
    r = claim_record{};
    r.who = sender;
    r.to = caf::actor_cast<burst_client>(sender);
    r.seq = n.applied;
    r.cap_sent = r.unacked_max = n.cap;
  }
  r.pending = std::max<int64_t>(0, n.pending);
  r.wanted = std::max<int64_t>(0, n.wanted);
  if (n.applied == r.seq)
    r.unacked_max = r.cap_sent;  // the newest share is the one it uses: older ones count no more
  if (st.gathering && st.claims.size() >= st.monitors)
    st.gathering = false;
  // Needs that come together (a burst queued on many scale sets at once) are shared out together,
  // not first come first served.
  if (st.timing.settle.count() == 0) {
    reallocate(self);
  } else if (!st.settling) {
    st.settling = true;
    self->delayed_send(self, st.timing.settle, msg::settle_atom_v);
  }
}

void gathered(budget_self* self) {
  auto& st = self->state;
  if (st.gathering) {
    st.gathering = false;
    if (!st.claims.empty())
      reallocate(self);
  }
}

void settled(budget_self* self) {
  auto& st = self->state;
  if (st.settling) {
    st.settling = false;
    reallocate(self);
  }
}

budget_impl::behavior_type budget_behavior(budget_self* self, int64_t budget, std::vector<burst_client> monitors, burst_budget_metrics metrics,
                              burst_budget_timing timing) {
  self->state.budget = budget;
  self->state.metrics = std::move(metrics);
  self->state.monitors = monitors.size();
  self->state.timing = timing;
  self->state.gathering = !monitors.empty();
  if (self->state.gathering)
    self->delayed_send(self, timing.gather, msg::gather_atom_v);
  for (const auto& m : monitors)  // a (re)started budget knows nothing: every monitor says what it holds
    self->send(m, msg::burst_atom_v);
  if (self->state.metrics.observe)
    self->state.metrics.observe(0, 0, 0);
  return {
      [self](const msg::burst_need& n) { on_need(self, n); },
      [self](msg::gather_atom) { gathered(self); },
      [self](msg::settle_atom) { settled(self); },
  };
}

}  // namespace

burst_budget_actor spawn_burst_budget(caf::actor_system& sys, int64_t max_pending_pairs, std::vector<burst_client> monitors,
                              burst_budget_metrics metrics, burst_budget_timing timing) {
  return sys.spawn(budget_behavior, max_pending_pairs, std::move(monitors), std::move(metrics), timing);
}

}  // namespace headroom::actors::capacity
