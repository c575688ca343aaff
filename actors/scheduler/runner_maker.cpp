// runner_maker: one runner at a time — its JIT config, its runner id recorded, its pod and its
// Secret — and the reconciler told what came of it (see runner_maker.hpp). Detached: GitHub's and
// the store's calls block, and the API server's answers are awaited in place.

#include "actors/scheduler/runner_maker.hpp"

#include "actors/scheduler/cycle.hpp"
#include "adapters/k8s/fields.hpp"

namespace headroom::actors::scheduler {

namespace {

using reconcile::await_call;

runner_made make_runner(const reconciler_context& ctx, runner_order order) {
  runner_made out;
  out.order = std::move(order);
  const auto& o = out.order;
  const auto& ns = ctx.opts.pool.ns;
  // The pool's labels (the runner then takes any job they cover, as GitHub matches).
  auto jit = ctx.github->generate_jit_config(o.scope, o.worker.name, o.group, registered_labels(*o.pool, o.job.labels));
  if (auto* e = std::get_if<github::rest_error>(&jit)) {
    out.what = runner_made::outcome::jit_refused;
    out.github = *e;
    return out;
  }
  // The JIT config is a secret: it goes into the runner's Secret and nowhere else.
  const auto& config = std::get<github::rest_jit>(jit);
  out.runner_id = config.runner_id;
  if (auto r = ctx.jobs->set_worker_runner(o.worker.name, config.runner_id, ctx.now_ms()); std::holds_alternative<store::error>(r))
    out.store_error = std::get<store::error>(r).message;
  auto created = await_call([&](k8s::api_callback cb) {
    ctx.kube->create(k8s::kinds::pods, ns, pool_runner_pod(*o.pool, o.worker.name, config.runner_id, o.scope), std::move(cb));
  });
  if (auto* e = std::get_if<k8s::api_error>(&created)) {
    // The job stays pending and gets a new worker next cycle. Had the API server made the pod
    // after all (a 504 after the write), the stray sweep deletes it past the orphan grace.
    (void)ctx.github->remove_runner(o.scope, config.runner_id);
    out.what = runner_made::outcome::pod_refused;
    out.kube = *e;
    return out;
  }
  const std::string uid = k8s::uid_of(std::get<std::string>(created));
  if (uid.empty())
    runtime::log::warn(reconcile::actor_name, "runner pod create answered without a uid", {{"pod", o.worker.name}});
  auto secret = await_call([&](k8s::api_callback cb) {
    ctx.kube->create(k8s::kinds::secrets, ns, runners::runner_secret(ctx.opts.pool, o.worker.name, uid, config.encoded_jit_config),
                     std::move(cb));
  });
  if (auto* e = std::get_if<k8s::api_error>(&secret); e && e->what != k8s::api_error::kind::already_exists) {
    // Without its secret the pod never starts a runner: over at once, not at the registration
    // timeout, so the job is provisioned again next cycle. Its pod goes now, or by the stray
    // sweep if this delete is refused too.
    (void)ctx.github->remove_runner(o.scope, config.runner_id);
    auto gone = await_call([&](k8s::api_callback cb) { ctx.kube->remove(k8s::kinds::pods, ns, o.worker.name, {}, std::move(cb)); });
    out.what = runner_made::outcome::secret_refused;
    out.kube = *e;
    out.pod_left = !ok_or_gone(gone);
    return out;
  }
  out.what = runner_made::outcome::made;
  return out;
}

struct maker_state {
  static inline const char* name = "headroom.runner_maker";
};

runner_maker_actor::behavior_type maker_behavior(runner_maker_actor::stateful_pointer<maker_state> self, reconciler_context_ptr ctx,
                                                 runner_made_sink to) {
  return {
      [self, ctx, to](runner_order& order) {
        auto made = make_runner(*ctx, std::move(order));
        made.finished_at = ctx->now_ms();
        self->send(to, std::move(made));
      },
  };
}

}  // namespace

runner_maker_actor spawn_runner_maker(caf::actor_system& sys, reconciler_context_ptr ctx, runner_made_sink to) {
  return sys.spawn<caf::detached>(maker_behavior, std::move(ctx), std::move(to));
}

// ---- order_queue ---------------------------------------------------------------------------------

void order_queue::add(runner_order o) {
  waiting_.insert(o.worker.name);
  queue_.push_back(std::move(o));
}

std::vector<runner_order> order_queue::take(size_t free_makers, bool paused, const std::function<bool(const std::string&)>& scope_waits,
                                            std::vector<runner_order>& dropped) {
  std::vector<runner_order> out;
  if (paused)
    return out;
  while (!queue_.empty() && out.size() < free_makers) {
    auto o = std::move(queue_.front());
    queue_.pop_front();
    waiting_.erase(o.worker.name);
    if (scope_waits(o.scope)) {
      dropped.push_back(std::move(o));
      continue;
    }
    in_flight_.insert(o.worker.name);
    out.push_back(std::move(o));
  }
  return out;
}

void order_queue::done(const std::string& worker) { in_flight_.erase(worker); }

bool order_queue::making(const std::string& worker) const { return waiting_.count(worker) > 0 || in_flight_.count(worker) > 0; }

}  // namespace headroom::actors::scheduler
