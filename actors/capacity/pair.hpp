#pragma once

// placeholder_pair's state, and what its two files share: placeholder_pair.cpp (the behaviour: the
// probe, the placeholders, consumption and loss) and placeholder_pair_timeout.cpp (a pair not
// placed within placeholderReadyTimeout, with what the scheduler and Karpenter said). Internal to
// actors/capacity/.

#include <caf/all.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/capacity/capacity.hpp"
#include "messages/type_ids.hpp"

namespace headroom::actors::capacity::pair {

inline constexpr std::string_view actor_name = "placeholder_pair";
using state_t = msg::pair_report::state;

struct pair_state {
  context_ptr ctx;
  std::string slot;
  pair_owner monitor;
  owner_ref owner;
  std::string names[2];       // runner placeholder, workflow placeholder
  bool seen[2] = {false, false};  // the informer has shown the pod at least once
  bool deleted[2] = {false, false};  // and then its deletion (nothing of it left to delete)
  int creating = 0;
  state_t reported = state_t::pending;
  msg::hop_trace last_event{};  // the pod change being judged (a report sent meanwhile carries it)
  bool consumed = false;  // handing the workflow's room over to the workflow pod
  std::string runner_node;  // where the runner placeholder was placed
  std::string probe;        // the probe's name while the pair has one ("" none: `none` mode, or adopted)
  bool probe_seen = false, probe_deleted = false;
  std::string pinned_node;  // where the probe was placed: the node the placeholders are made on
  // Since when the pair looks for the runner pod that took its runner placeholder (see
  // still_looking in placeholder_pair.cpp); a look_again timer is pending.
  std::optional<caf::actor_clock::time_point> looking_since;
  bool look_pending = false;
  // Same-node pairs: since when a placeholder made on the probe's node has been Unschedulable there
  // (see stuck_beside in placeholder_pair.cpp); a stuck_check timer is pending.
  std::optional<caf::actor_clock::time_point> stuck_since;
  bool stuck_pending = false;
  bool done = false;      // lost or timed out: quitting
  bool unavailable = false;  // a create failed for the API server's availability (pair_report)
  // Timed out: the Events about the placeholders not Running still being read (Karpenter's word on
  // why it made no node), and what the timeout says so far.
  int asking = 0;
  std::string timed_out_why;
  static inline const char* name = "headroom.placeholder_pair";
};

// The pair's timers: messages it sends only itself, one type each.
struct ready_timeout {};    // placeholderReadyTimeout since the pair was made
struct handoff_timeout {};  // placeholderReadyTimeout since the pair was consumed: no workflow pod came
struct look_again {};       // the runner pod's binding may trail the runner placeholder's deletion
struct events_bound {};     // the Event reads of a timed-out pair took too long
struct stuck_check {};      // a placeholder pinned to the probe's node found no room there: still so?
struct settle_bound {};     // an ended pair waited long enough for its creates in flight to be answered

}  // namespace headroom::actors::capacity::pair

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::pair::ready_timeout)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::pair::handoff_timeout)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::pair::look_again)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::pair::events_bound)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::pair::stuck_check)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::pair::settle_bound)

namespace headroom::actors::capacity::pair {

// The pair's own messages: the API server's answers to its creates (correlation: the pod's index)
// and to its Event reads (events_correlation + the pod's index), and its timers.
using pair_impl = pair_actor::extend<caf::reacts_to<msg::api_reply>, caf::reacts_to<ready_timeout>, caf::reacts_to<handoff_timeout>,
                                     caf::reacts_to<look_again>, caf::reacts_to<events_bound>, caf::reacts_to<stuck_check>,
                                     caf::reacts_to<settle_bound>>;
using pair_self = pair_impl::stateful_base<pair_state>;
inline constexpr uint64_t events_correlation = 100;

// How a pair's end is told on the ScaleSet object.
enum class notice {
  warning,   // PlaceholderPairLost / PlaceholderPairTimedOut
  handoff,   // the designed end of a hand-off: no Event
  node_gone, // its node stopped taking pods (cordon, drain, disruption): Normal, a new pair follows
  no_room,   // its probe's room was taken before its placeholders got it: Normal, a new pair follows
};

// The pair ends: its pods deleted, the monitor told, the actor gone.
void finish(pair_self* self, state_t s, const std::string& reason, notice how = notice::warning);
// The pods whose placement the pair waits for: the probe (and beside it the workflow placeholder)
// while it is placed, then the placeholders.
std::vector<std::string> watched(const pair_state& st);

// placeholder_pair_timeout.cpp: placeholderReadyTimeout passed with the pair not ready; one
// placeholder's Events read; the end once they are (or the 5 s bound passed).
void time_out(pair_self* self);
void karpenter_said(pair_self* self, const msg::api_reply& r);
void end_timed_out(pair_self* self);

}  // namespace headroom::actors::capacity::pair
