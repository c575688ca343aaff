#pragma once

// The capacity monitor's running count of its scale set's pods, kept up to date from the pod
// feed's changes: each change costs O(log pods), so a capacity decision is O(placeholders +
// started jobs) however many runner pods the scale set has, not a walk over all of them (#38: the
// decision's cost per change at 100,000 pods). The periodic recalculation rebuilds it from the
// informer's cache, which also mends anything the bounded feed dropped.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "adapters/k8s/objects.hpp"
#include "messages/k8s.hpp"

namespace headroom::actors::capacity {

// What one runner pod adds to the counts.
struct runner_mark {
  bool placed = false;   // Running on a node, not being deleted
  bool pending = false;  // phase empty or Pending
  bool running = false;
  bool failed = false;
  bool going = false;  // not finished and not being deleted
  // Pending where the scheduler found no room and no preemption would make any (no nominated
  // node): the pair its job was claimed on is gone (its node cordoned or removed, its room taken).
  bool stuck = false;
  // Nominated to a node and not bound yet: preempting its way into a room (its victim going).
  bool nominated = false;
  bool operator==(const runner_mark&) const = default;
};

struct runner_totals {
  int64_t pods = 0, placed = 0, pending = 0, running = 0, failed = 0, going = 0, stuck = 0, nominated = 0;
  bool operator==(const runner_totals&) const = default;
};

class pod_census {
 public:
  pod_census() = default;
  explicit pod_census(std::string ns) : ns_(std::move(ns)) {}

  // One change from the feed (added, modified, resync: the pod as it is now; deleted: gone).
  void apply(msg::object_change change, const std::shared_ptr<const k8s::pod>& pod);
  // Everything again, from the informer's cache.
  template <class Range>
  void rebuild(const Range& pods) {
    runners_.clear();
    rooms_.clear();
    placeholders_.clear();
    workflows_.clear();
    totals_ = {};
    for (const auto& p : pods)
      apply(msg::object_change::added, p);
    built_ = true;
  }
  bool built() const { return built_; }
  // After a feed drain, with the feed's count of dropped changes: a change the bounded feed
  // dropped is not in the count, so it is counted again from `list()` (the informer's cache).
  // True when it was.
  template <class List>
  bool mend(uint64_t feed_dropped, List&& list) {
    if (feed_dropped == dropped_seen_)
      return false;
    dropped_seen_ = feed_dropped;
    rebuild(list());
    return true;
  }

  const runner_totals& runners() const { return totals_; }
  // A runner pod's mark, or null when the scale set has no runner pod of that name.
  const runner_mark* runner(const std::string& name) const;
  // The placeholder pods (either role, and kubernetes mode's pair probes), by name.
  const std::map<std::string, std::shared_ptr<const k8s::pod>>& placeholders() const { return placeholders_; }
  // The workflow pods the runners' container hook made (the hook template's role label), by name.
  const std::map<std::string, std::shared_ptr<const k8s::pod>>& workflows() const { return workflows_; }
  // kubernetes mode: the pairs' slots whose workflow room a runner pod still going was pinned to
  // (its headroom.dev/workflow-room annotation), with that runner's name.
  const std::map<std::string, std::string>& claimed_rooms() const { return rooms_; }

  static runner_mark mark_of(const k8s::pod& p);

 private:
  void forget(const std::string& name);

  std::string ns_;
  bool built_ = false;
  uint64_t dropped_seen_ = 0;
  // Keyed by a view of the pod's own name, which the entry keeps alive: the census holds the same
  // pod the informer's cache does (the change it applied), not a copy of its name (#38: the
  // memory per cached pod; each scale set has two censuses, the monitor's and the provisioner's).
  struct runner_entry {
    std::shared_ptr<const k8s::pod> pod;
    runner_mark mark;
  };
  std::unordered_map<std::string_view, runner_entry> runners_;
  std::map<std::string, std::shared_ptr<const k8s::pod>> placeholders_;
  std::map<std::string, std::shared_ptr<const k8s::pod>> workflows_;
  std::map<std::string, std::string> rooms_;
  runner_totals totals_;
};

}  // namespace headroom::actors::capacity
