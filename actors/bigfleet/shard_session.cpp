// shard_session: the only connection to the BigFleet shard, and the receive side's dispatch.
//
// Receive side, all filled by the stream's reader thread and drained here on a wake-up:
//   - NodeStateUpdate → keyed coalescer per machine: at most one write in flight per machine, and
//     a burst of updates for one machine costs the write in flight plus one of the latest state;
//   - AvailableCapacityUpdate, ReclaimInstruction → bounded dispatcher (32 in flight). A reclaim
//     holds its slot until its drain acks (after the cordon), as the design's handler returns at
//     the ack: the drain itself runs on its own clock (minutes), holding no slot;
//   - BootstrapRequest → the dispatcher's bypass lane: a booting node waits for its blob, so it
//     never queues behind apiserver writes.
// Any send or receive failure collapses the stream; the session reconnects with exponential
// backoff (500 ms doubling to 30 s, reset once a stream opens).

#include <caf/all.hpp>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "actors/bigfleet/bigfleet.hpp"
#include "adapters/k8s/fields.hpp"
#include "adapters/bigfleet/node_state.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/json_writer.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"
#include "runtime/mailbox/actor_waker.hpp"
#include "runtime/mailbox/bounded_dispatcher.hpp"
#include "runtime/mailbox/keyed_coalescer.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::bigfleet {

namespace pb = ::bigfleet::v1alpha1;
using headroom::bigfleet::shard_stream;

namespace {

// A merge patch that replaces one member (spec, status) with `json`, written by node_state.cpp.
std::string member_patch(std::string_view member, const std::string& json) {
  runtime::json_writer w;
  w.begin_object().key(member).raw(json).end_object();
  return w.take();
}

constexpr std::string_view actor_name = "shard_session";
constexpr uint32_t dispatch_buffer = 1;
constexpr uint32_t nodes_buffer = 2;

// What was last written for one UpcomingNode, so an identical update makes no write.
struct upcoming_record {
  std::string phase, spec, status;
};

struct session_state {
  operator_deps deps;
  operator_options opts;
  rollup_actor rollup;
  std::unique_ptr<shard_stream> stream;
  uint64_t generation = 0;
  std::chrono::milliseconds backoff{0};
  // A shard down for minutes: one line when the stream closes, a reminder a minute, one when it
  // is open again; each reconnect attempt in between is a debug line (the backoff paces them).
  runtime::outage link_outage{{.reminder = std::chrono::minutes(1)}};
  std::shared_ptr<runtime::bounded_dispatcher<pb::ShardMessage>> dispatcher;
  std::shared_ptr<runtime::keyed_coalescer<std::string, pb::NodeStateUpdate>> nodes;
  std::unordered_map<std::string, upcoming_record> written;       // by machine id
  std::unordered_map<std::string, upcoming_record> written_avail;  // by AvailableCapacity name
  // The reclaim drains alive: their instruction, and whether each holds its dispatch slot (until its ack).
  struct drain_entry {
    std::string instruction;
    bool holds_slot = true;
  };
  std::unordered_map<caf::actor_addr, drain_entry> drains;
  // The update being written per machine; a failed write is retried (never dropped: the shard
  // does not re-send a state, so a lost Configured write would strand the UpcomingNode).
  std::unordered_map<std::string, pb::NodeStateUpdate> in_flight;
  std::unordered_map<std::string, std::chrono::milliseconds> retry_delay;
  ~session_state() {
    if (dispatcher)  // the stream's destructor joins its reader, which may be held by a full queue
      dispatcher->interrupt();
  }
  static inline const char* name = "headroom.shard_session";
};

// Its own timers: a reconnect's backoff (restart_atom, generation) and an UpcomingNode write to
// try again (machine); and the UpcomingNode writes it started.
using session_impl = shard_session_actor::extend<caf::reacts_to<msg::restart_atom, uint32_t, uint64_t>,
                                                 caf::reacts_to<msg::retry_atom, std::string>,
                                                 caf::reacts_to<object_written>>;
using session_actor = session_impl::stateful_base<session_state>;

// Sends the result of a chain of writes back to the session.
void report(const session_impl& session, object_written w) {
  caf::anon_send(session, std::move(w));
}

// Patches status (merge patch on the status subresource), then reports.
void patch_status(k8s::client& c, const k8s::resource_kind& kind, const std::string& name, const std::string& status,
                  std::function<void(std::optional<std::string>)> done) {
  c.merge_patch(kind, "", name, member_patch("status", status),
                [done = std::move(done)](k8s::api_result r) {
                  if (auto* e = std::get_if<k8s::api_error>(&r))
                    return done(e->describe());
                  done(std::nullopt);
                },
                "status");
}

using spec_written = std::function<void(std::optional<std::string> error)>;

void patch_upcoming_spec(k8s::client& client, const std::string& name, const std::string& spec, spec_written then) {
  client.merge_patch(kinds::upcoming_nodes, "", name, member_patch("spec", spec), [then = std::move(then)](k8s::api_result r) mutable {
    auto* e = std::get_if<k8s::api_error>(&r);
    then(e ? std::optional<std::string>{e->describe()} : std::nullopt);
  });
}

// A new UpcomingNode; one an earlier session created already gets its spec patched instead.
void create_upcoming(k8s::client& client, const std::string& name, const std::string& machine, const std::string& spec,
                     spec_written then) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "bigfleet.lucy.sh/v1alpha1").field("kind", "UpcomingNode");
  w.key("metadata").begin_object().field("name", name);
  w.key("labels").begin_object().field("bigfleet.lucy.sh/machine-id", name == machine ? machine : name).end_object();
  w.end_object().key("spec").raw(spec).end_object();
  const std::string object = w.take();
  client.create(kinds::upcoming_nodes, "", object, [&client, name, spec, then = std::move(then)](k8s::api_result r) mutable {
    auto* e = std::get_if<k8s::api_error>(&r);
    if (e && e->what == k8s::api_error::kind::already_exists)  // raced with an earlier session
      return patch_upcoming_spec(client, name, spec, std::move(then));
    then(e ? std::optional<std::string>{e->describe()} : std::nullopt);
  });
}

