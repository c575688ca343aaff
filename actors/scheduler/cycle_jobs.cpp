// The reconciler's 1. syncJobsState and history retention (see cycle.hpp).

#include "actors/scheduler/cycle.hpp"

namespace headroom::actors::scheduler::reconcile {

// ---- 1. syncJobsState ------------------------------------------------------------------------

void cycle::sync_jobs() {
  if (!load_active())
    return;
  std::set<int64_t> live;
  for (const auto& j : jobs_) {
    live.insert(j.id);
    auto& checked = st_.job_checked_at[j.id];
    // A webhook about the job (updated_at) is news from GitHub too: ask only about jobs that
    // have been quiet for a jobSyncInterval, which keeps the REST calls within rate limits.
    if (now_ - std::max(checked, j.updated_at) < o_.job_sync_interval.count())
      continue;
    checked = now_;
    auto info = ctx_.github->get_job(j.repository, j.id);
    if (auto* e = std::get_if<github::rest_error>(&info)) {
      if (github_error(*e))
        break;
      continue;
    }
    const auto& found = std::get<std::optional<github::rest_job>>(info);
    if (!found) {
      fail_job(j, "GitHub answers 404 for the job");
      continue;
    }
    if (found->status == "completed") {
      advance_job(j, store::job_status::completed, "GitHub says the job completed");
    } else if (found->status == "in_progress" && j.status == store::job_status::pending) {
      advance_job(j, store::job_status::running, "GitHub says the job is in progress");
    } else if (j.status == store::job_status::pending && now_ - j.created_at >= o_.job_stuck_queued.count()) {
      auto run = ctx_.github->run_status(j.repository, j.run_id);
      if (auto* e = std::get_if<github::rest_error>(&run)) {
        if (github_error(*e))
          break;
      } else if (const auto& s = std::get<std::optional<std::string>>(run); !s || *s == "completed")
        fail_job(j, "queued past jobStuckQueued while its run is over");
    }
  }
  std::erase_if(st_.job_checked_at, [&](const auto& kv) { return live.count(kv.first) == 0; });
}

void cycle::advance_job(const store::job& j, store::job_status to, const char* why) {
  auto r = ctx_.jobs->advance_job(j.id, to, now_);
  if (auto* e = std::get_if<store::error>(&r))
    return store_error("advance job", *e);
  if (std::get<bool>(r))
    runtime::log::info(actor_name, "job moved", {{"job", j.id}, {"to", store::to_string(to)}, {"why", why}});
}

void cycle::fail_job(const store::job& j, const char* why) {
  auto r = ctx_.jobs->advance_job(j.id, store::job_status::failed, now_);
  if (auto* e = std::get_if<store::error>(&r))
    return store_error("fail job", *e);
  if (std::get<bool>(r)) {
    runtime::log::warn(actor_name, "job failed", {{"job", j.id}, {"repository", j.repository}, {"why", why}});
    ctx_.metrics.action("job_failed");
  }
}

// ---- history retention -----------------------------------------------------------------------

// Under the reconcile lock, so two processes do not prune at once. At most 20 batches of 1,000
// rows per cycle, so a first prune of a long history does not hold the loop up for long: what is
// left goes at the next cycles. A failure is tried again at the next cycle; once nothing is left,
// the next prune waits for the interval.
void cycle::prune() {
  auto r = ctx_.jobs->prune(now_ - o_.retention.count(), 1000, 20);
  if (auto* e = std::get_if<store::error>(&r))
    return store_error("prune history", *e);
  const auto& p = std::get<store::pruned>(r);
  if (!p.more)
    st_.last_prune = now_;
  if (ctx_.metrics.pruned) {
    ctx_.metrics.pruned("jobs", p.jobs);
    ctx_.metrics.pruned("workers", p.workers);
    ctx_.metrics.pruned("deliveries", p.deliveries);
  }
  if (p.jobs + p.workers + p.deliveries > 0)
    runtime::log::info(actor_name, "history pruned",
                       {{"jobs", p.jobs}, {"workers", p.workers}, {"deliveries", p.deliveries}, {"retention_ms", o_.retention.count()}});
}

}  // namespace headroom::actors::scheduler::reconcile
