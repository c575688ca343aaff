// hud_poller: every interval, the HUD's queued-jobs aggregate → each scale set's monitor (the jobs
// queued for any of its labels). A failed fetch tells the monitors so (they fall back to
// proactiveCapacity alone) and the poller keeps going.

#include <caf/all.hpp>

#include "actors/capacity/capacity.hpp"
#include "adapters/hud/queued_jobs.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::capacity {

namespace {

constexpr std::string_view actor_name = "hud_poller";

enum : uint64_t { fetch_now = 0, fetched_ok = 1, fetch_failed = 2 };

struct poller_state {
  std::shared_ptr<hud::client> hud;
  std::vector<hud_target> targets;
  milliseconds interval{30'000};
  uint64_t failures = 0;
  static inline const char* name = "headroom.hud_poller";
};

// Its timer, and the end of a fetch (fetch_now, fetch_failed, fetched_ok).
using poller_impl = hud_poller_actor;
using poller_self = poller_impl::stateful_base<poller_state>;

// The result is split per scale set on the I/O thread (a pure count) and offered to each monitor;
// the poller only hears whether it worked, to log and schedule the next fetch.
void fetch(poller_self* self) {
  const auto me = runtime::handle_of(self);
  self->state.hud->fetch([me, targets = self->state.targets](hud::fetch_result r) {
    if (auto* e = std::get_if<hud::hud_error>(&r)) {
      runtime::log::warn(actor_name, "HUD fetch failed: scale sets use proactiveCapacity alone", {{"error", e->message}});
      for (const auto& t : targets)
        caf::anon_send(t.monitor, msg::queued_jobs{0, false});
      caf::anon_send(me, msg::tick_atom_v, uint64_t{fetch_failed});
      return;
    }
    const auto& rows = std::get<std::vector<hud::queued_jobs>>(r);
    for (const auto& t : targets)
      caf::anon_send(t.monitor, msg::queued_jobs{hud::queued_for_labels(rows, t.labels), true});
    caf::anon_send(me, msg::tick_atom_v, uint64_t{fetched_ok});
  });
}

poller_impl::behavior_type poller_behavior(poller_self* self, std::shared_ptr<hud::client> hud, std::vector<hud_target> targets,
                              milliseconds interval) {
  auto& st = self->state;
  st.hud = std::move(hud);
  st.targets = std::move(targets);
  st.interval = interval;
  fetch(self);
  return {
      [self](msg::tick_atom, uint64_t what) {
        auto& s = self->state;
        if (what == fetch_now) {
          fetch(self);
          return;
        }
        if (what == fetch_failed)
          ++s.failures;
        self->delayed_send(self, s.interval, msg::tick_atom_v, uint64_t{fetch_now});
      },
  };
}

}  // namespace

hud_poller_actor spawn_hud_poller(caf::actor_system& sys, std::shared_ptr<hud::client> hud, std::vector<hud_target> targets,
                                  milliseconds interval) {
  return sys.spawn(poller_behavior, std::move(hud), std::move(targets), interval);
}

}  // namespace headroom::actors::capacity