// Drained or Deleting: the UpcomingNode goes (already gone counts as done).
void remove_upcoming(k8s::client& client, const std::string& name, const session_impl& session, object_written result,
                     std::string phase) {
  client.remove(kinds::upcoming_nodes, "", name, {}, [session, result, phase = std::move(phase)](k8s::api_result r) mutable {
    auto* e = std::get_if<k8s::api_error>(&r);
    result.ok = !e || e->what == k8s::api_error::kind::not_found;
    if (!result.ok)
      result.error = e->describe();
    runtime::log::info(actor_name, "UpcomingNode removed", {{"machine", result.key}, {"last_phase", phase}});
    report(session, std::move(result));
  });
}

// The UpcomingNode write chain for one update: create or patch spec when it changed, then patch
// status when it changed; Drained/Deleting delete the object. Runs on the transport's thread;
// the result goes back to the session as object_written.
void write_upcoming(session_actor* self, const std::string& key, const pb::NodeStateUpdate& u) {
  auto& st = self->state;
  const std::string machine = u.machine_id();
  const std::string name = headroom::bigfleet::upcoming_node_name(machine);
  std::string current;
  const upcoming_record* known = nullptr;
  if (auto it = st.written.find(machine); it != st.written.end()) {
    known = &it->second;
    current = known->phase;
  }
  std::shared_ptr<const k8s::unstructured> cached = st.deps.upcoming_nodes ? st.deps.upcoming_nodes->get("", name) : nullptr;
  if (!known && cached)
    current = status_phase(cached->raw);

  const auto decision = headroom::bigfleet::next_phase(u.state(), current);
  const auto session = runtime::handle_of(self);
  object_written result;
  result.key = key;
  using A = headroom::bigfleet::phase_decision::action;
  if (decision.what == A::ignore) {
    result.ok = true;
    result.phase = current;
    if (known) {
      result.spec = known->spec;
      result.status = known->status;
    }
    return report(session, std::move(result));
  }
  auto& client = *st.deps.client;
  if (decision.what == A::remove) {
    if (!known && !cached) {
      result.ok = true;
      return report(session, std::move(result));
    }
    return remove_upcoming(client, name, session, std::move(result), std::string{decision.phase});
  }
  const std::string spec = headroom::bigfleet::upcoming_node_spec(u);
  const std::string status = headroom::bigfleet::upcoming_node_status(u, decision.phase);
  result.phase = std::string{decision.phase};
  result.spec = spec;
  result.status = status;
  if (known && known->spec == spec && known->status == status) {
    result.ok = true;  // a rebroadcast or a replay on reconnect: no write
    return report(session, std::move(result));
  }
  const bool spec_changed = !known || known->spec != spec;
  const bool status_changed = !known || known->status != status;
  const bool fresh = !known && !cached;
  // provisioningStartTime is set once, when headroom first sees the machine.
  const std::string status_body =
      fresh || (cached && k8s::string_at(cached->raw, {"status", "provisioningStartTime"}).empty())
          ? headroom::bigfleet::upcoming_node_status(u, decision.phase, k8s::time_now(runtime::actor_system_clock{self->clock()}))
          : status;
  spec_written after_spec = [&client, session, result, name, status_body, status_changed](std::optional<std::string> err) mutable {
    if (err) {
      result.ok = false;
      result.error = *err;
      return report(session, std::move(result));
    }
    if (!status_changed) {
      result.ok = true;
      return report(session, std::move(result));
    }
    patch_status(client, kinds::upcoming_nodes, name, status_body, [session, result](std::optional<std::string> e) mutable {
      result.ok = !e;
      if (e)
        result.error = *e;
      report(session, std::move(result));
    });
  };
  if (fresh)
    return create_upcoming(client, name, machine, spec, std::move(after_spec));
  if (!spec_changed)
    return after_spec(std::nullopt);
  patch_upcoming_spec(client, name, spec, std::move(after_spec));
}

