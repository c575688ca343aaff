#pragma once

// What an actor keeps across its own restarts. CAF ends an actor's state with the actor, so a
// restarted incarnation starts from nothing; the few facts it must not forget (the listener's
// Actions session, which a crashed listener leaves in the service) live in a memo its wiring owns
// for as long as the actor's subtree, as it owns the actor's relay. One incarnation at a time
// writes it and the next reads it as it starts; the lock is for whoever else reads (a test).

#include <mutex>
#include <utility>

namespace headroom::runtime {

template <class T>
class memo {
 public:
  T get() const {
    std::lock_guard lock{m_};
    return value_;
  }
  void set(T v) {
    std::lock_guard lock{m_};
    value_ = std::move(v);
  }
  // A change made under the lock, for a value several writers share.
  template <class F>
  void update(F&& change) {
    std::lock_guard lock{m_};
    change(value_);
  }

 private:
  mutable std::mutex m_;
  T value_{};
};

}  // namespace headroom::runtime
