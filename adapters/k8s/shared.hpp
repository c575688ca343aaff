#pragma once

// Immutable values shared between the objects that hold equal ones.
//
// Pods made from one template carry the same labels, tolerations, affinity, spread constraints and
// condition texts; a cache of 100k pods would otherwise hold 100k copies of each. The decoder
// therefore interns these parts: `intern` returns the one live copy equal to the value it is given,
// or makes it. The table holds weak references, so a value goes when the last object holding it
// does; dead entries are swept when the table has doubled since the last sweep. The last 64 values
// made are also held strongly, so objects that are decoded and dropped again at once (a one-off
// list, a watch event nobody keeps) do not make and free the same value each time.
//
// `shared<T>` is the handle objects hold: const access, container-style forwarding so that
// `for (auto& t : pod.meta.labels)` reads as before, and `edit()` for code that builds objects by
// hand (tests, builders), which copies first so no other holder ever sees a change.

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace headroom::k8s {

template <class T>
class shared {
 public:
  shared() : p_(none()) {}
  explicit shared(std::shared_ptr<const T> p) : p_(p ? std::move(p) : none()) {}
  shared(T value) : p_(std::make_shared<const T>(std::move(value))) {}  // NOLINT: implicit, for builders

  const T& operator*() const { return *p_; }
  const T* operator->() const { return p_.get(); }

  // Container forwarding, for T a container.
  auto begin() const requires requires(const T& t) { t.begin(); } { return p_->begin(); }
  auto end() const requires requires(const T& t) { t.end(); } { return p_->end(); }
  auto size() const requires requires(const T& t) { t.size(); } { return p_->size(); }
  bool empty() const requires requires(const T& t) { t.empty(); } { return p_->empty(); }
  decltype(auto) operator[](std::size_t i) const requires requires(const T& t) { t[0]; } { return (*p_)[i]; }
  decltype(auto) front() const requires requires(const T& t) { t.front(); } { return p_->front(); }

  // A private copy to change; other holders keep the value they had.
  T& edit() {
    auto fresh = std::make_shared<T>(*p_);
    T& ref = *fresh;
    p_ = std::move(fresh);
    return ref;
  }

  // Whether two handles share one copy (they are equal then; equal values need not share).
  bool same(const shared& other) const { return p_ == other.p_; }

  friend bool operator==(const shared& a, const shared& b) { return a.p_ == b.p_ || *a.p_ == *b.p_; }
  friend bool operator==(const shared& a, const T& b) { return *a.p_ == b; }

 private:
  static const std::shared_ptr<const T>& none() {
    static const std::shared_ptr<const T> e = std::make_shared<const T>();
    return e;
  }
  std::shared_ptr<const T> p_;
};

// The one live copy of `value`, `hash` being its hash (see hash_value in decode.cpp).
template <class T>
std::shared_ptr<const T> intern(const T& value, std::size_t hash) {
  struct table {
    std::mutex mutex;
    std::unordered_multimap<std::size_t, std::weak_ptr<const T>> entries;
    std::size_t sweep_at = 1024;
    std::array<std::shared_ptr<const T>, 64> recent;
    std::size_t next = 0;
  };
  static table* t = new table;  // never destroyed: holders may outlive static destruction order
  std::lock_guard lock{t->mutex};
  auto [it, last] = t->entries.equal_range(hash);
  while (it != last) {
    if (auto live = it->second.lock()) {
      if (*live == value)
        return live;
      ++it;
    } else {
      it = t->entries.erase(it);
    }
  }
  // Not make_shared: the value's memory goes with its last holder, only the control block waits
  // for the sweep.
  std::shared_ptr<const T> made{new T(value)};
  t->entries.emplace(hash, made);
  t->recent[t->next++ % t->recent.size()] = made;
  if (t->entries.size() >= t->sweep_at) {
    std::erase_if(t->entries, [](const auto& e) { return e.second.expired(); });
    t->sweep_at = std::max<std::size_t>(1024, 2 * t->entries.size());
  }
  return made;
}

}  // namespace headroom::k8s
