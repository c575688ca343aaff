#include "runtime/config.hpp"
#include "runtime/config_reader.hpp"

#include <gtest/gtest.h>

using namespace headroom::runtime;
using namespace std::chrono_literals;

namespace {

config ok(std::string_view yaml) {
  auto r = parse_config_yaml(yaml, "test.yaml");
  if (auto* e = std::get_if<config_error>(&r))
    ADD_FAILURE() << e->message();
  return std::get_if<config>(&r) ? std::get<config>(r) : config{};
}

std::string err(std::string_view yaml) {
  auto r = parse_config_yaml(yaml, "test.yaml");
  if (std::holds_alternative<config>(r)) {
    ADD_FAILURE() << "accepted: " << yaml;
    return "";
  }
  return std::get<config_error>(r).message();
}

}  // namespace

TEST(config, empty_file_means_defaults) {
  auto c = ok("");
  EXPECT_EQ(c.runtime.scheduler_threads, 0u);
  EXPECT_EQ(c.http.listen, "127.0.0.1:9090");
  EXPECT_EQ(c.supervision.max_restarts, 5u);
  EXPECT_EQ(c.supervision.backoff_initial, 100ms);
  EXPECT_EQ(c.supervision.backoff_max, 30s);
}

TEST(config, reads_every_section) {
  auto c = ok(R"(
runtime: {schedulerThreads: 4, maxThroughput: 50, shutdownTimeout: 5s}
logging: {level: debug}
http: {listen: "0.0.0.0:9100"}
supervision: {maxRestarts: 3, restartWindow: 2m, backoffInitial: 250ms, backoffMax: 1m}
)");
  EXPECT_EQ(c.runtime.scheduler_threads, 4u);
  EXPECT_EQ(c.runtime.max_throughput, 50u);
  EXPECT_EQ(c.runtime.shutdown_timeout, 5s);
  EXPECT_EQ(c.logging.level, log_level::debug);
  EXPECT_EQ(c.http.listen, "0.0.0.0:9100");
  EXPECT_EQ(c.supervision.restart_window, 2min);
}

TEST(config, unknown_key_is_named_with_a_suggestion) {
  EXPECT_EQ(err("runtime: {schedulerThread: 2}"),
            "runtime.schedulerThread: unknown key (did you mean 'schedulerThreads'?)");
  EXPECT_EQ(err("metrics: {}"), "metrics: unknown key");
}

TEST(config, wrong_type_is_named) {
  EXPECT_EQ(err("runtime: {schedulerThreads: [1, 2]}"), "runtime.schedulerThreads: expected an integer, found a list");
  EXPECT_EQ(err("runtime: {schedulerThreads: two}"), "runtime.schedulerThreads: expected an integer, found 'two'");
  EXPECT_EQ(err("runtime: 3"), "runtime: expected a mapping, found a scalar");
  EXPECT_EQ(err("logging: {level: loud}"),
            "logging.level: expected one of debug, info, warn, error, off, found 'loud'");
}

TEST(config, out_of_range_is_named) {
  EXPECT_EQ(err("runtime: {schedulerThreads: 1000}"), "runtime.schedulerThreads: must be between 0 and 256, found 1000");
  EXPECT_EQ(err("runtime: {schedulerThreads: -1}"), "runtime.schedulerThreads: expected an integer, found '-1'");
  EXPECT_EQ(err("runtime: {shutdownTimeout: 1h}"), "runtime.shutdownTimeout: must be between 100ms and 10m, found 1h");
  EXPECT_EQ(err("http: {listen: \"127.0.0.1:99999\"}"),
            "http.listen: port must be a number from 0 to 65535, found '99999'");
  EXPECT_EQ(err("supervision: {backoffInitial: 2m, backoffMax: 1m}"),
            "supervision.backoffInitial: must not exceed backoffMax (1m)");
}

TEST(config, invalid_yaml_names_line_and_column) {
  const auto e = err("runtime:\n  schedulerThreads: [1,\n");
  EXPECT_EQ(e.rfind("test.yaml: not valid YAML at line ", 0), 0u) << e;
}

TEST(config, durations_parse_like_go) {
  EXPECT_EQ(parse_duration("100ms"), 100ms);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("1m30s"), 90s);
  EXPECT_EQ(parse_duration("2h"), 2h);
  EXPECT_EQ(parse_duration("0"), 0ms);
  EXPECT_EQ(parse_duration("1500us"), 2ms) << "rounds up to whole milliseconds";
  EXPECT_FALSE(parse_duration("10"));
  EXPECT_FALSE(parse_duration("-1s"));
  EXPECT_FALSE(parse_duration("1d"));
  EXPECT_FALSE(parse_duration(""));
}

