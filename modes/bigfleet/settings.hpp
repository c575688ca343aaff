#pragma once

// The `bigfleet` section.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "modes/shared/sections.hpp"

namespace headroom::modes::bigfleet {

// The BigFleet operator (one outbound stream to a shard). Off unless enabled.
struct bigfleet_section {
  bool enabled = false;
  std::string cluster_id;  // Hello.cluster_id; with mTLS also the client certificate's URI SAN
  std::string shard;       // host:port
  std::string tls_ca_file, tls_cert_file, tls_key_file, tls_server_name;  // all three files = mTLS
  millis rollup_interval{10'000};
  std::string bootstrap_template_file;  // "" = a minimal cloud-config comment
  std::string penalty_defaults_file;    // PriorityClass → penalties (YAML); "" = none
  bool capacity_requests = true;        // run the controller that makes one CR per Pod
};


void read_section(const YAML::Node& node, bigfleet_section& out);

}  // namespace headroom::modes::bigfleet
