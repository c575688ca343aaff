#pragma once

// Messages of a scale set's capacity loop (local-only; registered in type_ids.hpp).

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

#include "messages/k8s.hpp"

namespace headroom::msg {

/// placeholder_pair → capacity_monitor: what the pair's two pods say now. `consumed`: a runner pod
/// took the runner placeholder; the workflow placeholder still holds the workflow's room until the
/// workflow pod takes it (the pair is no longer capacity, and not the monitor's to stop).
struct pair_report {
  enum class state : uint8_t { pending, ready, consumed, lost, timed_out } what = state::pending;
  std::string slot;
  std::string reason;  // lost / timed_out: which pod, and why
  // lost: a create failed because the API server could not be reached or shed the load (no
  // response, 429, 5xx after retries) - not because the cluster refused or lacked room.
  bool unavailable = false;
  hop_trace trace{};  // the pod change that made the pair report this, judged when it was sent
};

/// capacity_monitor → placeholder_pair: a job was newly assigned and no runner has taken a pair for
/// it yet; this ready pair is handed to it instead of being stopped (scale-down). The pair deletes
/// its runner placeholder, its workflow placeholder holds the workflow's room, and it reports
/// `consumed`. The one message of that direction besides its pods' changes.
struct pair_handoff {};

/// capacity_monitor → listener_session and runner_provisioner: the capacity to advertise now
/// (X-ScaleSetMaxCapacity). Sent on every change, and to whoever asks with `capacity_atom`.
struct set_max_capacity {
  int64_t capacity = 0;
};

/// listener_session → capacity_monitor: a poll just started carrying `capacity`. The monitor
/// measures propagation with it, and answers a stale value with the newest.
struct capacity_polled {
  int64_t capacity = 0;
  int64_t issued_ns = 0;  // when the poll was issued, on the steady clock (hop_trace's), in ns
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, set_max_capacity& x) {
  return f(caf::meta::type_name("set_max_capacity"), x.capacity);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, capacity_polled& x) {
  return f(caf::meta::type_name("capacity_polled"), x.capacity, x.issued_ns);
}

/// capacity_monitor → scale_set_status: what the monitor holds after a recompute (sent when it
/// changed), for the ScaleSet object's status.
struct capacity_view {
  int64_t advertised = 0, max_runners = 0, desired_pairs = 0, pairs = 0, placed_pairs = 0, runner_pods = 0;
  // Why the last pair that timed out was not placed (the scheduler's words); "" once a pair has
  // been placed since. The ScaleSet's PairsPlaced condition.
  std::string unplaced{};
  friend bool operator==(const capacity_view&, const capacity_view&) = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, capacity_view& x) {
  return f(caf::meta::type_name("capacity_view"), x.advertised, x.max_runners, x.desired_pairs, x.pairs, x.placed_pairs,
           x.runner_pods, x.unplaced);
}

/// listener_session → scale_set_status: the session's state when it changes (Opening, Open,
/// Backoff, Conflict; `message` says why when not Open), and `poll_started` each time a poll starts.
struct session_view {
  std::string state;
  std::string message;
  bool poll_started = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_view& x) {
  return f(caf::meta::type_name("session_view"), x.state, x.message, x.poll_started);
}

/// capacity_monitor → burst_budget: what this scale set holds and wants of the cluster's budget of
/// pending pairs (burstBudget.maxPendingPairs). Sent when any field changes, and when a (re)started
/// budget asks with burst_atom. `pending`: pairs made and not placed; `wanted`: the pending pairs it
/// would hold with no cluster budget; `cap` and `applied`: the last burst_share it applied (0, 0 at
/// first).
struct burst_need {
  std::string scale_set;
  int64_t pending = 0, wanted = 0, cap = 0;
  uint64_t applied = 0;
  friend bool operator==(const burst_need&, const burst_need&) = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, burst_need& x) {
  return f(caf::meta::type_name("burst_need"), x.scale_set, x.pending, x.wanted, x.cap, x.applied);
}

/// burst_budget → capacity_monitor: the most pending pairs the scale set may hold now (its share of
/// the cluster's budget). `seq` grows with each share sent to that scale set; the monitor echoes
/// the last one it applied in burst_need.applied.
struct burst_share {
  uint64_t seq = 0;
  int64_t cap = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, burst_share& x) {
  return f(caf::meta::type_name("burst_share"), x.seq, x.cap);
}

/// hud_poller → capacity_monitor: jobs queued on the HUD for this scale set's labels.
struct queued_jobs {
  int64_t count = 0;
  bool ok = false;  // false: the HUD failed; use proactiveCapacity alone
};

}  // namespace headroom::msg
