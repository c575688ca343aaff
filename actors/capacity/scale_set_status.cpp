// scale_set_status: one per scale set, under its supervisor. It keeps what the capacity monitor
// and the listener last said, and writes it as the status of the ScaleSet object named after the
// scale set (creating the object first), at most once every `interval`: a burst of changes is one
// write, the newest.
//
// The ScaleSet CRD is optional (deploy/crds/scalesets.yaml; the chart installs it): without it the
// create answers 404, which is logged once, and the actor asks again every 5 minutes.

#include "actors/capacity/scale_set_status.hpp"
#include "adapters/k8s/fields.hpp"
#include "runtime/typed_handle.hpp"

#include <caf/all.hpp>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <deque>

#include "actors/k8s/event_recorder.hpp"

#include "actors/capacity/capacity.hpp"
#include "actors/k8s/api_calls.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"
#include "runtime/rfc3339.hpp"

namespace headroom::actors::capacity {

namespace {

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

void field(json_writer& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void field(json_writer& w, const char* key, int64_t value) {
  w.Key(key);
  w.Int64(value);
}

// The SessionOpen condition, per the API conventions: a reason in CamelCase, a message for people.
void session_condition(json_writer& w, const scale_set_view& v) {
  const bool open = v.session == "Open";
  const std::string reason = open                     ? "SessionHeld"
                             : v.session == "Backoff"  ? "ServiceUnavailable"
                             : v.session == "Conflict" ? "SessionConflict"
                                                       : "Opening";
  const std::string message = open ? "the listener holds the scale set's message session"
                                   : (v.session_message.empty() ? "the listener is opening the scale set's message session"
                                                                : v.session_message);
  w.StartObject();
  field(w, "type", std::string{"SessionOpen"});
  field(w, "status", std::string{open ? "True" : "False"});
  field(w, "lastTransitionTime", v.session_since);
  field(w, "reason", reason);
  field(w, "message", message);
  w.EndObject();
}

// The PairsPlaced condition: False while the last pair that timed out is the newest word on
// placement, with the scheduler's reason (the pods themselves are deleted), so `kubectl describe
// scaleset` shows why no capacity is advertised.
void pairs_condition(json_writer& w, const scale_set_view& v) {
  const bool placed = v.capacity.unplaced.empty();
  w.StartObject();
  field(w, "type", std::string{"PairsPlaced"});
  field(w, "status", std::string{placed ? "True" : "False"});
  field(w, "lastTransitionTime", v.pairs_since);
  field(w, "reason", std::string{placed ? "Placed" : "PlaceholderPairTimedOut"});
  field(w, "message", placed ? std::string{"no placeholder pair has timed out since the last was placed"} : v.capacity.unplaced);
  w.EndObject();
}

// Ready, per the API conventions' summary condition: the scale set serves its runners (its
// session is held); else the session's reason. observedGeneration: the spec it describes.
void ready_condition(json_writer& w, const scale_set_view& v) {
  const bool open = v.session == "Open";
  w.StartObject();
  field(w, "type", std::string{"Ready"});
  field(w, "status", std::string{open ? "True" : "False"});
  if (v.generation > 0)
    field(w, "observedGeneration", v.generation);
  field(w, "lastTransitionTime", v.session_since);
  field(w, "reason", std::string{open ? "SessionHeld" : v.session == "Backoff" ? "ServiceUnavailable" : v.session == "Conflict" ? "SessionConflict" : "Opening"});
  field(w, "message", open ? std::string{"the scale set's session is held and its capacity advertised"}
                           : (v.session_message.empty() ? std::string{"the listener is opening the scale set's message session"}
                                                        : v.session_message));
  w.EndObject();
}

// Written whole (a merge patch replaces a list), so only once the session's state is known.
void conditions(json_writer& w, const scale_set_view& v) {
  w.Key("conditions");
  w.StartArray();
  session_condition(w, v);
  if (v.capacity_known)
    pairs_condition(w, v);
  ready_condition(w, v);
  w.EndArray();
}

}  // namespace

std::string scale_set_object(const std::string& ns, const std::string& name, const std::string& instance) {
  rapidjson::StringBuffer out;
  json_writer w{out};
  w.StartObject();
  field(w, "apiVersion", std::string{"headroom.dev/v1alpha1"});
  field(w, "kind", std::string{"ScaleSet"});
  w.Key("metadata");
  w.StartObject();
  field(w, "name", name);
  field(w, "namespace", ns);
  w.Key("labels");
  w.StartObject();
  field(w, "app.kubernetes.io/managed-by", std::string{"headroom"});
  if (!instance.empty())
    field(w, runners::keys::instance, instance);
  w.EndObject();
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.EndObject();
  w.EndObject();
  return out.GetString();
}

std::string scale_set_status_patch(const scale_set_view& v, const std::string& observed) {
  rapidjson::StringBuffer out;
  json_writer w{out};
  w.StartObject();
  w.Key("status");
  w.StartObject();
  if (v.capacity_known) {
    field(w, "advertisedCapacity", v.capacity.advertised);
    field(w, "maxRunners", v.capacity.max_runners);
    field(w, "desiredPairs", v.capacity.desired_pairs);
    field(w, "pairs", v.capacity.pairs);
    field(w, "placedPairs", v.capacity.placed_pairs);
    field(w, "runnerPods", v.capacity.runner_pods);
  }
  if (v.stats_known) {
    field(w, "scaleSetId", v.scale_set_id);
    field(w, "assignedJobs", v.stats.total_assigned_jobs);
    field(w, "runningJobs", v.stats.total_running_jobs);
    field(w, "registeredRunners", v.stats.total_registered_runners);
    field(w, "busyRunners", v.stats.total_busy_runners);
  }
  if (!v.session.empty()) {  // unknown (a restarted actor not told yet): the object keeps what it says
    field(w, "session", v.session);
    field(w, "sessionMessage", v.session_message);
  }
  if (!v.last_poll.empty())
    field(w, "lastPollTime", v.last_poll);
  field(w, "observedTime", observed);
  if (v.generation > 0)
    field(w, "observedGeneration", v.generation);
  if (!v.session.empty())
    conditions(w, v);
  w.EndObject();
  w.EndObject();
  return out.GetString();
}

std::string scale_set_refused_patch(int64_t generation, const std::string& reason, const std::string& message,
                                    const std::string& now) {
  rapidjson::StringBuffer out;
  json_writer w{out};
  w.StartObject();
  w.Key("status");
  w.StartObject();
  field(w, "observedGeneration", generation);
  field(w, "observedTime", now);
  field(w, "session", std::string{});
  w.Key("conditions");
  w.StartArray();
  w.StartObject();
  field(w, "type", std::string{"Ready"});
  field(w, "status", std::string{"False"});
  field(w, "observedGeneration", generation);
  field(w, "lastTransitionTime", now);
  field(w, "reason", reason);
  field(w, "message", message);
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return out.GetString();
}

namespace {

constexpr std::string_view actor_name = "scale_set_status";
constexpr auto crd_retry = std::chrono::minutes(5);
// A new poll alone (lastPollTime) is written at most every 4 to 6 minutes, the same for one scale
// set, spread across scale sets by its name. One write a minute spent a third of the default
// budget (kubernetes.qps 50) at 1,000 scale sets on a timestamp, in waves: every scale set's
// session opened at start-up, so all of them wrote in the same 20 s of each minute.
constexpr auto poll_only_interval = std::chrono::seconds(240);
constexpr auto poll_only_spread = std::chrono::seconds(120);

std::chrono::milliseconds poll_only_gap_for(const std::string& scale_set) {
  // FNV-1a: the same gap on every platform and in every run (std::hash is neither).
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : scale_set)
    h = (h ^ c) * 1099511628211ull;
  return std::chrono::duration_cast<std::chrono::milliseconds>(poll_only_interval) +
         std::chrono::milliseconds(h % static_cast<uint64_t>(std::chrono::milliseconds(poll_only_spread).count()));
}
// A failed create or write is tried again after 1 s doubling to 30 s, jittered: an API server
// that restarted (and answers 403 until its RBAC caches are filled, or 503) is written again within
// a second or two of being back, and 1,000 scale sets that failed together do not retry in step.
constexpr runtime::outage_options write_backoff{.initial = std::chrono::seconds(1), .max = std::chrono::seconds(30),
                                                .reminder = std::chrono::minutes(10), .jitter = 0.5};

const k8s::resource_kind scale_sets{"headroom.dev", "v1alpha1", "scalesets", true};

enum class call : uint8_t { create, get, patch };
constexpr size_t max_waiting_events = 32;

struct status_state {
  context_ptr ctx;
  std::chrono::milliseconds interval{5'000};
  std::chrono::milliseconds poll_only_gap{poll_only_interval};  // poll_only_gap_for(its name)
  scale_set_view view;
  bool dirty = false;        // the view changed since the last write started
  bool urgent = false;       // by more than a new poll's time (written within `interval`)
  bool exists = false;       // the object was created (or found)
  bool in_flight = false;    // a create or patch is under way
  bool scheduled = false;    // a flush tick is pending
  runtime::clock::time_point scheduled_at{};  // when it fires
  uint64_t generation = 0;   // of the pending tick
  bool failing = false;      // the last write failed (logged once until one succeeds)
  runtime::outage backoff{write_backoff};  // when to try a failed create or write again
  runtime::clock::time_point last_write{};
  api_calls<call> calls;
  std::string uid;                          // the object's, once created or read
  // The session state and its transition time the object held when read (an earlier actor's): kept
  // when the listener tells the same state again, so a restart does not move lastTransitionTime.
  std::string prior_session, prior_since;
  bool since_guessed = false;  // view.session_since is when the listener first told, not a transition
  std::deque<msg::k8s_event> waiting;       // Events about it from before the uid was known
};

// The status actor's own messages: its write timer (generation) and the API server's answers.
using status_impl = status_actor::extend<caf::reacts_to<msg::flush_atom, uint64_t>, caf::reacts_to<msg::api_reply>>;
using status_self = status_impl::stateful_base<status_state>;

std::string wall_text(status_self* self) {
  return runtime::format_rfc3339(runtime::actor_system_clock{self->clock()}.wall_seconds(), 0);
}

// A flush `after` from now, unless one is due sooner (a later tick replaces a pending one only
// when it is earlier: the generation retires the other).
void schedule(status_self* self, std::chrono::milliseconds after) {
  auto& st = self->state;
  const auto at = self->clock().now() + after;
  if (st.scheduled && st.scheduled_at <= at)
    return;
  st.scheduled = true;
  st.scheduled_at = at;
  self->delayed_send(self, after, msg::flush_atom_v, ++st.generation);
}

// A change: written at once when the last write is `min_gap` old, else when it is.
void changed(status_self* self, std::chrono::milliseconds min_gap) {
  auto& st = self->state;
  st.dirty = true;
  st.urgent = st.urgent || min_gap < st.poll_only_gap;
  if (st.in_flight)
    return;  // the reply schedules the next write
  if (st.failing)
    return;  // the failure's retry is scheduled (5 minutes while the CRD is missing): not every change
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(self->clock().now() - st.last_write);
  schedule(self, std::max(std::chrono::milliseconds{0}, min_gap - since));
}

void changed(status_self* self) { changed(self, self->state.interval); }

void read_object(status_self* self);

void write(status_self* self) {
  auto& st = self->state;
  st.in_flight = true;
  st.dirty = false;
  st.urgent = false;
  auto* kube = st.ctx->status_kube != nullptr ? st.ctx->status_kube : st.ctx->kube;
  const auto& ns = st.ctx->spec.ns;
  const auto& name = st.ctx->spec.name;
  if (!st.exists && st.ctx->spec.declared)  // the user's object: read, never made
    return read_object(self);
  if (!st.exists) {
    st.calls.start(self, call::create, [kube, ns, body = scale_set_object(ns, name, st.ctx->instance)](k8s::api_callback cb) {
      kube->create(scale_sets, ns, body, std::move(cb));
    });
    return;
  }
  st.calls.start(self, call::patch,
                 [kube, ns, name, body = scale_set_status_patch(st.view, wall_text(self))](k8s::api_callback cb) {
                   kube->merge_patch(scale_sets, ns, name, body, std::move(cb), "status");
                 });
}

// The object's uid: Events about it carry it (kubectl describe matches on it); those that came
// before it go now.
void learn_uid(status_self* self, const std::string& body) {
  auto& st = self->state;
  std::string uid = k8s::uid_of(body);
  if (uid.empty())
    return;
  st.uid = std::move(uid);
  for (auto& e : st.waiting) {
    e.uid = st.uid;
    tell_event(st.ctx->events, std::move(e));
  }
  st.waiting.clear();
}

void learn_session(status_self* self, const std::string& body) {
  auto& st = self->state;
  auto prior = k8s::scale_set_session_of(body);
  if (prior.session.empty())
    return;
  st.prior_session = std::move(prior.session);
  st.prior_since = std::move(prior.open_since);
  auto& v = st.view;
  if (st.since_guessed && v.session == st.prior_session && !st.prior_since.empty())
    v.session_since = st.prior_since;
  st.since_guessed = false;
}

void read_object(status_self* self) {
  auto& st = self->state;
  st.in_flight = true;
  auto* kube = st.ctx->kube;
  st.calls.start(self, call::get, [kube, ns = st.ctx->spec.ns, name = st.ctx->spec.name](k8s::api_callback cb) {
    kube->get(scale_sets, ns, name, std::move(cb));
  });
}

// An Event about the ScaleSet object: sent with its uid, or kept (the newest 32) until it is known.
void on_event(status_self* self, msg::k8s_event& e) {
  auto& st = self->state;
  if (!st.uid.empty()) {
    e.uid = st.uid;
    return tell_event(st.ctx->events, std::move(e));
  }
  if (st.waiting.size() == max_waiting_events)
    st.waiting.pop_front();
  st.waiting.push_back(std::move(e));
}

void failed(status_self* self, const std::string& what, const msg::api_reply& r, std::chrono::milliseconds retry) {
  auto& st = self->state;
  if (!st.failing)
    runtime::log::warn(actor_name, what, {{"scale_set", st.ctx->spec.name}, {"error", r.error}, {"retry_in_ms", retry.count()}});
  st.failing = true;
  st.dirty = true;
  schedule(self, retry);
}

std::chrono::milliseconds retry_after_error(status_self* self) {
  return self->state.backoff.failed(runtime::actor_system_clock{self->clock()}.now_ms()).retry_in;
}

void on_reply(status_self* self, const msg::api_reply& r) {
  auto& st = self->state;
  auto what = st.calls.take(r);
  if (!what)
    return;
  st.in_flight = false;
  const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
  if (*what == call::create) {
    if (!r.ok && kind == k8s::api_error::kind::not_found)
      return failed(self, "the ScaleSet CRD is not installed (deploy/crds/scalesets.yaml): kubectl shows no status for this scale set", r,
                    crd_retry);
    if (!r.ok && kind != k8s::api_error::kind::already_exists)
      return failed(self, "could not create the ScaleSet object", r, retry_after_error(self));
    st.exists = true;
    if (r.ok)
      learn_uid(self, r.body);
    else
      return read_object(self);  // made by an earlier process: its uid, for the Events
    return write(self);
  }
  if (*what == call::get) {
    if (!r.ok && st.ctx->spec.declared)  // deleted: the catalog stops this scale set
      return failed(self, "could not read the ScaleSet object", r, kind == k8s::api_error::kind::not_found ? st.interval : retry_after_error(self));
    if (r.ok) {
      st.exists = true;
      learn_uid(self, r.body);
      learn_session(self, r.body);
    }
    return write(self);
  }
  if (!r.ok) {
    if (kind == k8s::api_error::kind::not_found) {
      st.exists = false;  // deleted by someone: made again, with a new uid
      st.uid.clear();
    }
    return failed(self, "could not write the ScaleSet status", r,
                  kind == k8s::api_error::kind::not_found ? st.interval : retry_after_error(self));
  }
  st.backoff.succeeded(runtime::actor_system_clock{self->clock()}.now_ms());
  if (st.failing)
    runtime::log::info(actor_name, "ScaleSet status written again", {{"scale_set", st.ctx->spec.name}});
  st.failing = false;
  st.last_write = self->clock().now();
  if (st.dirty)
    schedule(self, st.urgent ? st.interval : st.poll_only_gap);
}

void on_session(status_self* self, const msg::session_view& s) {
  auto& v = self->state.view;
  if (s.poll_started) {
    v.last_poll = wall_text(self);
    return changed(self, self->state.poll_only_gap);
  }
  if (s.state == v.session && s.message == v.session_message)
    return;
  if (s.state != v.session) {
    auto& st = self->state;
    const bool first = v.session.empty();
    const bool same_as_before = first && s.state == st.prior_session && !st.prior_since.empty();
    v.session_since = same_as_before ? st.prior_since : wall_text(self);
    // Told before the object was read: the object may yet say since when (learn_session).
    st.since_guessed = first && !same_as_before;
    // ARC's controller counts its running listener pods; here, the open session is the listener.
    if (self->state.ctx->metrics.set)
      self->state.ctx->metrics.set("gha_controller_running_listeners", s.state == "Open" ? 1 : 0);
  }
  v.session = s.state;
  v.session_message = s.message;
  changed(self);
}

status_impl::behavior_type status_behavior(status_self* self, context_ptr ctx, std::chrono::milliseconds interval, scale_set_peers peers) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  // A restarted status actor knows nothing: it asks its sources for what they last told its
  // predecessor (a healthy session and a steady capacity would otherwise never be told again).
  if (peers.monitor)
    self->send(peers.monitor, msg::view_atom_v);
  if (peers.listener) {
    self->send(peers.listener, msg::view_atom_v);
    self->send(peers.listener, msg::update_atom_v);
  }
  st.interval = interval;
  st.poll_only_gap = poll_only_gap_for(st.ctx->spec.name);
  st.view.capacity.max_runners = st.ctx->spec.max_runners;
  st.view.generation = st.ctx->spec.generation;
  st.view.session_since = wall_text(self);
  st.last_write = self->clock().now() - interval;
  changed(self);
  return {
      [self](const msg::capacity_view& c) {
        auto& v = self->state.view;
        if (!v.capacity_known || v.capacity.unplaced.empty() != c.unplaced.empty())
          v.pairs_since = wall_text(self);
        v.capacity = c;
        v.capacity_known = true;
        changed(self);
      },
      [self](const msg::session_view& s) { on_session(self, s); },
      [self](const msg::scale_set_update& u) {
        auto& v = self->state.view;
        v.scale_set_id = u.scale_set_id;
        v.stats = u.stats;
        v.stats_known = true;
        changed(self);
      },
      [self](msg::flush_atom, uint64_t generation) {
        auto& st = self->state;
        if (generation != st.generation)
          return;
        st.scheduled = false;
        if (st.dirty && !st.in_flight)
          write(self);
      },
      [self](msg::api_reply& r) { on_reply(self, r); },
      [self](msg::k8s_event& e) { on_event(self, e); },
  };
}

}  // namespace

status_actor spawn_scale_set_status(caf::actor_system& sys, context_ptr ctx, std::chrono::milliseconds interval,
                                    scale_set_peers peers) {
  return sys.spawn(status_behavior, std::move(ctx), interval, std::move(peers));
}

}  // namespace headroom::actors::capacity
