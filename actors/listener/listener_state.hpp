#pragma once

// listener_session's state, and what its two files share: listener_session.cpp (the session, the
// polls, the messages) and listener_replies.cpp (one handler per Actions Service operation).
// Internal to actors/listener/.

#include <caf/all.hpp>

#include <functional>
#include <optional>
#include <string>

#include "actors/listener/actions_reply.hpp"
#include "actors/listener/listener_session.hpp"
#include "messages/type_ids.hpp"
#include "runtime/outage.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::listener {

// The listener's timers: messages it sends only itself, one type each. Each carries the session's
// generation (a timer from before a new session or a stop is stale) and, for a poll's, the poll's
// number.
struct retry_timer {  // a backoff has ended (or, stopping, the session delete was not answered)
  uint64_t generation = 0;
};
struct cancel_deadline {  // a cancelled poll was not answered within 1 s
  uint64_t generation = 0, poll = 0;
};
struct reorder_window_passed {  // a poll started inside the reorder window is re-issued now
  uint64_t generation = 0, poll = 0;
};
struct queue_check {  // the queue is read again while this poll is held with no room free
  uint64_t generation = 0, poll = 0;
};

}  // namespace headroom::actors::listener

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::listener::retry_timer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::listener::cancel_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::listener::reorder_window_passed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::listener::queue_check)

namespace headroom::actors::listener {

constexpr std::string_view actor_name = "listener_session";
using K = github::actions_error::kind;
using reply_op = actions_reply::op;

struct listener_state {
  // When the Actions Service's failures deserve a log line: the first of an outage, a reminder a
  // minute, and one line when it answers again (the retries themselves follow `backoff`).
  runtime::outage service_outage{{.reminder = std::chrono::minutes(1)}};
  std::shared_ptr<github::actions_client> client;
  listener_peers peers;
  std::string told_state, told_message;  // the session state last sent to peers.status
  listener_options opts;
  github::session_ptr session;
  uint64_t generation = 0;  // bumped per session
  std::shared_ptr<github::pending_call> poll;
  bool polling = false;
  bool poll_cancelled = false;  // the in-flight poll was cancelled; its reply starts the next
  int64_t poll_capacity = 0;  // what the in-flight poll advertised
  uint64_t poll_seq = 0;      // the in-flight poll's number
  caf::actor_clock::time_point poll_started;  // when the in-flight poll was issued
  // Until then a cancelled poll may still reach the service after the poll in flight (see
  // listener_options::reorder_window): a poll started before it is re-issued at that moment.
  caf::actor_clock::time_point reorder_until;
  int64_t to_advertise = 0;   // the newest capacity: what the next poll advertises
  int64_t last_message_id = 0;
  int64_t before_message_id = 0;  // last_message_id before the message being handled
  // The message being handled: its jobs acquired, then its transitions forwarded, then acked.
  // Acked last, so a crash before the forward leaves it in the session for the successor, and
  // one after it is skipped there by the newest message id (session_memo): once, either way.
  std::optional<github::session_message> handling;
  std::optional<msg::scale_set_statistics> stats;   // the latest, for update_atom
  bool stats_in_flight = false;  // a GET of the scale set (its statistics) is under way
  std::chrono::milliseconds backoff{0};
  bool stopping = false;
  caf::error stop_reason;
  // A session a crashed predecessor left in the service (from the session_memo):
  // adopted (refreshed for a token of this listener's), so the job messages still queued in it
  // are not lost; deleted instead when it cannot be adopted, or the service would answer 409
  // until it expires. `creating`: a create is in flight (then the stale one is deleted at once,
  // and the client's next conflict retry succeeds).
  msg::session_held stale;
  bool creating = false;
  static inline const char* name = "headroom.listener_session";
  // An actor that crashed (or was killed) runs no exit handler: its poll would stay held at the
  // service beside its successor's, on the session the successor adopts, until the hold ends.
  ~listener_state() {
    if (poll)
      poll->cancel();
  }
};

// The listener's own messages: its timers and the Actions Service's answers.
using listener_impl = listener_actor::extend<caf::reacts_to<reorder_window_passed>, caf::reacts_to<cancel_deadline>,
                                             caf::reacts_to<retry_timer>, caf::reacts_to<queue_check>, caf::reacts_to<actions_reply>>;
using listener_self = listener_impl::stateful_base<listener_state>;

// The callback of an Actions call: its result goes back to the actor as actions_reply.
// `poll`: the poll's number (polls only), carried whatever the outcome.
template <class T, class Fill>
std::function<void(github::actions_result<T>)> reply_to(listener_self* self, reply_op op, Fill fill, uint64_t poll = 0) {
  const auto me = runtime::handle_of(self);
  const uint64_t generation = self->state.generation;
  return [me, op, generation, poll, fill](github::actions_result<T> r) {
    actions_reply out;
    out.what = op;
    out.generation = generation;
    out.poll = poll;
    if (auto* e = std::get_if<github::actions_error>(&r))
      out.error = std::move(*e);
    else
      fill(out, std::get<T>(std::move(r)));
    caf::anon_send(me, std::move(out));
  };
}

// listener_session.cpp
void open_session(listener_self* self);
void delete_stale_session(listener_self* self);
void start_poll(listener_self* self);
void retry_later(listener_self* self, const github::actions_error& e);
void service_answered(listener_self* self);
void count_failure(listener_self* self, const github::actions_error& e);
void tell_session(listener_self* self, std::string state, std::string message = {});
void session_ready(listener_self* self, const char* what);
void handle_message(listener_self* self);
void refresh_statistics(listener_self* self);
void arm_queue_check(listener_self* self);
void on_queue_check(listener_self* self, const queue_check& t);
msg::scale_set_statistics statistics_of(const github::statistics& s);
void publish(listener_self* self, const msg::scale_set_update& u);
void finish_message(listener_self* self);
// Writes the session this listener holds (and the newest message handled) to its session_memo.
void remember(listener_self* self, msg::session_held held);

// listener_replies.cpp: an Actions Service answer, by operation.
void on_reply(listener_self* self, actions_reply& r);

}  // namespace headroom::actors::listener