// AvailableCapacity upsert: create, or merge-patch the spec when it changed.
void write_available(session_actor* self, const pb::AvailableCapacityUpdate& u) {
  auto& st = self->state;
  const std::string name = headroom::bigfleet::available_capacity_name(u.supersedes_key());
  const std::string spec = headroom::bigfleet::available_capacity_spec(u);
  const auto session = runtime::handle_of(self);
  object_written result;
  result.key = "available/" + name;
  result.spec = spec;
  if (auto it = st.written_avail.find(name); it != st.written_avail.end() && it->second.spec == spec) {
    result.ok = true;
    return report(session, std::move(result));
  }
  auto& client = *st.deps.client;
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "bigfleet.lucy.sh/v1alpha1").field("kind", "AvailableCapacity");
  w.key("metadata").begin_object().field("name", name).end_object().key("spec").raw(spec).end_object();
  const std::string object = w.take();
  client.create(kinds::available_capacities, "", object, [&client, session, result, name, spec](k8s::api_result r) mutable {
    auto* e = std::get_if<k8s::api_error>(&r);
    if (e && e->what == k8s::api_error::kind::already_exists) {
      client.merge_patch(kinds::available_capacities, "", name, member_patch("spec", spec), [session, result](k8s::api_result r2) mutable {
        auto* e2 = std::get_if<k8s::api_error>(&r2);
        result.ok = !e2;
        if (e2)
          result.error = e2->describe();
        report(session, std::move(result));
      });
      return;
    }
    result.ok = !e;
    if (e)
      result.error = e->describe();
    report(session, std::move(result));
  });
}

void connect(session_actor* self) {
  auto& st = self->state;
  const uint64_t generation = ++st.generation;
  const auto session = runtime::handle_of(self);
  auto dispatcher = st.dispatcher;
  auto nodes = st.nodes;
  shard_stream::callbacks cb;
  cb.on_open = [session, generation] { caf::anon_send(session, shard_link{generation, true, {}}); };
  cb.on_closed = [session, generation](const std::string& reason) {
    caf::anon_send(session, shard_link{generation, false, reason});
  };
  auto seq = std::make_shared<uint64_t>(0);
  cb.on_message = [dispatcher, nodes, coalesce = st.opts.coalesce_node_state, seq](pb::ShardMessage&& m) {
    switch (m.payload_case()) {
      case pb::ShardMessage::kNodeStateUpdate: {
        std::string machine = m.node_state_update().machine_id();
        if (!coalesce)
          machine += "#" + std::to_string(++*seq);
        if (!nodes->offer(machine, std::move(*m.mutable_node_state_update())))
          runtime::log::warn(actor_name, "NodeStateUpdate dropped: too many machines tracked", {{"machine", machine}});
        break;
      }
      case pb::ShardMessage::kBootstrapRequest:
        if (!dispatcher->submit(std::move(m), runtime::dispatch_lane::bypass))
          runtime::log::warn(actor_name, "BootstrapRequest dropped: bypass queue full");
        break;
      case pb::ShardMessage::kReclaimInstruction:
      case pb::ShardMessage::kAvailableCapacity:
        // As the design's receive loop: a full queue holds this reader (and gRPC's flow control the
        // shard) rather than drop; only a closing stream drops (the shard re-issues on reconnect).
        if (!dispatcher->submit_waiting(std::move(m)))
          runtime::log::debug(actor_name, "shard message not taken: its stream is closing (the shard re-issues)");
        break;
      case pb::ShardMessage::kAck:
        runtime::log::debug(actor_name, "shard acknowledged", {{"echo", m.ack().echo()}});
        break;
      default:
        break;
    }
  };
  if (st.link_outage.down())
    runtime::log::debug(actor_name, "connecting to the shard", {{"target", st.opts.endpoint.target}, {"generation", generation}});
  else
    runtime::log::info(actor_name, "connecting to the shard", {{"target", st.opts.endpoint.target}, {"generation", generation}});
  st.dispatcher->resume();  // the previous stream's reader is joined: a new one may wait again
  st.stream = std::make_unique<shard_stream>(st.opts.endpoint, st.deps.queue, std::move(cb));
}

