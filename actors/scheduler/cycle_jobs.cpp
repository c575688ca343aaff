// The reconciler's 1. syncJobsState and history retention (see cycle.hpp).

#include "actors/scheduler/cycle.hpp"

namespace headroom::actors::scheduler::reconcile {

// ---- 1. syncJobsState ------------------------------------------------------------------------

void cycle::sync_jobs() {
  if (!load_active())
    return;
  // A webhook about the job (updated_at) is news from GitHub too: ask only about jobs that have
  // been quiet for a jobSyncInterval, which keeps the REST calls within rate limits. The lookups
  // are the job_checker's (runner_maker.hpp), a batch at a time, the most overdue first: at
  // 10,000 queued jobs, every lookup inside the cycle held the loop (and provisioning) up for
  // seconds. With many jobs each is looked at less often than the interval.
  std::set<int64_t> live;
  std::vector<std::pair<int64_t, const store::job*>> due;  // (quiet since, job)
  for (const auto& j : jobs_) {
    live.insert(j.id);
    const int64_t quiet_since = std::max(st_.job_checked_at[j.id], j.updated_at);
    if (now_ - quiet_since >= o_.job_sync_interval.count())
      due.emplace_back(quiet_since, &j);
  }
  std::erase_if(st_.job_checked_at, [&](const auto& kv) { return live.count(kv.first) == 0; });
  if (st_.checking || !st_.check_batch.empty() || due.empty())
    return;
  const size_t n = std::min(due.size(), job_lookup_batch);
  std::partial_sort(due.begin(), due.begin() + static_cast<std::ptrdiff_t>(n), due.end(),
                    [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < n; ++i) {
    st_.job_checked_at[due[i].second->id] = now_;
    st_.check_batch.push_back(*due[i].second);
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
