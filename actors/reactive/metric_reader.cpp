// metric_reader: one per reactive subtree, between the scalers and Prometheus, and the clock of
// their evaluations. Each scaler subscribes once (msg::metric_subscription); the reader places it
// (all its metrics) in one of `slots` slots per evaluation interval by a hash of its target's id, and when a slot is
// due it asks Prometheus once for all of the slot's subscribers: every plain selector in one
// remote read (POST /api/v1/read, up to `max_batch` per request), any other expression through
// the query API as a subquery. Each scaler then gets one msg::metric_samples per metric (the
// evaluation is complete when it has them all).
//
// Why the reader keeps the time: a query per target per evaluation is an HTTP round trip and two
// actor wake-ups from outside CAF's scheduler each (~27 % of a core at 1,000 targets a second);
// batched requests from scalers with their own timers still cost a timer, a request through the
// relay and an answer per evaluation (~55 µs each, 5-8 % of a core). Pushed, an evaluation is one
// message, and the actor system wakes once per slot (25 times per interval), not once per target.
//
// Slots are phases of the clock itself (not of each scaler's start), so scalers started one after
// another share their slot's instant. A subscriber is held by a weak reference: a scaler that
// ended is dropped at its slot's next turn, with no monitor left behind on it. A restarted reader
// knows no one: each scaler watches the reader's relay and subscribes again when it says a new
// incarnation runs (and, should that notice be lost, when its samples stop: the scaler's watchdog).

#include <caf/all.hpp>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "actors/reactive/reactive.hpp"
#include "adapters/prometheus/client.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::reactive {

// The reader's private message: Prometheus' answers for one batch, from the I/O thread.
struct batch_answer {
  uint64_t batch = 0;
  std::vector<prom::query_result> results;
};

// The reader's private message: the slot of groups[group] is due.
struct slot_due {
  size_t group = 0;
};

}  // namespace headroom::actors::reactive

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::reactive::batch_answer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::reactive::slot_due)

