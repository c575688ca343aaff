#pragma once

// The runner health checks both runner paths apply (the scale sets' health_check actor and the
// webhook scheduler's reconciler), from seed 003:
//
//   pod_stuck_pending        Pending (or not yet bound) longer than pendingTimeout
//   runner_never_registered  Running longer than registrationTimeout (counted from Running, not
//                            from creation) and GitHub has never seen its runner online
//   runner_idle              GitHub has seen the runner online and not busy for idleTimeout
//   runner_vanished          GitHub saw the runner online once, and has not listed it for
//                            registrationTimeout while its pod still runs (its registration was
//                            deleted: the runner cannot take a job, and its pod would hold a slot)
//
// What each path then does differs (the scale sets remove and delete, the scheduler kills by
// activeDeadlineSeconds and records the failure), so only the decision and its memory are here.

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "adapters/k8s/objects.hpp"

namespace headroom::actors::runners {

using std::chrono::milliseconds;

// GitHub's view of a pod's runner at one look; unknown when GitHub was not asked this time.
enum class runner_seen { unknown, absent, offline, idle, busy };

enum class verdict { healthy, pod_stuck_pending, runner_never_registered, runner_idle, runner_vanished };
const char* to_string(verdict v);

struct health_timeouts {
  milliseconds registration{120'000}, pending{600'000}, idle{600'000};
};

// One look at one runner pod, with the ages the caller measured.
struct health_input {
  std::string phase;  // "Pending" for a Running pod not yet bound to a node
  int64_t pending_for_ms = 0, running_for_ms = 0, idle_for_ms = 0;
  int64_t absent_for_ms = 0;  // since GitHub last listed a runner it had seen online
  runner_seen runner = runner_seen::unknown;
  bool ever_registered = false;
};

// The rule itself, pure.
verdict classify(const health_input& in, const health_timeouts& t);

// What the checks remember between looks, per pod: when it was first seen Running, whether GitHub
// has ever seen its runner online, since when the runner is idle. Owned by one actor.
class health_memory {
 public:
  explicit health_memory(health_timeouts t) : t_(t) {}

  // A look at `pod` at `now_ms`: `phase` and `bound` (has a node) from the pod, `created_ms` its
  // creation, `seen` what GitHub says of its runner (unknown when not asked). Returns the verdict.
  verdict observe(const std::string& pod, std::string_view phase, bool bound, int64_t created_ms, int64_t now_ms,
                  runner_seen seen);
  // The same, read from the pod object (its name, phase, node and creationTimestamp).
  verdict observe(const k8s::pod& pod, int64_t now_ms, runner_seen seen);
  // Whether GitHub's answer about this pod's runner can change a verdict now: the pod is Running
  // and either its runner registered (the idle check) or the registration timeout has passed.
  bool worth_asking(const std::string& pod, int64_t now_ms) const;
  bool registered(const std::string& pod) const { return registered_.count(pod) > 0; }
  // What is remembered of one pod (0: not yet), to keep in a store across restarts, and to give
  // back after one (restore() before the pod's first observe(); a value already held wins).
  struct remembered {
    int64_t running_since = 0, idle_since = 0;
    bool registered = false;
    bool operator==(const remembered&) const = default;
  };
  remembered recall(const std::string& pod) const;
  void restore(const std::string& pod, const remembered& r);
  // Forgets every pod not in `live`.
  void keep_only(const std::set<std::string>& live);

 private:
  health_timeouts t_;
  std::map<std::string, int64_t> running_since_, idle_since_, absent_since_;
  std::set<std::string> registered_;
};

}  // namespace headroom::actors::runners
