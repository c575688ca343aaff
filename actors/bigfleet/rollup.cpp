// rollup: every rollupInterval (default 10 s) and at once when the shard stream opens, the
// cluster's complete desired state from every CapacityRequest in the informer cache goes into
// the session, for the send queue's coalescing slot (a newer roll-up replaces an unsent one). Then the CRs that
// were Pending are acknowledged: a status merge patch each, 16 in parallel, NotFound ignored.

#include <caf/all.hpp>

#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "actors/bigfleet/bigfleet.hpp"
#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "actors/bigfleet/model.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/json_writer.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::bigfleet {

namespace {

constexpr std::string_view actor_name = "rollup";
using headroom::bigfleet::capacity_request;

struct decoded_cr {
  std::string resource_version;
  std::shared_ptr<const capacity_request> cr;  // null when it did not decode
};

struct ack_target {
  std::string ns, name;
};

struct rollup_state {
  operator_deps deps;
  operator_options opts;
  uint64_t generation = 0;
  std::unordered_map<std::string, decoded_cr> cache;  // by uid: decoded once per resourceVersion
  std::deque<ack_target> acks_waiting;
  std::unordered_set<std::string> acks_known;  // ns/name queued or in flight
  api_calls<std::string> acks_in_flight;  // ns/name
  uint64_t builds = 0, decode_errors = 0;
  static inline const char* name = "headroom.rollup";
};

// Its own timer (rollup_atom, generation) and the API server's answers.
using rollup_impl = rollup_actor::extend<caf::reacts_to<msg::rollup_atom, uint64_t>, caf::reacts_to<msg::api_reply>>;
using rollup_self = rollup_impl::stateful_base<rollup_state>;


void pump_acks(rollup_self* self) {
  auto& st = self->state;
  const auto me = runtime::handle_of(self);
  while (st.acks_in_flight.in_flight() < st.opts.ack_parallelism && !st.acks_waiting.empty()) {
    auto t = std::move(st.acks_waiting.front());
    st.acks_waiting.pop_front();
    runtime::json_writer w;
    w.begin_object().key("status").begin_object().field("phase", "Acknowledged").field("acknowledgedAt", k8s::time_now(runtime::actor_system_clock{self->clock()}));
    w.end_object().end_object();
    const std::string patch = w.take();
    st.acks_in_flight.start(me, t.ns + "/" + t.name, [&st, t, patch](k8s::api_callback cb) {
      st.deps.client->merge_patch(kinds::capacity_requests, t.ns, t.name, patch, std::move(cb), "status");
    });
  }
}

void build(rollup_self* self) {
  auto& st = self->state;
  const auto objects = st.deps.capacity_requests->list();
  std::vector<const capacity_request*> crs;
  crs.reserve(objects.size());
  std::unordered_map<std::string, decoded_cr> next;
  next.reserve(objects.size());
  for (const auto& o : objects) {
    auto it = st.cache.find(o->meta.uid);
    decoded_cr d;
    if (it != st.cache.end() && it->second.resource_version == o->meta.resource_version) {
      d = std::move(it->second);
    } else {
      d.resource_version = o->meta.resource_version;
      auto r = headroom::bigfleet::decode_capacity_request(*o);
      if (auto* e = std::get_if<headroom::bigfleet::decode_error>(&r)) {
        ++st.decode_errors;
        runtime::log::warn(actor_name, "CapacityRequest left out of the roll-up", {{"error", e->message}});
      } else {
        d.cr = std::make_shared<const capacity_request>(std::get<capacity_request>(std::move(r)));
      }
    }
    if (d.cr) {
      crs.push_back(d.cr.get());
      if ((d.cr->phase.empty() || d.cr->phase == "Pending") && st.acks_known.insert(o->meta.ns + "/" + o->meta.name).second)
        st.acks_waiting.push_back({o->meta.ns, o->meta.name});
    }
    next.emplace(o->meta.uid, std::move(d));
  }
  st.cache = std::move(next);  // CRs that are gone drop out of the cache
  // Forget acknowledgements of CRs that are gone or no longer Pending (bounded by the CR count).
  std::unordered_set<std::string> known;
  for (const auto& o : objects) {
    const std::string key = o->meta.ns + "/" + o->meta.name;
    if (st.acks_known.count(key) > 0) {
      auto it = st.cache.find(o->meta.uid);
      if (it != st.cache.end() && it->second.cr && (it->second.cr->phase.empty() || it->second.cr->phase == "Pending"))
        known.insert(key);
    }
  }
  st.acks_in_flight.for_each([&known](const std::string& key) { known.insert(key); });
  st.acks_known = std::move(known);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(runtime::actor_system_clock{self->clock()}.wall().time_since_epoch()).count();
  auto rollup = build_rollup(st.opts.endpoint.cluster_id, crs, ns);
  runtime::log::debug(actor_name, "roll-up built", {{"crs", crs.size()}, {"needs", rollup.needs_size()}});
  if (st.deps.outbox)
    self->send(st.deps.outbox, outbox_rollup{std::move(rollup)});
  ++st.builds;
  pump_acks(self);
}

rollup_impl::behavior_type rollup_behavior(rollup_self* self, operator_deps deps, operator_options opts) {
  auto& st = self->state;
  st.deps = std::move(deps);
  st.opts = std::move(opts);
  self->delayed_send(self, st.opts.rollup_interval, msg::rollup_atom_v, st.generation);
  return {
      [self](msg::rollup_atom) { build(self); },
      [self](msg::rollup_atom, uint64_t generation) {
        auto& s = self->state;
        if (generation != s.generation)
          return;
        build(self);
        self->delayed_send(self, s.opts.rollup_interval, msg::rollup_atom_v, s.generation);
      },
      [self](msg::api_reply& r) {
        auto& s = self->state;
        auto key = s.acks_in_flight.take(r);
        if (!key)
          return;
        const auto kind = static_cast<k8s::api_error::kind>(r.error_kind);
        // NotFound: the CR is gone, and nothing to retry; it stays known until the informer drops
        // it (the next build forgets it then), so a cache that still shows it Pending does not
        // send the patch again.
        if (!r.ok && kind != k8s::api_error::kind::not_found) {
          runtime::log::warn(actor_name, "CapacityRequest acknowledgement failed; retried next roll-up", {{"error", r.error}});
          s.acks_known.erase(*key);  // the next build queues it again while it is still Pending
        }
        pump_acks(self);
      },
  };
}

}  // namespace

rollup_actor spawn_rollup(caf::actor_system& sys, operator_deps deps, operator_options opts) {
  return sys.spawn(rollup_behavior, std::move(deps), std::move(opts));
}

}  // namespace headroom::actors::bigfleet
