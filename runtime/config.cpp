#include "runtime/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

extern char** environ;

namespace headroom::runtime {

namespace {

// Thrown only inside this file and turned into a config_error at the boundary: the walker is
// deeply nested and the first problem ends the parse.
struct config_failure {
  config_error error;
};

[[noreturn]] void fail(std::string path, std::string problem) {
  throw config_failure{config_error{std::move(path), std::move(problem)}};
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string node_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "null";
    default: return "undefined";
  }
}

// Walks one mapping: every key must be known; each known key is read at most once.
class section {
 public:
  section(const YAML::Node& node, std::string path, std::set<std::string> known)
      : node_(node), path_(std::move(path)) {
    if (!node_.IsMap())
      fail(path_.empty() ? "(top level)" : path_, "expected a mapping, found " + node_kind(node_));
    for (const auto& kv : node_) {
      const auto key = kv.first.as<std::string>();
      if (known.count(key) == 0) {
        std::string hint;
        size_t best = 3;
        for (const auto& k : known) {
          const size_t d = edit_distance(key, k);
          if (d < best) {
            best = d;
            hint = " (did you mean '" + k + "'?)";
          }
        }
        fail(join_path(path_, key), "unknown key" + hint);
      }
    }
  }

  std::optional<YAML::Node> get(const std::string& key) const {
    YAML::Node child = node_[key];
    if (!child.IsDefined() || child.IsNull())
      return std::nullopt;
    return child;
  }
  std::string path(const std::string& key) const { return join_path(path_, key); }

  void read_uint(const std::string& key, uint32_t& out, uint32_t min, uint32_t max) const {
    auto child = get(key);
    if (!child)
      return;
    if (!child->IsScalar())
      fail(path(key), "expected an integer, found " + node_kind(*child));
    const auto text = child->Scalar();
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size())
      fail(path(key), "expected an integer, found '" + text + "'");
    if (value < min || value > max)
      fail(path(key), "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                          ", found " + text);
    out = static_cast<uint32_t>(value);
  }

  void read_duration(const std::string& key, millis& out, millis min, millis max) const {
    auto child = get(key);
    if (!child)
      return;
    if (!child->IsScalar())
      fail(path(key), "expected a duration such as 30s, found " + node_kind(*child));
    const auto text = child->Scalar();
    auto d = parse_duration(text);
    if (!d)
      fail(path(key), "expected a duration such as 100ms, 30s or 5m, found '" + text + "'");
    if (*d < min || *d > max)
      fail(path(key), "must be between " + format_duration(min) + " and " + format_duration(max) +
                          ", found " + text);
    out = *d;
  }

  void read_bool(const std::string& key, bool& out) const {
    auto child = get(key);
    if (!child)
      return;
    const auto text = child->IsScalar() ? child->Scalar() : node_kind(*child);
    if (text != "true" && text != "false")
      fail(path(key), "expected true or false, found '" + text + "'");
    out = text == "true";
  }

  std::vector<std::string> read_strings(const std::string& key) const {
    auto child = get(key);
    if (!child)
      return {};
    if (!child->IsSequence())
      fail(path(key), "expected a list of strings, found " + node_kind(*child));
    std::vector<std::string> out;
    for (size_t i = 0; i < child->size(); ++i) {
      const auto item = (*child)[i];
      if (!item.IsScalar())
        fail(path(key) + "[" + std::to_string(i) + "]", "expected a string, found " + node_kind(item));
      out.push_back(item.Scalar());
    }
    return out;
  }

  std::vector<std::pair<std::string, std::string>> read_string_map(const std::string& key) const {
    auto child = get(key);
    if (!child)
      return {};
    if (!child->IsMap())
      fail(path(key), "expected a mapping of strings, found " + node_kind(*child));
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& kv : *child) {
      const auto k = kv.first.as<std::string>();
      if (!kv.second.IsScalar())
        fail(path(key) + "." + k, "expected a string, found " + node_kind(kv.second));
      out.emplace_back(k, kv.second.Scalar());
    }
    return out;
  }

