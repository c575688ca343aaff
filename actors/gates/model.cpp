#include "actors/gates/model.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "adapters/k8s/admission.hpp"
#include "adapters/k8s/time.hpp"

namespace headroom::actors::gates {

namespace detail {

bool terminal(const k8s::pod& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

std::string key_of(const k8s::pod& p) { return p.meta.ns + "/" + p.meta.name; }

// The pod's requests in the queue's terms, as "cpu=1, memory=1073741824" for messages.
std::string describe(const k8s::resource_amounts& amounts) {
  std::string out;
  for (const auto& [name, amount] : amounts) {
    if (!out.empty())
      out += ", ";
    out += name + "=" + k8s::format_amount(name, amount);
  }
  return out.empty() ? "nothing" : out;
}

std::optional<wall_time> reservation_start(const k8s::pod& p) {
  if (const auto* at = p.meta.annotation(ungated_at_annotation))
    if (auto t = parse_wall(*at))
      return t;
  if (!p.meta.created)
    return std::nullopt;
  return wall_time{std::chrono::duration_cast<wall_time::duration>(std::chrono::duration<double>(*p.meta.created))};
}

}  // namespace detail

using namespace detail;

std::string format_wall(wall_time t) {
  return k8s::format_rfc3339(std::chrono::duration<double>(t.time_since_epoch()).count());
}

std::optional<wall_time> parse_wall(std::string_view text) {
  auto s = k8s::parse_rfc3339(text);
  if (!s)
    return std::nullopt;
  return wall_time{std::chrono::duration_cast<wall_time::duration>(std::chrono::duration<double>(*s))};
}

int64_t amount_of(const k8s::pod& p, std::string_view resource) {
  if (resource == "pods")
    return 1;
  return p.spec->requests.get(resource);
}

bool has_our_gate(const k8s::pod& p) {
  const auto& g = p.spec->scheduling_gates;
  return std::find(g.begin(), g.end(), k8s::admission::queue_gate) != g.end();
}

bool opted_in(const k8s::pod& p) {
  const auto* v = p.meta.annotation(k8s::admission::opt_in_annotation);
  return v != nullptr && *v == "true";
}

namespace {

// Per capacity entry: bound pods' requests, ungated-unbound ones' (reservations), gated ones'.
struct tally {
  explicit tally(size_t n) : allocated(n, 0), reserved(n, 0), waiting(n, 0) {}
  std::vector<int64_t> allocated, reserved, waiting;
  std::map<std::string, int64_t> gang_admitted;  // gang key → members bound or reserved
};

}  // namespace

std::optional<gang_of> detail::gang(const k8s::pod& p) {
  const auto* name = p.meta.annotation(gang_annotation);
  if (name == nullptr || name->empty())
    return std::nullopt;
  gang_of g{p.meta.ns + "/" + *name, *name, {}, 0};
  const auto* size = p.meta.annotation(gang_size_annotation);
  const std::string text = size ? *size : "";
  size_t used = 0;
  try {
    g.size = std::stoll(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size() || g.size < 1 || g.size > 10'000)
    g.error = std::string{gang_size_annotation} + ": expected a whole number from 1 to 10000, found '" + text + "'";
  return g;
}

std::string detail::other_gates_message(const queue_rules& q, const k8s::pod& p) {
  std::string others;
  for (const auto& g : p.spec->scheduling_gates)
    if (g != k8s::admission::queue_gate)
      others += (others.empty() ? "" : ", ") + g;
  return "queue " + q.spec.name + " judges it once the other scheduling gates are removed (" + others + ")";
}

std::string detail::gang_incomplete_message(const std::string& gang, int64_t have, int64_t size) {
  return "gang " + gang + " has " + std::to_string(have) + " of its " + std::to_string(size) +
         " pods: none is admitted before all are there, and none holds room meanwhile";
}

std::string detail::waiting_message(const queue_rules& q, const std::string& whose, const k8s::resource_amounts& needs,
                                    bool too_big) {
  const auto capacity_text = describe(q.spec.capacity);
  if (too_big)
    return whose + "needs " + describe(needs) + " but queue " + q.spec.name + " has capacity " + capacity_text + " in all";
  return whose + "waits for " + describe(needs) + " to be free in queue " + q.spec.name + " (capacity " + capacity_text + ")";
}

std::string detail::admitted_message(const queue_rules& q) {
  return "queue " + q.spec.name + " has room: the scheduling gate is removed";
}

namespace {

void add_requests(const k8s::resource_amounts& cap, std::vector<int64_t>& into, const k8s::pod& p) {
  for (size_t i = 0; i < cap.size(); ++i)
    into[i] += amount_of(p, cap[i].first);
}

// A pod gated by us and by another controller too: not ours to admit yet, but gated for this
// queue all the same, and its condition says so (not what an earlier look found, such as
// QueueNotFound before the queue existed).
void held_by_other_gates(const queue_rules& q, const k8s::pod& p, queue_plan& plan) {
  ++plan.status.gated_pods;
  const std::string message = other_gates_message(q, p);
  const auto* c = p.find_condition(admitted_condition);
  if (c == nullptr || c->status != "False" || c->reason != "OtherGates" || c->message != message)
    plan.conditions.push_back({p.meta.ns, p.meta.name, "False", "OtherGates", message});
}

// Step 1: what holds room (bound pods, unexpired reservations), what expired, and the pods
// waiting at our gate alone (the candidates).
std::vector<const k8s::pod*> classify(const queue_rules& q, const std::vector<std::shared_ptr<const k8s::pod>>& pods,
                                      wall_time now, const std::set<std::string>& in_flight, queue_plan& plan, tally& t) {
  const auto& cap = q.spec.capacity;
  std::vector<const k8s::pod*> candidates;
  for (const auto& sp : pods) {
    const auto& p = *sp;
    if (terminal(p))
      continue;
    const std::string key = key_of(p);
    if (!p.node_name.empty()) {
      add_requests(cap, t.allocated, p);  // bound: holds its room until it is gone (a terminating pod too)
      ++plan.status.admitted_pods;
      if (auto g = gang(p))
        ++t.gang_admitted[g->key];
      continue;
    }
    if (!p.meta.deletion_timestamp.empty())
      continue;  // unbound and going away
    const bool flying = in_flight.contains(key);
    if (has_our_gate(p) && !flying) {
      if (p.spec->scheduling_gates.size() == 1)
        candidates.push_back(&p);
      else
        held_by_other_gates(q, p, plan);
      continue;
    }
    if (!opted_in(p) && !flying)
      continue;  // never part of the queue's admission (its author bypassed the gate)
    // Ungated by us (or in flight), not bound: a reservation, until it expires.
    if (auto start = flying ? std::nullopt : reservation_start(p)) {
      const auto expiry = *start + q.reservation_timeout;
      if (expiry <= now) {
        plan.expired.push_back(key);
        continue;
      }
      if (!plan.next_expiry || expiry < *plan.next_expiry)
        plan.next_expiry = expiry;
    }
    add_requests(cap, t.reserved, p);
    ++plan.status.reserved_pods;
    if (auto g = gang(p))
      ++t.gang_admitted[g->key];
  }
  return candidates;
}

// Highest priority first, then the oldest, then by name.
void order_candidates(std::vector<const k8s::pod*>& candidates) {
  std::sort(candidates.begin(), candidates.end(), [](const k8s::pod* a, const k8s::pod* b) {
    const int32_t pa = a->priority.value_or(0), pb = b->priority.value_or(0);
    if (pa != pb)
      return pa > pb;
    if (a->meta.created != b->meta.created)
      return a->meta.created < b->meta.created;  // one without a time first, as its empty text did
    return key_of(*a) < key_of(*b);
  });
}

// One admission decision: a pod alone, or a gang's gated members together.
struct unit {
  std::vector<const k8s::pod*> members;
  std::string gang;            // its name ("" for a pod alone)
  std::string held;            // why it cannot be admitted whatever the room (incomplete, invalid)
  std::string held_reason;     // GangIncomplete or InvalidGang
};

// Step 2a: the candidates as units, in the order of each unit's first member. A gang whose
// admitted and gated members are fewer than its size waits whole and holds no room; one with
// enough admitted already takes its late members one by one.
std::vector<unit> units_of(const std::vector<const k8s::pod*>& candidates, const tally& t) {
  std::vector<unit> out;
  std::map<std::string, size_t> at;  // gang key → its unit
  std::map<std::string, int64_t> sizes;
  for (const auto* p : candidates) {
    auto g = gang(*p);
    if (!g) {
      out.push_back({{p}, {}, {}, {}});
      continue;
    }
    if (!g->error.empty()) {
      out.push_back({{p}, g->name, g->error, "InvalidGang"});
      continue;
    }
    const auto admitted = t.gang_admitted.count(g->key) ? t.gang_admitted.at(g->key) : 0;
    if (admitted >= g->size) {  // the gang is running: a late member alone
      out.push_back({{p}, {}, {}, {}});
      continue;
    }
    auto [it, fresh] = at.emplace(g->key, out.size());
    if (fresh) {
      out.push_back({{}, g->name, {}, {}});
      sizes[g->key] = g->size;
    }
    out[it->second].members.push_back(p);
  }
  for (const auto& [key, index] : at) {
    auto& u = out[index];
    const auto admitted = t.gang_admitted.count(key) ? t.gang_admitted.at(key) : 0;
    const auto have = admitted + static_cast<int64_t>(u.members.size());
    if (have < sizes[key]) {
      u.held_reason = "GangIncomplete";
      u.held = gang_incomplete_message(u.gang, have, sizes[key]);
    }
  }
  return out;
}

void wait_with(const queue_rules& q, const k8s::pod& p, const std::string& reason, const std::string& message, queue_plan& plan,
               tally& t) {
  add_requests(q.spec.capacity, t.waiting, p);
  ++plan.status.gated_pods;
  const auto* c = p.find_condition(admitted_condition);
  if (c == nullptr || c->status != "False" || c->reason != reason || c->message != message)
    plan.conditions.push_back({p.meta.ns, p.meta.name, "False", reason, message});
}

void admit(const queue_rules& q, const k8s::pod& p, std::vector<int64_t>& used, queue_plan& plan, tally& t) {
  const auto& cap = q.spec.capacity;
  const auto& g = p.spec->scheduling_gates;
  plan.ungates.push_back({p.meta.ns, p.meta.name, p.meta.uid, p.meta.resource_version,
                          static_cast<size_t>(std::find(g.begin(), g.end(), k8s::admission::queue_gate) - g.begin())});
  add_requests(cap, used, p);
  add_requests(cap, t.reserved, p);
  ++plan.status.reserved_pods;
  if (const auto* c = p.find_condition(admitted_condition); c && c->status != "True")
    plan.conditions.push_back({p.meta.ns, p.meta.name, "True", "Admitted", admitted_message(q)});
}

// Step 2b: in order, each unit that fits in what is left is ungated (reservations now); the
// others wait, with a condition saying why. StrictFIFO: nothing passes a unit that waits for room
// (a gang still incomplete holds nothing up: it could wait for ever).
void admit_in_order(const queue_rules& q, const std::vector<unit>& units, queue_plan& plan, tally& t) {
  const auto& cap = q.spec.capacity;
  std::vector<int64_t> used(cap.size(), 0);
  for (size_t i = 0; i < cap.size(); ++i)
    used[i] = t.allocated[i] + t.reserved[i];
  bool blocked = false;
  for (const auto& u : units) {
    if (!u.held.empty()) {
      for (const auto* p : u.members)
        wait_with(q, *p, u.held_reason, u.held, plan, t);
      continue;
    }
    k8s::resource_amounts needs;
    bool fits = !blocked, too_big = false;
    for (size_t i = 0; i < cap.size(); ++i) {
      int64_t a = 0;
      for (const auto* p : u.members)
        a += amount_of(*p, cap[i].first);
      if (a > 0)
        needs.emplace_back(cap[i].first, a);
      too_big = too_big || a > cap[i].second;
      fits = fits && used[i] + a <= cap[i].second;
    }
    const std::string whose = u.gang.empty() ? "" : "gang " + u.gang + " (" + std::to_string(u.members.size()) + " pods) ";
    if (!too_big && fits) {
      for (const auto* p : u.members)
        admit(q, *p, used, plan, t);
      continue;
    }
    const std::string reason = too_big ? "QueueTooSmall" : "QueueFull";
    const std::string message = waiting_message(q, whose, needs, too_big);
    blocked = blocked || (!too_big && q.spec.strict_fifo);
    for (const auto* p : u.members)
      wait_with(q, *p, reason, message, plan, t);
  }
}

}  // namespace

queue_plan plan_queue(const queue_rules& q, const std::vector<std::shared_ptr<const k8s::pod>>& pods, wall_time now,
                      const std::set<std::string>& in_flight) {
  queue_plan plan;
  const auto& cap = q.spec.capacity;
  tally t(cap.size());
  auto candidates = classify(q, pods, now, in_flight, plan, t);
  order_candidates(candidates);
  admit_in_order(q, units_of(candidates, t), plan, t);
  for (size_t i = 0; i < cap.size(); ++i) {
    plan.status.allocated.emplace_back(cap[i].first, t.allocated[i]);
    plan.status.reserved.emplace_back(cap[i].first, t.reserved[i]);
    plan.status.waiting.emplace_back(cap[i].first, t.waiting[i]);
  }
  plan.status.observed_generation = q.spec.generation;
  return plan;
}

condition_write queue_not_found(const k8s::pod& p, const std::string& queue) {
  return {p.meta.ns, p.meta.name, "False", "QueueNotFound",
          "queue " + queue + " does not exist (kubectl get queues.headroom.dev): the pod stays gated until it does"};
}

}  // namespace headroom::actors::gates
