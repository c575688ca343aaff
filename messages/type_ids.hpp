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
  CAF_ADD_TYPE_ID(headroom, (headroom::msg::pair_handoff))
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
  /// rollup → itself, (generation): the periodic roll-up is due.
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

  // Timers: an actor → itself, each named for what is due (CAF 0.17 cannot cancel a timer, so a
  // timer that may be superseded carries its generation). A public contract never carries one:
  // each actor adds its own to its implementation's type (`…_actor::extend<…>`), and
  // scripts/check-layers refuses a timer atom in a contract.
  /// capacity_requests: the periodic re-read of every CapacityRequest is due.
  CAF_ADD_ATOM(headroom, headroom::msg, resync_atom, "resync")
  /// event_recorder: write the aggregated Events; (generation) scale_set_status: write the status.
  CAF_ADD_ATOM(headroom, headroom::msg, flush_atom, "flush")
  /// reactive_quota, admission_webhook: read the Queues (or the certificate) again.
  CAF_ADD_ATOM(headroom, headroom::msg, reload_atom, "reload")
  /// reactive_scaler: the metric samples are overdue unless some arrived since.
  CAF_ADD_ATOM(headroom, headroom::msg, watchdog_atom, "watchdog")
  /// reconciler, runner_provisioner: compare what runs with what is wanted, again.
  CAF_ADD_ATOM(headroom, headroom::msg, reconcile_atom, "reconcile")
  /// runner_provisioner: the periodic sweep of runners and pods; scale_set_sweeper: list again.
  CAF_ADD_ATOM(headroom, headroom::msg, sweep_atom, "sweep")
  /// health_check: the periodic check of the scale set's runner pods.
  CAF_ADD_ATOM(headroom, headroom::msg, check_atom, "check")
  /// hud_poller: fetch the queued jobs now; (the I/O thread →) fetched_atom: that fetch worked.
  CAF_ADD_ATOM(headroom, headroom::msg, fetch_atom, "fetch")
  CAF_ADD_ATOM(headroom, headroom::msg, fetched_atom, "fetched")
  /// burst_budget: the window gathering needs is over; the settle window after a share is over.
  CAF_ADD_ATOM(headroom, headroom::msg, gather_atom, "gather")
  CAF_ADD_ATOM(headroom, headroom::msg, settle_atom, "settle")
  /// reclaim_drain (correlation), shard_session (machine): try the refused step again.
  CAF_ADD_ATOM(headroom, headroom::msg, retry_atom, "retry")

CAF_END_TYPE_ID_BLOCK(headroom)

// Local-only messages: shared pointers to immutable informer objects, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::pod_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::node_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::pair_report)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::pair_handoff)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::msg::queued_jobs)
