#pragma once

// The reactive scaler's state and steps, shared by its files (one per phase):
//   reactive_scaler.cpp   the behaviour: evaluations from the metric reader, decisions, replies
//   scaler_read.cpp       discovery, the object and its CRD, /scale reads, recovery at start
//   scaler_write.cpp      a step: quota, the newest pod's deletion cost, the write and its check
// Nothing here is used outside actors/reactive/.

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>

#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/event_recorder.hpp"
#include "actors/reactive/reactive.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/scale.hpp"
#include "adapters/prometheus/query.hpp"  // prom::sample; the metric reader owns the client
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/outage.hpp"

namespace headroom::actors::reactive::scaler {

inline constexpr std::string_view actor_name = "reactive_scaler";
inline constexpr int max_refusals = 3;              // of one step, then back off
inline constexpr int metric_alert_after = 3;        // consecutive query failures
using steady = std::chrono::steady_clock;

enum class call : uint8_t { discover, read_crd, read_object, read_scale, read_current, list_pods, deletion_cost, annotate,
                            write_scale, write_both, verify_scale, revert, read_paused, list_unplaced };

struct call_info {
  call what = call::discover;
};

// A step being carried out.
struct step {
  decision d;
  int32_t from = 0, to = 0;
  last_scale next;
  std::string resource_version;
  steady::time_point due;
  bool recovery = false;  // finishing an interrupted step found at start
  bool atomic = false;    // written as one patch on the object: nothing to put back if refused
};

struct scaler_state {
  scaler_context_ptr ctx;
  std::string id;  // the target's id, for logs
  quota_actor quota;
  runtime::watched_relay<metric_reader_actor> reader;  // the metric reader's relay
  api_calls<call_info> calls;
  std::shared_ptr<const k8s::resource_kind> kind;  // held by every call's callback too
  std::string replicas_pointer;  // the count's JSON pointer in the object; "" = write through /scale
  bool has_annotations = false;  // the object has an annotations map (a JSON patch `add` needs it)
  std::string uid;
  bool ready = false;          // discovered and recovered
  bool recovering = false;     // a discovery/recovery is in flight
  steady::time_point retry_at; // no new discovery/recovery before this (after a failure)
  int32_t current = -1;        // replicas on /scale, as last read or written
  std::optional<last_scale> last;
  std::string last_text;       // the annotation as it is on the target ("" = none)
  double backoff_until = 0;
  int refusals = 0;
  int32_t refused_to = -1;
  int failures = 0;            // consecutive metric failures
  bool metric_alert = false;
  bool oscillation_alert = false;
  bool evaluating = false;     // a step in flight
  steady::time_point last_samples;  // when the reader last sent an evaluation
  steady::time_point due;      // of the evaluation in flight
  std::optional<step> stepping;
  std::vector<metric_view> views;  // per metric (read or why not), of the evaluation in flight, decided once /scale is read
  int64_t gathering_due = -1;                      // the evaluation whose metrics are coming in
  std::vector<std::optional<msg::metric_samples>> gathered;
  bool gone = false;                  // the target was deleted (logged once; resumed when it returns)
  bool quota_held = false;            // the last scale-up the quota was asked for was held
  bool paused = false;                // the target said headroom.dev/reactive-paused: "true" at the last step it would have taken
  double resumed_at = 0;              // when the pause was seen to end: the cooldown applies from then
  int64_t unplaced = 0;               // replicas Pending and unschedulable at the last step up (steps up held)
  runtime::outage metric_outage{{.reminder = std::chrono::minutes(1)}};  // when to log a missing metric
  static inline const char* name = "headroom.reactive_scaler";
};

// Its own messages: the watchdog on the reader's evaluations, and the API server's answers to its calls.
using scaler_impl = reactive_scaler_actor::extend<caf::reacts_to<msg::watchdog_atom>, caf::reacts_to<msg::api_reply>>;
using scaler_self = scaler_impl::stateful_base<scaler_state>;

inline double wall_now(scaler_self* self) { return runtime::actor_system_clock{self->clock()}.wall_seconds(); }

// Seconds since the epoch on the actor system's clock (the cooldowns and windows are kept in the
// target's annotation as wall time).


inline const scaler_spec& spec(scaler_self* self) { return self->state.ctx->spec; }

inline int64_t ms_now(scaler_self* self) { return runtime::actor_system_clock{self->clock()}.now_ms(); }

inline const std::string& tid(scaler_self* self) { return self->state.id; }

// ---- the steps, by file
void start(scaler_self* self, call what, const std::function<void(k8s::client&, const k8s::resource_kind&, k8s::api_callback)>& fn);
void record_event(scaler_self* self, const char* type, const char* reason, const char* action, const std::string& message);
void report_quota(scaler_self* self);
void set_current(scaler_self* self, int32_t replicas);
void finish_evaluation(scaler_self* self);
void note(scaler_self* self, const decision& d);
void recover(scaler_self* self);
void read_scale(scaler_self* self);
void startup_failed(scaler_self* self, const std::string& error);
void target_gone(scaler_self* self);
void write_annotation(scaler_self* self, const std::string& text, call what);
void write_scale(scaler_self* self);
bool write_atomic(scaler_self* self);
void write_step(scaler_self* self);
void step_done(scaler_self* self);
void step_refused(scaler_self* self, const std::string& error);
void begin_step(scaler_self* self, const decision& d);
void on_paused_read(scaler_self* self, const msg::api_reply& r);
void check_unplaced(scaler_self* self, const std::string& selector);
void on_unplaced_listed(scaler_self* self, const msg::api_reply& r);
void continue_step(scaler_self* self);
void mark_newest_pod(scaler_self* self, const std::string& selector);
void subscribe(scaler_self* self);
std::chrono::milliseconds samples_overdue_after(scaler_self* self);
void on_metric(scaler_self* self, std::vector<msg::metric_samples>& replies);
void on_samples(scaler_self* self, msg::metric_samples& r);
void on_current(scaler_self* self, const msg::api_reply& r);
void on_discovered(scaler_self* self, const msg::api_reply& r);
void on_crd(scaler_self* self, const msg::api_reply& r);
void on_object(scaler_self* self, const msg::api_reply& r);
void on_scale(scaler_self* self, const msg::api_reply& r);
void on_pods_listed(scaler_self* self, const msg::api_reply& r);
void on_annotated(scaler_self* self, const msg::api_reply& r);
void on_verified(scaler_self* self, const msg::api_reply& r);
void on_written(scaler_self* self, const msg::api_reply& r, bool one_patch);
void on_api(scaler_self* self, msg::api_reply& r);

}  // namespace headroom::actors::reactive::scaler
