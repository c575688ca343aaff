#include "adapters/k8s/leader_election.hpp"

#include "adapters/k8s/decode.hpp"
#include "runtime/log.hpp"
#include "adapters/k8s/time.hpp"
#include "runtime/clock.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::k8s {

std::string micro_time_now(const runtime::clock& clock) { return format_rfc3339(clock.wall_seconds(), 6); }

std::shared_ptr<leader_elector> leader_elector::make(client& c, options opts) {
  if (opts.clock == nullptr)
    opts.clock = &c.clock();
  return std::shared_ptr<leader_elector>(new leader_elector(c, std::move(opts)));
}

void leader_elector::start() {
  runtime::log::info("leader_election", "campaigning",
                     {{"lease", opts_.ns + "/" + opts_.name}, {"identity", opts_.identity}});
  tick();
}

void leader_elector::schedule() {
  if (stopped_)
    return;
  std::weak_ptr<leader_elector> weak = shared_from_this();
  client_.after(std::chrono::duration_cast<std::chrono::milliseconds>(opts_.retry_period), [weak] {
    if (auto self = weak.lock())
      self->tick();
  });
}

void leader_elector::tick() {
  if (stopped_)
    return;
  // A leader whose renewals have failed past the deadline steps down before anyone else may take
  // over (renew_deadline < lease_duration): there is never a moment with two leaders.
  if (leading_ && opts_.clock->now() - last_renew_ > opts_.renew_deadline) {
    lose("renew deadline passed");
  }
  std::weak_ptr<leader_elector> weak = shared_from_this();
  client_.get(kinds::leases, opts_.ns, opts_.name, [weak](api_result r) {
    if (auto self = weak.lock())
      self->on_read(std::move(r));
  });
}

void leader_elector::on_read(api_result r) {
  if (stopped_)
    return;
  const auto now = opts_.clock->now();
  if (auto* e = std::get_if<api_error>(&r)) {
    if (e->what == api_error::kind::not_found) {
      write(true, "", 0, "");
      return;
    }
    runtime::log::warn("leader_election", "cannot read the lease", {{"error", e->describe()}});
    schedule();
    return;
  }
  auto decoded = decode_lease(std::get<std::string>(r));
  if (auto* e = std::get_if<decode_error>(&decoded)) {
    runtime::log::warn("leader_election", "lease undecodable", {{"error", e->message}});
    schedule();
    return;
  }
  const auto& l = std::get<lease>(decoded);
  if (l.holder_identity != observed_holder_ || l.renew_time != observed_renew_time_) {
    observed_holder_ = l.holder_identity;
    observed_renew_time_ = l.renew_time;
    observed_at_ = now;
  }
  if (observed_holder_ != last_holder_reported_) {
    last_holder_reported_ = observed_holder_;
    if (opts_.on_new_leader)
      opts_.on_new_leader(observed_holder_);
  }
  const auto duration = l.lease_duration_seconds ? std::chrono::seconds(*l.lease_duration_seconds) : opts_.lease_duration;
  const bool mine = l.holder_identity == opts_.identity;
  const bool free = l.holder_identity.empty() || now - observed_at_ > duration;
  if (!mine && !free) {
    if (leading_)
      lose("lease held by " + l.holder_identity);
    schedule();
    return;
  }
  const int32_t transitions = mine ? l.lease_transitions : l.lease_transitions + 1;
  write(false, l.meta.resource_version, transitions, mine ? l.acquire_time : "");
}

void leader_elector::write(bool create, const std::string& resource_version, int32_t transitions,
                           const std::string& acquire_time) {
  const auto now = micro_time_now(*opts_.clock);
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "coordination.k8s.io/v1").field("kind", "Lease");
  w.key("metadata").begin_object().field("name", opts_.name).field("namespace", opts_.ns);
  if (!resource_version.empty())
    w.field("resourceVersion", resource_version);
  w.end_object();
  w.key("spec").begin_object().field("holderIdentity", opts_.identity);
  w.field("leaseDurationSeconds", opts_.lease_duration.count());
  w.field("acquireTime", acquire_time.empty() ? now : acquire_time).field("renewTime", now);
  w.field("leaseTransitions", transitions).end_object().end_object();
  std::string body = w.take();
  std::weak_ptr<leader_elector> weak = shared_from_this();
  auto done = [weak](api_result r) {
    if (auto self = weak.lock())
      self->on_write(std::move(r), true);
  };
  if (create)
    client_.create(kinds::leases, opts_.ns, std::move(body), std::move(done));
  else
    client_.replace(kinds::leases, opts_.ns, opts_.name, std::move(body), std::move(done));
}

void leader_elector::on_write(api_result r, bool) {
  if (stopped_)
    return;
  if (auto* e = std::get_if<api_error>(&r)) {
    // Conflict / AlreadyExists: another candidate wrote first this round.
    if (e->what != api_error::kind::conflict && e->what != api_error::kind::already_exists)
      runtime::log::warn("leader_election", "cannot write the lease", {{"error", e->describe()}});
    schedule();
    return;
  }
  last_renew_ = opts_.clock->now();
  observed_holder_ = opts_.identity;
  observed_at_ = last_renew_;
  if (!leading_.exchange(true)) {
    runtime::log::info("leader_election", "started leading",
                       {{"lease", opts_.ns + "/" + opts_.name}, {"identity", opts_.identity}});
    if (opts_.on_started_leading)
      opts_.on_started_leading();
  }
  schedule();
}

void leader_elector::lose(const std::string& why) {
  if (!leading_.exchange(false))
    return;
  runtime::log::warn("leader_election", "stopped leading", {{"identity", opts_.identity}, {"reason", why}});
  if (opts_.on_stopped_leading)
    opts_.on_stopped_leading();
}

void leader_elector::stop(bool release, std::function<void()> released) {
  if (stopped_.exchange(true)) {
    if (released)
      released();
    return;
  }
  const bool was_leading = leading_.load();
  lose("stopped");
  if (!release || !was_leading) {
    if (released)
      released();
    return;
  }
  // Clear the holder so the next candidate does not wait out the lease duration.
  client_.merge_patch(kinds::leases, opts_.ns, opts_.name,
                      R"({"spec":{"holderIdentity":null,"leaseDurationSeconds":1}})", [released](api_result r) {
                        if (auto* e = std::get_if<api_error>(&r))
                          runtime::log::warn("leader_election", "release failed", {{"error", e->describe()}});
                        else
                          runtime::log::info("leader_election", "lease released");
                        if (released)
                          released();
                      });
}

}  // namespace headroom::k8s
