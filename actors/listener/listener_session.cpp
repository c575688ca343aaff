#include "actors/listener/listener_session.hpp"

#include "actors/listener/actions_reply.hpp"

#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"

namespace headroom::actors {

namespace {

constexpr std::string_view actor_name = "listener_session";
using K = github::actions_error::kind;
using reply_op = actions_reply::op;

struct listener_state {
  // When the Actions Service's failures deserve a log line: the first of an outage, a reminder a
  // minute, and one line when it answers again (the retries themselves follow `backoff`).
  runtime::outage service_outage{{.reminder = std::chrono::minutes(1)}};
  std::shared_ptr<github::actions_client> client;
  listener_peers peers;
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
  int64_t desired = 0;        // the newest capacity
  int64_t last_message_id = 0;
  int64_t before_message_id = 0;  // last_message_id before the message being handled
  // The message being handled: its jobs acquired, then its transitions forwarded, then acked.
  // Acked last, so a crash before the forward leaves it in the session for the successor, and
  // one after it is skipped there by the newest message id (msg::session_held): once, either way.
  std::optional<github::session_message> handling;
  std::optional<msg::scale_set_statistics> stats;   // the latest, for update_atom
  std::chrono::milliseconds backoff{0};
  bool stopping = false;
  caf::error stop_reason;
  // A session a crashed predecessor left in the service (from the monitor, msg::session_held):
  // adopted (refreshed for a token of this listener's), so the job messages still queued in it
  // are not lost; deleted instead when it cannot be adopted, or the service would answer 409
  // until it expires. `creating`: a create is in flight (then the stale one is deleted at once,
  // and the client's next conflict retry succeeds).
  msg::session_held stale;
  bool creating = false;
  // Asked the monitor for a session left behind, not answered yet (up to 1 s): the first create
  // waits for the answer (`open_wanted`), since a create that meets the stale session waits 30 s.
  bool asking = false, open_wanted = false;
  static inline const char* name = "headroom.listener_session";
  // An actor that crashed (or was killed) runs no exit handler: its poll would stay held at the
  // service beside its successor's, on the session the successor adopts, until the hold ends.
  ~listener_state() {
    if (poll)
      poll->cancel();
  }
};

using listener_actor = caf::stateful_actor<listener_state>;

// The callback of an Actions call: its result goes back to the actor as actions_reply.
// `poll`: the poll's number (polls only), carried whatever the outcome.
template <class T, class Fill>
std::function<void(github::actions_result<T>)> reply_to(listener_actor* self, reply_op op, Fill fill, uint64_t poll = 0) {
  caf::actor me = caf::actor_cast<caf::actor>(self);
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

void open_session(listener_actor* self);

// Finds the scale set by name (creating it when absent), then opens the session.
void resolve_scale_set(listener_actor* self) {
  auto& st = self->state;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  auto fail = [me](github::actions_error e) {
    actions_reply out;
    out.what = reply_op::resolve;
    out.error = std::move(e);
    caf::anon_send(me, std::move(out));
  };
  auto done = [me](int64_t id) {
    actions_reply out;
    out.what = reply_op::resolve;
    out.acquired = {id};
    caf::anon_send(me, std::move(out));
  };
  auto client = st.client;
  const auto opts = st.opts;
  client->get_runner_group(opts.runner_group, [client, opts, fail, done](github::actions_result<std::optional<github::runner_group>> g) {
    if (auto* e = std::get_if<github::actions_error>(&g))
      return fail(std::move(*e));
    const auto& group = std::get<std::optional<github::runner_group>>(g);
    if (!group) {
      github::actions_error e;
      e.what = github::actions_error::kind::not_found;
      e.operation = "get runner group";
      e.message = "no runner group named '" + opts.runner_group + "'";
      return fail(std::move(e));
    }
    const int64_t group_id = group->id;
    client->get_scale_set(group_id, opts.scale_set_name,
                          [client, opts, group_id, fail, done](github::actions_result<std::optional<github::runner_scale_set>> r) {
                            if (auto* e = std::get_if<github::actions_error>(&r))
                              return fail(std::move(*e));
                            if (const auto& found = std::get<std::optional<github::runner_scale_set>>(r))
                              return done(found->id);
                            github::runner_scale_set set;
                            set.name = opts.scale_set_name;
                            set.runner_group_id = group_id;
                            set.labels.push_back({"System", opts.scale_set_name});
                            for (const auto& l : opts.labels)
                              if (l != opts.scale_set_name)
                                set.labels.push_back({"System", l});
                            client->create_scale_set(set, [fail, done](github::actions_result<github::runner_scale_set> c) {
                              if (auto* e = std::get_if<github::actions_error>(&c))
                                return fail(std::move(*e));
                              done(std::get<github::runner_scale_set>(c).id);
                            });
                          });
  });
}

// The session a crashed predecessor left, by its ids (no token: a refresh gets one).
github::session_ptr stale_handle(const msg::session_held& stale) {
  github::message_session old;
  old.scale_set_id = stale.scale_set_id;
  old.session_id = stale.session_id;
  return std::make_shared<github::session_handle>(std::move(old));
}

void delete_stale_session(listener_actor* self) {
  auto& st = self->state;
  runtime::log::info(actor_name, "deleting the session a crashed predecessor left",
                     {{"scale_set", st.stale.scale_set_id}, {"session", st.stale.session_id}});
  st.client->delete_session(stale_handle(st.stale), reply_to<github::done>(self, reply_op::stale, [](actions_reply&, github::done) {}));
  st.stale = {};
}

// Takes over the session a crashed predecessor left: a refresh (with the admin token, as after a
// queue token's expiry) gives this listener the session's queue and a token of its own, and the
// predecessor's token stops working. Messages queued in the session, and any it received and did
// not ack, are then read here; deleting the session instead lost them (the chaos suite counted 5
// job starts of 6 after the listener was killed).
void adopt_stale_session(listener_actor* self) {
  auto& st = self->state;
  runtime::log::info(actor_name, "adopting the session a crashed predecessor left",
                     {{"scale_set", st.stale.scale_set_id}, {"session", st.stale.session_id}, {"last_message_id", st.stale.last_message_id}});
  auto handle = stale_handle(st.stale);
  st.client->refresh_session(handle, reply_to<github::done>(self, reply_op::adopt, [handle](actions_reply& r, github::done) {
                               r.session = handle;
                             }));
}

void open_session(listener_actor* self) {
  auto& st = self->state;
  ++st.generation;
  st.session.reset();
  st.last_message_id = 0;
  st.handling.reset();
  if (st.asking) {
    st.open_wanted = true;
    return;
  }
  if (!st.stale.session_id.empty() && st.stale.scale_set_id == st.opts.scale_set_id) {
    adopt_stale_session(self);  // its answer polls it, or deletes it and opens ours
    return;
  }
  st.creating = true;
  st.client->create_session(st.opts.scale_set_id, st.opts.owner,
                            reply_to<github::session_ptr>(self, reply_op::session,
                                                          [](actions_reply& r, github::session_ptr s) { r.session = std::move(s); }));
}

void start_poll(listener_actor* self) {
  auto& st = self->state;
  if (!st.session || st.polling || st.handling)
    return;
  st.polling = true;
  st.poll_cancelled = false;
  st.poll_capacity = st.desired;
  const uint64_t seq = ++st.poll_seq;
  const auto now = self->clock().now();
  st.poll_started = now;
  if (now < st.reorder_until)
    self->delayed_send(self, st.reorder_until - now, msg::tick_atom_v, st.generation, seq, uint64_t{1});
  if (st.peers.capacity)
    self->send(st.peers.capacity, msg::capacity_polled{st.desired});
  st.poll = st.client->get_message(
      st.session, st.last_message_id, st.desired,
      reply_to<std::optional<github::session_message>>(
          self, reply_op::poll, [](actions_reply& r, std::optional<github::session_message> m) { r.message = std::move(m); },
          seq));
}

// Cancels the poll in flight; its reply (cancelled) starts the next one, with the newest value.
// `reissue`: the reorder window's own re-issue, which never opens a window again - its poll was
// issued right after the window opened, so it is always a little younger than the window, and
// each re-issue would schedule the next: a poll every 100 ms for good.
void cancel_poll(listener_actor* self, bool reissue = false) {
  auto& st = self->state;
  const auto now = self->clock().now();
  // Cancelled young, it may not have reached the service yet: sent on its own connection, it can
  // be read there after its successor and set the capacity back to its value for a whole hold
  // (the 50 s rises of capacity_propagation_bench, once in ~1,000; reproduced by
  // listener_session_test's storm: the peer read the cancelled poll carrying 0 after the one
  // carrying 4). The polls started until the window has passed are re-issued then.
  if (!reissue && now - st.poll_started < st.opts.reorder_window)
    st.reorder_until = std::max(st.reorder_until, now + st.opts.reorder_window);
  st.poll_cancelled = true;
  st.poll->cancel();
  // A cancel is answered in microseconds; should its answer be lost below this actor, the poll
  // is given up after 1 s and issued again, so placed room is never held back for a hold.
  self->delayed_send(self, std::chrono::seconds(1), msg::tick_atom_v, st.generation, st.poll_seq);
}

void count_failure(listener_actor* self, const github::actions_error& e) {
  if (self->state.opts.failed && e.what != github::actions_error::kind::cancelled)
    self->state.opts.failed(github::to_string(e.what));
}

int64_t ms_now(listener_actor* self) { return runtime::actor_system_clock{self->clock()}.now_ms(); }

void retry_later(listener_actor* self, const github::actions_error& e) {
  auto& st = self->state;
  count_failure(self, e);
  st.backoff = st.backoff.count() == 0 ? st.opts.backoff_initial : std::min(st.backoff * 2, st.opts.backoff_max);
  if (e.what != K::transport && e.what != K::server) {
    // Not the service being away but something it said (a body that does not decode, a refusal):
    // each is news, named and counted.
    runtime::log::warn(actor_name, "Actions Service call failed; retrying",
                       {{"scale_set", st.opts.scale_set_id}, {"error", e.describe()}, {"retry_in_ms", st.backoff.count()}});
    self->delayed_send(self, st.backoff, msg::tick_atom_v, st.generation);
    return;
  }
  const auto v = st.service_outage.failed(ms_now(self));
  runtime::outage::log(actor_name, v, "Actions Service call failed; retrying", "Actions Service calls still failing; retrying",
                       {{"scale_set", st.opts.scale_set_id}, {"error", e.describe()}, {"retry_in_ms", st.backoff.count()},
                        {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
  self->delayed_send(self, st.backoff, msg::tick_atom_v, st.generation);
}

// A call succeeded: the end of an outage, if there was one, is worth a line.
void service_answered(listener_actor* self) {
  auto& st = self->state;
  st.backoff = std::chrono::milliseconds{0};
  if (const auto v = st.service_outage.succeeded(ms_now(self)); v.log == runtime::outage::note::came_back)
    runtime::log::info(actor_name, "the Actions Service answers again",
                       {{"scale_set", st.opts.scale_set_id}, {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
}

void publish(listener_actor* self, const msg::scale_set_update& u) {
  auto& st = self->state;
  st.stats = u.stats;
  for (const auto& a : st.peers.updates)
    if (a)
      self->send(a, u);
}

msg::scale_set_statistics statistics_of(const github::statistics& s) {
  return msg::scale_set_statistics{s.total_available_jobs, s.total_acquired_jobs,      s.total_assigned_jobs,
                                   s.total_running_jobs,   s.total_registered_runners, s.total_busy_runners,
                                   s.total_idle_runners};
}

// A message's jobs were acquired: tell the provisioner and the monitor (which keeps the newest
// message handled for a successor), then ack it; its answer polls again.
void finish_message(listener_actor* self) {
  auto& st = self->state;
  if (!st.handling)
    return;
  msg::scale_set_update u;
  u.scale_set_id = st.opts.scale_set_id;
  u.stats = statistics_of(st.handling->stats);
  for (auto& j : st.handling->jobs) {
    if (j.type != github::job_message::started && j.type != github::job_message::completed)
      continue;
    msg::job_transition t;
    t.type = j.type == github::job_message::started ? msg::job_transition::started : msg::job_transition::completed;
    t.runner_request_id = j.runner_request_id;
    t.runner_id = j.runner_id;
    t.runner_name = std::move(j.runner_name);
    t.result = std::move(j.result);
    t.scale_set_assign_time = std::move(j.scale_set_assign_time);
    t.runner_assign_time = std::move(j.runner_assign_time);
    t.finish_time = std::move(j.finish_time);
    t.repository = std::move(j.repository_name);
    t.owner = std::move(j.owner_name);
    t.job_name = std::move(j.job_display_name);
    t.event_name = std::move(j.event_name);
    if (st.opts.job)
      st.opts.job(t);
    u.jobs.push_back(std::move(t));
  }
  if (st.peers.capacity && st.session)  // a successor goes on after this message
    self->send(st.peers.capacity, msg::session_held{st.opts.scale_set_id, st.session->get().session_id, st.last_message_id});
  publish(self, u);
  st.client->delete_message(st.session, st.last_message_id,
                            reply_to<github::done>(self, reply_op::ack, [](actions_reply&, github::done) {}));
}

// The session is ours (created or adopted): the monitor keeps it for a successor, should this
// actor crash; the provisioner gets its statistics; polling starts.
void session_ready(listener_actor* self, const char* what) {
  auto& st = self->state;
  const auto session = st.session->get();
  service_answered(self);
  if (st.peers.capacity)
    self->send(st.peers.capacity, msg::session_held{st.opts.scale_set_id, session.session_id, st.last_message_id});
  runtime::log::info(actor_name, what,
                     {{"scale_set", st.opts.scale_set_id}, {"session", session.session_id},
                      {"assigned_jobs", session.stats.total_assigned_jobs}});
  publish(self, msg::scale_set_update{st.opts.scale_set_id, statistics_of(session.stats), {}});
  start_poll(self);
}

// A message arrived: acquire its available jobs (then finish it), or finish it at once.
void handle_message(listener_actor* self) {
  auto& st = self->state;
  std::vector<int64_t> ids;
  for (const auto& j : st.handling->jobs)
    if (j.type == github::job_message::available)
      ids.push_back(j.runner_request_id);
  if (ids.empty()) {
    finish_message(self);
    return;
  }
  st.client->acquire_jobs(st.session, std::move(ids),
                          reply_to<std::vector<int64_t>>(self, reply_op::acquire, [](actions_reply& out, std::vector<int64_t> a) {
                            out.acquired = std::move(a);
                          }));
}

// Stopping: the session is deleted (the service would otherwise hold it until it expires and a
// successor would meet 409s), and the actor quits once that is answered or after 3 s.
void on_exit(listener_actor* self, const caf::exit_msg& m) {
  auto& s = self->state;
  if (s.poll)
    s.poll->cancel();
  if (!s.session || s.stopping) {
    self->quit(m.reason);
    return;
  }
  s.stopping = true;
  s.stop_reason = m.reason;
  ++s.generation;  // every other reply is now stale
  s.client->delete_session(s.session, reply_to<github::done>(self, reply_op::closed, [](actions_reply&, github::done) {}));
  self->delayed_send(self, std::chrono::seconds(3), msg::tick_atom_v, s.generation);
}

// A new capacity from the monitor.
void on_capacity(listener_actor* self, msg::set_max_capacity m) {
  auto& s = self->state;
  const int64_t v = std::max<int64_t>(0, m.capacity);
  if (v == s.desired)
    return;
  s.desired = v;
  // The service reads the capacity only when a poll starts. A drop must reach it at once (or
  // it keeps assigning by the old value for up to 50 s); a rise too, or placed room sits
  // idle while jobs queue. A cancelled poll loses nothing: an unacked message comes again.
  if (s.polling && !s.poll_cancelled && s.desired != s.poll_capacity && s.opts.repoll_on_change) {
    if (s.desired < s.poll_capacity)
      runtime::log::info(actor_name, "capacity dropped below the in-flight poll's: re-polling",
                         {{"scale_set", s.opts.scale_set_id}, {"was", s.poll_capacity}, {"now", s.desired}});
    cancel_poll(self);
  }
}

// The monitor's answer: a session left behind, or none.
void on_session_held(listener_actor* self, msg::session_held& h) {
  auto& s = self->state;
  const bool waiting = s.asking && s.open_wanted;
  s.asking = false;
  if (!h.session_id.empty() && !s.stopping && !(s.session && s.session->get().session_id == h.session_id)) {
    s.stale = std::move(h);
    if (s.creating && s.stale.scale_set_id == s.opts.scale_set_id)
      delete_stale_session(self);  // the create in flight meets 409s until this is gone
  }
  if (waiting)
    open_session(self);
}

// A backoff ended (or, stopping, the session delete was not answered in time).
void on_retry(listener_actor* self, uint64_t generation) {
  auto& s = self->state;
  if (generation != s.generation)
    return;
  if (s.stopping) {  // the session delete was not answered in time
    self->quit(s.stop_reason);
    return;
  }
  if (s.opts.scale_set_id == 0)
    resolve_scale_set(self);
  else if (!s.session)
    open_session(self);
  else
    start_poll(self);
}

// The session deleted on shutdown: a successor has nothing left to delete.
void on_closed(listener_actor* self, const actions_reply& r) {
  auto& s = self->state;
  if (r.error)
    runtime::log::warn(actor_name, "could not delete the session on shutdown", {{"error", r.error->describe()}});
  else
    runtime::log::info(actor_name, "session deleted", {{"scale_set", s.opts.scale_set_id}});
  if (s.peers.capacity && !r.error)
    self->send(s.peers.capacity, msg::session_held{s.opts.scale_set_id, {}});
  self->quit(s.stop_reason);
}

// A crashed predecessor's session, adopted (its last message id kept), or replaced.
void on_adopted(listener_actor* self, actions_reply& r) {
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
void on_stale_deleted(listener_actor* self, const actions_reply& r) {
  auto& s = self->state;
  if (r.error && r.error->what != K::session_not_found && r.error->what != K::not_found)
    runtime::log::warn(actor_name, "could not delete the session a crashed predecessor left",
                       {{"scale_set", s.opts.scale_set_id}, {"error", r.error->describe()}});
  if (!s.session && !s.creating)
    open_session(self);
}

void on_resolved(listener_actor* self, const actions_reply& r) {
  auto& s = self->state;
  if (r.error)
    return retry_later(self, *r.error);
  s.opts.scale_set_id = r.acquired.at(0);
  service_answered(self);
  runtime::log::info(actor_name, "scale set", {{"name", s.opts.scale_set_name}, {"id", s.opts.scale_set_id}});
  open_session(self);
}

// Our session created; a 409 after the client's bounded retries means another listener holds it.
void on_session_created(listener_actor* self, actions_reply& r) {
  auto& s = self->state;
  s.creating = false;
  if (r.error) {
    if (r.error->what == K::session_conflict) {
      count_failure(self, *r.error);
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
void on_polled(listener_actor* self, actions_reply& r) {
  auto& s = self->state;
  s.polling = false;
  s.poll.reset();
  if (r.error) {
    if (r.error->what == K::cancelled)
      return start_poll(self);
    return retry_later(self, *r.error);
  }
  service_answered(self);
  if (!r.message)
    return start_poll(self);
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

void on_acked(listener_actor* self, const actions_reply& r) {
  auto& s = self->state;
  if (r.error) {
    count_failure(self, *r.error);
    runtime::log::warn(actor_name, "ack failed: the message will come again", {{"error", r.error->describe()}});
  }
  s.handling.reset();
  start_poll(self);
}

void on_acquired(listener_actor* self, const actions_reply& r) {
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

// An Actions Service answer, by operation.
void on_reply(listener_actor* self, actions_reply& r) {
  auto& s = self->state;
  if (r.generation != s.generation)
    return;  // about a session that is gone
  switch (r.what) {
    case reply_op::closed: return on_closed(self, r);
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
      return;
  }
}

caf::behavior listener_behavior(listener_actor* self, std::shared_ptr<github::actions_client> client, listener_peers peers,
                                listener_options opts) {
  auto& st = self->state;
  st.client = std::move(client);
  st.peers = std::move(peers);
  st.opts = std::move(opts);
  st.desired = std::max<int64_t>(0, st.opts.initial_capacity);
  if (st.peers.capacity) {  // a restarted listener starts from the monitor's newest value
    self->send(st.peers.capacity, msg::capacity_atom_v);
    self->send(st.peers.capacity, msg::session_atom_v);  // and deletes a session left behind
    st.asking = true;
    self->delayed_send(self, std::chrono::seconds(1), msg::session_atom_v);  // the monitor may be down
  }
  // Stopping: the session is deleted (the service would otherwise hold it until it expires and a
  // successor would meet 409s), and the actor quits once that is answered or after 3 s.
  self->set_exit_handler([self](caf::exit_msg& m) { on_exit(self, m); });
  if (st.opts.scale_set_id == 0)
    resolve_scale_set(self);
  else
    open_session(self);
  return {
      [self](msg::set_max_capacity m) { on_capacity(self, m); },
      [self](msg::session_held& h) { on_session_held(self, h); },
      [self](msg::session_atom) {  // no answer from the monitor within 1 s: go on without one
        auto& s = self->state;
        if (!s.asking)
          return;
        s.asking = false;
        if (s.open_wanted)
          open_session(self);
      },
      [self](msg::update_atom) {
        auto& s = self->state;
        if (s.stats && s.opts.scale_set_id != 0)
          self->send(caf::actor_cast<caf::actor>(self->current_sender()), msg::scale_set_update{s.opts.scale_set_id, *s.stats, {}});
      },
      [self](msg::tick_atom, uint64_t generation, uint64_t poll, uint64_t) {  // the reorder window has passed
        auto& s = self->state;
        if (generation != s.generation || poll != s.poll_seq || !s.polling || s.poll_cancelled)
          return;  // ended (its successor was issued after the window) or already cancelled
        runtime::log::debug(actor_name, "re-issuing the poll: a poll cancelled just before it may have reached the service after it",
                            {{"scale_set", s.opts.scale_set_id}, {"capacity", s.desired}});
        cancel_poll(self, true);
      },
      [self](msg::tick_atom, uint64_t generation, uint64_t poll) {  // a cancelled poll's deadline
        auto& s = self->state;
        if (generation != s.generation || poll != s.poll_seq || !s.polling || !s.poll_cancelled)
          return;  // answered in time
        runtime::log::warn(actor_name, "a cancelled poll did not end within 1 s: giving it up and polling again",
                           {{"scale_set", s.opts.scale_set_id}, {"capacity", s.desired}});
        s.polling = false;
        s.poll.reset();  // its late answer names an older poll and is ignored
        start_poll(self);
      },
      [self](msg::tick_atom, uint64_t generation) { on_retry(self, generation); },
      [self](actions_reply& r) { on_reply(self, r); },
  };
}

}  // namespace

caf::actor spawn_listener_session(caf::actor_system& sys, std::shared_ptr<github::actions_client> client,
                                  listener_peers peers, listener_options opts) {
  return sys.spawn(listener_behavior, std::move(client), std::move(peers), std::move(opts));
}

}  // namespace headroom::actors
