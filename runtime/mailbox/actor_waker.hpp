#pragma once

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/weak_intrusive_ptr.hpp>

#include <cstdint>

#include "runtime/messages.hpp"
#include "runtime/mailbox/wake_signal.hpp"

namespace headroom::runtime {

// The waker of a buffer whose consumer is an actor: sends msg::buffer_wakeup{buffer} to it.
// Holds the actor weakly: the actor's state usually owns the buffer, and a strong handle here
// would keep a terminated actor alive forever. A wake-up for an actor that is gone is dropped.
inline wake_signal::waker wake_actor(const caf::actor& consumer, uint32_t buffer) {
  caf::weak_actor_ptr weak = caf::actor_cast<caf::weak_actor_ptr>(consumer);
  return [weak, buffer] {
    if (auto strong = weak.lock())
      caf::anon_send(caf::actor_cast<caf::actor>(strong), msg::buffer_wakeup{buffer});
  };
}

}  // namespace headroom::runtime
