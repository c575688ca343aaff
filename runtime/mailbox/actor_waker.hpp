#pragma once

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/weak_intrusive_ptr.hpp>

#include <cstdint>

#include "runtime/messages.hpp"
#include "runtime/typed_handle.hpp"
#include "runtime/mailbox/wake_signal.hpp"

namespace headroom::runtime {

// The waker of a buffer whose consumer is an actor: sends msg::buffer_wakeup{buffer} to it.
// `consumer` is the actor's typed handle or its `this` (the compiler then checks that its contract
// takes the wake-up). Holds the actor weakly: the actor's state usually owns the buffer, and a
// strong handle here would keep a terminated actor alive forever. A wake-up for an actor that is
// gone is dropped.
template <class Consumer>
wake_signal::waker wake_actor(const Consumer& consumer, uint32_t buffer) {
  return [weak = weak_handle_of(consumer), buffer] { weak.send(msg::buffer_wakeup{buffer}); };
}

}  // namespace headroom::runtime
