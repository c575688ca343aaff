#pragma once

// The CAF type-ID block of every message headroom's actors exchange. A new message: declare it
// (with `inspect`) in the header of its domain, then add it here. Atoms carry no data; each is
// documented where it is declared below.

#include <caf/type_id.hpp>

#include "messages/runtime.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(headroom, caf::first_custom_type_id)

  CAF_ADD_TYPE_ID(headroom, (headroom::msg::buffer_wakeup))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::child_status))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::supervisor_status))

  /// Supervisor → itself: the backoff for child (index, generation) has elapsed; start it again.
  CAF_ADD_ATOM(headroom, headroom::msg, restart_atom, "restart")
  /// Supervisor → itself: the stop deadline for child (index, generation) has passed.
  CAF_ADD_ATOM(headroom, headroom::msg, deadline_atom, "deadline")
  /// Signal handler → main: SIGTERM or SIGINT arrived.
  CAF_ADD_ATOM(headroom, headroom::msg, shutdown_atom, "shutdown")

CAF_END_TYPE_ID_BLOCK(headroom)
