#pragma once

// How a result from another thread comes back into an actor: through the actor's own typed handle,
// so every such send is checked by the compiler against the actor's contract (CAF's typed
// anon_send refuses a message the receiver does not accept). A callback the actor hands to an I/O
// thread holds one of these, never a plain caf::actor.

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/weak_intrusive_ptr.hpp>

#include <type_traits>
#include <utility>

namespace headroom::runtime {

// The typed handle of the actor `self` (a typed actor's `this`, as CAF passes it to a behavior).
template <class Self>
auto handle_of(Self* self) {
  return caf::actor_cast<typename Self::actor_hdl>(self);
}

// A handle as given: an actor's `this` becomes its typed handle, a handle stays what it is.
template <class Target>
auto handle_from(const Target& target) {
  if constexpr (std::is_pointer_v<Target>)
    return handle_of(target);
  else
    return target;
}

// A typed handle held weakly: what a callback that outlives its actor holds, so a result for an
// actor that is gone is dropped and the callback keeps no terminated actor alive.
template <class Handle>
class weak_handle {
 public:
  weak_handle() = default;
  explicit weak_handle(const Handle& h) : ptr_(caf::actor_cast<caf::weak_actor_ptr>(h)) {}

  // Sends to the actor if it still lives; checked against Handle's contract at compile time.
  template <class... Ts>
  void send(Ts&&... xs) const {
    if (auto strong = ptr_.lock())
      caf::anon_send(caf::actor_cast<Handle>(strong), std::forward<Ts>(xs)...);
  }

  bool alive() const { return static_cast<bool>(ptr_.lock()); }

  // The actor held strongly while the result lives (a null handle if it is gone): for a callback
  // that must keep it, and so its actor system, alive while it works.
  Handle lock() const { return caf::actor_cast<Handle>(ptr_.lock()); }

 private:
  caf::weak_actor_ptr ptr_;
};

template <class Target>
auto weak_handle_of(const Target& target) {
  using handle = decltype(handle_from(target));
  return weak_handle<handle>{handle_from(target)};
}

}  // namespace headroom::runtime
