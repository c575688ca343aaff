// The capacity loop's arithmetic (pure): how many pairs to keep, what capacity to advertise, what
// a placeholder pod's state means, and slot ids.

#include <algorithm>
#include <random>

#include "actors/capacity/capacity.hpp"

namespace headroom::actors::capacity {

int64_t desired_pairs(const capacity_inputs& in) {
  const int64_t room = in.max_runners - in.assigned_jobs;
  return std::max<int64_t>(0, std::min(in.proactive + in.queued, room));
}

int64_t advertised_capacity(const capacity_inputs& in) {
  const int64_t unplaced = std::max<int64_t>(0, in.assigned_jobs - in.runners_placed);
  const int64_t free_pairs = std::max<int64_t>(0, in.ready_pairs - unplaced);
  const int64_t holding = std::max<int64_t>(0, in.assigned_jobs - in.runners_stuck);
  return std::max<int64_t>(0, std::min(holding + free_pairs, in.max_runners));
}

pod_state placeholder_state(const k8s::pod* p) {
  if (p == nullptr)
    return pod_state::absent;
  if (!p->meta.deletion_timestamp.empty() || p->phase == "Failed" || p->phase == "Succeeded")
    return pod_state::gone;  // preempted, evicted, deleted, or its container ended
  if (const auto* c = p->find_condition("DisruptionTarget"); c != nullptr && c->status == "True")
    return pod_state::gone;  // the scheduler chose it as a preemption victim
  if (p->phase == "Running" && !p->node_name.empty())
    return pod_state::running;
  return pod_state::pending;
}

bool scheduler_found_no_room(const k8s::pod& p) {
  if (!p.node_name.empty() || !p.meta.deletion_timestamp.empty() || !(p.phase.empty() || p.phase == "Pending"))
    return false;
  const auto* c = p.find_condition("PodScheduled");
  return c != nullptr && c->status == "False" && c->reason == "Unschedulable";
}

std::string new_slot_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rng() & 0xffffffffu));
  return buf;
}

int64_t burst_room(int64_t max_burst, int64_t pending) {
  if (max_burst <= 0)
    return INT64_MAX;
  return std::max<int64_t>(0, max_burst - pending);
}

}  // namespace headroom::actors::capacity
