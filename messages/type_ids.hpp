#pragma once

// The CAF type-ID block of every message headroom's actors exchange. A new message: declare it
// (with `inspect`) in the header of its domain, then add it here. Atoms carry no data; each is
// documented where it is declared below.

#include <caf/type_id.hpp>

#include "messages/bigfleet.hpp"
#include "messages/capacity.hpp"
#include "messages/k8s.hpp"
#include "messages/listener.hpp"
#include "messages/runtime.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(headroom, caf::first_custom_type_id)

  CAF_ADD_TYPE_ID(headroom, (headroom::msg::buffer_wakeup))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::child_status))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::supervisor_status))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::api_reply))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::leadership))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::pod_event))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::node_event))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::shard_link))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::object_written))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::actions_reply))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::scale_set_update))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::pair_report))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::advertised))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::queued_jobs))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::jit_reply))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::runner_status))

  /// Supervisor → itself: the backoff for child (index, generation) has elapsed; start it again.
  CAF_ADD_ATOM(headroom, headroom::msg, restart_atom, "restart")
  /// Supervisor → itself: the stop deadline for child (index, generation) has passed.
  CAF_ADD_ATOM(headroom, headroom::msg, deadline_atom, "deadline")
  /// Signal handler → main: SIGTERM or SIGINT arrived.
  CAF_ADD_ATOM(headroom, headroom::msg, shutdown_atom, "shutdown")
  /// shard_session → rollup: the stream just opened; send a roll-up now, not at the next tick.
  CAF_ADD_ATOM(headroom, headroom::msg, rollup_atom, "rollup")
  /// An actor → itself: a periodic timer of (generation) fired.
  CAF_ADD_ATOM(headroom, headroom::msg, tick_atom, "tick")

CAF_END_TYPE_ID_BLOCK(headroom)

// Local-only messages: shared pointers to immutable informer objects, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::pod_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::node_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::actions_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::scale_set_update)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::pair_report)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::advertised)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::queued_jobs)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::jit_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::runner_status)
