#include "actors/runners/health.hpp"

#include <algorithm>

#include "adapters/k8s/time.hpp"

namespace headroom::actors::runners {

verdict classify(const health_input& in, const health_timeouts& t) {
  if (in.phase == "Pending")
    return in.pending_for_ms >= t.pending.count() ? verdict::pod_stuck_pending : verdict::healthy;
  if (in.phase != "Running")
    return verdict::healthy;
  const bool online = in.runner == runner_seen::idle || in.runner == runner_seen::busy;
  if (!online && !in.ever_registered && in.runner != runner_seen::unknown && in.running_for_ms >= t.registration.count())
    return verdict::runner_never_registered;
  if (in.runner == runner_seen::idle && in.idle_for_ms >= t.idle.count())
    return verdict::runner_idle;
  if (in.runner == runner_seen::absent && in.ever_registered && in.absent_for_ms >= t.registration.count())
    return verdict::runner_vanished;
  return verdict::healthy;
}

const char* to_string(verdict v) {
  switch (v) {
    case verdict::healthy:
      return "healthy";
    case verdict::pod_stuck_pending:
      return "pod_stuck_pending";
    case verdict::runner_never_registered:
      return "runner_never_registered";
    case verdict::runner_idle:
      return "runner_idle";
    case verdict::runner_vanished:
      return "runner_vanished";
  }
  return "?";
}

verdict health_memory::observe(const std::string& pod, std::string_view phase, bool bound, int64_t created_ms, int64_t now_ms,
                               runner_seen seen) {
  health_input in;
  in.phase = phase == "Running" && !bound ? "Pending" : std::string{phase};
  in.pending_for_ms = created_ms > 0 ? now_ms - created_ms : 0;
  if (in.phase == "Running") {
    auto [it, fresh] = running_since_.emplace(pod, now_ms);  // first seen Running (after a restart: from then on)
    in.running_for_ms = now_ms - it->second;
  }
  in.runner = seen;
  if (seen == runner_seen::idle || seen == runner_seen::busy)
    registered_.insert(pod);
  in.ever_registered = registered_.count(pod) > 0;
  if (seen == runner_seen::idle) {
    auto [it, fresh] = idle_since_.emplace(pod, now_ms);
    in.idle_for_ms = now_ms - it->second;
  } else if (seen != runner_seen::unknown) {
    idle_since_.erase(pod);
  }
  if (seen == runner_seen::absent && in.ever_registered) {
    auto [it, fresh] = absent_since_.emplace(pod, now_ms);
    in.absent_for_ms = now_ms - it->second;
  } else if (seen != runner_seen::unknown) {
    absent_since_.erase(pod);
  }
  return classify(in, t_);
}

verdict health_memory::observe(const k8s::pod& pod, int64_t now_ms, runner_seen seen) {
  // An unreadable creationTimestamp counts as just made: never judged stuck on a guess.
  const auto& created = pod.meta.created;
  return observe(pod.meta.name, pod.phase, !pod.node_name.empty(), created ? static_cast<int64_t>(*created * 1000) : now_ms,
                 now_ms, seen);
}

bool health_memory::worth_asking(const std::string& pod, int64_t now_ms) const {
  auto it = running_since_.find(pod);
  if (it == running_since_.end())
    return false;
  return registered_.count(pod) > 0 || now_ms - it->second >= t_.registration.count();
}

health_memory::remembered health_memory::recall(const std::string& pod) const {
  remembered r;
  if (auto it = running_since_.find(pod); it != running_since_.end())
    r.running_since = it->second;
  if (auto it = idle_since_.find(pod); it != idle_since_.end())
    r.idle_since = it->second;
  r.registered = registered_.count(pod) > 0;
  return r;
}

void health_memory::restore(const std::string& pod, const remembered& r) {
  if (r.running_since > 0)
    running_since_.emplace(pod, r.running_since);
  if (r.idle_since > 0)
    idle_since_.emplace(pod, r.idle_since);
  if (r.registered)
    registered_.insert(pod);
}

void health_memory::keep_only(const std::set<std::string>& live) {
  std::erase_if(running_since_, [&](const auto& kv) { return live.count(kv.first) == 0; });
  std::erase_if(idle_since_, [&](const auto& kv) { return live.count(kv.first) == 0; });
  std::erase_if(absent_since_, [&](const auto& kv) { return live.count(kv.first) == 0; });
  std::erase_if(registered_, [&](const auto& n) { return live.count(n) == 0; });
}

}  // namespace headroom::actors::runners
