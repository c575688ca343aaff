#pragma once

// headroom's Queue (headroom.dev/v1alpha1, cluster-scoped; deploy/crds/queues.yaml): the room a
// queue of gated pods may use (seed 002), and the status headroom reports on it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/k8s/decode.hpp"

namespace headroom::k8s {

// Resource name → amount: cpu in milli, everything else in whole units (bytes, pods, devices).
using resource_amounts = std::vector<std::pair<std::string, int64_t>>;

struct queue {
  std::string name, uid, resource_version;
  int64_t generation = 0;
  resource_amounts capacity;  // only the resources named here are limited
  std::optional<std::chrono::milliseconds> reservation_timeout;
  bool strict_fifo = false;  // spec.queueingStrategy: StrictFIFO (default BestEffortFIFO)
};

// From the raw JSON of a Queue (an informer's unstructured object); errors name the field.
decoded<queue> decode_queue(std::string_view json);

// A Go duration ("10m", "1h30m", "90s", "500ms"); nullopt when it is not one or is negative.
std::optional<std::chrono::milliseconds> parse_go_duration(std::string_view text);

// An amount as a Kubernetes quantity string: cpu "1500m" or "2", others a plain integer.
std::string format_amount(std::string_view resource, int64_t amount);

struct queue_status {
  resource_amounts allocated, reserved, waiting;
  int64_t admitted_pods = 0, reserved_pods = 0, gated_pods = 0;
  int64_t observed_generation = 0;
  // The Active condition (API conventions: type, status, reason, message, lastTransitionTime,
  // observedGeneration): True (Admitting) while headroom reads the Queue and admits its pods;
  // False with the reason when it cannot (InvalidSpec: the message names the field).
  bool active = true;
  std::string active_reason = "Admitting";
  std::string active_message = "pods that fit in the capacity are ungated, highest priority first";
  std::string active_since;  // RFC 3339: when `active` last changed
  friend bool operator==(const queue_status&, const queue_status&) = default;
};

// The JSON Patch for the status subresource: the whole status replaced (written with RapidJSON).
std::string encode_queue_status_patch(const queue_status& s);

}  // namespace headroom::k8s
