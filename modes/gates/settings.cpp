#include "modes/gates/settings.hpp"

namespace headroom::modes::gates {

using runtime::check_listen_address;
using runtime::config_fail;
using runtime::config_section;
using runtime::yaml_kind;

void read_section(const YAML::Node& node, gates_section& out) {
  config_section s{node, "gates", {"enabled", "webhook", "reservationTimeout", "resyncInterval"}};
  auto& g = out;
  s.read_bool("enabled", g.enabled);
  s.read_duration("reservationTimeout", g.reservation_timeout, millis{1'000}, millis{7 * 86'400'000LL});
  s.read_duration("resyncInterval", g.resync_interval, millis{1'000}, millis{3'600'000});
  if (auto w = s.get("webhook")) {
    config_section ws{*w, "gates.webhook", {"enabled", "listen", "certFile", "keyFile", "certReloadInterval", "threads"}};
    ws.read_bool("enabled", g.webhook.enabled);
    if (auto v = ws.read_string("listen"))
      g.webhook.listen = *v;
    if (auto v = ws.read_string("certFile"))
      g.webhook.cert_file = *v;
    if (auto v = ws.read_string("keyFile"))
      g.webhook.key_file = *v;
    ws.read_duration("certReloadInterval", g.webhook.cert_reload_interval, millis{100}, millis{3'600'000});
    ws.read_uint("threads", g.webhook.threads, 1, 64);
  }
  if (g.enabled && g.webhook.enabled && (g.webhook.cert_file.empty() || g.webhook.key_file.empty()))
    config_fail(g.webhook.cert_file.empty() ? "gates.webhook.certFile" : "gates.webhook.keyFile",
                "required: the API server calls the webhook over TLS only");
}

}  // namespace headroom::modes::gates
