#pragma once

// The decoder's scanning core, shared by its files (decode.cpp, decode_pod.cpp,
// decode_objects.cpp) and by nothing else: where the decoder is (context), field names compared as
// they stand in the input, strings copied straight when they hold no escape, and the parts every
// kind has (metadata, conditions, resource lists), decoded into reused scratch values. The helpers
// live in an unnamed namespace, as they did when the decoder was one file: each file gets its own
// copies, and the compiler inlines them into each kind's decoder as before (k8s_decode_bench).

#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/interning.hpp"
#include "adapters/k8s/quantity.hpp"
#include "adapters/k8s/time.hpp"

namespace headroom::k8s::decode_core {

namespace od = simdjson::ondemand;
using interning::share;

// A JSON string's text, unescaped, or nothing when the escapes are not valid JSON (the parse that
// follows reports those). In decode.cpp.
std::optional<std::string> unescape(std::string_view quoted);

// Where the input's backslashes are. Field names are compared as they stand in the input
// (field_name); a name is unescaped first only when a backslash lies within it. Most inputs
// have no backslash at all; the rest have a few, in values.
struct backslash_index {
  static constexpr uintptr_t none = ~uintptr_t{0};
  std::vector<const char*> at;  // in input order
  size_t passed = 0;            // how many of `at` lie before the name looked at last
  uintptr_t next = none;        // at[passed], or none
  std::deque<std::string> names;  // unescaped names, quote-terminated and padded like the input

  void reset(std::string_view input) {
    at.clear();
    names.clear();
    passed = 0;
    for (size_t i = input.find('\\'); i != std::string_view::npos; i = input.find('\\', i + 2))
      at.push_back(input.data() + i);
    next = at.empty() ? none : reinterpret_cast<uintptr_t>(at.front());
  }

  // The name at `raw` (just past its opening quote) as field_name compares it: itself, or its
  // unescaped text when a backslash lies within it. Called when the next backslash is close by.
  [[gnu::noinline, gnu::cold]] const char* name(const char* raw);
};

// The input's backslashes, or null when it has none (the common case: one memchr).
inline backslash_index* index_backslashes(simdjson::padded_string_view input, backslash_index& index) {
  const std::string_view text{input.data(), input.length()};
  if (text.find('\\') == std::string_view::npos)
    return nullptr;
  index.reset(text);
  return &index;
}

// A semantic problem found while decoding (a bad quantity, a wrong type we detected ourselves).
struct field_failure {
  std::string message;
};

// Where the decoder is, for error messages. Nothing is recorded on the way down: when a failure
// unwinds, each enclosing field or element adds its name on the way up (try/catch costs nothing
// until something throws), so the happy path pays no bookkeeping.
struct context {
  std::string_view kind;  // a static string
  std::string_view ns, name;  // into the object being decoded, which outlives the error message
  std::vector<std::pair<std::string, int64_t>> unwound;  // innermost first
  backslash_index* backslashes = nullptr;  // the input's; null when it has none

