#include "actors/k8s/event_recorder.hpp"
#include "runtime/typed_handle.hpp"

#include <caf/all.hpp>

#include <deque>

#include "actors/k8s/api_calls.hpp"
#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"

namespace headroom::actors {

namespace {

constexpr std::string_view actor_name = "event_recorder";
const k8s::resource_kind events_v1{"events.k8s.io", "v1", "events", true};

struct call_info {
  bool create = true;  // or a series write
  std::string ns, name;
};

struct pending_create {
  std::string ns, name, body;
};

struct recorder_state {
  std::shared_ptr<const event_recorder_options> opts;
  k8s::event_book book;
  std::deque<pending_create> pending;
  std::deque<k8s::event_book::series_update> pending_series;
  api_calls<call_info> calls;
  static inline const char* name = "headroom.event_recorder";
};
// The recorder's own messages: its flush timer, and the API server's answers to its writes.
using recorder_impl = event_sink::extend<caf::reacts_to<msg::flush_atom>, caf::reacts_to<msg::api_reply>>;
using recorder_actor = recorder_impl::stateful_base<recorder_state>;

void count(recorder_actor* self, const char* outcome) {
  if (self->state.opts->counted)
    self->state.opts->counted(outcome);
}

// Starts waiting writes while there is room: creates first (a new Event says more than a count).
void pump(recorder_actor* self) {
  auto& st = self->state;
  auto& client = *st.opts->kube;
  while (st.calls.in_flight() < st.opts->max_in_flight && !st.pending.empty()) {
    auto c = std::move(st.pending.front());
    st.pending.pop_front();
    st.calls.start(self, {true, c.ns, c.name},
                   [&client, ns = c.ns, body = std::move(c.body)](k8s::api_callback cb) mutable {
                     client.create(events_v1, ns, std::move(body), std::move(cb));
                   });
  }
  while (st.calls.in_flight() < st.opts->max_in_flight && !st.pending_series.empty()) {
    auto u = std::move(st.pending_series.front());
    st.pending_series.pop_front();
    st.calls.start(self, {false, u.ns, u.name},
                   [&client, u](k8s::api_callback cb) {
                     client.merge_patch(events_v1, u.ns, u.name, k8s::encode_series_patch(u.count, u.last_observed), std::move(cb));
                   });
  }
}

void on_event(recorder_actor* self, const msg::k8s_event& m) {
  auto& st = self->state;
  k8s::event_record e{{m.api_version, m.kind, m.ns, m.name, m.uid}, m.type, m.reason, m.action, m.note};
  const double wall = st.opts->wall_clock();
  auto out = st.book.observe(e, self->clock().now(), wall);
  switch (out.what) {
    case k8s::event_book::verdict::series:
      count(self, "series");
      return;
    case k8s::event_book::verdict::rate_limited:
      count(self, "rate_limited");
      runtime::log::debug(actor_name, "event dropped: the object's event budget is spent",
                          {{"object", m.kind + " " + m.ns + "/" + m.name}, {"reason", m.reason}});
      return;
    case k8s::event_book::verdict::create:
      break;
  }
  if (st.pending.size() >= st.opts->max_pending) {
    count(self, "queue_full");
    st.book.created(out.ns, out.name, false);
    return;
  }
  st.pending.push_back({out.ns, out.name, k8s::encode_event(e, out.name, wall, st.opts->controller, st.opts->instance)});
  pump(self);
}

}  // namespace

void tell_event(const event_sink& recorder, msg::k8s_event e) {
  if (recorder)
    caf::anon_send(recorder, std::move(e));
}

event_sink spawn_event_recorder(caf::actor_system& sys, std::shared_ptr<const event_recorder_options> opts) {
  // The options go in as a spawn argument, not a capture: CAF 0.17.6 dereferences a null argument
  // tuple when an actor is spawned with none (UBSan flags it in every cluster-mode start).
  return sys.spawn([](recorder_actor* self, std::shared_ptr<const event_recorder_options> opts) -> recorder_impl::behavior_type {
    auto& st = self->state;
    st.opts = opts;
    st.book = k8s::event_book{opts->book};
    self->delayed_send(self, opts->flush_interval, msg::flush_atom_v);
    return {
        [self](msg::k8s_event& e) { on_event(self, e); },
        [self](msg::flush_atom) {
          auto& s = self->state;
          for (auto& u : s.book.due_updates(self->clock().now()))
            s.pending_series.push_back(std::move(u));
          pump(self);
          self->delayed_send(self, s.opts->flush_interval, msg::flush_atom_v);
        },
        [self](msg::api_reply& r) {
          auto& s = self->state;
          auto call = s.calls.take(r);
          if (!call)
            return;
          const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
          if (call->create) {
            // A failed create (AlreadyExists after a clock step back included) is forgotten: the
            // next occurrence creates a new Event.
            s.book.created(call->ns, call->name, r.ok);
            count(self, r.ok ? "created" : "failed");
            if (!r.ok)
              runtime::log::debug(actor_name, "event not recorded", {{"event", call->ns + "/" + call->name}, {"error", r.error}});
          } else {
            s.book.series_written(call->ns, call->name, r.ok, kind == k8s::api_error::kind::not_found);
            if (!r.ok) {
              count(self, "failed");
              runtime::log::debug(actor_name, "event series not written", {{"event", call->ns + "/" + call->name}, {"error", r.error}});
            }
          }
          pump(self);
        },
    };
  }, std::move(opts));
}

}  // namespace headroom::actors
