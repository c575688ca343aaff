#include "adapters/k8s/events.hpp"

#include <algorithm>
#include <cstdio>

#include "adapters/k8s/time.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::k8s {

namespace {

// The API's limits (k8s.io/kubernetes/pkg/apis/core/validation: events.k8s.io/v1).
constexpr size_t max_note = 1024;
constexpr size_t max_short = 128;

// At most `limit` bytes, cut on a UTF-8 character boundary.
std::string_view cut(std::string_view s, size_t limit) {
  if (s.size() <= limit)
    return s;
  size_t n = limit;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80)
    --n;
  return s.substr(0, n);
}

std::string object_key(const object_reference& r) {
  return r.kind + '\x1f' + r.ns + '\x1f' + r.name + '\x1f' + r.uid;
}

std::string series_key(const event_record& e, std::string_view note) {
  std::string k = object_key(e.regarding);
  for (std::string_view part : {std::string_view{e.type}, std::string_view{e.reason}, std::string_view{e.action}, note}) {
    k += '\x1f';
    k += part;
  }
  return k;
}

}  // namespace

std::string event_namespace(const object_reference& ref) { return ref.ns.empty() ? "default" : ref.ns; }

std::string encode_event(const event_record& e, std::string_view name, double event_time,
                         std::string_view reporting_controller, std::string_view reporting_instance) {
  const auto& r = e.regarding;
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "events.k8s.io/v1").field("kind", "Event");
  w.key("metadata").begin_object().field("name", name).field("namespace", event_namespace(r)).end_object();
  w.field("eventTime", format_rfc3339(event_time, 6));
  w.field("reportingController", cut(reporting_controller, max_short));
  w.field("reportingInstance", cut(reporting_instance, max_short));
  w.field("action", cut(e.action, max_short)).field("reason", cut(e.reason, max_short));
  w.field("note", cut(e.note, max_note)).field("type", e.type);
  w.key("regarding").begin_object().field("apiVersion", r.api_version).field("kind", r.kind).field("name", r.name);
  if (!r.ns.empty())
    w.field("namespace", r.ns);
  if (!r.uid.empty())
    w.field("uid", r.uid);
  w.end_object().end_object();
  return w.take();
}

std::string encode_series_patch(int64_t count, double last_observed) {
  runtime::json_writer w;
  w.begin_object().key("series").begin_object().field("count", count);
  w.field("lastObservedTime", format_rfc3339(last_observed, 6)).end_object().end_object();
  return w.take();
}

event_book::event_book(options o) : opts_(o) {}

event_book::entry* event_book::find(const std::string& ns, const std::string& name) {
  for (auto& e : series_)
    if (e.name == name && e.ns == ns)
      return &e;
  return nullptr;
}

bool event_book::take_token(const std::string& object, time_point now) {
  auto [it, fresh] = buckets_.try_emplace(object, bucket{static_cast<double>(opts_.burst), now});
  auto& b = it->second;
  if (!fresh && opts_.refill.count() > 0) {
    const double earned = std::chrono::duration<double>(now - b.at) / std::chrono::duration<double>(opts_.refill);
    b.tokens = std::min(static_cast<double>(opts_.burst), b.tokens + earned);
    b.at = now;
  }
  if (b.tokens < 1)
    return false;
  b.tokens -= 1;
  return true;
}

event_book::outcome event_book::observe(const event_record& e, time_point now, double wall) {
  const std::string note{cut(e.note, max_note)};
  const std::string key = series_key(e, note);
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    auto& s = *it->second;
    if (now - s.last_seen < opts_.series_window) {
      ++s.count;
      s.last_seen = now;
      s.last_wall = wall;
      return {verdict::series, s.name, s.ns};
    }
    series_.erase(it->second);  // too old to join: a new Event
    by_key_.erase(it);
  }
  if (!take_token(object_key(e.regarding), now))
    return {verdict::rate_limited, {}, {}};
  // client-go names an Event "<object>.<hex nanoseconds>"; the sequence keeps two in one tick apart.
  char suffix[40];
  const auto nanos = static_cast<uint64_t>(wall * 1e9) + (sequence_++ % 1000);
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(nanos));
  // An object name is at most 253 characters.
  std::string name = std::string{cut(e.regarding.name, 253 - std::string_view{suffix}.size())} + suffix;
  entry s;
  s.key = key;
  s.ns = event_namespace(e.regarding);
  s.name = name;
  s.last_seen = now;
  s.last_wall = wall;
  series_.push_back(std::move(s));
  by_key_[key] = std::prev(series_.end());
  while (series_.size() > opts_.max_series) {
    by_key_.erase(series_.front().key);
    series_.pop_front();
  }
  return {verdict::create, std::move(name), event_namespace(e.regarding)};
}

void event_book::created(const std::string& ns, const std::string& name, bool ok) {
  auto* s = find(ns, name);
  if (s == nullptr)
    return;
  if (ok) {
    s->created = true;
    return;
  }
  by_key_.erase(s->key);
  series_.remove_if([&](const entry& x) { return x.name == name && x.ns == ns; });
}

void event_book::series_written(const std::string& ns, const std::string& name, bool ok, bool gone) {
  auto* s = find(ns, name);
  if (s == nullptr)
    return;
  s->in_flight = false;
  if (!ok && gone) {
    by_key_.erase(s->key);
    series_.remove_if([&](const entry& x) { return x.name == name && x.ns == ns; });
  } else if (!ok) {
    s->written = std::min(s->written, s->count - 1);  // written again at the next flush
  }
}

std::vector<event_book::series_update> event_book::due_updates(time_point now) {
  std::vector<series_update> out;
  for (auto it = series_.begin(); it != series_.end();) {
    auto& s = *it;
    if (s.created && !s.in_flight && s.count > s.written && s.count >= 2) {
      out.push_back({s.ns, s.name, s.count, s.last_wall});
      s.written = s.count;
      s.in_flight = true;
    }
    const bool quiet = now - s.last_seen >= opts_.series_window;
    if (quiet && !s.in_flight && s.count <= s.written) {
      by_key_.erase(s.key);
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
  // A bucket back to full is the same as none.
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const double earned = opts_.refill.count() > 0
                              ? std::chrono::duration<double>(now - it->second.at) / std::chrono::duration<double>(opts_.refill)
                              : opts_.burst;
    if (it->second.tokens + earned >= opts_.burst)
      it = buckets_.erase(it);
    else
      ++it;
  }
  return out;
}

}  // namespace headroom::k8s
