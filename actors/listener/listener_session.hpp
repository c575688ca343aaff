#pragma once

// listener_session: one per scale set. Owns the Actions Service message session (create; a 409
// is retried a bounded number of times by the client; a 404 gets a new session; deleted on
// shutdown; a session a crashed predecessor left is adopted, see session_memo), the long-poll loop
// with X-ScaleSetMaxCapacity, acks and job acquisition; forwards statistics and job transitions to
// the runner provisioner.
//
// Capacity arrives from the capacity monitor as msg::set_max_capacity (only the newest value
// matters; a repeat is ignored). When it differs from the value the in-flight poll carried, the
// poll is cancelled and re-issued at once with the new value: the service reads the capacity only when a poll starts,
// and would otherwise keep assigning by an old, higher value (or leave placed room idle under an
// old, lower one) for up to 50 s.

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/github/actions_client.hpp"
#include "messages/capacity.hpp"
#include "messages/listener.hpp"
#include "messages/type_ids.hpp"
#include "runtime/memo.hpp"

namespace headroom::actors {

// What the listener keeps across its own restarts: the session it holds and the newest message it
// handled (an empty session id: none; it deleted it). An incarnation writes it as they change; the
// next one reads it as it starts and adopts the session a crashed predecessor left (its queued job
// messages are then not lost), or deletes it (the service would answer 409 until it expired). The
// wiring makes one per scale set (runtime/memo.hpp).
using session_memo = runtime::memo<msg::session_held>;

struct listener_options {
  // The scale set: by id, or (id 0) by name in a runner group, created with `labels` (and its name
  // as a label) when it does not exist yet.
  int64_t scale_set_id = 0;
  std::string scale_set_name, runner_group = "default";
  std::vector<std::string> labels;
  std::string owner;              // the session's owner name: the Pod's or the host's name
  int64_t initial_capacity = 0;   // advertised until the capacity monitor says otherwise
  bool repoll_on_change = true;   // false: a new capacity waits for the next poll (the stock behaviour)
  // While a poll is held with no advertised room free (its capacity at most the jobs assigned),
  // the service offers nothing and says nothing until the hold ends (~50 s): the jobs queued
  // meanwhile (totalAvailableJobs, the demand a warm pool of 0 starts pairs for) are read with
  // the scale set this often instead. 0: only after each poll.
  std::chrono::milliseconds queue_check_interval{0};
  // A poll cancelled younger than this may still be on its way to the service (sent on its own
  // connection, it can be read there after its successor, and the service takes the capacity of
  // the poll it reads last). Every poll started until this long after such a cancel is re-issued
  // once, with the newest value, if still held then: the last poll the service reads is ours.
  std::chrono::milliseconds reorder_window{100};
  std::chrono::milliseconds backoff_initial{1'000}, backoff_max{30'000};  // after a failed call
  // Told the kind of every call that failed after the client's retries (a metric); may be empty.
  std::function<void(std::string_view kind)> failed;
  // Each job started or completed, counted where the message is handled (exactly once: an
  // unacked message comes again, a re-delivered one is acked and not handled), not downstream,
  // where a relay drops what arrives while its actor restarts.
  std::function<void(const msg::job_transition&)> job;
  // May be null: a crashed listener's session is then left to expire.
  std::shared_ptr<session_memo> memo;
  // May be null. True when the listener is stopped: it leaves its session in `memo` for the
  // listener that replaces it (a scale set's subtree replaced for a new spec), which adopts it,
  // instead of deleting it.
  std::shared_ptr<runtime::memo<bool>> hand_over;
};

// ---- the contracts --------------------------------------------------------------------------------

// What the listener needs of its peers, by role. A peer's own contract is wider; it converts.

// Told msg::scale_set_update after the session opens and after every message. An actor that asks
// update_atom must be one: the answer is a scale_set_update (the latest statistics, no jobs).
using update_sink = caf::typed_actor<caf::reacts_to<msg::scale_set_update>>;
// Told msg::set_max_capacity (the monitor's answer to capacity_atom, and every change).
using capacity_sink = caf::typed_actor<caf::reacts_to<msg::set_max_capacity>>;
// scale_set_status's part: the session's state when it changes and when a poll starts.
using session_view_sink = caf::typed_actor<caf::reacts_to<msg::session_view>>;
// The capacity monitor's part: asked for the newest capacity (capacity_atom) when the listener
// starts, and told msg::capacity_polled each time a poll starts.
using capacity_source = caf::typed_actor<caf::reacts_to<msg::capacity_atom>, caf::reacts_to<msg::capacity_polled>>;

// The listener itself: the newest capacity, and a (re)started peer's view_atom (answered with
// msg::session_view) or update_atom (answered with msg::scale_set_update).
using listener_actor = caf::typed_actor<caf::reacts_to<msg::set_max_capacity>, caf::reacts_to<msg::view_atom>,
                                        caf::reacts_to<msg::update_atom>>;

// Whom the listener talks to (relays or plain actors; any may be invalid).
struct listener_peers {
  std::vector<update_sink> updates;
  capacity_source capacity;
  session_view_sink status{};
};

listener_actor spawn_listener_session(caf::actor_system& sys, std::shared_ptr<github::actions_client> client,
                                  listener_peers peers, listener_options opts);

}  // namespace headroom::actors
