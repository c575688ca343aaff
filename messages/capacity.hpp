#pragma once

// Messages of a scale set's capacity loop (local-only; registered in type_ids.hpp).

#include <cstdint>
#include <string>

namespace headroom::msg {

/// placeholder_pair → capacity_monitor: what the pair's two pods say now. `consumed`: a runner pod
/// took the runner placeholder; the workflow placeholder still holds the workflow's room until the
/// workflow pod takes it (the pair is no longer capacity, and not the monitor's to stop).
struct pair_report {
  enum class state : uint8_t { pending, ready, consumed, lost, timed_out } what = state::pending;
  std::string slot;
  std::string reason;  // lost / timed_out: which pod, and why
};

/// capacity_monitor → runner_provisioner: the capacity the listener advertises now.
struct advertised {
  int64_t capacity = 0;
};

/// hud_poller → capacity_monitor: jobs queued on the HUD for this scale set's labels.
struct queued_jobs {
  int64_t count = 0;
  bool ok = false;  // false: the HUD failed; use proactiveCapacity alone
};

}  // namespace headroom::msg

namespace headroom::msg {

/// A runner's JIT configuration came back (runner_provisioner). `jit` is a secret: registered with
/// the secret registry by the decoder, never logged.
struct jit_reply {
  std::string name;
  int64_t runner_id = 0;
  std::string jit;
  std::string error;  // "" = ok
};

}  // namespace headroom::msg

namespace headroom::msg {

/// health_check's own GitHub lookups: what GitHub says of a runner pod's runner.
struct runner_status {
  std::string pod;
  std::string status;  // online-busy | online-idle | offline | absent | "" (lookup failed)
};

}  // namespace headroom::msg
