// The capacity's propagation: from its publish to the first poll that carries it, and the hops of
// the watch event behind it (#62).

#include <algorithm>

#include "actors/capacity/monitor.hpp"

namespace headroom::actors::capacity::monitor {

namespace {

// The hops of the watch event behind the capacity now carried by a poll (none: the capacity came
// from a timer, the service's statistics, a pair's own timeout): read, drained by this monitor,
// judged (by its pair, or by this monitor), published, and the poll issued.
void observe_hops(const monitor_state& s, int64_t issued_ns) {
  const auto& t = s.published_trace;
  if (!t.from_watch() || issued_ns == 0 || !s.ctx->metrics.hop)
    return;
  const msg::hop_trace::time_point issued{std::chrono::nanoseconds{issued_ns}};
  const auto seconds = [](auto from, auto to) { return std::max(0.0, std::chrono::duration<double>(to - from).count()); };
  auto& hop = s.ctx->metrics.hop;
  hop("event_to_monitor", seconds(t.received, t.woken));
  hop("monitor_to_judged", seconds(t.woken, t.judged));
  hop("judged_to_published", seconds(t.judged, s.published_steady));
  hop("published_to_poll", seconds(s.published_steady, issued));
  hop("event_to_poll", seconds(t.received, issued));
}

}  // namespace

// The listener polled with a capacity: an old one gets the newest; the newest's first poll ends
// its propagation time.
void on_polled(monitor_self* self, const msg::capacity_polled& p) {
  auto& s = self->state;
  if (s.last_published < 0)
    return;
  if (p.capacity != s.last_published) {
    // A listener that started before this monitor published (or whose question was lost
    // while this monitor restarted) polls with an old value: give it the newest.
    self->send(caf::actor_cast<capacity_sink>(self->current_sender()), msg::set_max_capacity{s.last_published});
    return;
  }
  if (s.published_polled)
    return;
  s.published_polled = true;
  s.ctx->metrics.observe("headroom_capacity_propagation_seconds",
                         std::chrono::duration<double>(self->clock().now() - s.published_at).count());
  observe_hops(s, p.issued_ns);
}

}  // namespace headroom::actors::capacity::monitor
