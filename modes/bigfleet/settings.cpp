#include "modes/bigfleet/settings.hpp"

namespace headroom::modes::bigfleet {

using runtime::check_listen_address;
using runtime::config_fail;
using runtime::config_section;
using runtime::yaml_kind;

void read_section(const YAML::Node& node, bigfleet_section& out) {
  config_section s{node, "bigfleet",
            {"enabled", "clusterId", "shard", "tls", "rollupInterval", "bootstrapTemplateFile",
             "penaltyDefaultsFile", "capacityRequests"}};
  auto& b = out;
  s.read_bool("enabled", b.enabled);
  s.read_bool("capacityRequests", b.capacity_requests);
  if (auto v = s.read_string("clusterId"))
    b.cluster_id = *v;
  if (auto v = s.read_string("shard"))
    b.shard = *v;
  if (auto v = s.read_string("bootstrapTemplateFile"))
    b.bootstrap_template_file = *v;
  if (auto v = s.read_string("penaltyDefaultsFile"))
    b.penalty_defaults_file = *v;
  s.read_duration("rollupInterval", b.rollup_interval, millis{100}, millis{3'600'000});
  if (auto tls = s.get("tls")) {
    config_section t{*tls, "bigfleet.tls", {"caFile", "certFile", "keyFile", "serverName"}};
    if (auto v = t.read_string("caFile"))
      b.tls_ca_file = *v;
    if (auto v = t.read_string("certFile"))
      b.tls_cert_file = *v;
    if (auto v = t.read_string("keyFile"))
      b.tls_key_file = *v;
    if (auto v = t.read_string("serverName"))
      b.tls_server_name = *v;
    const int given = !b.tls_ca_file.empty() + !b.tls_cert_file.empty() + !b.tls_key_file.empty();
    if (given != 0 && given != 3)
      config_fail("bigfleet.tls", "mTLS needs caFile, certFile and keyFile together");
  }
  if (b.enabled && b.cluster_id.empty())
    config_fail("bigfleet.clusterId", "required when bigfleet.enabled is true");
  if (b.enabled) {
    if (auto problem = check_listen_address(b.shard))
      config_fail("bigfleet.shard", *problem);
  }
}

}  // namespace headroom::modes::bigfleet