TEST(config, environment_overrides_the_file) {
  auto c = ok("logging: {level: warn}");
  EXPECT_FALSE(apply_env(c, {{"HEADROOM_LOG_LEVEL", "debug"}, {"HEADROOM_METRICS_ADDR", "127.0.0.1:0"}}));
  EXPECT_EQ(c.logging.level, log_level::debug);
  EXPECT_EQ(c.http.listen, "127.0.0.1:0");
  auto bad = apply_env(c, {{"HEADROOM_SCHEDULER_THREADS", "many"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->message(), "HEADROOM_SCHEDULER_THREADS: expected an integer from 0 to 256, found 'many'");
}

TEST(config, kubernetes_and_leader_election) {
  auto c = ok(R"(
kubernetes: {kubeconfig: /etc/headroom/kubeconfig, context: prod, qps: 20, burst: 40, watchStallTimeout: 20s}
leaderElection: {enabled: false, namespace: ci, name: hr, leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 4s}
)");
  EXPECT_EQ(c.kubernetes.kubeconfig, "/etc/headroom/kubeconfig");
  EXPECT_EQ(c.kubernetes.qps, 20u);
  EXPECT_EQ(c.kubernetes.watch_stall_timeout, 20s);
  EXPECT_EQ(ok("kubernetes: {}").kubernetes.watch_stall_timeout, 90s);
  EXPECT_NE(err("kubernetes: {watchStallTimeout: 1s}").find("kubernetes.watchStallTimeout"), std::string::npos);
  EXPECT_FALSE(c.leader_election.enabled);
  EXPECT_EQ(c.leader_election.ns, "ci");
  EXPECT_EQ(c.leader_election.lease_duration, 30s);
  EXPECT_EQ(err("leaderElection: {leaseDuration: 10s, renewDeadline: 10s}"),
            "leaderElection.renewDeadline: must be shorter than leaseDuration (10s)");
  EXPECT_EQ(err("leaderElection: {retryPeriod: 10s}"),
            "leaderElection.retryPeriod: must be shorter than renewDeadline (10s)");
  EXPECT_EQ(err("leaderElection: {enabled: yes}"), "leaderElection.enabled: expected true or false, found 'yes'");
  EXPECT_EQ(err("kubernetes: {qps: 0}"), "kubernetes.qps: must be between 1 and 10000, found 0");
  auto e = ok("");
  EXPECT_FALSE(apply_env(e, {{"HEADROOM_KUBECONFIG", "/kc"}, {"HEADROOM_NAMESPACE", "headroom-system"}}));
  EXPECT_EQ(e.kubernetes.kubeconfig, "/kc");
  EXPECT_EQ(e.leader_election.ns, "headroom-system");
}

TEST(config, a_recording_lists_every_key_with_its_type_bounds_and_default) {
  config_schema schema;
  {
    config_recording recording{schema};
    ok("kubernetes: {qps: 7}\nsupervision: {}\n");
  }
  // The mappings with every key they accept, present or not.
  ASSERT_TRUE(schema.sections.count(""));
  EXPECT_TRUE(schema.sections.at("").count("leaderElection"));
  EXPECT_EQ(schema.sections.at("kubernetes"),
            (std::set<std::string>{"burst", "context", "kubeconfig", "qps", "watchStallTimeout"}));
  // A key's default is its value before the file is read, not the file's.
  ASSERT_TRUE(schema.keys.count("kubernetes.qps"));
  const auto& qps = schema.keys.at("kubernetes.qps");
  EXPECT_EQ(qps.type, "integer");
  EXPECT_EQ(qps.min, "1");
  EXPECT_EQ(qps.max, "10000");
  EXPECT_EQ(qps.default_value, "50");
  const auto& window = schema.keys.at("supervision.restartWindow");
  EXPECT_EQ(window.type, "duration");
  EXPECT_EQ(window.default_value, "1m");
  EXPECT_EQ(schema.keys.at("kubernetes.kubeconfig").type, "string");
  EXPECT_FALSE(schema.sections.count("leaderElection")) << "a section the file leaves out is not read";

  // Nothing is recorded once the recording is gone; list items are named [].
  const auto before = schema.keys.size();
  ok("kubernetes: {qps: 8}\n");
  EXPECT_EQ(schema.keys.size(), before);
  {
    config_recording recording{schema};
    describe_config_key("scaleSets[12].runner.tolerations[0].key", {"string", "", "", ""});
  }
  EXPECT_TRUE(schema.keys.count("scaleSets[].runner.tolerations[].key"));
}
