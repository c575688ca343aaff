// hud_poller: every interval, the HUD's queued-jobs aggregate → each scale set's monitor (the jobs
// queued for any of its labels). A failed fetch tells the monitors so (they fall back to
// proactiveCapacity alone) and the poller keeps going: a HUD down is an outage (runtime/outage.hpp),
// said when it starts, every 5 minutes while it lasts and when it ends, not at every fetch. Each
// fetch's duration and outcome go to `metrics` (headroom_hud_fetch_duration_seconds).

#include <caf/all.hpp>

#include "actors/capacity/capacity.hpp"
#include "adapters/hud/queued_jobs.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::capacity::hud_poll {

// A fetch failed (from the I/O thread, the poller's own message): why.
struct fetch_failed_msg {
  std::string error;
};

}  // namespace headroom::actors::capacity::hud_poll

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::capacity::hud_poll::fetch_failed_msg)

namespace headroom::actors::capacity {

namespace {

using hud_poll::fetch_failed_msg;

constexpr std::string_view actor_name = "hud_poller";

struct poller_state {
  std::shared_ptr<hud::client> hud;
  std::vector<hud_target> targets;
  std::shared_ptr<const hud_target_registry> more;  // declared scale sets', may be null
  milliseconds interval{30'000};
  hud_metrics metrics;
  caf::actor_clock::time_point started{};  // the fetch in flight
  runtime::outage down{{std::chrono::seconds(1), std::chrono::seconds(1), std::chrono::minutes(5), 0}};
  static inline const char* name = "headroom.hud_poller";
};

// Its timer (fetch_atom, in its contract), and a fetch's success or failure.
using poller_impl = hud_poller_actor::extend<caf::reacts_to<msg::fetched_atom>, caf::reacts_to<fetch_failed_msg>>;
using poller_self = poller_impl::stateful_base<poller_state>;

// The result is split per scale set on the I/O thread (a pure count) and offered to each monitor;
// the poller only hears whether it worked, to log and schedule the next fetch.
void fetch(poller_self* self) {
  const auto me = runtime::weak_handle_of(self);
  self->state.started = self->clock().now();
  auto targets = self->state.targets;
  if (self->state.more)
    for (auto& [name, t] : self->state.more->get())
      targets.push_back(std::move(t));
  self->state.hud->fetch([me, targets = std::move(targets)](hud::fetch_result r) {
    if (auto* e = std::get_if<hud::hud_error>(&r)) {
      for (const auto& t : targets)
        caf::anon_send(t.monitor, msg::queued_jobs{0, false});
      me.send(fetch_failed_msg{e->message});
      return;
    }
    const auto& rows = std::get<std::vector<hud::queued_jobs>>(r);
    for (const auto& t : targets)
      caf::anon_send(t.monitor, msg::queued_jobs{hud::queued_for_labels(rows, t.labels, t.share), true});
    me.send(msg::fetched_atom_v);
  });
}

// A fetch ended: its duration observed, the outage's state logged once per change, the next fetch due.
void fetched(poller_self* self, bool ok, const std::string& error) {
  auto& s = self->state;
  if (s.metrics.fetched)
    s.metrics.fetched(std::chrono::duration<double>(self->clock().now() - s.started).count(), ok);
  const int64_t now_ms = runtime::actor_system_clock{self->clock()}.now_ms();
  if (ok) {
    if (const auto v = s.down.succeeded(now_ms); v.log == runtime::outage::note::came_back)
      runtime::log::info(actor_name, "HUD available again", {{"down_for_ms", v.down_for_ms}, {"failed_fetches", v.failures}});
  } else if (const auto v = s.down.failed(now_ms); v.log != runtime::outage::note::none) {
    runtime::log::warn(actor_name,
                       v.log == runtime::outage::note::went_down ? "HUD fetch failed: scale sets use proactiveCapacity alone"
                                                                 : "HUD still unavailable: scale sets use proactiveCapacity alone",
                       {{"error", error}, {"down_for_ms", v.down_for_ms}, {"failed_fetches", v.failures}});
  }
  self->delayed_send(self, s.interval, msg::fetch_atom_v);
}

poller_impl::behavior_type poller_behavior(poller_self* self, std::shared_ptr<hud::client> hud, std::vector<hud_target> targets,
                                           milliseconds interval, hud_metrics metrics, std::shared_ptr<const hud_target_registry> more) {
  auto& st = self->state;
  st.hud = std::move(hud);
  st.more = std::move(more);
  st.targets = std::move(targets);
  st.interval = interval;
  st.metrics = std::move(metrics);
  fetch(self);
  return {
      [self](msg::fetch_atom) { fetch(self); },
      [self](msg::fetched_atom) { fetched(self, true, {}); },
      [self](fetch_failed_msg& f) { fetched(self, false, f.error); },
  };
}

}  // namespace

hud_poller_actor spawn_hud_poller(caf::actor_system& sys, std::shared_ptr<hud::client> hud, std::vector<hud_target> targets,
                                  milliseconds interval, hud_metrics metrics, std::shared_ptr<const hud_target_registry> more) {
  return sys.spawn(poller_behavior, std::move(hud), std::move(targets), interval, std::move(metrics), std::move(more));
}

}  // namespace headroom::actors::capacity