// Closes the stream, joining its reader (released first if a full dispatch queue holds it).
void close_stream(session_state& st) {
  if (st.dispatcher)
    st.dispatcher->interrupt();
  st.stream.reset();
}

// The one writer of the send queue's outbox: a reply to the shard (a BootstrapBlobResponse) or
// what a reclaim drain reports (a ReclaimAck). A full outbox drops it; the shard asks again.
void send_to_shard(session_actor* self, pb::OperatorMessage m) {
  const auto what = m.payload_case() == pb::OperatorMessage::kBootstrapResponse ? "BootstrapBlobResponse"
                    : m.payload_case() == pb::OperatorMessage::kReclaimAck     ? "ReclaimAck"
                                                                               : "message";
  if (!self->state.deps.queue->enqueue(std::move(m)))
    runtime::log::warn(actor_name, "outbox full: a message to the shard was dropped (the shard asks again)", {{"message", what}});
}

// A drain's ack on its way to the shard: its reclaim's dispatch slot is free (the drain goes on without).
void release_reclaim_slot(session_actor* self, const pb::OperatorMessage& m) {
  if (m.payload_case() != pb::OperatorMessage::kReclaimAck)
    return;
  auto& s = self->state;
  for (auto& [addr, d] : s.drains)
    if (d.holds_slot && d.instruction == m.reclaim_ack().instruction_id()) {
      d.holds_slot = false;
      s.dispatcher->finish(runtime::dispatch_lane::normal);
      return;
    }
}

void handle_dispatch(session_actor* self, runtime::bounded_dispatcher<pb::ShardMessage>::work w) {
  auto& st = self->state;
  auto& m = w.item;
  switch (m.payload_case()) {
    case pb::ShardMessage::kBootstrapRequest: {
      pb::OperatorMessage out;
      *out.mutable_bootstrap_response() = render_bootstrap(st.opts.bootstrap, st.opts.endpoint.cluster_id, m.bootstrap_request());
      if (!out.bootstrap_response().error().empty())
        runtime::log::warn(actor_name, "bootstrap template could not be rendered; the shard records a shortfall",
                           {{"request", m.bootstrap_request().request_id()}, {"error", out.bootstrap_response().error()}});
      send_to_shard(self, std::move(out));
      st.dispatcher->finish(w.lane);
      break;
    }
    case pb::ShardMessage::kReclaimInstruction: {
      auto drain = spawn_reclaim_drain(self->system(), st.deps, m.reclaim_instruction());
      self->monitor(drain);
      st.drains[drain.address()] = {m.reclaim_instruction().instruction_id(), true};
      break;  // finished at its ack (release_reclaim_slot), or when the drain actor goes
    }
    case pb::ShardMessage::kAvailableCapacity:
      write_available(self, m.available_capacity());
      break;  // finished on its object_written
    default:
      st.dispatcher->finish(w.lane);
  }
}

