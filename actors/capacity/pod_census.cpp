#include "actors/capacity/pod_census.hpp"

#include "actors/capacity/capacity.hpp"
#include "actors/runners/pods.hpp"

namespace headroom::actors::capacity {

namespace {

using runners::role;
using runners::role_label;

void add(runner_totals& t, const runner_mark& m, int64_t sign) {
  t.pods += sign;
  t.placed += sign * m.placed;
  t.pending += sign * m.pending;
  t.running += sign * m.running;
  t.failed += sign * m.failed;
  t.going += sign * m.going;
  t.stuck += sign * m.stuck;
  t.nominated += sign * m.nominated;
}

}  // namespace

runner_mark pod_census::mark_of(const k8s::pod& p) {
  runner_mark m;
  const bool deleting = !p.meta.deletion_timestamp.empty();
  m.placed = p.phase == "Running" && !p.node_name.empty() && !deleting;
  m.pending = p.phase.empty() || p.phase == "Pending";
  m.running = p.phase == "Running";
  m.failed = p.phase == "Failed";
  m.going = p.phase != "Succeeded" && p.phase != "Failed" && !deleting;
  m.stuck = scheduler_found_no_room(p) && p.nominated_node_name.empty();
  m.nominated = !p.nominated_node_name.empty() && p.node_name.empty() && !deleting;
  return m;
}

void pod_census::forget(const std::string& name) {
  if (auto it = runners_.find(std::string_view{name}); it != runners_.end()) {
    add(totals_, it->second.mark, -1);
    if (const auto* room = it->second.pod->meta.annotation(runners::keys::workflow_room))
      if (auto r = rooms_.find(*room); r != rooms_.end() && r->second == name)
        rooms_.erase(r);
    runners_.erase(it);  // the key views the erased entry's pod: nothing refers to it after this
  }
  placeholders_.erase(name);
  workflows_.erase(name);
}

void pod_census::apply(msg::object_change change, const std::shared_ptr<const k8s::pod>& pod) {
  if (!pod || pod->meta.ns != ns_)
    return;
  const auto& name = pod->meta.name;
  forget(name);  // a relabelled pod may change its role
  if (change == msg::object_change::deleted)
    return;
  if (runners::is_runner_pod(pod->meta)) {
    const auto m = mark_of(*pod);
    runners_.emplace(std::string_view{pod->meta.name}, runner_entry{pod, m});
    add(totals_, m, +1);
    if (const auto* room = pod->meta.annotation(runners::keys::workflow_room); room != nullptr && m.going)
      rooms_[*room] = name;
    return;
  }
  const auto* r = pod->meta.label(runners::keys::role);
  if (r != nullptr && (*r == role_label(role::runner_placeholder) || *r == role_label(role::workflow_placeholder) ||
                       *r == role_label(role::pair_probe))) {
    placeholders_.emplace(name, pod);
  } else if (r != nullptr && *r == role_label(role::workflow)) {
    workflows_.emplace(name, pod);
  }
}

const runner_mark* pod_census::runner(const std::string& name) const {
  auto it = runners_.find(std::string_view{name});
  return it == runners_.end() ? nullptr : &it->second.mark;
}

}  // namespace headroom::actors::capacity