namespace headroom::actors::reactive {

namespace {

constexpr std::string_view actor_name = "metric_reader";
constexpr int64_t slots = 25;

using time_point = caf::actor_clock::time_point;

struct subscriber {
  caf::actor_addr addr;
  caf::weak_actor_ptr scaler;
  std::vector<std::string> metrics;
  int64_t window_s = 0, step_s = 1;
};

// The subscribers evaluated at one phase of one interval.
struct slot_group {
  std::chrono::milliseconds interval{0};
  time_point next_due;
  bool armed = false;
  std::vector<subscriber> members;
};

// Who each answer of a batch goes to: the scaler, and which of its metrics it is.
struct reader_ref {
  caf::weak_actor_ptr scaler;
  uint32_t index = 0;
};

struct in_flight_batch {
  int64_t due_ns = 0;
  std::vector<reader_ref> readers;
};

struct reader_state {
  reader_options opts;
  std::vector<slot_group> groups;
  std::map<std::pair<int64_t, int64_t>, size_t> group_of;  // (interval, phase) in ms → groups[i]
  std::unordered_map<caf::actor_addr, size_t> member_group; // a subscriber → its group
  uint64_t next_batch = 0;
  std::unordered_map<uint64_t, in_flight_batch> in_flight;
  // Each metric read once: its matchers, or nullopt for an expression (queried as a subquery).
  std::unordered_map<std::string, std::optional<std::vector<prom::label_matcher>>> selectors;
  static inline const char* name = "headroom.metric_reader";
};

// Its own messages: a slot's evaluation is due, and a batch's answers are back.
using reader_impl = metric_reader_actor::extend<caf::reacts_to<slot_due>, caf::reacts_to<batch_answer>>;
using reader_self = reader_impl::stateful_base<reader_state>;

msg::metric_samples to_samples(int64_t due_ns, uint32_t index, prom::query_result& r) {
  msg::metric_samples out;
  out.due_ns = due_ns;
  out.index = index;
  if (auto* none = std::get_if<prom::no_metric>(&r)) {
    out.reason = std::move(none->reason);
    out.absent = none->absent;
    return out;
  }
  auto& s = std::get<prom::series>(r);
  out.ok = true;
  out.ended_at = s.ended_at;
  out.labels = std::move(s.labels);
  out.times.reserve(s.samples.size());
  out.values.reserve(s.samples.size());
  for (const auto& x : s.samples) {
    out.times.push_back(x.t);
    out.values.push_back(x.v);
  }
  return out;
}

const std::optional<std::vector<prom::label_matcher>>& selector_of(reader_self* self, const std::string& metric) {
  auto& cache = self->state.selectors;
  auto it = cache.find(metric);
  if (it == cache.end()) {
    std::string why;
    it = cache.emplace(metric, prom::parse_selector(metric, why)).first;
  }
  return it->second;
}

std::function<void(std::vector<prom::query_result>)> answer_to(reader_self* self, uint64_t batch) {
  auto weak = runtime::weak_handle_of(self);
  // The callback runs on the I/O thread: it reads the actor system's clock (the one tests drive)
  // only while the reader lives, and so its system.
  auto* clock = &self->clock();
  const auto sent = clock->now();
  return [weak, batch, sent, clock, observe = self->state.opts.request_seconds](std::vector<prom::query_result> results) {
    auto strong = weak.lock();
    if (!strong)
      return;
    if (observe)
      observe(std::chrono::duration<double>(clock->now() - sent).count());
    caf::anon_send(strong, batch_answer{batch, std::move(results)});
  };
}

void arm(reader_self* self, size_t group) {
  auto& g = self->state.groups[group];
  g.armed = true;
  self->delayed_send(self, std::max(g.next_due - self->clock().now(), time_point::duration::zero()), slot_due{group});
}

void subscribe(reader_self* self, msg::metric_subscription& sub) {
  auto& st = self->state;
  auto sender = self->current_sender();
  if (!sender || sub.interval_ms <= 0)
    return;
  const auto addr = caf::actor_cast<caf::actor_addr>(sender);
  if (auto it = st.member_group.find(addr); it != st.member_group.end()) {  // subscribing again
    auto& members = st.groups[it->second].members;
    members.erase(std::remove_if(members.begin(), members.end(), [&](const subscriber& m) { return m.addr == addr; }), members.end());
  }
  const std::chrono::milliseconds interval{sub.interval_ms};
  const auto slot = static_cast<int64_t>(std::hash<std::string>{}(sub.target) % static_cast<size_t>(slots));
  const int64_t phase = slot * sub.interval_ms / slots;
  auto [at, fresh] = st.group_of.try_emplace({sub.interval_ms, phase}, st.groups.size());
  if (fresh) {
    slot_group g;
    g.interval = interval;
    const auto now = self->clock().now();
    const auto since_epoch = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch());
    g.next_due = now - (since_epoch % interval) + std::chrono::milliseconds(phase);
    if (g.next_due < now)
      g.next_due += interval;
    st.groups.push_back(std::move(g));
  }
  const size_t group = at->second;
  st.groups[group].members.push_back(
      subscriber{addr, caf::actor_cast<caf::weak_actor_ptr>(sender), std::move(sub.metrics), sub.window_s, sub.step_s});
  st.member_group[addr] = group;
  auto& g = st.groups[group];
  if (!g.armed) {  // idle since its last subscriber went: its next instant on the cadence, not one past
    const auto now = self->clock().now();
    if (g.next_due < now)
      g.next_due += ((now - g.next_due) / g.interval + 1) * g.interval;
    arm(self, group);
  }
}

// A slot is due: one read for every live subscriber of it.
void evaluate_slot(reader_self* self, size_t group) {
  auto& st = self->state;
  auto& g = st.groups[group];
  const auto now = self->clock().now();
  const auto due = g.next_due;
  // A fixed cadence; after a stall the next instant is from now, not a burst of catch-ups.
  g.next_due = std::max(due + g.interval, now);
  auto& members = g.members;
  members.erase(std::remove_if(members.begin(), members.end(),
                               [&](const subscriber& m) {
                                 if (m.scaler.lock())
                                   return false;
                                 st.member_group.erase(m.addr);
                                 return true;
                               }),
                members.end());
  if (members.empty()) {
    g.armed = false;  // the next subscriber arms it again
    return;
  }
  arm(self, group);
  const int64_t due_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(due.time_since_epoch()).count();
  const double at = runtime::actor_system_clock{self->clock()}.wall_seconds();
  const auto end_ms = static_cast<int64_t>(at * 1000.0);
  std::vector<prom::raw_query> queries;
  in_flight_batch readers{due_ns, {}};
  auto send_read = [&] {
    if (queries.empty())
      return;
    const uint64_t batch = ++st.next_batch;
    st.in_flight[batch] = std::move(readers);
    readers = in_flight_batch{due_ns, {}};
    st.opts.prom->read(queries, answer_to(self, batch));
    if (st.opts.count)
      st.opts.count("read", static_cast<double>(queries.size()));
    queries.clear();
  };
  for (const auto& m : members)
    for (uint32_t index = 0; index < m.metrics.size(); ++index) {
      const auto& metric = m.metrics[index];
      const auto& matchers = selector_of(self, metric);
      if (!matchers) {  // an expression: its own subquery
        const uint64_t batch = ++st.next_batch;
        st.in_flight[batch] = in_flight_batch{due_ns, {reader_ref{m.scaler, index}}};
        auto cb = answer_to(self, batch);
        st.opts.prom->query(prom::window_query(metric, m.window_s, m.step_s), at,
                            [cb](prom::query_result r) { cb({std::move(r)}); });
        if (st.opts.count)
          st.opts.count("query", 1);
        continue;
      }
      queries.push_back(prom::raw_query{*matchers, end_ms - m.window_s * 1000, end_ms});
      readers.readers.push_back(reader_ref{m.scaler, index});
      if (queries.size() >= st.opts.max_batch)
        send_read();
    }
  send_read();
}

reader_impl::behavior_type reader_behavior(reader_self* self, reader_options opts) {
  self->state.opts = std::move(opts);
  return {
      [self](msg::metric_subscription& sub) { subscribe(self, sub); },
      [self](slot_due due) { evaluate_slot(self, due.group); },
      [self](batch_answer& a) {
        auto& st = self->state;
        auto it = st.in_flight.find(a.batch);
        if (it == st.in_flight.end())
          return;
        auto batch = std::move(it->second);
        st.in_flight.erase(it);
        auto& readers = batch.readers;
        if (a.results.size() != readers.size()) {  // cannot happen: the client answers one per query
          runtime::log::error(actor_name, "answers do not match the batch", {{"batch", static_cast<int64_t>(a.batch)}});
          a.results.assign(readers.size(), prom::no_metric{"metric reader: answers do not match the batch"});
        }
        for (size_t i = 0; i < readers.size(); ++i)
          if (auto scaler = readers[i].scaler.lock())
            self->send(caf::actor_cast<metric_subscriber>(scaler), to_samples(batch.due_ns, readers[i].index, a.results[i]));
      },
  };
}

}  // namespace

metric_reader_actor spawn_metric_reader(caf::actor_system& sys, reader_options opts) {
  return sys.spawn(reader_behavior, std::move(opts));
}

}  // namespace headroom::actors::reactive
