// gate_controller: admits gated pods into their headroom Queue (seed 002). Each Queue has a book
// (queue_book.hpp) that every pod change re-books, and a changed queue is planned from it: gates
// removed in order, conditions and Events for the pods whose standing changed, expired
// reservations reported, the Queue's status written. The book is what the informer cache shows,
// kept by change (plan_queue in model.hpp is its definition, and the resync judges every pod
// again): a restarted controller books the cache afresh, and the ungating annotation on each pod
// keeps its reservation's age across restarts.
//
// A gate is removed with a JSON patch that tests the pod's resourceVersion and that the gate at
// that index is ours, so another gate is never removed and a stale view never admits a pod twice:
// a failed test (a newer pod) waits for the informer's newer view and plans again.

#include "actors/gates/gate_controller_state.hpp"

namespace headroom::actors::gates {
namespace {

using namespace ctl;

void arm_expiry(controller_self* self, wall_time when) {
  auto& st = self->state;
  if (st.expiry_due && *st.expiry_due <= when)
    return;  // an earlier timer covers it (a later plan re-arms)
  st.expiry_due = when;
  const auto wait = std::max(std::chrono::milliseconds{0},
                             std::chrono::duration_cast<std::chrono::milliseconds>(when - st.ctx->wall_clock())) +
                    std::chrono::milliseconds{50};
  self->delayed_send(self, wait, expiry_timer{++st.expiry_generation});
}

void plan_one(controller_self* self, const std::string& queue, bool full) {
  auto& st = self->state;
  const auto& ctx = *st.ctx;
  auto it = st.queues.find(queue);
  if (it == st.queues.end() || !it->second.book) {
    // No such Queue (or one that cannot be read): its gated pods say so and stay gated.
    for (const auto& p : ctx.pods->by_index(std::string{queue_index}, queue))
      if (has_our_gate(*p)) {
        auto c = queue_not_found(*p, queue);
        if (it != st.queues.end())
          c.message = "queue " + queue + " cannot be read (see headroom's log): the pod stays gated until it can";
        const auto* have = p->find_condition(admitted_condition);
        if (!have || have->reason != c.reason || have->message != c.message)
          write_condition(self, queue, c, p->meta.uid);
      }
    return;
  }
  auto& entry = it->second;
  const auto now = ctx.wall_clock();
  auto plan = entry.book->plan(now, full);
  auto cached = [&ctx](const std::string& ns, const std::string& name) { return ctx.pods->get(ns, name); };
  for (const auto& u : plan.ungates)
    if (auto p = cached(u.ns, u.name))
      ungate_pod(self, queue, u, *p);
  for (const auto& c : plan.conditions)
    if (auto p = cached(c.ns, c.name))
      write_condition(self, queue, c, p->meta.uid);
  for (const auto& key : plan.expired) {
    const auto slash = key.find('/');
    auto f = cached(key.substr(0, slash), key.substr(slash + 1));
    if (!f)
      continue;
    const auto& p = *f;
    if (!st.expiry_told.insert(key + "/" + p.meta.uid).second)
      continue;
    if (ctx.metrics.expired)
      ctx.metrics.expired(queue);
    runtime::log::warn(actor_name, "reservation expired: the pod no longer holds its queue's room",
                       {{"queue", queue}, {"pod", key}});
    record_event(self, p.meta.ns, p.meta.name, p.meta.uid, "Warning", "ReservationExpired",
                 "admitted to queue " + queue + " but not scheduled within " +
                     std::to_string(entry.rules->reservation_timeout.count() / 1000) +
                     "s: it no longer holds the queue's room (it may still be scheduled)");
  }
  if (plan.next_expiry)
    arm_expiry(self, *plan.next_expiry);
  if (ctx.metrics.report)
    ctx.metrics.report(queue, plan.status, entry.rules->spec.capacity);
  write_status(self, queue, entry, plan.status);
}

void plan_dirty(controller_self* self) {
  auto dirty = std::move(self->state.dirty);
  self->state.dirty.clear();
  auto full = std::move(self->state.full);
  self->state.full.clear();
  for (const auto& q : dirty)
    plan_one(self, q, full.contains(q));
}

// The pod as the cache shows it, into its queue's book (nullptr: it left the queue).
void book_pod(controller_self* self, const std::string& queue, const std::string& key,
              std::shared_ptr<const k8s::pod> p) {
  auto& st = self->state;
  auto it = st.queues.find(queue);
  if (it == st.queues.end() || !it->second.book)
    return;
  const bool flying = p && st.in_flight[queue].contains(key);
  it->second.book->put(key, std::move(p), flying, st.ctx->wall_clock());
}

void on_pod(controller_self* self, const msg::pod_event& e) {
  auto& st = self->state;
  const auto& p = *e.object;
  const std::string key = key_of(p);
  const auto* label = queue_label(p);
  // A pod whose label changed (or that went away) also changes its old queue.
  if (auto old = st.queue_of.find(key); old != st.queue_of.end() && (!label || *label != old->second)) {
    st.dirty.insert(old->second);
    st.in_flight[old->second].erase(key);
    book_pod(self, old->second, key, nullptr);
  }
  if (e.change == msg::object_change::deleted) {
    st.queue_of.erase(key);
    st.condition_in_flight.erase(key);
    st.reason_told.erase(key);
    st.awaiting_newer.erase(key);
    if (label) {
      st.dirty.insert(*label);
      st.in_flight[*label].erase(key);
      book_pod(self, *label, key, nullptr);
    }
    return;
  }
  if (!label)
    return;
  st.queue_of[key] = *label;
  st.dirty.insert(*label);
  if (auto stale = st.awaiting_newer.find(key); stale != st.awaiting_newer.end() && stale->second != p.meta.resource_version) {
    st.awaiting_newer.erase(stale);
    st.in_flight[*label].erase(key);  // a newer view: judged again from it
  }
  if (!has_our_gate(p)) {
    auto& flying = st.in_flight[*label];
    flying.erase(key);  // the informer shows it ungated: no longer in flight
    st.reason_told.erase(key);
    st.awaiting_newer.erase(key);
  }
  book_pod(self, *label, key, e.object);
}

void on_queue(controller_self* self, const msg::object_event<k8s::unstructured>& e) {
  auto& st = self->state;
  const auto& name = e.object->meta.name;
  st.dirty.insert(name);
  if (e.change == msg::object_change::deleted) {
    if (st.ctx->metrics.forget)
      st.ctx->metrics.forget(name);
    st.queues.erase(name);
    return;
  }
  auto& entry = st.queues[name];
  auto decoded = k8s::decode_queue(e.object->raw);
  if (auto* err = std::get_if<k8s::decode_error>(&decoded)) {
    if (entry.rules || e.change != msg::object_change::resync) {
      runtime::log::error(actor_name, "Queue cannot be read: its pods stay gated", {{"queue", name}, {"problem", err->message}});
      if (st.ctx->metrics.error)
        st.ctx->metrics.error("queue_invalid");
    }
    entry.rules.reset();
    entry.book.reset();
    // kubectl shows why: the Active condition False (the counts as last written).
    auto status = entry.written.value_or(k8s::queue_status{});
    status.active = false;
    status.active_reason = "InvalidSpec";
    status.active_message = "headroom cannot read this Queue, so its pods stay gated: " + err->message;
    write_status(self, name, entry, std::move(status));
    return;
  }
  queue_rules r;
  r.spec = std::get<k8s::queue>(std::move(decoded));
  r.reservation_timeout = r.spec.reservation_timeout.value_or(st.ctx->default_reservation_timeout);
  // A new spec (or the first readable one) books the queue's pods afresh; a status write or a
  // label leaves the book as it is.
  const bool same = entry.book && entry.rules && entry.rules->spec.generation == r.spec.generation &&
                    entry.rules->spec.capacity == r.spec.capacity && entry.rules->spec.strict_fifo == r.spec.strict_fifo &&
                    entry.rules->reservation_timeout == r.reservation_timeout;
  entry.rules = r;
  if (same)
    return;
  entry.book.emplace(std::move(r));
  for (const auto& p : st.ctx->pods->by_index(std::string{queue_index}, name))
    book_pod(self, name, key_of(*p), p);
}

void on_reply(controller_self* self, msg::api_reply& r) {
  auto& st = self->state;
  auto found = st.calls.take(r);
  if (!found)
    return;
  auto& call = *found;
  const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
  const std::string key = call.ns + "/" + call.name;
  switch (call.what) {
    case call_info::ungate:
      if (r.ok) {
        if (st.ctx->metrics.ungated)
          st.ctx->metrics.ungated(call.queue, std::chrono::duration<double>(now_of(self) - call.started).count(),
                                  std::chrono::duration<double>(now_of(self) - call.sent).count(), call.group);
        return;  // in flight until the informer shows it
      }
      if (kind == k8s::api_error::kind::invalid || kind == k8s::api_error::kind::conflict) {
        // A test failed: the pod changed. Plan again once the cache shows a newer version.
        auto p = st.ctx->pods->get(call.ns, call.name);
        if (p && p->meta.resource_version == call.resource_version) {
          st.awaiting_newer[key] = call.resource_version;  // still in flight until then
          return;
        }
        st.in_flight[call.queue].erase(key);
        book_pod(self, call.queue, key, p);
        st.dirty.insert(call.queue);
        return;
      }
      st.in_flight[call.queue].erase(key);
      book_pod(self, call.queue, key, st.ctx->pods->get(call.ns, call.name));
      if (kind == k8s::api_error::kind::not_found)
        return;
      runtime::log::warn(actor_name, "ungating failed: retried at the next change or resync", {{"pod", key}, {"error", r.error}});
      if (st.ctx->metrics.error)
        st.ctx->metrics.error("ungate");
      return;
    case call_info::condition:
      st.condition_in_flight.erase(key);
      --st.bulk_in_flight;
      st.dirty.merge(st.deferred);
      st.deferred.clear();
      write_held_conditions(self);
      if (!r.ok && kind != k8s::api_error::kind::not_found) {
        runtime::log::warn(actor_name, "pod condition not written", {{"pod", key}, {"error", r.error}});
        if (st.ctx->metrics.error)
          st.ctx->metrics.error("condition");
      }
      return;
    case call_info::status: {
      auto it = st.queues.find(call.queue);
      if (it == st.queues.end())
        return;
      it->second.status_in_flight = false;
      if (!r.ok) {
        it->second.written.reset();
        if (kind != k8s::api_error::kind::not_found) {
          runtime::log::warn(actor_name, "Queue status not written", {{"queue", call.queue}, {"error", r.error}});
          if (st.ctx->metrics.error)
            st.ctx->metrics.error("status");
        }
      }
      st.dirty.insert(call.queue);  // anything that changed meanwhile
      return;
    }
  }
}

controller_impl::behavior_type controller_behavior(controller_self* self, controller_context_ptr ctx) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  const auto me = runtime::handle_of(self);
  st.queue_feed = std::make_unique<informer_feed<k8s::unstructured>>("gates_queues", me, queues_buffer);
  st.pod_feed = std::make_unique<informer_feed<k8s::pod>>("gates_pods", me, pods_buffer);
  st.queue_feed->attach(st.ctx->queues);
  st.pod_feed->attach(st.ctx->pods);
  if (st.ctx->track_buffer) {
    st.ctx->track_buffer(st.pod_feed->stats());
    st.ctx->track_buffer(st.queue_feed->stats());
  }
  // A restarted controller starts from the caches as they are (an informer only tells changes).
  for (const auto& q : st.ctx->queues->list())
    on_queue(self, {msg::object_change::resync, q});
  for (const auto& p : st.ctx->pods->list())
    on_pod(self, {msg::object_change::resync, p});
  st.woke = now_of(self);
  plan_dirty(self);
  self->delayed_send(self, st.ctx->resync_interval, resync_timer{});
  return {
      [self](msg::buffer_wakeup w) {
        auto& s = self->state;
        s.woke = now_of(self);
        // Queues first: a pod's plan needs its Queue.
        if (w.buffer == queues_buffer)
          s.queue_feed->drain([self](const msg::object_event<k8s::unstructured>& e) { on_queue(self, e); });
        else
          s.pod_feed->drain([self](const msg::pod_event& e) { on_pod(self, e); });
        plan_dirty(self);
      },
      [self](resync_timer) {
        auto& s = self->state;
        s.woke = now_of(self);
        for (const auto& [name, entry] : s.queues) {
          s.dirty.insert(name);
          s.full.insert(name);  // every pod judged again, every condition looked at
        }
        for (const auto& [key, queue] : s.queue_of)
          s.dirty.insert(queue);  // pods of queues that do not exist
        self->delayed_send(self, s.ctx->resync_interval, resync_timer{});
        plan_dirty(self);
      },
      [self](expiry_timer t) {
        auto& s = self->state;
        s.woke = now_of(self);
        if (t.generation != s.expiry_generation)
          return;  // superseded by an earlier timer
        s.expiry_due.reset();
        for (const auto& [name, entry] : s.queues)
          s.dirty.insert(name);
        plan_dirty(self);
      },
      [self](msg::api_reply& r) {
        on_reply(self, r);
        plan_dirty(self);
      },
  };
}

}  // namespace

gate_controller_actor spawn_gate_controller(caf::actor_system& sys, controller_context_ptr ctx) {
  return sys.spawn(controller_behavior, std::move(ctx));
}

}  // namespace headroom::actors::gates
