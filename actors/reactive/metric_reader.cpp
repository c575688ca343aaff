// metric_reader: one per reactive subtree, between the scalers and Prometheus. Scalers ask for a
// window of samples (msg::metric_request); the reader gathers the requests that arrive within
// `batch_delay` of the first and asks Prometheus once: every plain selector in one remote read
// (POST /api/v1/read, up to `max_batch` per request), any other expression through the query API
// as a subquery. Each scaler gets msg::metric_samples back.
//
// Why: a query per target per evaluation is an HTTP round trip and two actor wake-ups from outside
// CAF's scheduler each; at 1,000 targets a second that alone cost ~27 % of a core. Batched, the
// same evaluations cost a few requests a second.
//
// Bounded: `pending` holds at most one request per scaler (a scaler has one evaluation in flight)
// and is flushed at `max_batch`; a lost answer (a restarted reader) is noticed by the scaler's
// own timeout, so nothing waits forever.

#include <caf/all.hpp>

#include <unordered_map>

#include "actors/reactive/reactive.hpp"
#include "adapters/prometheus/client.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::reactive {

// The reader's private message: Prometheus' answers for one batch, from the I/O thread.
struct batch_answer {
  uint64_t batch = 0;
  std::vector<prom::query_result> results;
};

}  // namespace headroom::actors::reactive

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::reactive::batch_answer)

namespace headroom::actors::reactive {

namespace {

constexpr std::string_view actor_name = "metric_reader";

struct waiting {
  caf::actor scaler;
  uint64_t evaluation = 0;
};

struct reader_state {
  reader_options opts;
  std::vector<std::pair<caf::actor, msg::metric_request>> pending;
  uint64_t flush_generation = 0;  // a delayed flush for an older batch does nothing
  bool flush_armed = false;
  uint64_t next_batch = 0;
  std::unordered_map<uint64_t, std::vector<waiting>> in_flight;
  // Each metric read once: its matchers, or nullopt for an expression (queried as a subquery).
  std::unordered_map<std::string, std::optional<std::vector<prom::label_matcher>>> selectors;
  static inline const char* name = "headroom.metric_reader";
};

using reader_actor = caf::stateful_actor<reader_state>;

msg::metric_samples to_samples(uint64_t evaluation, prom::query_result& r) {
  msg::metric_samples out;
  out.evaluation = evaluation;
  if (auto* none = std::get_if<prom::no_metric>(&r)) {
    out.reason = std::move(none->reason);
    return out;
  }
  auto& s = std::get<prom::series>(r);
  out.ok = true;
  out.labels = std::move(s.labels);
  out.times.reserve(s.samples.size());
  out.values.reserve(s.samples.size());
  for (const auto& x : s.samples) {
    out.times.push_back(x.t);
    out.values.push_back(x.v);
  }
  return out;
}

const std::optional<std::vector<prom::label_matcher>>& selector_of(reader_actor* self, const std::string& metric) {
  auto& cache = self->state.selectors;
  auto it = cache.find(metric);
  if (it == cache.end()) {
    std::string why;
    it = cache.emplace(metric, prom::parse_selector(metric, why)).first;
  }
  return it->second;
}

std::function<void(std::vector<prom::query_result>)> answer_to(reader_actor* self, uint64_t batch) {
  caf::weak_actor_ptr weak = caf::actor_cast<caf::weak_actor_ptr>(caf::actor_cast<caf::actor>(self));
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
    caf::anon_send(caf::actor_cast<caf::actor>(strong), batch_answer{batch, std::move(results)});
  };
}

void flush(reader_actor* self) {
  auto& st = self->state;
  st.flush_armed = false;
  ++st.flush_generation;
  if (st.pending.empty())
    return;
  auto pending = std::move(st.pending);
  st.pending.clear();
  std::vector<prom::raw_query> queries;
  std::vector<waiting> readers;
  auto send_read = [&] {
    if (queries.empty())
      return;
    const uint64_t batch = ++st.next_batch;
    st.in_flight[batch] = std::move(readers);
    readers.clear();
    st.opts.prom->read(queries, answer_to(self, batch));
    if (st.opts.count)
      st.opts.count("read", static_cast<double>(queries.size()));
    queries.clear();
  };
  for (auto& [scaler, req] : pending) {
    const auto& matchers = selector_of(self, req.metric);
    if (!matchers) {  // an expression: its own subquery
      const uint64_t batch = ++st.next_batch;
      st.in_flight[batch] = {waiting{scaler, req.evaluation}};
      auto cb = answer_to(self, batch);
      st.opts.prom->query(prom::window_query(req.metric, req.window_s, req.step_s), req.at,
                          [cb](prom::query_result r) { cb({std::move(r)}); });
      if (st.opts.count)
        st.opts.count("query", 1);
      continue;
    }
    const auto end_ms = static_cast<int64_t>(req.at * 1000.0);
    queries.push_back(prom::raw_query{*matchers, end_ms - req.window_s * 1000, end_ms});
    readers.push_back(waiting{scaler, req.evaluation});
    if (queries.size() >= st.opts.max_batch)
      send_read();
  }
  send_read();
}

caf::behavior reader_behavior(reader_actor* self, reader_options opts) {
  self->state.opts = std::move(opts);
  return {
      [self](msg::metric_request& req) {
        auto& st = self->state;
        st.pending.emplace_back(caf::actor_cast<caf::actor>(self->current_sender()), std::move(req));
        if (st.pending.size() >= st.opts.max_batch) {
          flush(self);
          return;
        }
        if (!st.flush_armed) {
          st.flush_armed = true;
          self->delayed_send(self, st.opts.batch_delay, msg::tick_atom_v, st.flush_generation);
        }
      },
      [self](msg::tick_atom, uint64_t generation) {
        if (generation == self->state.flush_generation)
          flush(self);
      },
      [self](batch_answer& a) {
        auto& st = self->state;
        auto it = st.in_flight.find(a.batch);
        if (it == st.in_flight.end())
          return;
        auto readers = std::move(it->second);
        st.in_flight.erase(it);
        if (a.results.size() != readers.size()) {  // cannot happen: the client answers one per query
          runtime::log::error(actor_name, "answers do not match the batch", {{"batch", static_cast<int64_t>(a.batch)}});
          a.results.assign(readers.size(), prom::no_metric{"metric reader: answers do not match the batch"});
        }
        for (size_t i = 0; i < readers.size(); ++i)
          if (readers[i].scaler)
            self->send(readers[i].scaler, to_samples(readers[i].evaluation, a.results[i]));
      },
  };
}

}  // namespace

caf::actor spawn_metric_reader(caf::actor_system& sys, reader_options opts) {
  return sys.spawn(reader_behavior, std::move(opts));
}

}  // namespace headroom::actors::reactive
