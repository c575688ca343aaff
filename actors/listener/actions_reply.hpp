#pragma once

// listener_session's private message: an Actions Service call it started has finished. It carries
// the adapter's protocol objects (and a session handle), goes only from the I/O thread's callback
// back to the same actor, never between actors, so it lives here, not in messages/.

#include <caf/allowed_unsafe_message_type.hpp>

#include <cstdint>
#include <optional>
#include <vector>

#include "adapters/github/actions_client.hpp"

namespace headroom::actors {

struct actions_reply {
  enum class op : uint8_t { resolve, session, poll, ack, acquire, refresh, closed, reack, stale, adopt, stats } what = op::poll;
  uint64_t generation = 0;  // the listener's session generation when the call started
  uint64_t poll = 0;        // op::poll: which poll (a poll given up on answers too late)
  std::optional<github::actions_error> error;
  github::session_ptr session;                     // op::session
  std::optional<github::session_message> message;  // op::poll: nullopt = 202, nothing to say
  std::vector<int64_t> acquired;                   // op::acquire; op::resolve: {scale set id}
  std::optional<github::statistics> stats;         // op::stats: the scale set's, as the service counts them now
};

}  // namespace headroom::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(headroom::actors::actions_reply)
