#pragma once

// The runtime's own messages, and their CAF type-ID block: buffer wake-ups, supervision, relays
// and the supervisor's timers. This is the only message header runtime/ knows; the actors' messages
// (messages/type_ids.hpp) number their block after this one.

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace caf {
class actor_system;
}

namespace headroom::runtime {

// transient: restarted only after an abnormal exit (a child that finished its job stays down);
// permanent: restarted after any exit not requested by its supervisor.
enum class restart_mode { transient, permanent };

// What a supervisor starts (runtime/supervisor.hpp): given at its spawn, or later in a message
// (a child added while it runs: one scale set declared by a ScaleSet object).
struct child_spec {
  std::string name;
  std::function<caf::actor(caf::actor_system&)> start;  // spawns the child; not linked to anyone
  restart_mode restart = restart_mode::transient;
  // Optional: the child's stable address (runtime/relay.hpp). The supervisor points it at every
  // incarnation it starts, and at nothing while the child is down.
  caf::actor relay;
};

}  // namespace headroom::runtime

namespace headroom::msg {

/// A policy buffer has items for its consumer; at most one is outstanding per buffer.
struct buffer_wakeup {
  uint32_t buffer;
};

/// One supervised child as its supervisor sees it.
struct child_status {
  std::string name;
  bool running = false;
  uint32_t restarts = 0;
  std::string last_exit;  // "" until it first exits
};

/// A supervisor's answer to `get_atom`: its children in start order.
struct supervisor_status {
  std::string name;
  bool stopping = false;
  std::vector<child_status> children;
};

/// Supervisor → a child's relay: the child's current incarnation (invalid while it is down).
struct relay_target {
  caf::actor target;
};

/// Wiring → a relay: the actor whose lifetime the relay shares (it exits when the owner does).
struct relay_owner {
  caf::actor owner;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, buffer_wakeup& x) {
  return f(caf::meta::type_name("buffer_wakeup"), x.buffer);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, child_status& x) {
  return f(caf::meta::type_name("child_status"), x.name, x.running, x.restarts, x.last_exit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, supervisor_status& x) {
  return f(caf::meta::type_name("supervisor_status"), x.name, x.stopping, x.children);
}

}  // namespace headroom::msg

CAF_BEGIN_TYPE_ID_BLOCK(headroom_runtime, caf::first_custom_type_id)

  CAF_ADD_TYPE_ID(headroom_runtime, (headroom::msg::buffer_wakeup))
  CAF_ADD_TYPE_ID(headroom_runtime, (headroom::msg::child_status))
  CAF_ADD_TYPE_ID(headroom_runtime, (headroom::msg::supervisor_status))
  CAF_ADD_TYPE_ID(headroom_runtime, (headroom::msg::relay_target))
  CAF_ADD_TYPE_ID(headroom_runtime, (headroom::msg::relay_owner))
  /// Wiring → a supervisor: start this child beside the others (→ bool: false when the name is taken).
  CAF_ADD_TYPE_ID(headroom_runtime, (headroom::runtime::child_spec))

  /// Supervisor → itself: the backoff for child (index, generation) has elapsed; start it again.
  CAF_ADD_ATOM(headroom_runtime, headroom::msg, restart_atom, "restart")
  /// Supervisor → itself: the stop deadline for child (index, generation) has passed.
  CAF_ADD_ATOM(headroom_runtime, headroom::msg, deadline_atom, "deadline")
  /// Signal handler → main: SIGTERM or SIGINT arrived.
  CAF_ADD_ATOM(headroom_runtime, headroom::msg, shutdown_atom, "shutdown")
  /// Test-only fault hooks (runtime/fault_hooks.hpp): (fault, actor) a supervisor joins the
  /// broker; (fault, child name) → int64_t fails that child, answering how many were hit.
  CAF_ADD_ATOM(headroom_runtime, headroom::msg, fault_atom, "fault")
  /// An actor → a relay: tell me of each new incarnation of your child (runtime/relay.hpp).
  CAF_ADD_ATOM(headroom_runtime, headroom::msg, watch_atom, "watch")
  /// A relay → its watchers: (restarted, child name) a new incarnation of the child runs.
  CAF_ADD_ATOM(headroom_runtime, headroom::msg, restarted_atom, "restarted")
  /// Wiring → a supervisor: (stop_child, name) → bool stops that child for good, answering once
  /// it is down (false: no such child running).
  CAF_ADD_ATOM(headroom_runtime, headroom::msg, stop_child_atom, "stopchild")

CAF_END_TYPE_ID_BLOCK(headroom_runtime)

// Local-only: actor handles, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::relay_target)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::relay_owner)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::runtime::child_spec)