  std::optional<std::string> read_string(const std::string& key) const {
    auto child = get(key);
    if (!child)
      return std::nullopt;
    if (!child->IsScalar())
      fail(path(key), "expected a string, found " + node_kind(*child));
    return child->Scalar();
  }

 private:
  YAML::Node node_;
  std::string path_;
};

// A DNS-1123 label short enough that "<name>-ph-<slot>-workflow" stays a valid pod name.
bool valid_scale_set_name(const std::string& n) {
  if (n.empty() || n.size() > 40 || n.front() == '-' || n.back() == '-')
    return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

config::scale_set_section parse_scale_set(const YAML::Node& node, const std::string& where) {
  config::scale_set_section out;
  section s{node, where,
            {"name", "namespace", "runnerGroup", "labels", "maxRunners", "mode", "ephemeralRunnerSet", "runner",
             "capacityAware", "healthCheck"}};
  if (auto v = s.read_string("name"))
    out.name = *v;
  if (!valid_scale_set_name(out.name))
    fail(s.path("name"), "required: lower-case letters, digits and '-', at most 40 characters, found '" + out.name + "'");
  if (auto v = s.read_string("namespace"))
    out.ns = *v;
  if (auto v = s.read_string("runnerGroup"))
    out.runner_group = *v;
  out.labels = s.read_strings("labels");
  s.read_uint("maxRunners", out.max_runners, 0, 100'000);
  if (auto v = s.read_string("mode")) {
    if (*v != "standalone" && *v != "arc")
      fail(s.path("mode"), "expected standalone or arc, found '" + *v + "'");
    out.mode = *v;
  }
  if (auto v = s.read_string("ephemeralRunnerSet"))
    out.ephemeral_runner_set = *v;
  if (out.mode == "arc" && out.ephemeral_runner_set.empty())
    fail(s.path("ephemeralRunnerSet"), "required in arc mode");
  if (auto r = s.get("runner")) {
    section rs{*r, s.path("runner"), {"image", "command", "resources", "nodeSelector", "tolerations", "serviceAccountName"}};
    if (auto v = rs.read_string("image"))
      out.runner.image = *v;
    if (rs.get("command"))
      out.runner.command = rs.read_strings("command");
    if (auto res = rs.get("resources")) {
      section q{*res, rs.path("resources"), {"cpu", "memory"}};
      if (auto v = q.read_string("cpu"))
        out.runner.cpu = *v;
      if (auto v = q.read_string("memory"))
        out.runner.memory = *v;
    }
    out.runner.node_selector = rs.read_string_map("nodeSelector");
    if (auto tl = rs.get("tolerations")) {
      if (!tl->IsSequence())
        fail(rs.path("tolerations"), "expected a list, found " + node_kind(*tl));
      for (size_t i = 0; i < tl->size(); ++i) {
        section t{(*tl)[i], rs.path("tolerations") + "[" + std::to_string(i) + "]", {"key", "operator", "value", "effect"}};
        config::toleration_section tol;
        if (auto v = t.read_string("key"))
          tol.key = *v;
        if (auto v = t.read_string("operator"))
          tol.op = *v;
        if (tol.op != "Equal" && tol.op != "Exists")
          fail(t.path("operator"), "expected Equal or Exists, found '" + tol.op + "'");
        if (auto v = t.read_string("value"))
          tol.value = *v;
        if (auto v = t.read_string("effect"))
          tol.effect = *v;
        out.runner.tolerations.push_back(std::move(tol));
      }
    }
    if (auto v = rs.read_string("serviceAccountName"))
      out.runner.service_account = *v;
  }
  if (auto c = s.get("capacityAware")) {
    section cs{*c, s.path("capacityAware"),
               {"enabled", "proactiveCapacity", "recalculateInterval", "placeholderReadyTimeout", "workflowResources",
                "placeholderImage", "placeholderCommand", "repollOnChange"}};
    auto& ca = out.capacity_aware;
    cs.read_bool("enabled", ca.enabled);
    cs.read_bool("repollOnChange", ca.repoll_on_change);
    cs.read_uint("proactiveCapacity", ca.proactive_capacity, 0, 100'000);
    cs.read_duration("recalculateInterval", ca.recalculate_interval, millis{100}, millis{3'600'000});
    cs.read_duration("placeholderReadyTimeout", ca.placeholder_ready_timeout, millis{1'000}, millis{86'400'000});
    if (auto w = cs.get("workflowResources")) {
      section q{*w, cs.path("workflowResources"), {"cpu", "memory"}};
      if (auto v = q.read_string("cpu"))
        ca.workflow_cpu = *v;
      if (auto v = q.read_string("memory"))
        ca.workflow_memory = *v;
    }
    if (auto v = cs.read_string("placeholderImage"))
      ca.placeholder_image = *v;
    if (cs.get("placeholderCommand"))
      ca.placeholder_command = cs.read_strings("placeholderCommand");
  }
  if (auto h = s.get("healthCheck")) {
    section hs{*h, s.path("healthCheck"),
               {"interval", "registrationTimeout", "pendingTimeout", "idleTimeout", "terminalGrace"}};
    auto& hc = out.health;
    hs.read_duration("interval", hc.interval, millis{100}, millis{3'600'000});
    hs.read_duration("registrationTimeout", hc.registration_timeout, millis{1'000}, millis{86'400'000});
    hs.read_duration("pendingTimeout", hc.pending_timeout, millis{1'000}, millis{86'400'000});
    hs.read_duration("idleTimeout", hc.idle_timeout, millis{1'000}, millis{86'400'000});
    hs.read_duration("terminalGrace", hc.terminal_grace, millis{0}, millis{86'400'000});
  }
  return out;
}

void check_supervision(const config::supervision_section& s, const std::string& path) {
  if (s.backoff_initial > s.backoff_max)
    fail(path + ".backoffInitial", "must not exceed backoffMax (" + format_duration(s.backoff_max) + ")");
}

void apply_log_level(config& cfg, const std::string& where, const std::string& text) {
  auto level = parse_log_level(text);
  if (!level)
    fail(where, "expected one of debug, info, warn, error, off, found '" + text + "'");
  cfg.logging.level = *level;
}

void apply_listen(config& cfg, const std::string& where, const std::string& text) {
  if (auto problem = check_listen_address(text))
    fail(where, *problem);
  cfg.http.listen = text;
}

}  // namespace

std::optional<millis> parse_duration(std::string_view text) {
  if (text.empty())
    return std::nullopt;
  if (text == "0")
    return millis{0};
  double total_ns = 0;
  while (!text.empty()) {
    size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == 0)
      return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + i, value);
    if (ec != std::errc{} || end != text.data() + i)
      return std::nullopt;
    text.remove_prefix(i);
    size_t u = 0;
    while (u < text.size() && !std::isdigit(static_cast<unsigned char>(text[u])) && text[u] != '.')
      ++u;
    const auto unit = text.substr(0, u);
    text.remove_prefix(u);
    double scale = 0;
    if (unit == "ns")
      scale = 1;
    else if (unit == "us" || unit == "\xC2\xB5s")
      scale = 1e3;
    else if (unit == "ms")
      scale = 1e6;
    else if (unit == "s")
      scale = 1e9;
    else if (unit == "m")
      scale = 60e9;
    else if (unit == "h")
      scale = 3600e9;
    else
      return std::nullopt;
    total_ns += value * scale;
  }
  if (!std::isfinite(total_ns) || total_ns > 1e18)
    return std::nullopt;
  return millis{static_cast<int64_t>(std::ceil(total_ns / 1e6))};
}

std::string format_duration(millis d) {
  const auto ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0)
    return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0)
    return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1000 == 0)
    return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::optional<std::string> check_listen_address(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return "expected host:port, found '" + std::string{text} + "'";
  const auto port = text.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value > 65535)
    return "port must be a number from 0 to 65535, found '" + std::string{port} + "'";
  return std::nullopt;
}

config_result parse_config_yaml(std::string_view yaml, std::string_view origin) {
  config cfg;
  cfg.source = std::string{origin};
  try {
    YAML::Node root;
    try {
      root = YAML::Load(std::string{yaml});
    } catch (const YAML::ParserException& e) {
      return config_error{std::string{origin}, "not valid YAML at line " + std::to_string(e.mark.line + 1) +
                                                   ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg};
    }
    if (!root.IsDefined() || root.IsNull())
      return cfg;  // an empty file means "all defaults"
    section top{root, "", {"runtime", "logging", "http", "supervision", "kubernetes", "leaderElection", "bigfleet", "github",
                              "hud", "scaleSets"}};
    if (auto node = top.get("runtime")) {
      section s{*node, "runtime", {"schedulerThreads", "maxThroughput", "shutdownTimeout"}};
      s.read_uint("schedulerThreads", cfg.runtime.scheduler_threads, 0, 256);
      s.read_uint("maxThroughput", cfg.runtime.max_throughput, 1, 1'000'000);
      s.read_duration("shutdownTimeout", cfg.runtime.shutdown_timeout, millis{100}, millis{600'000});
    }
    if (auto node = top.get("logging")) {
      section s{*node, "logging", {"level"}};
      if (auto level = s.read_string("level"))
        apply_log_level(cfg, s.path("level"), *level);
    }
    if (auto node = top.get("http")) {
      section s{*node, "http", {"listen"}};
      if (auto listen = s.read_string("listen"))
        apply_listen(cfg, s.path("listen"), *listen);
    }
    if (auto node = top.get("supervision")) {
      section s{*node, "supervision", {"maxRestarts", "restartWindow", "backoffInitial", "backoffMax"}};
      s.read_uint("maxRestarts", cfg.supervision.max_restarts, 0, 1000);
      s.read_duration("restartWindow", cfg.supervision.restart_window, millis{1000}, millis{86'400'000});
      s.read_duration("backoffInitial", cfg.supervision.backoff_initial, millis{1}, millis{600'000});
      s.read_duration("backoffMax", cfg.supervision.backoff_max, millis{1}, millis{3'600'000});
      check_supervision(cfg.supervision, "supervision");
    }
    if (auto node = top.get("kubernetes")) {
      section s{*node, "kubernetes", {"kubeconfig", "context", "qps", "burst"}};
      if (auto v = s.read_string("kubeconfig"))
        cfg.kubernetes.kubeconfig = *v;
      if (auto v = s.read_string("context"))
        cfg.kubernetes.context = *v;
      s.read_uint("qps", cfg.kubernetes.qps, 1, 10'000);
      s.read_uint("burst", cfg.kubernetes.burst, 1, 10'000);
    }
    if (auto node = top.get("leaderElection")) {
      section s{*node, "leaderElection",
                {"enabled", "namespace", "name", "leaseDuration", "renewDeadline", "retryPeriod"}};
      s.read_bool("enabled", cfg.leader_election.enabled);
      if (auto v = s.read_string("namespace"))
        cfg.leader_election.ns = *v;
      if (auto v = s.read_string("name"))
        cfg.leader_election.name = *v;
      s.read_duration("leaseDuration", cfg.leader_election.lease_duration, millis{2'000}, millis{600'000});
      s.read_duration("renewDeadline", cfg.leader_election.renew_deadline, millis{1'000}, millis{600'000});
      s.read_duration("retryPeriod", cfg.leader_election.retry_period, millis{100}, millis{60'000});
      const auto& le = cfg.leader_election;
      // client-go's rule: renewing must give up before the lease can expire for anyone else.
      if (le.renew_deadline >= le.lease_duration)
        fail("leaderElection.renewDeadline", "must be shorter than leaseDuration (" + format_duration(le.lease_duration) + ")");
      if (le.retry_period >= le.renew_deadline)
        fail("leaderElection.retryPeriod", "must be shorter than renewDeadline (" + format_duration(le.renew_deadline) + ")");
    }
    if (auto node = top.get("bigfleet")) {
      section s{*node, "bigfleet",
                {"enabled", "clusterId", "shard", "tls", "rollupInterval", "bootstrapTemplateFile",
                 "penaltyDefaultsFile", "capacityRequests"}};
      auto& b = cfg.bigfleet;
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
        section t{*tls, "bigfleet.tls", {"caFile", "certFile", "keyFile", "serverName"}};
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
          fail("bigfleet.tls", "mTLS needs caFile, certFile and keyFile together");
      }
      if (b.enabled && b.cluster_id.empty())
        fail("bigfleet.clusterId", "required when bigfleet.enabled is true");
      if (b.enabled) {
        if (auto problem = check_listen_address(b.shard))
          fail("bigfleet.shard", *problem);
      }
    }
    if (auto node = top.get("github")) {
      section s{*node, "github", {"configUrl", "caFile"}};
      if (auto v = s.read_string("configUrl"))
        cfg.github.config_url = *v;
      if (auto v = s.read_string("caFile"))
        cfg.github.ca_file = *v;
    }
    if (auto node = top.get("hud")) {
      section s{*node, "hud", {"url", "interval"}};
      if (auto v = s.read_string("url"))
        cfg.hud.url = *v;
      s.read_duration("interval", cfg.hud.interval, millis{1'000}, millis{3'600'000});
    }
    if (auto node = top.get("scaleSets")) {
      if (!node->IsSequence())
        fail("scaleSets", "expected a list, found " + node_kind(*node));
      std::set<std::string> names;
      for (size_t i = 0; i < node->size(); ++i) {
        const std::string where = "scaleSets[" + std::to_string(i) + "]";
        auto set = parse_scale_set((*node)[i], where);
        if (!names.insert(set.name).second)
          fail(where + ".name", "'" + set.name + "' appears twice");
        cfg.scale_sets.push_back(std::move(set));
      }
      if (!cfg.scale_sets.empty() && cfg.github.config_url.empty())
        fail("github.configUrl", "required when scaleSets are configured");
    }
  } catch (const config_failure& f) {
    return f.error;
  } catch (const YAML::Exception& e) {
    return config_error{std::string{origin}, std::string{"cannot read: "} + e.what()};
  }
  return cfg;
}

config_result load_config_file(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    return config_error{path, std::string{"cannot open: "} + std::strerror(errno)};
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_config_yaml(buf.str(), path);
}

std::optional<config_error> apply_env(config& cfg, const std::map<std::string, std::string>& env) {
  try {
    auto get = [&](const char* name) -> const std::string* {
      auto it = env.find(name);
      return it == env.end() || it->second.empty() ? nullptr : &it->second;
    };
    if (auto v = get("HEADROOM_LOG_LEVEL"))
      apply_log_level(cfg, "HEADROOM_LOG_LEVEL", *v);
    if (auto v = get("HEADROOM_METRICS_ADDR"))
      apply_listen(cfg, "HEADROOM_METRICS_ADDR", *v);
    if (auto v = get("HEADROOM_SCHEDULER_THREADS")) {
      uint32_t n = 0;
      auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
      if (ec != std::errc{} || end != v->data() + v->size() || n > 256)
        fail("HEADROOM_SCHEDULER_THREADS", "expected an integer from 0 to 256, found '" + *v + "'");
      cfg.runtime.scheduler_threads = n;
    }
    if (auto v = get("HEADROOM_KUBECONFIG"))
      cfg.kubernetes.kubeconfig = *v;
    if (auto v = get("HEADROOM_NAMESPACE"))
      cfg.leader_election.ns = *v;
    if (auto v = get("HEADROOM_SHUTDOWN_TIMEOUT")) {
      auto d = parse_duration(*v);
      if (!d || *d < millis{100} || *d > millis{600'000})
        fail("HEADROOM_SHUTDOWN_TIMEOUT", "expected a duration from 100ms to 10m, found '" + *v + "'");
      cfg.runtime.shutdown_timeout = *d;
    }
  } catch (const config_failure& f) {
    return f.error;
  }
  return std::nullopt;
}

std::map<std::string, std::string> process_env() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv{*e};
    if (kv.rfind("HEADROOM_", 0) != 0)
      continue;
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos)
      out.emplace(std::string{kv.substr(0, eq)}, std::string{kv.substr(eq + 1)});
  }
  return out;
}

}  // namespace headroom::runtime
