#include "runtime/config.hpp"

#include "runtime/config_reader.hpp"

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

void check_supervision(const config::supervision_section& s, const std::string& path) {
  if (s.backoff_initial > s.backoff_max)
    config_fail(path + ".backoffInitial", "must not exceed backoffMax (" + format_duration(s.backoff_max) + ")");
}

void apply_log_level(config& cfg, const std::string& where, const std::string& text) {
  auto level = parse_log_level(text);
  if (!level)
    config_fail(where, "expected one of debug, info, warn, error, off, found '" + text + "'");
  cfg.logging.level = *level;
}

void apply_listen(config& cfg, const std::string& where, const std::string& text) {
  if (auto problem = check_listen_address(text))
    config_fail(where, *problem);
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

config_result parse_config_yaml(std::string_view yaml, std::string_view origin, config_extension* ext) {
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
    std::set<std::string> keys{"runtime", "logging", "http", "supervision", "kubernetes", "leaderElection"};
    if (ext != nullptr)
      for (auto& k : ext->keys())
        keys.insert(k);
    config_section top{root, "", std::move(keys)};
    if (auto node = top.get("runtime")) {
      config_section s{*node, "runtime", {"schedulerThreads", "maxThroughput", "shutdownTimeout"}};
      s.read_uint("schedulerThreads", cfg.runtime.scheduler_threads, 0, 256);
      s.read_uint("maxThroughput", cfg.runtime.max_throughput, 1, 1'000'000);
      s.read_duration("shutdownTimeout", cfg.runtime.shutdown_timeout, millis{100}, millis{600'000});
    }
    if (auto node = top.get("logging")) {
      config_section s{*node, "logging", {"level"}};
      if (auto level = s.read_string("level"))
        apply_log_level(cfg, s.path("level"), *level);
    }
    if (auto node = top.get("http")) {
      config_section s{*node, "http", {"listen"}};
      if (auto listen = s.read_string("listen"))
        apply_listen(cfg, s.path("listen"), *listen);
    }
    if (auto node = top.get("supervision")) {
      config_section s{*node, "supervision", {"maxRestarts", "restartWindow", "backoffInitial", "backoffMax"}};
      s.read_uint("maxRestarts", cfg.supervision.max_restarts, 0, 1000);
      s.read_duration("restartWindow", cfg.supervision.restart_window, millis{1000}, millis{86'400'000});
      s.read_duration("backoffInitial", cfg.supervision.backoff_initial, millis{1}, millis{600'000});
      s.read_duration("backoffMax", cfg.supervision.backoff_max, millis{1}, millis{3'600'000});
      check_supervision(cfg.supervision, "supervision");
    }
    if (auto node = top.get("kubernetes")) {
      config_section s{*node, "kubernetes", {"kubeconfig", "context", "qps", "burst", "watchStallTimeout"}};
      if (auto v = s.read_string("kubeconfig"))
        cfg.kubernetes.kubeconfig = *v;
      if (auto v = s.read_string("context"))
        cfg.kubernetes.context = *v;
      s.read_uint("qps", cfg.kubernetes.qps, 1, 10'000);
      s.read_uint("burst", cfg.kubernetes.burst, 1, 10'000);
      s.read_duration("watchStallTimeout", cfg.kubernetes.watch_stall_timeout, millis{5'000}, millis{3'600'000});
    }
    if (auto node = top.get("leaderElection")) {
      config_section s{*node, "leaderElection",
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
        config_fail("leaderElection.renewDeadline", "must be shorter than leaseDuration (" + format_duration(le.lease_duration) + ")");
      if (le.retry_period >= le.renew_deadline)
        config_fail("leaderElection.retryPeriod", "must be shorter than renewDeadline (" + format_duration(le.renew_deadline) + ")");
    }
    if (ext != nullptr) {
      for (const auto& key : ext->keys())
        if (auto node = top.get(key))
          ext->read(key, *node);
      ext->check();
    }
  } catch (const config_failure& f) {
    return f.error;
  } catch (const YAML::Exception& e) {
    return config_error{std::string{origin}, std::string{"cannot read: "} + e.what()};
  }
  return cfg;
}

config_result load_config_file(const std::string& path, config_extension* ext) {
  std::ifstream in{path};
  if (!in)
    return config_error{path, std::string{"cannot open: "} + std::strerror(errno)};
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_config_yaml(buf.str(), path, ext);
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
        config_fail("HEADROOM_SCHEDULER_THREADS", "expected an integer from 0 to 256, found '" + *v + "'");
      cfg.runtime.scheduler_threads = n;
    }
    if (auto v = get("HEADROOM_KUBECONFIG"))
      cfg.kubernetes.kubeconfig = *v;
    if (auto v = get("HEADROOM_NAMESPACE"))
      cfg.leader_election.ns = *v;
    if (auto v = get("HEADROOM_SHUTDOWN_TIMEOUT")) {
      auto d = parse_duration(*v);
      if (!d || *d < millis{100} || *d > millis{600'000})
        config_fail("HEADROOM_SHUTDOWN_TIMEOUT", "expected a duration from 100ms to 10m, found '" + *v + "'");
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
    // headroom's own names, and the one a design names for what headroom reads (seed 000's HUD token).
    if (kv.rfind("HEADROOM_", 0) != 0 && kv.rfind("HUD_API_TOKEN=", 0) != 0)
      continue;
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos)
      out.emplace(std::string{kv.substr(0, eq)}, std::string{kv.substr(eq + 1)});
  }
  return out;
}

}  // namespace headroom::runtime
