#pragma once

// The `reactive` section.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "modes/shared/sections.hpp"

namespace headroom::modes::reactive {

// Reactive metric-driven scaling (seed 001): workloads with a /scale subresource, scaled by one
// Prometheus metric each. Off while `targets` is empty. The Prometheus password or bearer token
// comes from the environment only: HEADROOM_PROMETHEUS_PASSWORD, HEADROOM_PROMETHEUS_TOKEN.
struct reactive_rules_section {
  millis evaluation_interval{60'000};
  millis scale_up_window{120'000};
  millis scale_down_window{300'000};
  double scale_down_threshold = 0.5;
  millis cooldown{180'000};
  millis resolution{15'000};  // the metric's sample spacing (its scrape interval); gaps are 2x this
  // How a step is written: "object" (one JSON patch on the object: the count, tested, and the
  // intent annotation together) when the kind's replicas path is known, else as "subresource"
  // (the annotation, then /scale: admission policies on <kind>/scale see the write).
  bool subresource_writes = false;
};

struct reactive_metric_section {
  std::string query;  // PromQL selecting exactly one series
  double target = 0;
  double activation = 0;  // activationThreshold (minReplicas 0 only)
  bool activation_set = false;
  bool absent_zero = false;  // ifAbsent: zero (no series means 0), else noMetric (not scaling)
};

struct reactive_target_section {
  std::string api_version = "apps/v1", kind = "Deployment", ns = "default", name;  // scaleTargetRef
  uint32_t min_replicas = 1, max_replicas = 1;
  std::vector<reactive_metric_section> metrics;  // `metric` + `target`, or `metrics`: the largest proposal wins
  std::string tenant;  // a key of `quotas`, or "" for none
  reactive_rules_section rules;  // the defaults, overridden per target
};

// ReactiveTarget objects (headroom.dev/v1alpha1): a target declared in its own namespace, started,
// changed and stopped live. Off while `namespaces` is empty.
struct reactive_objects_section {
  std::vector<std::string> namespaces;  // whose ReactiveTarget objects headroom serves
  uint32_t max_replicas = 0;            // limits.maxReplicas: a namespace's targets' maxReplicas summed (0: no bound)
};

// A reactive.targets[] entry declared by a ReactiveTarget object: its spec read as the entry
// (scaleTargetRef's namespace is the object's), with the object's identity.
struct declared_target {
  reactive_target_section section;
  std::string uid;
  int64_t generation = 0;
};

struct reactive_section {
  struct prometheus_section {
    std::string url = "http://127.0.0.1:9090";
    std::string username;  // basic auth with HEADROOM_PROMETHEUS_PASSWORD
    std::string ca_file;
    millis timeout{10'000};
  } prometheus;
  reactive_rules_section defaults;
  std::vector<std::pair<std::string, uint32_t>> quotas;  // tenant → max replicas over its targets
  millis quota_reload_interval{10'000};                   // re-read of `quotas` from the file
  std::vector<reactive_target_section> targets;
  reactive_objects_section objects;
};


void read_section(const YAML::Node& node, reactive_section& out);

// The `quotas` of a `reactive` section (also re-read on its own while running); config_fail on a problem.
std::vector<std::pair<std::string, uint32_t>> read_quotas(const YAML::Node& reactive);

// A ReactiveTarget object's spec, read by the reader of reactive.targets[] with `defaults` (the
// file's reactive.defaults) under it; the error names the field ("spec.maxReplicas: …").
std::variant<declared_target, std::string> read_reactive_target_object(std::string_view object_json, const reactive_rules_section& defaults);


}  // namespace headroom::modes::reactive
