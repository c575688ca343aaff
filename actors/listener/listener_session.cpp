#include "actors/listener/listener_session.hpp"
#include "runtime/typed_handle.hpp"

#include "actors/listener/listener_state.hpp"

#include <caf/all.hpp>

#include <algorithm>

#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"

namespace headroom::actors {
namespace listener {

namespace {

// The labels a scale set carries on the service: its name, then the configured ones, once each
// (as ARC's controller makes them).
std::vector<github::label> wanted_labels(const std::string& name, const std::vector<std::string>& extra) {
  std::vector<github::label> out{{"System", name}};
  for (const auto& l : extra)
    if (std::none_of(out.begin(), out.end(), [&](const github::label& x) { return x.name == l; }))
      out.push_back({"System", l});
  return out;
}

std::string label_names(const std::vector<github::label>& labels) {
  std::vector<std::string> names;
  for (const auto& l : labels)
    names.push_back(l.name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ",") + n;
  return out;
}

// A scale set found on the service carries the labels jobs are matched against there. When they
// are not the configured ones (it was made with others, or the configuration changed), they are
// set to the configured ones, so the service matches the jobs headroom counts demand for (the
// HUD's rows, by the configured labels) and the scale set carries what its configuration says.
template <class Fail, class Done>
void keep_labels(const std::shared_ptr<github::actions_client>& client, const github::runner_scale_set& found,
                 github::runner_scale_set wanted, Fail fail, Done done) {
  const auto had = label_names(found.labels), want = label_names(wanted.labels);
  if (had == want)
    return done(found.id);
  runtime::log::info(actor_name, "the scale set's labels on the service are not the configured ones: updating them",
                     {{"scale_set", found.id}, {"had", had}, {"configured", want}});
  wanted.id = found.id;
  wanted.disable_update = found.disable_update;
  const int64_t id = found.id;
  client->update_scale_set(id, std::move(wanted), [fail, done, id](github::actions_result<github::runner_scale_set> u) {
    if (auto* e = std::get_if<github::actions_error>(&u))
      return fail(std::move(*e));
    done(id);
  });
}

}  // namespace

// Finds the scale set by name (creating it when absent, setting its labels to the configured ones
// when they differ), then opens the session.
void resolve_scale_set(listener_self* self) {
  auto& st = self->state;
  const auto me = runtime::handle_of(self);
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
                            github::runner_scale_set set;
                            set.name = opts.scale_set_name;
                            set.runner_group_id = group_id;
                            set.labels = wanted_labels(opts.scale_set_name, opts.labels);
                            if (const auto& found = std::get<std::optional<github::runner_scale_set>>(r))
                              return keep_labels(client, *found, std::move(set), fail, done);
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

void delete_stale_session(listener_self* self) {
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
void adopt_stale_session(listener_self* self) {
  auto& st = self->state;
  runtime::log::info(actor_name, "adopting the session a crashed predecessor left",
                     {{"scale_set", st.stale.scale_set_id}, {"session", st.stale.session_id}, {"last_message_id", st.stale.last_message_id}});
  auto handle = stale_handle(st.stale);
  st.client->refresh_session(handle, reply_to<github::done>(self, reply_op::adopt, [handle](actions_reply& r, github::done) {
                               r.session = handle;
                             }));
}

// The ScaleSet object's session state (actors/capacity/scale_set_status.cpp), when it changes.
void tell_session(listener_self* self, std::string state, std::string message) {
  auto& st = self->state;
  if (!st.peers.status || (state == st.told_state && message == st.told_message))
    return;
  st.told_state = state;
  st.told_message = message;
  self->send(st.peers.status, msg::session_view{std::move(state), std::move(message), false});
}

void open_session(listener_self* self) {
  auto& st = self->state;
  tell_session(self, "Opening");
  ++st.generation;
  st.session.reset();
  st.last_message_id = 0;
  st.handling.reset();
  if (!st.stale.session_id.empty() && st.stale.scale_set_id == st.opts.scale_set_id) {
    adopt_stale_session(self);  // its answer polls it, or deletes it and opens ours
    return;
  }
  st.creating = true;
  st.client->create_session(st.opts.scale_set_id, st.opts.owner,
                            reply_to<github::session_ptr>(self, reply_op::session,
                                                          [](actions_reply& r, github::session_ptr s) { r.session = std::move(s); }));
}

void start_poll(listener_self* self) {
  auto& st = self->state;
  if (!st.session || st.polling || st.handling)
    return;
  st.polling = true;
  st.poll_cancelled = false;
  st.poll_capacity = st.to_advertise;
  const uint64_t seq = ++st.poll_seq;
  const auto now = self->clock().now();
  st.poll_started = now;
  if (now < st.reorder_until)
    self->delayed_send(self, st.reorder_until - now, reorder_window_passed{st.generation, seq});
  arm_queue_check(self);
  if (st.peers.capacity)
    self->send(st.peers.capacity,
               msg::capacity_polled{st.to_advertise,
                                    std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count()});
  if (st.peers.status)
    self->send(st.peers.status, msg::session_view{{}, {}, true});
  st.poll = st.client->get_message(
      st.session, st.last_message_id, st.to_advertise,
      reply_to<std::optional<github::session_message>>(
          self, reply_op::poll, [](actions_reply& r, std::optional<github::session_message> m) { r.message = std::move(m); },
          seq));
}

// Cancels the poll in flight; its reply (cancelled) starts the next one, with the newest value.
// `reissue`: the reorder window's own re-issue, which never opens a window again - its poll was
// issued right after the window opened, so it is always a little younger than the window, and
// each re-issue would schedule the next: a poll every 100 ms for good.
void cancel_poll(listener_self* self, bool reissue = false) {
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
  self->delayed_send(self, std::chrono::seconds(1), cancel_deadline{st.generation, st.poll_seq});
}

void count_failure(listener_self* self, const github::actions_error& e) {
  if (self->state.opts.failed && e.what != github::actions_error::kind::cancelled)
    self->state.opts.failed(github::to_string(e.what));
}

int64_t ms_now(listener_self* self) { return runtime::actor_system_clock{self->clock()}.now_ms(); }

void retry_later(listener_self* self, const github::actions_error& e) {
  auto& st = self->state;
  count_failure(self, e);
  tell_session(self, "Backoff", e.describe());
  st.backoff = st.backoff.count() == 0 ? st.opts.backoff_initial : std::min(st.backoff * 2, st.opts.backoff_max);
  if (e.what != K::transport && e.what != K::server) {
    // Not the service being away but something it said (a body that does not decode, a refusal):
    // each is news, named and counted.
    runtime::log::warn(actor_name, "Actions Service call failed; retrying",
                       {{"scale_set", st.opts.scale_set_id}, {"error", e.describe()}, {"retry_in_ms", st.backoff.count()}});
    self->delayed_send(self, st.backoff, retry_timer{st.generation});
    return;
  }
  const auto v = st.service_outage.failed(ms_now(self));
  runtime::outage::log(actor_name, v, "Actions Service call failed; retrying", "Actions Service calls still failing; retrying",
                       {{"scale_set", st.opts.scale_set_id}, {"error", e.describe()}, {"retry_in_ms", st.backoff.count()},
                        {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
  self->delayed_send(self, st.backoff, retry_timer{st.generation});
}

// A call succeeded: the end of an outage, if there was one, is worth a line.
void service_answered(listener_self* self) {
  auto& st = self->state;
  st.backoff = std::chrono::milliseconds{0};
  if (st.session)
    tell_session(self, "Open");
  if (const auto v = st.service_outage.succeeded(ms_now(self)); v.log == runtime::outage::note::came_back)
    runtime::log::info(actor_name, "the Actions Service answers again",
                       {{"scale_set", st.opts.scale_set_id}, {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
}

// The scale set's statistics as the service counts them now, read with the scale set (GET
// runtime/runnerscalesets/{id}). Messages carry statistics, but only when there is a message: with
// nothing advertised the service assigns nothing and says nothing, and jobs queued for the scale
// set (totalAvailableJobs) were never seen, so a scale set without a HUD and without a warm pool
// never ran a job (#61). Asked after every poll that came back empty and when a backoff ends (a
// quick answer that the service is back, where a poll would be held for ~50 s first).
void refresh_statistics(listener_self* self) {
  auto& st = self->state;
  if (st.stats_in_flight || st.opts.scale_set_id == 0 || st.stopping)
    return;
  st.stats_in_flight = true;
  st.client->get_scale_set_by_id(st.opts.scale_set_id,
                                 reply_to<github::runner_scale_set>(self, reply_op::stats, [](actions_reply& r, github::runner_scale_set s) {
                                   r.stats = s.stats;
                                 }));
}

void publish(listener_self* self, const msg::scale_set_update& u) {
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

// A message's jobs were acquired: remember it as the newest handled (for a successor), tell the
// provisioner, then ack it; its answer polls again.
void finish_message(listener_self* self) {
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
  if (st.session)  // a successor goes on after this message
    remember(self, msg::session_held{st.opts.scale_set_id, st.session->get().session_id, st.last_message_id});
  publish(self, u);
  st.client->delete_message(st.session, st.last_message_id,
                            reply_to<github::done>(self, reply_op::ack, [](actions_reply&, github::done) {}));
}

// The session is ours (created or adopted): remembered for a successor, should this actor crash;
// the provisioner gets its statistics; polling starts.
void session_ready(listener_self* self, const char* what) {
  auto& st = self->state;
  const auto session = st.session->get();
  service_answered(self);
  tell_session(self, "Open");
  remember(self, msg::session_held{st.opts.scale_set_id, session.session_id, st.last_message_id});
  runtime::log::info(actor_name, what,
                     {{"scale_set", st.opts.scale_set_id}, {"session", session.session_id},
                      {"assigned_jobs", session.stats.total_assigned_jobs}});
  publish(self, msg::scale_set_update{st.opts.scale_set_id, statistics_of(session.stats), {}});
  start_poll(self);
}

// A message arrived: acquire its available jobs (then finish it), or finish it at once.
void handle_message(listener_self* self) {
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
// successor would meet 409s), and the actor quits once that is answered or after 8 s (within
// the supervisor's 10 s stop deadline: 1,000 scale sets stopping at once share the GitHub
// transport, and 3 s left a third of their sessions behind).
void on_exit(listener_self* self, const caf::exit_msg& m) {
  auto& s = self->state;
  if (s.poll)
    s.poll->cancel();
  if (!s.session || s.stopping) {
    self->quit(m.reason);
    return;
  }
  if (s.opts.hand_over && s.opts.memo && s.opts.hand_over->get()) {  // its successor adopts the session
    const auto id = s.session->get().session_id;
    s.opts.memo->set(msg::session_held{s.opts.scale_set_id, id, s.last_message_id});
    runtime::log::info(actor_name, "stopping: the session is handed over to the listener that replaces this one",
                       {{"scale_set", s.opts.scale_set_id}, {"session", id}});
    self->quit(m.reason);
    return;
  }
  s.stopping = true;
  s.stop_reason = m.reason;
  ++s.generation;  // every other reply is now stale
  s.client->delete_session(s.session, reply_to<github::done>(self, reply_op::closed, [](actions_reply&, github::done) {}));
  self->delayed_send(self, std::chrono::seconds(8), retry_timer{s.generation});
}

// A new capacity from the monitor.
void on_capacity(listener_self* self, msg::set_max_capacity m) {
  auto& s = self->state;
  const int64_t v = std::max<int64_t>(0, m.capacity);
  if (v == s.to_advertise)
    return;
  s.to_advertise = v;
  // The service reads the capacity only when a poll starts. A drop must reach it at once (or
  // it keeps assigning by the old value for up to 50 s); a rise too, or placed room sits
  // idle while jobs queue. A cancelled poll loses nothing: an unacked message comes again.
  if (s.polling && !s.poll_cancelled && s.to_advertise != s.poll_capacity && s.opts.repoll_on_change) {
    if (s.to_advertise < s.poll_capacity)
      runtime::log::info(actor_name, "capacity dropped below the in-flight poll's: re-polling",
                         {{"scale_set", s.opts.scale_set_id}, {"was", s.poll_capacity}, {"now", s.to_advertise}});
    cancel_poll(self);
  }
}

void remember(listener_self* self, msg::session_held held) {
  if (self->state.opts.memo)
    self->state.opts.memo->set(std::move(held));
}

// At start: the session a crashed predecessor left (and did not delete), to adopt.
void recall_session(listener_self* self) {
  auto& s = self->state;
  if (!s.opts.memo)
    return;
  if (auto held = s.opts.memo->get(); !held.session_id.empty())
    s.stale = std::move(held);
}

// A backoff ended (or, stopping, the session delete was not answered in time).
void on_retry(listener_self* self, uint64_t generation) {
  auto& s = self->state;
  if (generation != s.generation)
    return;
  if (s.stopping) {  // the session delete was not answered in time
    self->quit(s.stop_reason);
    return;
  }
  if (s.opts.scale_set_id == 0) {
    resolve_scale_set(self);
  } else if (!s.session) {
    open_session(self);
  } else {
    start_poll(self);
    refresh_statistics(self);  // answered at once when the service is back; the poll is held
  }
}


listener_impl::behavior_type listener_behavior(listener_self* self, std::shared_ptr<github::actions_client> client, listener_peers peers,
                                listener_options opts) {
  auto& st = self->state;
  st.client = std::move(client);
  st.peers = std::move(peers);
  st.opts = std::move(opts);
  st.to_advertise = std::max<int64_t>(0, st.opts.initial_capacity);
  if (st.peers.capacity)  // a restarted listener starts from the monitor's newest value
    self->send(st.peers.capacity, msg::capacity_atom_v);
  recall_session(self);  // and adopts (or deletes) the session a crashed predecessor left
  // Stopping: the session is deleted (the service would otherwise hold it until it expires and a
  // successor would meet 409s), and the actor quits once that is answered or after 8 s (within
// the supervisor's 10 s stop deadline: 1,000 scale sets stopping at once share the GitHub
// transport, and 3 s left a third of their sessions behind).
  self->set_exit_handler([self](caf::exit_msg& m) { on_exit(self, m); });
  if (st.opts.scale_set_id == 0)
    resolve_scale_set(self);
  else
    open_session(self);
  return {
      [self](msg::set_max_capacity m) { on_capacity(self, m); },
      [self](msg::view_atom) {  // a restarted scale_set_status: the session's state as last told
        const auto& s = self->state;
        if (!s.told_state.empty())
          self->send(caf::actor_cast<session_view_sink>(self->current_sender()), msg::session_view{s.told_state, s.told_message, false});
      },
      [self](msg::update_atom) {
        auto& s = self->state;
        if (s.stats && s.opts.scale_set_id != 0)
          self->send(caf::actor_cast<update_sink>(self->current_sender()), msg::scale_set_update{s.opts.scale_set_id, *s.stats, {}});
      },
      [self](reorder_window_passed t) {
        auto& s = self->state;
        if (t.generation != s.generation || t.poll != s.poll_seq || !s.polling || s.poll_cancelled)
          return;  // ended (its successor was issued after the window) or already cancelled
        runtime::log::debug(actor_name, "re-issuing the poll: a poll cancelled just before it may have reached the service after it",
                            {{"scale_set", s.opts.scale_set_id}, {"capacity", s.to_advertise}});
        cancel_poll(self, true);
      },
      [self](cancel_deadline t) {
        auto& s = self->state;
        if (t.generation != s.generation || t.poll != s.poll_seq || !s.polling || !s.poll_cancelled)
          return;  // answered in time
        runtime::log::warn(actor_name, "a cancelled poll did not end within 1 s: giving it up and polling again",
                           {{"scale_set", s.opts.scale_set_id}, {"capacity", s.to_advertise}});
        s.polling = false;
        s.poll.reset();  // its late answer names an older poll and is ignored
        start_poll(self);
      },
      [self](retry_timer t) { on_retry(self, t.generation); },
      [self](queue_check t) { on_queue_check(self, t); },
      [self](actions_reply& r) { on_reply(self, r); },
  };
}

}  // namespace

listener_actor spawn_listener_session(caf::actor_system& sys, std::shared_ptr<github::actions_client> client,
                                      listener_peers peers, listener_options opts) {
  return sys.spawn(listener::listener_behavior, std::move(client), std::move(peers), std::move(opts));
}

}  // namespace headroom::actors
