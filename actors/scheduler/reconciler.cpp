// reconciler: the scheduler's loop (see scheduler.hpp). A detached actor: store, GitHub and the
// API server's answers are awaited in place, one cycle at a time, and never by another actor.

#include "actors/scheduler/cycle.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors::scheduler {

namespace reconcile {

void cycle::run() {
  auto lock = ctx_.jobs->try_reconcile_lock();
  if (auto* e = std::get_if<store::error>(&lock))
    return store_error("reconcile lock", *e);
  if (!std::get<std::unique_ptr<store::store::lock>>(lock)) {
    if (!st_.lock_held_warned)
      runtime::log::info(actor_name, "another headroom holds the reconcile lock: waiting for it");
    st_.lock_held_warned = true;
    ctx_.metrics.skipped("lock_held");
    return;
  }
  st_.lock_held_warned = false;
  timed("sync_jobs", [&] { sync_jobs(); });
  timed("sync_workers", [&] { sync_workers(); });
  timed("demand_match", [&] { demand_match(); });
  if (o_.retention.count() > 0 && (!st_.last_prune || now_ - *st_.last_prune >= o_.prune_interval.count()))
    timed("prune", [&] { prune(); });
}

void cycle::store_error(const char* what, const store::error& e) {
  // During a store outage the tick loop has said so already (and reminds): one line per state
  // change, not one per call.
  if (!st_.store.down())
    runtime::log::warn(actor_name, "store call failed; the next cycle retries", {{"call", what}, {"error", e.message}});
  ctx_.metrics.error("store");
}

// Logs and counts a failed GitHub call; true when it was GitHub's rate limit (stop calling).
bool cycle::github_error(const github::rest_error& e) {
  runtime::log::warn(actor_name, "GitHub call failed; the next cycle retries", {{"error", e.describe()}});
  ctx_.metrics.error("github");
  return e.rate_limited;
}

bool cycle::load_active() {
  auto jobs = ctx_.jobs->active_jobs();
  if (auto* e = std::get_if<store::error>(&jobs)) {
    store_error("active jobs", *e);
    return false;
  }
  auto workers = ctx_.jobs->active_workers();
  if (auto* e = std::get_if<store::error>(&workers)) {
    store_error("active workers", *e);
    return false;
  }
  jobs_ = std::move(std::get<std::vector<store::job>>(jobs));
  workers_ = std::move(std::get<std::vector<store::worker>>(workers));
  return true;
}

}  // namespace reconcile

namespace {

using reconcile::actor_name;
using reconcile::cycle;
using reconcile::pods_buffer;
using reconcile::reconciler_self;
using reconcile::reconciler_state;

// The store did not answer the wait for job events: back off before the next tick (a down
// PostgreSQL refuses at once, so without it the loop would spin), and log the state change.
std::chrono::milliseconds store_unavailable(reconciler_state& s, const std::string& error) {
  const auto v = s.store.failed(s.ctx->now_ms());
  s.ctx->metrics.error("store");
  if (s.store_down_since == 0)
    s.store_down_since = s.ctx->now_ms();
  if (v.log == runtime::outage::note::went_down) {
    runtime::log::warn(actor_name, "the job store is unavailable; retrying with backoff",
                       {{"error", error}, {"retry_in_ms", v.retry_in.count()}});
    if (s.ctx->metrics.store_available)
      s.ctx->metrics.store_available(false);
  } else if (v.log == runtime::outage::note::still_down) {
    runtime::log::warn(actor_name, "the job store is still unavailable",
                       {{"error", error}, {"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
  }
  return v.retry_in;
}

void store_answered(reconciler_state& s) {
  const auto v = s.store.succeeded(s.ctx->now_ms());
  if (v.log != runtime::outage::note::came_back)
    return;
  runtime::log::info(actor_name, "the job store is available again", {{"down_for_ms", v.down_for_ms}, {"attempts", v.failures}});
  if (s.ctx->metrics.store_available)
    s.ctx->metrics.store_available(true);
  // The intake answered 503 meanwhile (it may have met the outage a little before this loop did):
  // what GitHub saw fail from a minute before the first failure on is redelivered.
  const auto since = s.store_down_since - 60'000;
  s.store_down_since = 0;
  redeliver_missed(s, since);
}

reconcile::reconciler_impl::behavior_type reconciler_behavior(reconciler_self* self, reconciler_context_ptr ctx) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  const auto& o = st.ctx->opts;
  st.health = runners::health_memory{{o.registration_timeout, o.pending_timeout, o.idle_timeout}};
  st.pods = std::make_unique<informer_feed<k8s::pod>>("scheduler_pods", self, pods_buffer);
  st.pods->attach(st.ctx->pods);
  if (st.ctx->track_buffer)
    st.ctx->track_buffer(st.pods->stats());
  self->send(self, msg::reconcile_atom_v);
  return {
      [self](msg::reconcile_atom) {
        auto& s = self->state;
        auto woken = s.ctx->jobs->wait_for_jobs(s.ctx->opts.wait_slice);
        bool due = s.dirty || s.ctx->now_ms() - s.last_cycle >= s.ctx->opts.poll_interval.count();
        std::chrono::milliseconds next{0};
        if (auto* e = std::get_if<store::error>(&woken)) {
          next = store_unavailable(s, e->message);
        } else {
          store_answered(s);
          due = due || std::get<bool>(woken);
        }
        if (due) {
          s.dirty = false;
          s.last_cycle = s.ctx->now_ms();
          cycle{self}.run();
        }
        if (next.count() > 0)
          self->delayed_send(self, next, msg::reconcile_atom_v);
        else
          self->send(self, msg::reconcile_atom_v);
      },
      [self](msg::buffer_wakeup) {
        // A runner pod changed (phase, node, deletion): reflect it at the next tick.
        self->state.pods->drain([&](const msg::pod_event&) { self->state.dirty = true; });
      },
  };
}

}  // namespace

reconciler_actor spawn_reconciler(caf::actor_system& sys, reconciler_context_ptr ctx) {
  return sys.spawn<caf::detached>(reconciler_behavior, std::move(ctx));
}

}  // namespace headroom::actors::scheduler
