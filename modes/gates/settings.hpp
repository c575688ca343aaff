#pragma once

// The `gates` section.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "modes/shared/sections.hpp"

namespace headroom::modes::gates {

// Gate-controlled scheduling (seed 002): pods opted in with the annotation
// headroom.dev/queue-allocation-gate: "true" and naming a Queue (label headroom.dev/queue) are gated
// at creation by the admission webhook and ungated when their Queue (headroom.dev/v1alpha1) has
// room. Off unless enabled.
struct gates_section {
  bool enabled = false;
  struct webhook_section {
    bool enabled = true;  // off: another replica or a test serves it; the controller still runs
    std::string listen = ":9443";
    std::string cert_file, key_file;  // PEM; re-read when they change
    millis cert_reload_interval{10'000};
    uint32_t threads = 16;  // each open keep-alive connection holds one
  } webhook;
  millis reservation_timeout{600'000};  // a Queue's spec.reservationTimeout overrides it
  millis resync_interval{30'000};
};


void read_section(const YAML::Node& node, gates_section& out);

}  // namespace headroom::modes::gates
