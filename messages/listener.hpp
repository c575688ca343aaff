#pragma once

// Messages of a scale set's listener: Actions Service results coming back into the
// listener_session actor, and what it tells the runner provisioner. Results carry the decoded
// protocol objects (and a session handle), never leave the process, and are registered as
// local-only in type_ids.hpp.

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "adapters/github/actions_client.hpp"

namespace headroom::msg {

/// An Actions Service call the listener started has finished.
struct actions_reply {
  enum class op : uint8_t { resolve, session, poll, ack, acquire, refresh, closed } what = op::poll;
  uint64_t generation = 0;  // the listener's session generation when the call started
  std::optional<github::actions_error> error;
  github::session_ptr session;                  // op::session
  std::optional<github::session_message> message;  // op::poll: nullopt = 202, nothing to say
  std::vector<int64_t> acquired;                // op::acquire; op::resolve: {scale set id}
};

/// listener_session → runner provisioner: the scale set's latest statistics and job transitions.
struct scale_set_update {
  int64_t scale_set_id = 0;
  github::statistics stats;
  std::vector<github::job_message> jobs;  // started and completed, in order
};

}  // namespace headroom::msg
