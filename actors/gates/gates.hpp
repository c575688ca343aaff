#pragma once

// Gate-controlled scheduling (seed 002): pods that only wait for room in a headroom Queue carry a
// scheduling gate, so the scheduler never marks them Unschedulable and no autoscaler buys a node
// for them; the gate comes off when their queue has room.
//
//   admission_webhook   (every replica, outside the leader gate: the API server calls any of them)
//                       owns the HTTPS server; adds the gate at Pod CREATE; reloads its certificate
//   gates (supervisor, leader only) ── gate_controller
//                       allocated + reserved from the pod informer on every change; ungates in
//                       order; conditions, Events, reservation expiry, Queue status

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "actors/k8s/event_recorder.hpp"
#include "messages/type_ids.hpp"
#include "actors/gates/model.hpp"
#include "adapters/k8s/informer.hpp"
#include "runtime/mailbox/buffer_stats.hpp"

namespace headroom::k8s {
class client;
}

namespace headroom::actors::gates {

namespace kinds {
extern const k8s::resource_kind queues;  // headroom.dev/v1alpha1 queues, cluster-scoped
}

inline constexpr std::string_view queue_index = "queue";

struct controller_metrics {
  // Per queue: capacity/allocated/reserved/waiting per resource, gated pods.
  std::function<void(const std::string& queue, const k8s::queue_status&, const k8s::resource_amounts& capacity)> report;
  std::function<void(const std::string& queue)> forget;  // the queue is gone
  // A gate removed: from the change that made room, and from the decision (the hand-off alone, as
  // Kueue's kueue_pod_scheduling_gate_removal_seconds measures from a Workload's admission); a
  // gang's member or not.
  std::function<void(const std::string& queue, double since_change, double since_decision, bool group)> ungated;
  std::function<void(const std::string& queue)> expired;
  std::function<void(const char* what)> error;  // a write that failed, a Queue that cannot be read
};

struct controller_context {
  k8s::client* kube = nullptr;
  std::shared_ptr<k8s::informer<k8s::pod>> pods;           // label headroom.dev/queue, indexed by it
  std::shared_ptr<k8s::informer<k8s::unstructured>> queues;
  std::chrono::milliseconds default_reservation_timeout{600'000};
  std::chrono::milliseconds resync_interval{30'000};
  std::function<wall_time()> wall_clock;  // the annotation's and the expiry's time
  std::function<void(const runtime::buffer_stats_ptr&)> track_buffer;
  controller_metrics metrics;
  actors::event_sink events;  // the event_recorder's relay (actors/k8s/event_recorder.hpp)
};
using controller_context_ptr = std::shared_ptr<const controller_context>;

// gate_controller: its informer feeds' wake-ups.
using gate_controller_actor = caf::typed_actor<caf::reacts_to<msg::buffer_wakeup>>;

gate_controller_actor spawn_gate_controller(caf::actor_system& sys, controller_context_ptr ctx);

struct webhook_metrics {
  std::function<void(const char* outcome)> reviewed;  // gated, already_gated, not_opted_in, no_queue, not_pod_create, malformed
  std::function<void(double seconds)> latency;
  std::function<void(bool ok, int64_t not_after)> certificate;  // a (re)load and the served certificate's expiry
};

struct webhook_options {
  std::string listen = ":9443";
  std::string cert_file, key_file;
  std::chrono::milliseconds reload_interval{10'000};
  int threads = 16;
  webhook_metrics metrics;
  // Namespace enforcement (/mutate-pods-enforced): the Queue a namespace's label names, from a
  // cache of the labelled namespaces (any thread); nullopt when it is not there. `namespaces_ready`:
  // that cache has been filled once (before, an unknown namespace may just not be read yet).
  std::function<std::optional<std::string>(const std::string& ns)> namespace_queue;
  std::function<bool()> namespaces_ready;
};

// Fails (exits abnormally, so its supervisor retries with backoff) when the port or the
// certificate cannot be had.
// admission_webhook: no peer sends it anything (its HTTPS server answers on its own threads); its
// contract is its own timer, which re-reads the certificate.
using admission_webhook_actor = caf::typed_actor<caf::reacts_to<msg::reload_atom>>;

admission_webhook_actor spawn_admission_webhook(caf::actor_system& sys, std::shared_ptr<const webhook_options> opts);

}  // namespace headroom::actors::gates
