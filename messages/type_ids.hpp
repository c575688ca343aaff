#pragma once

// The CAF type-ID block of every message headroom's actors exchange. A new message: declare it
// (with `inspect`) in the header of its domain, then add it here. Atoms carry no data; each is
// documented where it is declared below.

#include <caf/type_id.hpp>

#include "messages/capacity.hpp"
#include "messages/k8s.hpp"
#include "messages/listener.hpp"
#include "messages/reactive.hpp"
#include "runtime/messages.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(headroom, caf::id_block::headroom_runtime::end)

  CAF_ADD_TYPE_ID(headroom, (headroom::msg::api_reply))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::leadership))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::pod_event))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::node_event))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::scale_set_statistics))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::job_transition))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::scale_set_update))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::pair_report))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::set_max_capacity))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::capacity_polled))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::queued_jobs))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::quota_report))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::quota_claim))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::quota_verdict))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::k8s_event))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::metric_subscription))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::metric_samples))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::capacity_view))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::session_view))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::burst_need))
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::burst_share))

  /// shard_session → rollup: the stream just opened; send a roll-up now, not at the next tick.
  CAF_ADD_ATOM(headroom, headroom::msg, rollup_atom, "rollup")
  /// A (re)started actor → capacity_monitor: send me msg::set_max_capacity with the newest value.
  CAF_ADD_ATOM(headroom, headroom::msg, capacity_atom, "capacity")
  /// A (re)started actor → listener_session: send me the latest msg::scale_set_update (no jobs).
  CAF_ADD_ATOM(headroom, headroom::msg, update_atom, "update")
  /// A (re)started scale_set_status → capacity_monitor, listener_session: send me your view now
  /// (msg::capacity_view, msg::session_view), not at your next change.
  CAF_ADD_ATOM(headroom, headroom::msg, view_atom, "view")
  /// A (re)started burst_budget → capacity_monitor: send me msg::burst_need now.
  CAF_ADD_ATOM(headroom, headroom::msg, burst_atom, "burst")

CAF_END_TYPE_ID_BLOCK(headroom)

// Local-only messages: shared pointers to immutable informer objects, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::pod_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::node_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::pair_report)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::queued_jobs)
