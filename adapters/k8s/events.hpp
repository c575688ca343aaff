#pragma once

// Kubernetes Events (events.k8s.io/v1), recorded the way client-go's event recorder records them,
// as pure bookkeeping (time is passed in; the event_recorder actor does the I/O):
//
// - Deduplication: an event like one recorded less than `series_window` ago (same object, type,
//   reason, action and note) joins that Event's series instead of making a new object; the series'
//   count and lastObservedTime are written at most once per flush (see due_updates).
// - Rate limit per object: a token bucket (burst 25, one token per 5 minutes, as client-go's spam
//   filter) on new Event objects, so a flapping object cannot flood etcd; a repeat that joins a
//   series costs nothing.
// - Field limits of the API (note ≤ 1 KiB, reason and action ≤ 128 bytes) are applied here, so a
//   long message is cut rather than the Event refused.

#include <chrono>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headroom::k8s {

struct object_reference {
  std::string api_version, kind, ns, name, uid;  // ns empty: cluster-scoped
};

struct event_record {
  object_reference regarding;
  std::string type;    // Normal | Warning
  std::string reason;  // UpperCamelCase, what happened ("ScaledUp")
  std::string action;  // what headroom did or failed to do ("Scale")
  std::string note;    // for a human
};

// The namespace an Event about `ref` lives in: the object's own, or "default" for a
// cluster-scoped object (as client-go does).
std::string event_namespace(const object_reference& ref);

// The Event object's JSON for a create. `name` is unique per Event; `event_time` is seconds since
// the epoch (written with microseconds, a MicroTime).
std::string encode_event(const event_record& e, std::string_view name, double event_time,
                         std::string_view reporting_controller, std::string_view reporting_instance);

// The merge patch that sets an Event's series (count ≥ 2).
std::string encode_series_patch(int64_t count, double last_observed);

class event_book {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  struct options {
    duration series_window = std::chrono::minutes(6);
    int burst = 25;                            // new Event objects per object at once
    duration refill = std::chrono::minutes(5);  // one more token after each
    size_t max_series = 4096;                   // the oldest is forgotten beyond this
  };

  enum class verdict {
    create,        // a new Event: create it under `name`
    series,        // joined a recorded Event's series (written at the next flush)
    rate_limited,  // dropped: the object used up its tokens
  };
  struct outcome {
    verdict what = verdict::create;
    std::string name;  // create: the new Event's object name; series: the Event it joined
    std::string ns;    // the Event's namespace
  };

  struct series_update {
    std::string ns, name;
    int64_t count = 0;
    double last_observed = 0;  // seconds since the epoch
  };

  explicit event_book(options o);
  event_book() : event_book(options{}) {}

  // `wall` (seconds since the epoch) stamps the Event; `now` orders windows and tokens.
  outcome observe(const event_record& e, time_point now, double wall);

  // The create of `name` came back: ok (its series may be written from now on), or failed (forget
  // it, so the next occurrence creates again).
  void created(const std::string& ns, const std::string& name, bool ok);
  // A series write came back; not ok with `gone` (the API server expired the Event): forget it.
  void series_written(const std::string& ns, const std::string& name, bool ok, bool gone);

  // Series changed since their last write, for created Events not already being written; each is
  // marked as written in flight. Series quiet for longer than the window are forgotten (after
  // their last count is returned here).
  std::vector<series_update> due_updates(time_point now);

  size_t size() const { return series_.size(); }

 private:
  struct entry {
    std::string key, ns, name;
    time_point last_seen;
    double last_wall = 0;
    int64_t count = 1, written = 1;
    bool created = false, in_flight = false;
  };
  struct bucket {
    double tokens = 0;
    time_point at;
  };

  entry* find(const std::string& ns, const std::string& name);
  bool take_token(const std::string& object, time_point now);

  options opts_;
  std::list<entry> series_;  // oldest first by creation
  std::unordered_map<std::string, std::list<entry>::iterator> by_key_;
  std::unordered_map<std::string, bucket> buckets_;  // by object
  uint64_t sequence_ = 0;
};

}  // namespace headroom::k8s
