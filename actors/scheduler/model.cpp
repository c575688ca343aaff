// The scheduler's pure decisions: demand matching, slot counting, health classification.

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

#include "actors/scheduler/intake.hpp"
#include "actors/scheduler/scheduler.hpp"

namespace headroom::actors::scheduler {

std::vector<std::string> split_labels(const std::string& key) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= key.size()) {
    const auto comma = key.find(',', start);
    const auto part = key.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty())
      out.push_back(part);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

namespace {

// How many labels a pool's runners carry beyond what the job asked for ("self-hosted" is every
// runner's). A pool without labels registers each runner with its job's labels: it covers any
// self-hosted job, and ranks after every labelled pool that covers it too.
size_t labels_beyond(const std::vector<std::string>& pool_labels, const std::vector<std::string>& asked) {
  const auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  if (pool_labels.empty())
    return std::numeric_limits<size_t>::max();
  std::set<std::string> extra;
  for (const auto& l : pool_labels)
    extra.insert(lower(l));
  extra.erase("self-hosted");
  for (const auto& l : asked)
    extra.erase(lower(l));
  return extra.size();
}

}  // namespace

// The narrowest pool that covers the job, not the first: with {linux,x64,gpu} listed before
// {linux,x64}, a plain [self-hosted, linux, x64] job must not take a GPU runner (#61). Ties go
// to the pool listed first.
std::optional<size_t> pool_for(const std::vector<pool_options>& pools, const std::string& labels) {
  const auto asked = split_labels(labels);
  std::optional<size_t> best;
  size_t best_extra = 0;
  for (size_t i = 0; i < pools.size(); ++i) {
    if (!serves(pools[i].labels, asked))
      continue;
    const auto extra = labels_beyond(pools[i].labels, asked);
    if (!best || extra < best_extra) {
      best = i;
      best_extra = extra;
    }
  }
  return best;
}