  std::string where() const {
    std::string out{kind};
    if (!name.empty()) {
      out += ' ';
      if (!ns.empty())
        out.append(ns).append("/");
      out.append(name);
    }
    std::string p;
    for (auto it = unwound.rbegin(); it != unwound.rend(); ++it) {
      if (!it->first.empty()) {
        if (!p.empty())
          p += '.';
        p += it->first;
      }
      if (it->second >= 0)
        p += "[" + std::to_string(it->second) + "]";
    }
    return p.empty() ? out : out + ": " + p;
  }
};

// [[maybe_unused]]: a file that decodes no Pod uses no Pod helper, and each file has its own copy.
namespace {

// Inlined: it runs for every value read, and a call per value cost about 5 % of a Pod's decode.
simdjson_inline bool take_null(od::value& v) { return v.type() == od::json_type::null && v.is_null(); }

// Whether a string body holds a backslash: eight bytes at a time (SWAR), as most bodies are short
// and a memchr call per string cost more than the scan.
simdjson_inline bool has_backslash(const char* p, size_t n) {
  constexpr uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  constexpr uint64_t backslashes = ones * static_cast<uint8_t>('\\');
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    const uint64_t x = word ^ backslashes;  // a zero byte where there was a backslash
    if ((x - ones) & ~x & highs)
      return true;
  }
  for (; i < n; ++i)
    if (p[i] == '\\')
      return true;
  return false;
}

// The text between a string token's quotes when it has no escapes: the common case, copied straight
// from the input instead of being unescaped into the parser's buffer first. Stage 1 has already
// checked the string's bounds and UTF-8.
simdjson_inline std::optional<std::string_view> plain_string(std::string_view token) {
  if (token.size() < 2 || token.front() != '"')
    return std::nullopt;
  size_t close = token.size() - 1;  // the token may carry trailing whitespace
  while (token[close] != '"')
    --close;
  if (close == 0)
    return std::nullopt;
  std::string_view body = token.substr(1, close - 1);
  if (has_backslash(body.data(), body.size()))
    return std::nullopt;
  return body;
}

// Strings are assigned, not constructed: a reused scratch string keeps its capacity, so decoding
// the next object allocates nothing.
[[maybe_unused]] void set(std::string& out, od::value v) {
  if (auto plain = plain_string(v.raw_json_token())) {
    out.assign(plain->data(), plain->size());
    return;
  }
  if (take_null(v)) {
    out.clear();
    return;
  }
  std::string_view s = v.get_string();  // escapes, or not a string (throws, naming the type)
  out.assign(s.data(), s.size());
}

// An RFC 3339 time as seconds since the epoch; none when null or not a time.
[[maybe_unused]] std::optional<double> timestamp(od::value v) {
  if (auto plain = plain_string(v.raw_json_token()))
    return parse_rfc3339(*plain);
  if (take_null(v))
    return std::nullopt;
  return parse_rfc3339(std::string_view{v.get_string()});
}

[[maybe_unused]] int64_t int64(od::value v) {
  if (take_null(v))
    return 0;
  return v.get_int64();
}

[[maybe_unused]] bool boolean(od::value v) {
  if (take_null(v))
    return false;
  return v.get_bool();
}

// A container or null. The container is tried first, as null is rare: a failed get_object or
// get_array consumes nothing.
template <class Container>
simdjson_inline bool open(od::value& v, Container& out) {
  simdjson::error_code err;
  if constexpr (std::is_same_v<Container, od::object>)
    err = v.get_object().get(out);
  else
    err = v.get_array().get(out);
  if (!err)
    return true;
  if (err == simdjson::INCORRECT_TYPE && v.type() == od::json_type::null && v.is_null())
    return false;
  throw simdjson::simdjson_error(err);
}

template <class F>
void each(context& c, od::value v, F&& fn) {
  od::array array;
  if (!open(v, array))
    return;
  int64_t i = 0;
  for (auto element : array) {
    try {
      fn(od::value{element.value()});
    } catch (...) {
      c.unwound.emplace_back(std::string{}, i);
      throw;
    }
    ++i;
  }
}

// A field's name as it stands in the input, compared without unescaping it (as simdjson's own
// find_field does): the literal's bytes, then the closing quote. The length is known at compile
// time, so a compare is a few loads: no memcmp call and no unescaping into the parser's buffer,
// which together cost about a fifth of a Pod's decode. The input's keys were put in their plainest
// form first (`plain_keys`), so "sp\u0065c" still reads as "spec". Data keys (labels, annotations,
// resource names) go through `entries`, which unescapes them.
class field_name {
 public:
  // A name whose first 64 bytes hold no backslash is its own text for every compare: it cannot
  // unescape to a literal of 46 bytes or fewer.
  simdjson_inline field_name(od::raw_json_string raw, backslash_index* backslashes) : raw_{raw.raw()} {
    // Also taken when the next backslash known is behind this name (it was in a value): it moves on.
    if (backslashes && backslashes->next < reinterpret_cast<uintptr_t>(raw_) + simdjson::SIMDJSON_PADDING)
        [[unlikely]]
      raw_ = backslashes->name(raw_);
  }

