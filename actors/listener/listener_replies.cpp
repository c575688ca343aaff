// listener_session's answers from the Actions Service, one handler per operation (see
// listener_session.cpp for the session's life).

#include <caf/all.hpp>

#include "actors/listener/listener_state.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::listener {

namespace {

// The session deleted on shutdown: a successor has nothing left to delete.
void on_closed(listener_self* self, const actions_reply& r) {
  auto& s = self->state;
  if (r.error)
    runtime::log::warn(actor_name, "could not delete the session on shutdown", {{"error", r.error->describe()}});
  else
    runtime::log::info(actor_name, "session deleted", {{"scale_set", s.opts.scale_set_id}});
  if (!r.error)
    remember(self, msg::session_held{s.opts.scale_set_id, {}});
  self->quit(s.stop_reason);
}

// A crashed predecessor's session, adopted (its last message id kept), or replaced.
void on_adopted(listener_self* self, actions_reply& r) {
  auto& s = self->state;
  if (r.error) {
    const auto k = r.error->what;
    if (k == K::transport || k == K::server)  // the service is out: adopt it later
      return retry_later(self, *r.error);
    runtime::log::warn(actor_name, "could not adopt the session a crashed predecessor left; opening a new one",
                       {{"scale_set", s.opts.scale_set_id}, {"error", r.error->describe()}});
    if (k == K::session_not_found || k == K::not_found)
      s.stale = {};  // gone (expired): nothing to delete
    if (!s.stale.session_id.empty())
      delete_stale_session(self);  // its answer opens ours
    else
      open_session(self);
    return;
  }
  s.session = std::move(r.session);
  s.last_message_id = s.stale.last_message_id;  // a message handled before is acked, not handled again
  s.stale = {};
  session_ready(self, "session adopted");
}

// A predecessor's session deleted (or already gone): ours can be opened.
void on_stale_deleted(listener_self* self, const actions_reply& r) {
  auto& s = self->state;
  if (r.error && r.error->what != K::session_not_found && r.error->what != K::not_found)
    runtime::log::warn(actor_name, "could not delete the session a crashed predecessor left",
                       {{"scale_set", s.opts.scale_set_id}, {"error", r.error->describe()}});
  if (!s.session && !s.creating)
    open_session(self);
}

void on_resolved(listener_self* self, const actions_reply& r) {
  auto& s = self->state;
  if (r.error)
    return retry_later(self, *r.error);
  s.opts.scale_set_id = r.acquired.at(0);
  service_answered(self);
  runtime::log::info(actor_name, "scale set", {{"name", s.opts.scale_set_name}, {"id", s.opts.scale_set_id}});
  open_session(self);
}

// Our session created; a 409 after the client's bounded retries means another listener holds it.
void on_session_created(listener_self* self, actions_reply& r) {
  auto& s = self->state;
  s.creating = false;
  if (r.error) {
    if (r.error->what == K::session_conflict) {
      count_failure(self, *r.error);
      tell_session(self, "Conflict", r.error->describe());
      runtime::log::error(actor_name, "another listener holds this scale set's session",
                          {{"scale_set", s.opts.scale_set_id}, {"error", r.error->describe()}});
      self->quit(caf::make_error(caf::sec::runtime_error, r.error->describe()));
      return;
    }
    return retry_later(self, *r.error);
  }
  s.session = std::move(r.session);
  session_ready(self, "session open");
}

// A poll answered: nothing (poll again), a message (handled once: a repeat is acked only), or an
// error (a cancelled poll is re-issued at once with the newest capacity).
void on_polled(listener_self* self, actions_reply& r) {
  auto& s = self->state;
  s.polling = false;
  s.poll.reset();
  if (r.error) {
    if (r.error->what == K::cancelled)
      return start_poll(self);
    return retry_later(self, *r.error);
  }
  service_answered(self);
  if (!r.message) {
    start_poll(self);
    return refresh_statistics(self);
  }
  if (s.last_message_id != 0 && r.message->message_id <= s.last_message_id) {
    // Handled already: its ack failed, so the service sent it again. Ack it once more and handle
    // it not again, or its started/completed jobs would count twice (found by the chaos suite: 7
    // completions for 6 jobs after a 503 storm).
    runtime::log::info(actor_name, "a message handled before came again (its ack failed): acknowledged, not handled twice",
                       {{"scale_set", s.opts.scale_set_id}, {"message_id", r.message->message_id}});
    s.client->delete_message(s.session, r.message->message_id,
                             reply_to<github::done>(self, reply_op::reack, [](actions_reply&, github::done) {}));
    return start_poll(self);
  }
  s.before_message_id = s.last_message_id;
  s.last_message_id = r.message->message_id;
  s.handling = std::move(r.message);
  handle_message(self);
}

void on_acked(listener_self* self, const actions_reply& r) {
  auto& s = self->state;
  if (r.error) {
    count_failure(self, *r.error);
    runtime::log::warn(actor_name, "ack failed: the message will come again", {{"error", r.error->describe()}});
  }
  s.handling.reset();
  start_poll(self);
}

void on_acquired(listener_self* self, const actions_reply& r) {
  auto& s = self->state;
  if (r.error && (r.error->what == K::server || r.error->what == K::transport)) {
    // The service is out: the message stays unacked and unforwarded, and is read and handled
    // again after the backoff, its jobs acquired then. Finished here, its jobs would wait for the
    // service to re-offer them (a run timeout: a chaos run's jobs completed 100 s after a 503
    // storm instead of 10 s).
    runtime::log::warn(actor_name, "acquiring jobs failed; the message will be handled again",
                       {{"scale_set", s.opts.scale_set_id}, {"error", r.error->describe()}});
    s.handling.reset();
    s.last_message_id = s.before_message_id;
    return retry_later(self, *r.error);
  }
  if (r.error) {
    count_failure(self, *r.error);
    runtime::log::warn(actor_name, "acquiring jobs failed; the service re-offers them", {{"error", r.error->describe()}});
  } else {
    runtime::log::info(actor_name, "jobs acquired", {{"scale_set", s.opts.scale_set_id}, {"count", r.acquired.size()}});
  }
  finish_message(self);
}

// The scale set's statistics read: news for the monitor (its demand: totalAvailableJobs) when they
// changed. A failure is counted and left to the poll, which backs off and says so.
void on_stats(listener_self* self, actions_reply& r) {
  auto& s = self->state;
  s.stats_in_flight = false;
  if (r.error) {
    count_failure(self, *r.error);
    runtime::log::debug(actor_name, "could not read the scale set's statistics", {{"scale_set", s.opts.scale_set_id}, {"error", r.error->describe()}});
    return;
  }
  service_answered(self);
  const auto now = statistics_of(*r.stats);
  if (s.stats && *s.stats == now)
    return;
  publish(self, msg::scale_set_update{s.opts.scale_set_id, now, {}});
}

}  // namespace