std::vector<std::string> registered_labels(const pool_options& pool, const std::string& job_labels) {
  if (pool.labels.empty())
    return split_labels(job_labels);
  auto out = pool.labels;
  const bool has = std::any_of(out.begin(), out.end(), [](const std::string& l) {
    return l.size() == 11 && std::equal(l.begin(), l.end(), "self-hosted", [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  });
  if (!has)
    out.insert(out.begin(), "self-hosted");
  return out;
}

std::string pool_runner_pod(const pool_options& pool, const std::string& name, int64_t runner_id, std::string_view scope) {
  if (pool.pod_template.empty())
    return runners::runner_pod(pool.spec, name, runner_id, scope, pool.name);
  return runners::runner_pod_from_template(pool.pod_template, pool.spec, pool.name, name, runner_id, scope);
}

pooled split_by_pool(const std::vector<pool_options>& pools, const std::vector<store::job>& jobs,
                     const std::vector<store::worker>& workers) {
  pooled out;
  out.jobs.resize(pools.size());
  out.workers.resize(pools.size());
  std::map<std::string, std::optional<size_t>> seen;  // a few label sets, many jobs
  auto which = [&](const std::string& labels) {
    auto it = seen.find(labels);
    if (it == seen.end())
      it = seen.emplace(labels, pool_for(pools, labels)).first;
    return it->second;
  };
  for (const auto& j : jobs) {
    if (auto p = which(j.labels))
      out.jobs[*p].push_back(j);
    else
      ++out.unpooled;
  }
  for (const auto& w : workers)
    if (auto p = which(w.labels))
      out.workers[*p].push_back(w);
  return out;
}

bool is_supply(const store::worker& w, const std::vector<store::job>& active_jobs) {
  if (w.status != store::worker_status::creating && w.status != store::worker_status::running)
    return false;
  if (w.job_id == 0)
    return true;
  return std::any_of(active_jobs.begin(), active_jobs.end(), [&](const store::job& j) { return j.id == w.job_id; });
}

std::string runner_scope(const std::string& enterprise, const std::string& entity) {
  if (!enterprise.empty() && entity.find('/') == std::string::npos)
    return "enterprises/" + enterprise;
  return github::scope_of(entity);
}

std::string group_owner(const std::string& scope) { return scope.rfind("orgs/", 0) == 0 ? scope.substr(5) : scope; }

std::string runner_name(const std::string& prefix, uint64_t bits) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = prefix + "-";
  for (int i = 0; i < 10; ++i, bits >>= 4)
    out += hex[bits & 15];
  return out;
}

runners::verdict observe_health(runners::health_memory& memory, store::store& jobs, const store::worker& w, const k8s::pod& pod,
                                int64_t now_ms, runners::runner_seen seen) {
  const runners::health_memory::remembered stored{w.running_since, w.idle_since, w.registered};
  memory.restore(w.name, stored);
  const auto v = memory.observe(pod, now_ms, seen);
  // A failed write is tried again at the next look (the memory still differs from the row).
  if (const auto now = memory.recall(w.name); !(now == stored))
    (void)jobs.set_worker_health(w.name, now.running_since, now.idle_since, now.registered);
  return v;
}

bool ok_or_gone(const k8s::api_result& r) {
  const auto* e = std::get_if<k8s::api_error>(&r);
  return e == nullptr || e->what == k8s::api_error::kind::not_found;
}

std::string pod_failure(const k8s::pod& p) {
  std::string out = "pod " + p.phase;
  for (const auto& c : p.container_statuses)
    if (!c.reason.empty())
      out += "; container " + c.name + " " + c.state + ": " + c.reason;
  return out;
}

std::string account_of(const std::string& entity) { return entity.substr(0, entity.find('/')); }

namespace {

int64_t cap_of(const std::map<std::string, int64_t>& caps, const std::string& account, int64_t fallback) {
  const auto it = caps.find(account);
  return it == caps.end() ? fallback : it->second;
}

bool live_status(const store::worker& w) {
  return w.status == store::worker_status::creating || w.status == store::worker_status::running;
}

}  // namespace

match_result match_demand(const match_input& in) {
  std::map<demand_key, int64_t> demand, supply;
  std::map<std::string, int64_t> per_account, in_pool;  // every pool's (caps), this pool's
  std::set<std::string> live;  // runners still there (creating or running)
  for (const auto& w : in.active_workers)
    if (live_status(w))
      live.insert(w.name);
  for (const auto& j : in.active_jobs) {
    // A running job whose runner is known and gone needs no runner: ours ended after its job
    // (the completion is still to come), or it ran on a runner that is not ours. Counting it
    // would have a pending job of its key served twice (an extra worker that takes no job).
    if (j.status == store::job_status::running && !j.runner_name.empty() && live.count(j.runner_name) == 0)
      continue;
    ++demand[{j.entity, j.labels}];
  }
  per_account = in.live_elsewhere;
  for (const auto& w : in.active_workers) {
    if (live_status(w)) {  // the caps count every live runner, busy or not
      ++per_account[account_of(w.entity)];
      ++in_pool[account_of(w.entity)];
    }
    if (is_supply(w, in.active_jobs))
      ++supply[{w.entity, w.labels}];
  }
  match_result out;
  int64_t free = in.free_slots;
  int64_t live_total = static_cast<int64_t>(live.size());
  for (const auto& j : in.active_jobs) {
    if (j.status != store::job_status::pending)
      continue;
    const demand_key k{j.entity, j.labels};
    if (supply[k] >= demand[k])
      continue;
    const auto account = account_of(j.entity);
    const int64_t pool_cap = cap_of(in.pool_caps, account, in.pool_default_cap);
    if (per_account[account] >= cap_of(in.caps, account, in.default_cap) || (pool_cap >= 0 && in_pool[account] >= pool_cap)) {
      ++out.capped;
      continue;
    }
    if (in.pool_cap >= 0 && live_total >= in.pool_cap) {
      ++out.pool_full;
      continue;
    }
    if (free == 0) {
      ++out.no_capacity;
      continue;
    }
    out.provision.push_back(j);
    ++supply[k];
    ++per_account[account];
    ++in_pool[account];
    ++live_total;
    if (free > 0)
      --free;
  }
  return out;
}

std::vector<match_result> match_pools(const scheduler_options& o, const pooled& split,
                                      const std::function<int64_t(const pool_options&)>& free_slots_of) {
  std::map<std::string, int64_t> live_total;  // account → live workers in every pool
  for (const auto& workers : split.workers)
    for (const auto& w : workers)
      if (live_status(w))
        ++live_total[account_of(w.entity)];
  std::vector<match_result> out;
  for (size_t p = 0; p < o.pools.size(); ++p) {
    const auto& pool = o.pools[p];
    match_input in;
    in.active_jobs = split.jobs[p];
    in.active_workers = split.workers[p];
    in.caps = o.max_workers;
    in.default_cap = o.default_max_workers;
    in.live_elsewhere = live_total;
    for (const auto& w : in.active_workers)
      if (live_status(w))
        --in.live_elsewhere[account_of(w.entity)];
    in.pool_caps = pool.entity_caps;
    in.pool_default_cap = pool.default_max_workers;
    in.pool_cap = pool.max_workers;
    in.free_slots = free_slots_of(pool);
    out.push_back(match_demand(in));
    for (const auto& j : out.back().provision)
      ++live_total[account_of(j.entity)];
  }
  return out;
}

int64_t free_slots(const std::vector<std::shared_ptr<const k8s::node>>& nodes,
                   const std::vector<std::shared_ptr<const k8s::pod>>& pods, const k8s::string_pairs& selector,
                   const std::string& resource, const std::string& pool) {
  std::set<std::string> eligible;
  int64_t total = 0;
  for (const auto& n : nodes) {
    if (n->unschedulable)
      continue;
    bool matches = true;
    for (const auto& [k, v] : selector) {
      const auto* have = n->meta.label(k);
      if (have == nullptr || *have != v)
        matches = false;
    }
    bool reachable = true;
    for (const auto& t : n->taints)
      if (t.key == "node.kubernetes.io/unreachable" || t.key == "node.kubernetes.io/not-ready")
        reachable = false;
    if (!matches || !reachable)
      continue;
    eligible.insert(n->meta.name);
    total += n->allocatable.get(resource);
  }
  for (const auto& p : pods) {
    if (p->phase == "Succeeded" || p->phase == "Failed")
      continue;
    if (!p->node_name.empty() && eligible.count(p->node_name) == 0)
      continue;
    if (p->node_name.empty() && !pool.empty()) {
      const auto* of = p->meta.label(runners::keys::pool);
      if (of != nullptr && *of != pool)
        continue;
    }
    // A pending pod (not yet bound) will take a slot too: count it against the pool.
    total -= p->spec->requests.get(resource);
  }
  return std::max<int64_t>(0, total);
}

}  // namespace headroom::actors::scheduler
