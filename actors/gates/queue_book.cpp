#include "actors/gates/queue_book.hpp"

#include <algorithm>

#include "adapters/k8s/admission.hpp"

namespace headroom::actors::gates {

using namespace detail;

queue_book::queue_book(queue_rules rules)
    : rules_(std::move(rules)),
      allocated_(rules_.spec.capacity.size(), 0),
      reserved_(rules_.spec.capacity.size(), 0),
      waiting_(rules_.spec.capacity.size(), 0),
      needs_(rules_.spec.capacity.size()) {}

// One pod's standing, as plan_queue's classify finds it.
queue_book::entry queue_book::make_entry(std::shared_ptr<const k8s::pod> sp, bool flying, wall_time now) const {
  entry e;
  const auto& p = *sp;
  e.pod = std::move(sp);
  e.flying = flying;
  e.gang = gang(p);
  e.order = {-static_cast<int64_t>(p.priority.value_or(0)), p.meta.created, key_of(p)};
  for (const auto& [resource, limit] : rules_.spec.capacity)
    e.amounts.push_back(amount_of(p, resource));
  if (terminal(p))
    return e;
  if (!p.node_name.empty()) {
    e.st = standing::allocated;  // bound: holds its room until it is gone (a terminating pod too)
    return e;
  }
  if (!p.meta.deletion_timestamp.empty())
    return e;  // unbound and going away
  if (has_our_gate(p) && !flying) {
    e.st = p.spec->scheduling_gates.size() == 1 ? standing::candidate : standing::other_gated;
    return e;
  }
  if (!opted_in(p) && !flying)
    return e;  // never part of the queue's admission
  if (auto start = flying ? std::nullopt : reservation_start(p)) {
    const auto expiry = *start + rules_.reservation_timeout;
    if (expiry <= now) {
      e.st = standing::expired;
      return e;
    }
    e.expiry = expiry;
  }
  e.st = standing::reserved;
  return e;
}

void queue_book::gang_changed(const std::string& gang_key) {
  // Its members' messages name the counts, and its unit may now be whole (or no longer).
  room_opened_ = true;
  if (auto it = gang_waiting_.find(gang_key); it != gang_waiting_.end())
    for (const auto& k : it->second)
      touched_.insert(std::get<2>(k));
}

void queue_book::book(const std::string& key, const entry& e) {
  const size_t n = e.amounts.size();
  switch (e.st) {
    case standing::allocated:
    case standing::reserved:
      for (size_t i = 0; i < n; ++i)
        (e.st == standing::allocated ? allocated_ : reserved_)[i] += e.amounts[i];
      ++(e.st == standing::allocated ? admitted_pods_ : reserved_pods_);
      if (e.expiry)
        expiries_.emplace(*e.expiry, key);
      if (e.gang) {
        ++gang_admitted_[e.gang->key];
        gang_changed(e.gang->key);
      }
      return;
    case standing::candidate:
      for (size_t i = 0; i < n; ++i) {
        waiting_[i] += e.amounts[i];
        needs_[i].insert(e.amounts[i]);
      }
      ++gated_pods_;
      candidates_.insert(e.order);
      touched_.insert(key);
      if (e.gang && e.gang->error.empty()) {
        gang_waiting_[e.gang->key].insert(e.order);
        gang_changed(e.gang->key);
      }
      return;
    case standing::other_gated:
      ++gated_pods_;
      touched_.insert(key);
      return;
    case standing::none:
    case standing::expired:
      return;
  }
}

void queue_book::unbook(const std::string& key, const entry& e) {
  const size_t n = e.amounts.size();
  switch (e.st) {
    case standing::allocated:
    case standing::reserved:
      for (size_t i = 0; i < n; ++i)
        (e.st == standing::allocated ? allocated_ : reserved_)[i] -= e.amounts[i];
      --(e.st == standing::allocated ? admitted_pods_ : reserved_pods_);
      if (e.expiry)
        expiries_.erase({*e.expiry, key});
      if (e.gang) {
        if (--gang_admitted_[e.gang->key] == 0)
          gang_admitted_.erase(e.gang->key);
        gang_changed(e.gang->key);
      }
      return;
    case standing::candidate:
      for (size_t i = 0; i < n; ++i) {
        waiting_[i] -= e.amounts[i];
        needs_[i].erase(needs_[i].find(e.amounts[i]));
      }
      --gated_pods_;
      candidates_.erase(e.order);
      if (rules_.spec.strict_fifo)
        room_opened_ = true;  // it may have been the unit the others waited behind
      if (e.gang && e.gang->error.empty()) {
        auto& members = gang_waiting_[e.gang->key];
        members.erase(e.order);
        if (members.empty())
          gang_waiting_.erase(e.gang->key);
        gang_changed(e.gang->key);
      }
      return;
    case standing::other_gated:
      --gated_pods_;
      return;
    case standing::none:
    case standing::expired:
      return;
  }
}

std::vector<int64_t> queue_book::used() const {
  std::vector<int64_t> u(allocated_.size());
  for (size_t i = 0; i < u.size(); ++i)
    u[i] = allocated_[i] + reserved_[i];
  return u;
}

namespace {
bool same_gang(const std::optional<gang_of>& a, const std::optional<gang_of>& b) {
  return a.has_value() == b.has_value() && (!a || (a->key == b->key && a->size == b->size && a->error == b->error));
}
}  // namespace

void queue_book::put(const std::string& key, std::shared_ptr<const k8s::pod> p, bool flying, wall_time now) {
  if (p) {
    // Most changes leave the pod's standing as it was (its condition written, its status): the
    // new view replaces the old and nothing is booked again.
    if (auto it = pods_.find(key); it != pods_.end()) {
      auto e = make_entry(p, flying, now);
      auto& have = it->second;
      if (e.st == have.st && e.flying == have.flying && e.expiry == have.expiry && e.order == have.order &&
          e.amounts == have.amounts && same_gang(e.gang, have.gang)) {
        have.pod = std::move(e.pod);
        if (have.st == standing::candidate || have.st == standing::other_gated)
          touched_.insert(key);
        return;
      }
    }
  }
  const auto before = used();
  std::optional<entry> old;
  if (auto it = pods_.find(key); it != pods_.end()) {
    old = std::move(it->second);
    unbook(key, *old);
    pods_.erase(it);
  }
  if (p) {
    auto e = make_entry(std::move(p), flying, now);
    if (e.st == standing::expired && (!old || old->st != standing::expired))
      expired_.push_back(key);
    if (e.st == standing::candidate &&
        (!old || old->st != standing::candidate || old->order != e.order || old->amounts != e.amounts))
      arrived_.insert(e.order);
    book(key, e);
    if (e.st == standing::candidate || e.st == standing::other_gated)
      touched_.insert(key);  // its condition may have been written, or need writing
    pods_.emplace(key, std::move(e));
  }
  const auto after = used();
  for (size_t i = 0; i < after.size(); ++i)
    room_opened_ = room_opened_ || after[i] < before[i];
}

// What a gang's waiting members ask together, per capacity entry.
std::vector<int64_t> queue_book::amounts_of(const std::set<order_key>& members) const {
  std::vector<int64_t> a(rules_.spec.capacity.size(), 0);
  for (const auto& m : members) {
    const auto& me = pods_.at(std::get<2>(m));
    for (size_t i = 0; i < a.size(); ++i)
      a[i] += me.amounts[i];
  }
  return a;
}

// Which waiting pods to admit now (plan_queue's admit_in_order over the pods it may reach).
queue_book::walk_result queue_book::walk(bool from_front) const {
  walk_result out;
  const auto& cap = rules_.spec.capacity;
  auto used_now = used();
  // No unit fits once the smallest amount any waiting pod asks of one resource does not.
  auto nothing_fits = [&] {
    for (size_t i = 0; i < cap.size(); ++i)
      if (!needs_[i].empty() && used_now[i] + *needs_[i].begin() > cap[i].second)
        return true;
    return false;
  };
  std::set<std::string> gangs_seen;
  for (const auto& k : from_front ? candidates_ : arrived_) {
    if (nothing_fits())
      break;
    auto it = pods_.find(std::get<2>(k));
    if (it == pods_.end() || it->second.st != standing::candidate || it->second.order != k)
      continue;  // gone or changed since it arrived
    const auto& e = it->second;
    std::vector<std::string> unit{std::get<2>(k)};
    auto a = e.amounts;
    if (e.gang) {
      if (!e.gang->error.empty())
        continue;  // InvalidGang: held whatever the room
      const auto admitted = gang_admitted_.count(e.gang->key) ? gang_admitted_.at(e.gang->key) : 0;
      if (admitted < e.gang->size) {
        if (!gangs_seen.insert(e.gang->key).second)
          continue;  // judged with its first member
        const auto& members = gang_waiting_.at(e.gang->key);
        if (admitted + static_cast<int64_t>(members.size()) < e.gang->size)
          continue;  // GangIncomplete: holds nothing, waits whole
        unit.clear();
        for (const auto& m : members)
          unit.push_back(std::get<2>(m));
        a = amounts_of(members);
      }
    }
    bool fits = true, too_big = false;
    for (size_t i = 0; i < cap.size(); ++i) {
      too_big = too_big || a[i] > cap[i].second;
      fits = fits && used_now[i] + a[i] <= cap[i].second;
    }
    if (too_big)
      continue;  // QueueTooSmall: holds nothing up
    if (!fits) {
      if (rules_.spec.strict_fifo)
        break;  // nothing passes a unit that waits for room
      continue;
    }
    for (size_t i = 0; i < cap.size(); ++i)
      used_now[i] += a[i];
    for (auto& key : unit)
      out.admitted.push_back(std::move(key));
  }
  return out;
}

void queue_book::admit(const std::string& key, queue_plan& plan) {
  auto it = pods_.find(key);
  auto& e = it->second;
  const auto& p = *e.pod;
  const auto& g = p.spec->scheduling_gates;
  plan.ungates.push_back({p.meta.ns, p.meta.name, p.meta.uid, p.meta.resource_version,
                          static_cast<size_t>(std::find(g.begin(), g.end(), k8s::admission::queue_gate) - g.begin())});
  if (const auto* c = p.find_condition(admitted_condition); c && c->status != "True")
    plan.conditions.push_back({p.meta.ns, p.meta.name, "True", "Admitted", admitted_message(rules_)});
  unbook(key, e);
  e.st = standing::reserved;  // in flight: holds its room, no expiry until the cache shows it
  e.flying = true;
  e.expiry.reset();
  book(key, e);
  touched_.erase(key);
}

std::optional<condition_write> queue_book::condition_of(const std::string& key) const {
  auto it = pods_.find(key);
  if (it == pods_.end())
    return std::nullopt;
  const auto& e = it->second;
  const auto& p = *e.pod;
  std::string reason, message;
  if (e.st == standing::other_gated) {
    reason = "OtherGates";
    message = other_gates_message(rules_, p);
  } else if (e.st == standing::candidate) {
    const auto& cap = rules_.spec.capacity;
    std::vector<int64_t> a = e.amounts;
    std::string whose;
    if (e.gang && !e.gang->error.empty()) {
      reason = "InvalidGang";
      message = e.gang->error;
    } else if (e.gang) {
      const auto admitted = gang_admitted_.count(e.gang->key) ? gang_admitted_.at(e.gang->key) : 0;
      if (admitted < e.gang->size) {
        const auto& members = gang_waiting_.at(e.gang->key);
        const auto have = admitted + static_cast<int64_t>(members.size());
        if (have < e.gang->size) {
          reason = "GangIncomplete";
          message = gang_incomplete_message(e.gang->name, have, e.gang->size);
        } else {
          whose = "gang " + e.gang->name + " (" + std::to_string(members.size()) + " pods) ";
          a = amounts_of(members);
        }
      }
    }
    if (reason.empty()) {
      k8s::resource_amounts needs;
      bool too_big = false;
      for (size_t i = 0; i < cap.size(); ++i) {
        if (a[i] > 0)
          needs.emplace_back(cap[i].first, a[i]);
        too_big = too_big || a[i] > cap[i].second;
      }
      reason = too_big ? "QueueTooSmall" : "QueueFull";
      message = waiting_message(rules_, whose, needs, too_big);
    }
  } else {
    return std::nullopt;
  }
  const auto* c = p.find_condition(admitted_condition);
  if (c != nullptr && c->status == "False" && c->reason == reason && c->message == message)
    return std::nullopt;
  return condition_write{p.meta.ns, p.meta.name, "False", std::move(reason), std::move(message)};
}

queue_plan queue_book::plan(wall_time now, bool full) {
  queue_plan plan;
  // Reservations that ran out since: they hold no room from now on.
  while (!expiries_.empty() && expiries_.begin()->first <= now) {
    const auto key = expiries_.begin()->second;
    auto& e = pods_.at(key);
    unbook(key, e);
    e.st = standing::expired;
    e.expiry.reset();
    expired_.push_back(key);
    room_opened_ = true;
  }
  if (full) {
    room_opened_ = true;
    for (const auto& [key, e] : pods_)
      if (e.st == standing::candidate || e.st == standing::other_gated)
        touched_.insert(key);
  }
  const bool from_front = room_opened_ || rules_.spec.strict_fifo;
  if (from_front || !arrived_.empty())
    for (const auto& key : walk(from_front).admitted)
      admit(key, plan);
  room_opened_ = false;
  arrived_.clear();
  for (const auto& key : touched_)
    if (auto c = condition_of(key))
      plan.conditions.push_back(std::move(*c));
  touched_.clear();
  plan.expired = std::move(expired_);
  expired_.clear();
  if (!expiries_.empty())
    plan.next_expiry = expiries_.begin()->first;
  const auto& cap = rules_.spec.capacity;
  for (size_t i = 0; i < cap.size(); ++i) {
    plan.status.allocated.emplace_back(cap[i].first, allocated_[i]);
    plan.status.reserved.emplace_back(cap[i].first, reserved_[i]);
    plan.status.waiting.emplace_back(cap[i].first, waiting_[i]);
  }
  plan.status.admitted_pods = admitted_pods_;
  plan.status.reserved_pods = reserved_pods_;
  plan.status.gated_pods = gated_pods_;
  plan.status.observed_generation = rules_.spec.generation;
  return plan;
}

}  // namespace headroom::actors::gates
