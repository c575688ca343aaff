#pragma once

// Concurrent provisioning (#60): the reconciler's cycle decides which jobs get a runner and adds
// each one's worker row at once (so the next cycle counts it as supply); the slow part — the JIT
// config at GitHub, the runner pod and its Secret at the API server — is done by a bounded set of
// runner_makers (scheduler.provisioningConcurrency), detached actors that block on those calls,
// each making one runner at a time and telling the reconciler what came of it (runner_made).
// Orders beyond the bound wait, oldest first, in the reconciler's order_queue. GitHub and the
// Kubernetes client's budget (kubernetes.qps) are then the limit, not one call after another.
// Private to actors/scheduler.

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/scheduler/scheduler.hpp"

namespace headroom::actors::scheduler {

// One runner to make: its worker row (added), the job it was decided for, its pool, its scope
// (orgs/x, repos/o/r, enterprises/e) and runner group (0 for a repository).
struct runner_order {
  store::worker worker;
  store::job job;
  std::shared_ptr<const pool_options> pool;
  std::string scope;
  int64_t group = 0;
};

// What came of an order. The maker has already undone what it could (the runner removed at
// GitHub after a refused pod or Secret, the pod deleted after a refused Secret); the reconciler
// records the worker's end, the scope's standing and the API server's pause.
struct runner_made {
  enum class outcome { made, jit_refused, pod_refused, secret_refused };
  outcome what = outcome::made;
  runner_order order;
  int64_t runner_id = 0;
  github::rest_error github;  // jit_refused
  k8s::api_error kube;        // pod_refused, secret_refused
  bool pod_left = false;      // secret_refused: the pod's delete was refused too (the stray sweep ends it)
  std::string store_error;    // the runner id could not be recorded ("" when it was)
  int64_t finished_at = 0;    // ms since the epoch
};

using runner_made_sink = caf::typed_actor<caf::reacts_to<runner_made>>;
using runner_maker_actor = caf::typed_actor<caf::reacts_to<runner_order>>;

// A maker: blocks on one order's calls at a time, then tells `to`.
runner_maker_actor spawn_runner_maker(caf::actor_system& sys, reconciler_context_ptr ctx, runner_made_sink to);

// syncJobsState's GitHub lookups, off the cycle the same way (job_checker.cpp): the cycle picks
// the most overdue quiet jobs, at most job_lookup_batch at a time, and one job_checker asks GitHub
// about them in turn and moves them in the store (completed, running, failed).
struct job_checks {
  std::vector<store::job> jobs;
};
struct jobs_checked {
  int64_t looked = 0, failed = 0, github_errors = 0, store_errors = 0;
  bool rate_limited = false;  // GitHub's rate limit stopped the batch
};
using jobs_checked_sink = caf::typed_actor<caf::reacts_to<jobs_checked>>;
using job_checker_actor = caf::typed_actor<caf::reacts_to<job_checks>>;
job_checker_actor spawn_job_checker(caf::actor_system& sys, reconciler_context_ptr ctx, jobs_checked_sink to);

// The orders decided and not made yet, oldest first, and which are being made. Pure (unit-tested):
// the reconciler asks it what to send whenever a maker is free.
class order_queue {
 public:
  void add(runner_order o);
  // Up to `free_makers` orders to send now, oldest first. None while `paused` (the API server
  // refused a runner pod, or GitHub's rate limit lasts): they wait, their rows counted as supply.
  // An order whose scope `scope_waits` (GitHub refused its last runner) is not sent: it is moved
  // to `dropped` (its worker is over; its job gets a new one once the scope's backoff is over).
  std::vector<runner_order> take(size_t free_makers, bool paused, const std::function<bool(const std::string&)>& scope_waits,
                                 std::vector<runner_order>& dropped);
  void done(const std::string& worker);             // its maker answered
  bool making(const std::string& worker) const;     // queued or being made
  size_t queued() const { return queue_.size(); }
  size_t in_flight() const { return in_flight_.size(); }

 private:
  std::deque<runner_order> queue_;
  std::set<std::string> waiting_, in_flight_;
};

}  // namespace headroom::actors::scheduler

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::scheduler::runner_order)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::scheduler::runner_made)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::scheduler::job_checks)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::scheduler::jobs_checked)
