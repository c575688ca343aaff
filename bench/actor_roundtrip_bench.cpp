// Request/response round trip between two event-based CAF actors on the work-stealing scheduler
// (target ≤ 2 µs median). The pinger times every round trip itself, so the median and p99 are
// per round trip and exclude the benchmark driver's own (blocking) request.
#include <benchmark/benchmark.h>
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

namespace {

using ping_atom = caf::atom_constant<caf::atom("ping")>;
using run_atom = caf::atom_constant<caf::atom("run")>;

struct pinger_state {
  std::vector<int64_t> samples_ns;
  int remaining = 0;
  std::chrono::steady_clock::time_point sent;
  caf::response_promise done;
};

caf::behavior ponger() {
  return {[](ping_atom, int64_t n) { return n; }};
}

// One ping, timed; its answer sends the next until the run is done. Untyped and typed pingers alike.
template <class Self, class Pong>
void send_ping(Self self, const Pong& pong) {
  self->state.sent = std::chrono::steady_clock::now();
  self->request(pong, caf::infinite, ping_atom::value, int64_t{self->state.remaining}).then([self, pong](int64_t) {
    auto& st = self->state;
    st.samples_ns.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - st.sent).count());
    if (--st.remaining > 0)
      send_ping(self, pong);
    else
      st.done.deliver(std::move(st.samples_ns));
  });
}

caf::behavior pinger(caf::stateful_actor<pinger_state>* self, caf::actor pong) {
  return {[self, pong](run_atom, int n) {
    self->state.samples_ns.clear();
    self->state.samples_ns.reserve(static_cast<size_t>(n));
    self->state.remaining = n;
    self->state.done = self->make_response_promise();
    send_ping(self, pong);
    return self->state.done;
  }};
}

// Asks `ping` for batches of 10,000 round trips with `pong` and reports their median and p99.
template <class Ping, class Pong>
void drive(benchmark::State& state, caf::actor_system& sys, const Ping& ping, const Pong& pong) {
  caf::scoped_actor driver{sys};
  constexpr int batch = 10'000;
  std::vector<int64_t> all;
  while (state.KeepRunningBatch(batch)) {
    driver->request(ping, caf::infinite, run_atom::value, batch)
        .receive([&](std::vector<int64_t>& samples) { all.insert(all.end(), samples.begin(), samples.end()); },
                 [&](caf::error& e) { state.SkipWithError(sys.render(e).c_str()); });
  }
  std::sort(all.begin(), all.end());
  if (!all.empty()) {
    state.counters["median_ns"] = static_cast<double>(all[all.size() / 2]);
    state.counters["p99_ns"] = static_cast<double>(all[all.size() * 99 / 100]);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  caf::anon_send_exit(ping, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(pong, caf::exit_reason::user_shutdown);
}

void actor_request_response_roundtrip(benchmark::State& state) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", size_t{2});
  caf::actor_system sys{cfg};
  auto pong = sys.spawn(ponger);
  auto ping = sys.spawn(pinger, pong);
  drive(state, sys, ping, pong);
}
BENCHMARK(actor_request_response_roundtrip)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The same round trip between typed actors (caf::typed_actor, as every headroom actor is since its
// contracts became typed): the contract is checked at compile time; this measures what it costs
// when the program runs, in the same run as the untyped pair above.
using pong_actor = caf::typed_actor<caf::replies_to<ping_atom, int64_t>::with<int64_t>>;
using ping_actor = caf::typed_actor<caf::replies_to<run_atom, int>::with<std::vector<int64_t>>>;

struct typed_pinger_state {
  std::vector<int64_t> samples_ns;
  int remaining = 0;
  std::chrono::steady_clock::time_point sent;
  caf::typed_response_promise<std::vector<int64_t>> done;
};
using typed_pinger_self = ping_actor::stateful_pointer<typed_pinger_state>;

pong_actor::behavior_type typed_ponger(pong_actor::pointer) {
  return {[](ping_atom, int64_t n) { return n; }};
}

ping_actor::behavior_type typed_pinger(typed_pinger_self self, pong_actor pong) {
  return {[self, pong](run_atom, int n) {
    self->state.samples_ns.clear();
    self->state.samples_ns.reserve(static_cast<size_t>(n));
    self->state.remaining = n;
    self->state.done = self->make_response_promise<std::vector<int64_t>>();
    send_ping(self, pong);
    return self->state.done;
  }};
}

void typed_actor_request_response_roundtrip(benchmark::State& state) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", size_t{2});
  caf::actor_system sys{cfg};
  auto pong = sys.spawn(typed_ponger);
  auto ping = sys.spawn(typed_pinger, pong);
  drive(state, sys, ping, pong);
}
BENCHMARK(typed_actor_request_response_roundtrip)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
