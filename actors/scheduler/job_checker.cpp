// job_checker: syncJobsState's GitHub lookups, one batch at a time, off the reconciler's cycle (see
// runner_maker.hpp). Detached: GitHub's and the store's calls block.

#include "actors/scheduler/cycle.hpp"

namespace headroom::actors::scheduler {

namespace {

using reconcile::actor_name;

struct checker_state {
  static inline const char* name = "headroom.job_checker";
};

// Moves the job in the store; false when the store failed (the batch stops: it is likely down,
// and the next cycle, once it answers, picks the jobs again).
bool advance(const reconciler_context& ctx, const store::job& j, store::job_status to, const char* why, jobs_checked& out) {
  auto r = ctx.jobs->advance_job(j.id, to, ctx.now_ms());
  if (auto* e = std::get_if<store::error>(&r)) {
    ++out.store_errors;
    runtime::log::warn(actor_name, "store call failed; the next cycle retries", {{"call", "advance job"}, {"error", e->message}});
    return false;
  }
  if (!std::get<bool>(r))
    return true;
  if (to == store::job_status::failed) {
    runtime::log::warn(actor_name, "job failed", {{"job", j.id}, {"repository", j.repository}, {"why", why}});
    ++out.failed;
  } else {
    runtime::log::info(actor_name, "job moved", {{"job", j.id}, {"to", store::to_string(to)}, {"why", why}});
  }
  return true;
}

// A failed GitHub call, logged and counted; true when it was the rate limit (the batch stops).
bool github_failed(const github::rest_error& e, jobs_checked& out) {
  runtime::log::warn(actor_name, "GitHub call failed; the next cycle retries", {{"error", e.describe()}});
  ++out.github_errors;
  out.rate_limited = e.rate_limited;
  return e.rate_limited;
}

jobs_checked check(const reconciler_context& ctx, const std::vector<store::job>& jobs) {
  jobs_checked out;
  const auto& o = ctx.opts;
  for (const auto& j : jobs) {
    ++out.looked;
    auto info = ctx.github->get_job(j.repository, j.id);
    if (auto* e = std::get_if<github::rest_error>(&info)) {
      if (github_failed(*e, out))
        break;
      continue;
    }
    const auto& found = std::get<std::optional<github::rest_job>>(info);
    if (!found) {
      if (!advance(ctx, j, store::job_status::failed, "GitHub answers 404 for the job", out))
        break;
    } else if (found->status == "completed") {
      if (!advance(ctx, j, store::job_status::completed, "GitHub says the job completed", out))
        break;
    } else if (found->status == "in_progress" && j.status == store::job_status::pending) {
      if (!advance(ctx, j, store::job_status::running, "GitHub says the job is in progress", out))
        break;
    } else if (j.status == store::job_status::pending && ctx.now_ms() - j.created_at >= o.job_stuck_queued.count()) {
      auto run = ctx.github->run_status(j.repository, j.run_id);
      if (auto* e = std::get_if<github::rest_error>(&run)) {
        if (github_failed(*e, out))
          break;
      } else if (const auto& s = std::get<std::optional<std::string>>(run); !s || *s == "completed") {
        if (!advance(ctx, j, store::job_status::failed, "queued past jobStuckQueued while its run is over", out))
          break;
      }
    }
  }
  return out;
}

job_checker_actor::behavior_type checker_behavior(job_checker_actor::stateful_pointer<checker_state> self, reconciler_context_ptr ctx,
                                                  jobs_checked_sink to) {
  return {
      [self, ctx, to](const job_checks& batch) { self->send(to, check(*ctx, batch.jobs)); },
  };
}

}  // namespace

job_checker_actor spawn_job_checker(caf::actor_system& sys, reconciler_context_ptr ctx, jobs_checked_sink to) {
  return sys.spawn<caf::detached>(checker_behavior, std::move(ctx), std::move(to));
}

}  // namespace headroom::actors::scheduler