// The in-flight poll's queue check, `queue_check_interval` from now (none when 0).
void arm_queue_check(listener_self* self) {
  auto& s = self->state;
  if (s.opts.queue_check_interval.count() > 0)
    self->delayed_send(self, s.opts.queue_check_interval, queue_check{s.generation, s.poll_seq});
}

// The poll is still held: when it advertised no room beyond the jobs already assigned, nothing
// will be offered on it, so the jobs queued meanwhile are read with the scale set (news for the
// monitor's demand, which may place pairs and raise the capacity, and so cancel this poll), and
// read again after another interval while it lasts. With room free, a queued job is offered on
// this poll and its message carries the statistics: no read.
void on_queue_check(listener_self* self, const queue_check& t) {
  auto& s = self->state;
  if (t.generation != s.generation || t.poll != s.poll_seq || !s.polling || s.poll_cancelled)
    return;  // that poll has ended
  const int64_t assigned = s.stats ? s.stats->total_assigned_jobs : 0;
  if (s.poll_capacity > assigned)
    return;
  refresh_statistics(self);
  arm_queue_check(self);
}

// An Actions Service answer, by operation.
void on_reply(listener_self* self, actions_reply& r) {
  auto& s = self->state;
  if (r.generation != s.generation)
    return;  // about a session that is gone
  switch (r.what) {
    case reply_op::closed: return on_closed(self, r);
    case reply_op::stats: return on_stats(self, r);
    case reply_op::reack: return;  // a repeated ack: the poll in flight reports anything wrong with the session
    case reply_op::adopt: return on_adopted(self, r);
    case reply_op::stale: return on_stale_deleted(self, r);
    default: break;
  }
  if (r.what == reply_op::poll && (r.poll != s.poll_seq || !s.polling)) {
    if (r.error && r.error->what != K::cancelled) {  // ignored, but it failed all the same
      count_failure(self, *r.error);
      runtime::log::warn(actor_name, "a poll given up on failed", {{"scale_set", s.opts.scale_set_id}, {"error", r.error->describe()}});
    }
    return;  // a poll given up on (see the cancel deadline in set_max_capacity)
  }
  if (r.error && r.error->what == K::session_not_found) {
    runtime::log::warn(actor_name, "the session is gone: opening a new one", {{"scale_set", s.opts.scale_set_id}});
    s.polling = false;
    return open_session(self);
  }
  switch (r.what) {
    case reply_op::resolve: return on_resolved(self, r);
    case reply_op::session: return on_session_created(self, r);
    case reply_op::poll: return on_polled(self, r);
    case reply_op::ack: return on_acked(self, r);
    case reply_op::acquire: return on_acquired(self, r);
    case reply_op::refresh:
    case reply_op::closed:
    case reply_op::reack:
    case reply_op::stale:
    case reply_op::adopt:
    case reply_op::stats:
      return;
  }
}

}  // namespace headroom::actors::listener
