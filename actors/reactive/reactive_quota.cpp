// reactive_quota: the tenants' hard caps on replicas, summed over each tenant's targets. Scalers
// report their replicas at every evaluation and claim room before a scale-up; a claim that would
// pass the cap is refused (the scaler's step is a no-op, no error), and granted again by itself
// once the cap is raised (a re-read of the configuration) or other targets shrink. Until every
// target of a tenant has reported, its claims wait: an unknown count could hide the cap's excess.

#include <caf/all.hpp>

#include "actors/reactive/reactive.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::reactive {

namespace {

constexpr std::string_view actor_name = "reactive_quota";

struct quota_state {
  quota_options opts;
  std::map<std::string, std::map<std::string, int32_t>> replicas;  // tenant → target → replicas
  static inline const char* name = "headroom.reactive_quota";
};

// Its own timer: read the caps again.
using quota_impl = quota_actor::extend<caf::reacts_to<msg::reload_atom>>;
using quota_self = quota_impl::stateful_base<quota_state>;

int32_t used(const std::map<std::string, int32_t>& of_tenant, const std::string& except) {
  int32_t sum = 0;
  for (const auto& [t, r] : of_tenant)
    if (t != except)
      sum += r;
  return sum;
}

void publish(quota_self* self, const std::string& tenant) {
  auto& s = self->state;
  if (!s.opts.report)
    return;
  auto cap = s.opts.caps.find(tenant);
  s.opts.report(tenant, used(s.replicas[tenant], ""), cap == s.opts.caps.end() ? -1 : cap->second);
}

quota_impl::behavior_type quota_behavior(quota_self* self, quota_options opts) {
  self->state.opts = std::move(opts);
  if (self->state.opts.reload)
    self->delayed_send(self, self->state.opts.reload_interval, msg::reload_atom_v);
  return {
      [self](const msg::quota_report& r) {
        self->state.replicas[r.tenant][r.target] = r.replicas;
        publish(self, r.tenant);
      },
      [self](const msg::quota_claim& c) -> msg::quota_verdict {
        auto& s = self->state;
        auto cap = s.opts.caps.find(c.tenant);
        if (cap == s.opts.caps.end())
          return {true, "tenant " + c.tenant + " has no quota"};
        auto& of_tenant = s.replicas[c.tenant];
        of_tenant[c.target] = c.current;
        size_t missing = 0;
        for (const auto& member : s.opts.members[c.tenant])
          missing += of_tenant.count(member) == 0;
        if (missing > 0)
          return {false, "tenant " + c.tenant + ": waiting for " + std::to_string(missing) + " targets to report"};
        const int32_t others = used(of_tenant, c.target);
        if (others + c.wanted > cap->second)
          return {false, "tenant " + c.tenant + ": " + std::to_string(others + c.current) + " of " +
                             std::to_string(cap->second) + " replicas in use"};
        of_tenant[c.target] = c.wanted;  // held until the scaler reports what it wrote
        publish(self, c.tenant);
        return {true, ""};
      },
      [self](msg::reload_atom) {
        auto& s = self->state;
        std::string error;
        if (auto caps = s.opts.reload(error)) {
          for (const auto& [tenant, cap] : *caps) {
            auto old = s.opts.caps.find(tenant);
            if (old == s.opts.caps.end() || old->second != cap)
              runtime::log::info(actor_name, "quota changed",
                                 {{"tenant", tenant},
                                  {"from", static_cast<int64_t>(old == s.opts.caps.end() ? -1 : old->second)},
                                  {"to", static_cast<int64_t>(cap)}});
          }
          s.opts.caps = std::move(*caps);
          for (const auto& [tenant, cap] : s.opts.caps)
            publish(self, tenant);
        } else if (!error.empty()) {
          runtime::log::warn(actor_name, "cannot re-read the quotas; keeping the last ones", {{"error", error}});
        }
        self->delayed_send(self, s.opts.reload_interval, msg::reload_atom_v);
      },
  };
}

}  // namespace

quota_actor spawn_reactive_quota(caf::actor_system& sys, quota_options opts) {
  return sys.spawn(quota_behavior, std::move(opts));
}

}  // namespace headroom::actors::reactive
