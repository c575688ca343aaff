// scale_set_sweeper: once per start of the scale sets' subtree, deletes the ScaleSet objects this
// headroom made (label headroom.dev/instance, its Lease's identity) for scale sets it no longer
// serves, so `kubectl get scalesets -A` shows only the configuration. Objects of another headroom
// (another instance label), or made by hand (none), are never touched. A list the API server
// cannot answer is tried again with backoff; then the actor's work is done and it exits.

#include <caf/all.hpp>

#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/capacity/capacity.hpp"
#include "actors/k8s/api_calls.hpp"
#include "messages/type_ids.hpp"
#include "adapters/k8s/fields.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::capacity {

namespace {

constexpr std::string_view actor_name = "scale_set_sweeper";
const k8s::resource_kind scale_sets{"headroom.dev", "v1alpha1", "scalesets", true};

struct sweep_call {
  bool list = true;
  std::string ns, name;  // a delete's object
};

struct sweeper_state {
  k8s::client* kube = nullptr;
  std::string instance;
  std::set<std::pair<std::string, std::string>> keep;  // (namespace, name) of the configured scale sets
  api_calls<sweep_call> calls;
  runtime::outage outage{{std::chrono::seconds(1), std::chrono::minutes(5), std::chrono::minutes(10), 0.5}};
  int deletes_pending = 0;
};

// Its retry timer, and the API server's answers to its list and deletes.
using sweeper_impl = sweeper_actor::extend<caf::reacts_to<msg::api_reply>>;
using sweeper_self = sweeper_impl::stateful_base<sweeper_state>;

int64_t now_ms(sweeper_self* self) { return runtime::actor_system_clock{self->clock()}.now_ms(); }

void list(sweeper_self* self) {
  auto& st = self->state;
  k8s::list_options opts;
  opts.label_selector = std::string{runners::keys::instance} + "=" + st.instance;
  st.calls.start(self, {}, [kube = st.kube, opts](k8s::api_callback cb) {
    kube->list(scale_sets, "", opts, std::move(cb));
  });
}

// The objects of this instance that no configured scale set names; nullopt when the list is unreadable.
std::optional<std::vector<std::pair<std::string, std::string>>> retired(const sweeper_state& st, const std::string& body) {
  const auto items = k8s::item_keys(body);
  if (!items)
    return std::nullopt;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& item : *items) {
    std::pair<std::string, std::string> key{item.ns, item.name};
    if (!st.keep.count(key))
      out.push_back(std::move(key));
  }
  return out;
}

void on_list(sweeper_self* self, const msg::api_reply& r) {
  auto& st = self->state;
  auto gone = r.ok ? retired(st, r.body) : std::nullopt;
  if (!gone) {
    // No CRD (404): nothing was ever made, nothing to sweep.
    if (static_cast<k8s::api_error::kind>(r.error_kind) == k8s::api_error::kind::not_found)
      return self->quit();
    const auto v = st.outage.failed(now_ms(self));
    runtime::outage::log(actor_name, v, "cannot list ScaleSet objects to remove retired ones; retrying with backoff",
                         "still cannot list ScaleSet objects",
                         {{"error", r.ok ? std::string{"unreadable list"} : r.error}, {"retry_in_ms", v.retry_in.count()}});
    self->delayed_send(self, v.retry_in, msg::sweep_atom_v);
    return;
  }
  st.outage.succeeded(now_ms(self));
  if (gone->empty())
    return self->quit();
  for (auto& [ns, name] : *gone) {
    ++st.deletes_pending;
    st.calls.start(self, {false, ns, name}, [kube = st.kube, ns = ns, name = name](k8s::api_callback cb) {
      kube->remove(scale_sets, ns, name, {}, std::move(cb));
    });
  }
}

void on_delete(sweeper_self* self, const sweep_call& c, const msg::api_reply& r) {
  auto& st = self->state;
  const bool gone = r.ok || static_cast<k8s::api_error::kind>(r.error_kind) == k8s::api_error::kind::not_found;
  if (gone)
    runtime::log::info(actor_name, "removed the ScaleSet object of a scale set no longer configured",
                       {{"namespace", c.ns}, {"scale_set", c.name}});
  else
    runtime::log::warn(actor_name, "could not remove the ScaleSet object of a scale set no longer configured; tried again at the next start",
                       {{"namespace", c.ns}, {"scale_set", c.name}, {"error", r.error}});
  if (--st.deletes_pending == 0)
    self->quit();
}

sweeper_impl::behavior_type sweeper_behavior(sweeper_self* self, k8s::client* kube, std::string instance,
                               std::set<std::pair<std::string, std::string>> keep) {
  auto& st = self->state;
  st.kube = kube;
  st.instance = std::move(instance);
  st.keep = std::move(keep);
  list(self);
  return {
      [self](msg::sweep_atom) { list(self); },
      [self](msg::api_reply& r) {
        auto call = self->state.calls.take(r);
        if (!call)
          return;
        if (call->list)
          on_list(self, r);
        else
          on_delete(self, *call, r);
      },
  };
}

}  // namespace

std::string owned_instance(bool leader_election, const std::string& lease_namespace, const std::string& lease_name) {
  return leader_election ? instance_label(lease_namespace, lease_name) : std::string{};
}

std::string instance_label(const std::string& lease_namespace, const std::string& lease_name) {
  std::string v = lease_namespace + "." + lease_name;
  if (v.size() <= 63)
    return v;
  // A label value is at most 63 characters: a prefix and a hash of the whole keep it unique.
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : v)
    h = (h ^ c) * 1099511628211ULL;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  std::string out = v.substr(0, 46);
  while (!out.empty() && (out.back() == '.' || out.back() == '-'))
    out.pop_back();
  return out + "-" + hex;
}

sweeper_actor spawn_scale_set_sweeper(caf::actor_system& sys, k8s::client* kube, std::string instance,
                                      std::set<std::pair<std::string, std::string>> keep) {
  return sys.spawn(sweeper_behavior, kube, std::move(instance), std::move(keep));
}

}  // namespace headroom::actors::capacity
