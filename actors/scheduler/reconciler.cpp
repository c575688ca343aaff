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
  timed("cycle", [&] {
    timed("sync_jobs", [&] { sync_jobs(); });
    timed("sync_workers", [&] { sync_workers(); });
    timed("demand_match", [&] { demand_match(); });
    if (o_.retention.count() > 0 && (!st_.last_prune || now_ - *st_.last_prune >= o_.prune_interval.count()))
      timed("prune", [&] { prune(); });
  });
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
  if (loaded_)
    return true;
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
  loaded_ = true;
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

// Provisioning waits: the API server refused a runner pod lately, or GitHub's rate limit lasts.
bool provisioning_paused(reconciler_state& s) {
  return s.ctx->now_ms() < s.provision_paused_until || s.ctx->github->rate_limited();
}

// Orders to the free makers (spawned at the first order, linked: they end with the reconciler).
// While the API server's pause or GitHub's rate limit lasts they wait; those of a scope GitHub
// refused since they were decided are over.
void dispatch(reconciler_self* self) {
  auto& s = self->state;
  if (s.orders.queued() == 0)
    return;
  if (s.makers.empty()) {
    const auto sink = caf::actor_cast<runner_made_sink>(self);
    for (int64_t i = 0; i < std::max<int64_t>(1, s.ctx->opts.provisioning_concurrency); ++i) {
      auto m = spawn_runner_maker(self->system(), s.ctx, sink);
      self->link_to(m);
      s.makers.push_back(m);
    }
    s.idle_makers = s.makers;
  }
  const int64_t now = s.ctx->now_ms();
  const bool paused = provisioning_paused(s);
  // After the API server refused a runner pod, one order at a time until one is made: when the
  // pause ends it is probed with one runner, not with every maker at once (each refused attempt
  // costs a JIT config at GitHub and its removal; the chaos suite saw 20 refused in a 30 s outage
  // with 8 makers, 15 allowed).
  const size_t free = s.create_failures == 0 ? s.idle_makers.size() : s.idle_makers.size() == s.makers.size() ? 1 : 0;
  std::vector<runner_order> dropped;
  auto go = s.orders.take(free, paused, [&](const std::string& scope) {
    auto r = s.refused.find(scope);
    return r != s.refused.end() && now < r->second.until;
  }, dropped);
  for (auto& o : go) {
    self->send(s.idle_makers.back(), std::move(o));
    s.idle_makers.pop_back();
  }
  if (!dropped.empty())
    cycle{self}.not_made(dropped);
}

// The batch of quiet jobs the last cycle picked, to the checker (spawned at the first, linked).
void send_checks(reconciler_self* self) {
  auto& s = self->state;
  if (s.checking || s.check_batch.empty())
    return;
  if (!s.checker) {
    s.checker = spawn_job_checker(self->system(), s.ctx, caf::actor_cast<jobs_checked_sink>(self));
    self->link_to(s.checker);
  }
  s.checking = true;
  self->send(s.checker, job_checks{std::exchange(s.check_batch, {})});
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
        // While runners are being made, their makers' answers (handled between ticks) are not
        // kept waiting a whole slice.
        const bool making = s.orders.in_flight() > 0 || (s.orders.queued() > 0 && !provisioning_paused(s)) || s.checking;
        auto woken = s.ctx->jobs->wait_for_jobs(making ? std::min(s.ctx->opts.wait_slice, std::chrono::milliseconds{5}) : s.ctx->opts.wait_slice);
        // A runner pod's change brings a cycle within a slice, as it did before makers answered
        // in between: not one per short wait.
        const int64_t since = s.ctx->now_ms() - s.last_cycle;
        bool due = (s.dirty && (!making || since >= s.ctx->opts.wait_slice.count())) || since >= s.ctx->opts.poll_interval.count();
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
        dispatch(self);
        send_checks(self);
        if (next.count() > 0)
          self->delayed_send(self, next, msg::reconcile_atom_v);
        else
          self->send(self, msg::reconcile_atom_v);
      },
      [self](runner_made& m) {
        auto& s = self->state;
        s.orders.done(m.order.worker.name);
        s.idle_makers.push_back(caf::actor_cast<runner_maker_actor>(self->current_sender()));
        cycle{self}.made(m);
        dispatch(self);
      },
      [self](const jobs_checked& c) {
        auto& s = self->state;
        s.checking = false;
        for (int64_t i = 0; i < c.failed; ++i)
          s.ctx->metrics.action("job_failed");
        for (int64_t i = 0; i < c.github_errors; ++i)
          s.ctx->metrics.error("github");
        for (int64_t i = 0; i < c.store_errors; ++i)
          s.ctx->metrics.error("store");
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