  // Reads at most N bytes from the name's start: within the name, its closing quote and the
  // value that follows, or the input's padding (the longest name compared is 46 bytes).
  template <size_t N>
  bool operator==(const char (&literal)[N]) const noexcept {
    static_assert(N - 1 <= simdjson::SIMDJSON_PADDING);
    return raw_[N - 1] == '"' && std::memcmp(raw_, literal, N - 1) == 0;
  }

  // The name as written (escapes kept), for error messages only.
  std::string text() const {
    size_t n = 0;
    while (raw_[n] != '"')
      n += raw_[n] == '\\' ? 2 : 1;
    return std::string{raw_, n};
  }

 private:
  const char* raw_;
};


template <class F>
void fields(context& c, od::value v, F&& fn) {
  od::object object;
  if (!open(v, object))
    return;
  for (auto result : object) {
    od::field field = std::move(result);
    field_name key{field.key(), c.backslashes};
    try {
      fn(key, od::value{field.value()});
    } catch (...) {
      c.unwound.emplace_back(key.text(), -1);
      throw;
    }
  }
}

// An object whose keys are data (a label map, a resource list): each key unescaped.
template <class F>
void entries(context& c, od::value v, F&& fn) {
  od::object object;
  if (!open(v, object))
    return;
  for (auto result : object) {
    od::field field = std::move(result);
    std::string_view key = field.unescaped_key();
    try {
      fn(key, od::value{field.value()});
    } catch (...) {
      c.unwound.emplace_back(std::string{key}, -1);
      throw;
    }
  }
}

// -- scratch reuse ---------------------------------------------------------------------------------
// Shared parts are decoded into thread-local scratch values whose strings and vectors keep their
// capacity from one object to the next; only a value not seen before is copied out (by intern).
// `slot` hands out the next element of a list, reusing an old one; the caller trims the list to
// the count afterwards. `reset` clears an element's scalars; its lists are trimmed by their fill.

struct container_requests {
  resource_list requests;
  bool sidecar = false;  // an init container with restartPolicy: Always
};

[[maybe_unused]] void reset(std::string& s) { s.clear(); }
[[maybe_unused]] void reset(std::pair<std::string, std::string>& p) {
  p.first.clear();
  p.second.clear();
}
[[maybe_unused]] void reset(owner_reference& o) {
  o.api_version.clear();
  o.kind.clear();
  o.name.clear();
  o.uid.clear();
  o.controller = false;
}
[[maybe_unused]] void reset(selector_requirement& r) {
  r.key.clear();
  r.op.clear();
}
[[maybe_unused]] void reset(node_selector_term&) {}
[[maybe_unused]] void reset(pod_affinity_term& t) { t.topology_key.clear(); }
[[maybe_unused]] void reset(toleration& t) {
  t.key.clear();
  t.op.clear();
  t.value.clear();
  t.effect.clear();
  t.toleration_seconds.reset();
}
[[maybe_unused]] void reset(topology_spread_constraint& t) {
  t.max_skew = 0;
  t.topology_key.clear();
  t.when_unsatisfiable.clear();
}
[[maybe_unused]] void reset(condition& x) {
  x.type.clear();
  x.status.clear();
  x.reason.clear();
  x.message.clear();
}
[[maybe_unused]] void reset(container_status& s) {
  s.name.clear();
  s.ready = false;
  s.restart_count = 0;
  s.state.clear();
  s.reason.clear();
}
[[maybe_unused]] void reset(taint& t) {
  t.key.clear();
  t.value.clear();
  t.effect.clear();
}
[[maybe_unused]] void reset(resource_list& r) {
  r.cpu_milli = r.memory = r.ephemeral_storage = r.pods = 0;
  r.extended.clear();
}
[[maybe_unused]] void reset(container_requests& cr) {
  reset(cr.requests);
  cr.sidecar = false;
}

template <class T>
T& slot(std::vector<T>& v, size_t& n) {
  if (n == v.size())
    v.emplace_back();
  else
    reset(v[n]);
  return v[n++];
}

// -- the parts ---------------------------------------------------------------------------------------

[[maybe_unused]] void string_map(context& c, od::value v, string_pairs& out, size_t& n) {
  entries(c, v, [&](std::string_view key, od::value value) {
    auto& kv = slot(out, n);
    kv.first.assign(key.data(), key.size());
    set(kv.second, value);
  });
}

[[maybe_unused]] void string_list(context& c, od::value v, std::vector<std::string>& out, size_t& n) {
  each(c, v, [&](od::value item) { set(slot(out, n), item); });
}

[[maybe_unused]] void resources(context& c, od::value v, resource_list& out) {
  entries(c, v, [&](std::string_view name, od::value value) {
    std::string_view text;
    std::string number;
    if (value.type() == od::json_type::number) {  // Quantity.UnmarshalJSON accepts bare numbers too
      number = std::string{value.raw_json_token()};
      while (!number.empty() && (number.back() == ' ' || number.back() == '\n'))
        number.pop_back();
      text = number;
    } else if (auto plain = plain_string(value.raw_json_token())) {
      text = *plain;
    } else {
      text = value.get_string();
    }
    auto q = parse_quantity(text);
    if (auto* err = std::get_if<quantity_error>(&q))
      throw field_failure{err->message};
    const auto& parsed = std::get<quantity>(q);
    out.add(name, name == "cpu" ? parsed.milli : parsed.units);
  });
}

[[maybe_unused, gnu::noinline]] void meta(context& c, od::value v, object_meta& m) {
  thread_local string_pairs labels, annotations;
  thread_local std::vector<owner_reference> owners;
  size_t n_labels = 0, n_annotations = 0, n_owners = 0;
  bool seen_labels = false, seen_annotations = false, seen_owners = false;
  fields(c, v, [&](field_name key, od::value value) {
    if (key == "name") {
      set(m.name, value);
      c.name = m.name;
    } else if (key == "namespace") {
      set(m.ns, value);
      c.ns = m.ns;
    } else if (key == "uid") {
      set(m.uid, value);
    } else if (key == "resourceVersion") {
      set(m.resource_version, value);
    } else if (key == "labels") {
      seen_labels = true;
      string_map(c, value, labels, n_labels);
    } else if (key == "annotations") {
      seen_annotations = true;
      string_map(c, value, annotations, n_annotations);
    } else if (key == "deletionTimestamp") {
      set(m.deletion_timestamp, value);
    } else if (key == "creationTimestamp") {
      m.created = timestamp(value);
    } else if (key == "ownerReferences") {
      seen_owners = true;
      each(c, value, [&](od::value item) {
        auto& o = slot(owners, n_owners);
        fields(c, item, [&](field_name k, od::value x) {
          if (k == "apiVersion")
            set(o.api_version, x);
          else if (k == "kind")
            set(o.kind, x);
          else if (k == "name")
            set(o.name, x);
          else if (k == "uid")
            set(o.uid, x);
          else if (k == "controller")
            o.controller = boolean(x);
        });
      });
    }
  });
  if (seen_labels) {
    labels.resize(n_labels);
    m.labels = share(labels);
  }
  if (seen_annotations) {
    annotations.resize(n_annotations);
    m.annotations = share(annotations);
  }
  if (seen_owners) {
    owners.resize(n_owners);
    m.owners = share(owners);
  }
}

[[maybe_unused]] void conditions(context& c, od::value v, std::vector<condition>& out, size_t& n) {
  each(c, v, [&](od::value item) {
    auto& cond = slot(out, n);
    fields(c, item, [&](field_name k, od::value x) {
      if (k == "type")
        set(cond.type, x);
      else if (k == "status")
        set(cond.status, x);
      else if (k == "reason")
        set(cond.reason, x);
      else if (k == "message")
        set(cond.message, x);
    });
  });
}

}  // namespace
}  // namespace headroom::k8s::decode_core