// The stream opened (a roll-up at once) or closed (reconnect after a jittered backoff).
void on_link(session_actor* self, const shard_link& link) {
  auto& s = self->state;
  if (link.generation != s.generation)
    return;
  const auto now = runtime::actor_system_clock{self->clock()}.now_ms();
  if (link.up) {
    s.backoff = std::chrono::milliseconds{0};
    const auto v = s.link_outage.succeeded(now);
    runtime::log::info(actor_name, "shard stream open",
                       {{"target", s.opts.endpoint.target}, {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
    if (s.rollup)
      self->send(s.rollup, msg::rollup_atom_v);
    return;
  }
  close_stream(s);
  s.backoff = s.backoff.count() == 0 ? s.opts.reconnect_initial : std::min(s.backoff * 2, s.opts.reconnect_max);
  const auto v = s.link_outage.failed(now);
  runtime::outage::log(actor_name, v, "shard stream closed; reconnecting", "shard stream still closed; reconnecting",
                       {{"reason", link.reason}, {"retry_in_ms", s.backoff.count()}, {"down_for_ms", v.down_for_ms},
                        {"attempts", v.failures}});
  self->delayed_send(self, s.backoff, msg::restart_atom_v, uint32_t{0}, s.generation);
}

// A write finished: recorded, or retried after a doubling delay (the machine stays in flight).
void on_written(session_actor* self, const object_written& w) {
  auto& s = self->state;
  if (w.key.rfind("available/", 0) == 0) {
    if (w.ok)
      s.written_avail[w.key.substr(10)] = {"", w.spec, ""};
    else
      runtime::log::warn(actor_name, "AvailableCapacity write failed", {{"error", w.error}});
    s.dispatcher->finish(runtime::dispatch_lane::normal);
    return;
  }
  if (!w.ok) {
    // Not recorded, so the retry writes in full; the machine stays in flight meanwhile and
    // newer updates for it wait in the coalescer.
    s.written.erase(w.key.substr(0, w.key.find('#')));
    auto& delay = s.retry_delay[w.key];
    delay = delay.count() == 0 ? std::chrono::milliseconds{500} : std::min(delay * 2, std::chrono::milliseconds{30'000});
    runtime::log::warn(actor_name, "UpcomingNode write failed; retrying",
                       {{"machine", w.key}, {"error", w.error}, {"retry_in_ms", delay.count()}});
    self->delayed_send(self, delay, msg::retry_atom_v, w.key);
    return;
  }
  const std::string machine = w.key.substr(0, w.key.find('#'));
  if (w.phase.empty())
    s.written.erase(machine);
  else
    s.written[machine] = {w.phase, w.spec, w.status};
  s.in_flight.erase(w.key);
  s.retry_delay.erase(w.key);
  s.nodes->done(w.key);
}

session_impl::behavior_type session_behavior(session_actor* self, operator_deps deps, operator_options opts,
                                             rollup_actor rollup) {
  auto& st = self->state;
  st.deps = std::move(deps);
  st.opts = std::move(opts);
  st.rollup = std::move(rollup);
  const auto me = runtime::handle_of(self);
  st.dispatcher = std::make_shared<runtime::bounded_dispatcher<pb::ShardMessage>>(
      "bigfleet_dispatch", runtime::wake_actor(me, dispatch_buffer), st.opts.dispatch_in_flight);
  st.nodes = std::make_shared<runtime::keyed_coalescer<std::string, pb::NodeStateUpdate>>(
      "bigfleet_node_state", runtime::wake_actor(me, nodes_buffer));
  if (st.deps.track_buffer) {
    st.deps.track_buffer(st.dispatcher->stats());
    st.deps.track_buffer(st.nodes->stats());
  }
  self->set_down_handler([self](caf::down_msg& down) {
    auto& s = self->state;
    auto it = s.drains.find(down.source);
    if (it == s.drains.end())
      return;
    if (it->second.holds_slot)  // it went before its ack
      s.dispatcher->finish(runtime::dispatch_lane::normal);
    s.drains.erase(it);
  });
  // The state's destruction closes the stream and joins its threads (shard_stream's destructor).
  connect(self);
  return {
      [self](shard_link link) { on_link(self, link); },
      [self](msg::restart_atom, uint32_t, uint64_t generation) {
        if (generation == self->state.generation && !self->state.stream)
          connect(self);
      },
      [self](msg::buffer_wakeup w) {
        auto& s = self->state;
        if (w.buffer == dispatch_buffer) {
          s.dispatcher->rearm();
          while (auto work = s.dispatcher->next())
            handle_dispatch(self, std::move(*work));
        } else if (w.buffer == nodes_buffer) {
          s.nodes->rearm();
          while (auto item = s.nodes->next()) {
            auto& u = s.in_flight[item->first] = std::move(item->second);
            write_upcoming(self, item->first, u);
          }
        }
      },
      [self](object_written& w) { on_written(self, w); },
      [self](outbox_rollup& r) { self->state.deps.queue->offer_rollup(std::move(r.rollup)); },
      [self](outbox_message& m) {
        release_reclaim_slot(self, m.message);
        send_to_shard(self, std::move(m.message));
      },
      [self](msg::retry_atom, const std::string& machine) {
        auto& s = self->state;
        if (auto it = s.in_flight.find(machine); it != s.in_flight.end())
          write_upcoming(self, machine, it->second);
      },
  };
}

}  // namespace

std::string status_phase(const std::string& raw) { return k8s::string_at(raw, {"status", "phase"}); }
std::string status_node_name(const std::string& raw) { return k8s::string_at(raw, {"status", "nodeRef", "name"}); }

shard_session_actor spawn_shard_session(caf::actor_system& sys, operator_deps deps, operator_options opts,
                                        rollup_actor rollup) {
  return sys.spawn(session_behavior, std::move(deps), std::move(opts), std::move(rollup));
}

}  // namespace headroom::actors::bigfleet
