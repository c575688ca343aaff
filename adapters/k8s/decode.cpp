#include "adapters/k8s/decode.hpp"

#include <simdjson.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "adapters/k8s/interning.hpp"
#include "adapters/k8s/quantity.hpp"
#include "adapters/k8s/time.hpp"

namespace headroom::k8s {

namespace {

namespace od = simdjson::ondemand;
using interning::share;

// A JSON string's text, unescaped, or nothing when the escapes are not valid JSON (the parse that
// follows reports those).
std::optional<std::string> unescape(std::string_view quoted) {
  thread_local od::parser parser;
  simdjson::padded_string copy{quoted};
  auto doc = parser.iterate(copy);
  std::string_view text;
  if (doc.get_string().get(text))
    return std::nullopt;
  return std::string{text};
}

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
backslash_index* index_backslashes(simdjson::padded_string_view input, backslash_index& index) {
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
void set(std::string& out, od::value v) {
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
std::optional<double> timestamp(od::value v) {
  if (auto plain = plain_string(v.raw_json_token()))
    return parse_rfc3339(*plain);
  if (take_null(v))
    return std::nullopt;
  return parse_rfc3339(std::string_view{v.get_string()});
}

int64_t int64(od::value v) {
  if (take_null(v))
    return 0;
  return v.get_int64();
}

bool boolean(od::value v) {
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

const char* backslash_index::name(const char* raw) {
  while (passed < at.size() && at[passed] < raw)
    ++passed;
  next = passed < at.size() ? reinterpret_cast<uintptr_t>(at[passed]) : none;
  size_t end = 0;  // the closing quote
  while (raw[end] != '"')
    end += raw[end] == '\\' ? 2 : 1;
  if (next >= reinterpret_cast<uintptr_t>(raw + end))
    return raw;  // the backslash is past this name
  auto text = unescape(std::string_view{raw - 1, end + 2});
  // A name holding a quote or a backslash once unescaped is no name headroom reads; it is kept as
  // the empty name, which matches none (and field_name::text() reads up to the quote).
  if (!text || text->find_first_of("\"\\") != std::string::npos)
    text = std::string{};
  auto& kept = names.emplace_back(std::move(*text));
  kept.push_back('"');
  kept.resize(kept.size() + simdjson::SIMDJSON_PADDING, '\0');
  return kept.data();
}

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

void reset(std::string& s) { s.clear(); }
void reset(std::pair<std::string, std::string>& p) {
  p.first.clear();
  p.second.clear();
}
void reset(owner_reference& o) {
  o.api_version.clear();
  o.kind.clear();
  o.name.clear();
  o.uid.clear();
  o.controller = false;
}
void reset(selector_requirement& r) {
  r.key.clear();
  r.op.clear();
}
void reset(node_selector_term&) {}
void reset(pod_affinity_term& t) { t.topology_key.clear(); }
void reset(toleration& t) {
  t.key.clear();
  t.op.clear();
  t.value.clear();
  t.effect.clear();
  t.toleration_seconds.reset();
}
void reset(topology_spread_constraint& t) {
  t.max_skew = 0;
  t.topology_key.clear();
  t.when_unsatisfiable.clear();
}
void reset(condition& x) {
  x.type.clear();
  x.status.clear();
  x.reason.clear();
  x.message.clear();
}
void reset(container_status& s) {
  s.name.clear();
  s.ready = false;
  s.restart_count = 0;
  s.state.clear();
  s.reason.clear();
}
void reset(taint& t) {
  t.key.clear();
  t.value.clear();
  t.effect.clear();
}
void reset(resource_list& r) {
  r.cpu_milli = r.memory = r.ephemeral_storage = r.pods = 0;
  r.extended.clear();
}
void reset(container_requests& cr) {
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

void string_map(context& c, od::value v, string_pairs& out, size_t& n) {
  entries(c, v, [&](std::string_view key, od::value value) {
    auto& kv = slot(out, n);
    kv.first.assign(key.data(), key.size());
    set(kv.second, value);
  });
}

void string_list(context& c, od::value v, std::vector<std::string>& out, size_t& n) {
  each(c, v, [&](od::value item) { set(slot(out, n), item); });
}

void resources(context& c, od::value v, resource_list& out) {
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

void meta(context& c, od::value v, object_meta& m) {
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

void requirements(context& c, od::value v, std::vector<selector_requirement>& out, size_t& n) {
  each(c, v, [&](od::value item) {
    auto& r = slot(out, n);
    size_t n_values = 0;
    fields(c, item, [&](field_name k, od::value x) {
      if (k == "key")
        set(r.key, x);
      else if (k == "operator")
        set(r.op, x);
      else if (k == "values")
        string_list(c, x, r.values, n_values);
    });
    r.values.resize(n_values);
  });
}

void selector(context& c, od::value v, label_selector& out) {
  size_t n_labels = 0, n_expressions = 0;
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "matchLabels")
      string_map(c, x, out.match_labels, n_labels);
    else if (k == "matchExpressions")
      requirements(c, x, out.match_expressions, n_expressions);
  });
  out.match_labels.resize(n_labels);
  out.match_expressions.resize(n_expressions);
}

void affinity_terms(context& c, od::value v, std::vector<pod_affinity_term>& out, size_t& n) {
  each(c, v, [&](od::value item) {
    auto& t = slot(out, n);
    size_t n_namespaces = 0;
    bool has_selector = false;
    fields(c, item, [&](field_name k, od::value x) {
      if (k == "labelSelector") {
        has_selector = true;
        selector(c, x, t.selector);
      } else if (k == "topologyKey") {
        set(t.topology_key, x);
      } else if (k == "namespaces") {
        string_list(c, x, t.namespaces, n_namespaces);
      }
    });
    if (!has_selector) {
      t.selector.match_labels.clear();
      t.selector.match_expressions.clear();
    }
    t.namespaces.resize(n_namespaces);
  });
}

struct affinity_counts {
  size_t node = 0, pod = 0, anti = 0;
};

void affinity(context& c, od::value v, pod_spec& s, affinity_counts& n) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "nodeAffinity") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 != "requiredDuringSchedulingIgnoredDuringExecution")
          return;
        fields(c, y, [&](field_name k3, od::value z) {
          if (k3 != "nodeSelectorTerms")
            return;
          each(c, z, [&](od::value term) {
            auto& t = slot(s.required_node_affinity, n.node);
            size_t n_expressions = 0, n_fields = 0;
            fields(c, term, [&](field_name k4, od::value w) {
              if (k4 == "matchExpressions")
                requirements(c, w, t.match_expressions, n_expressions);
              else if (k4 == "matchFields")
                requirements(c, w, t.match_fields, n_fields);
            });
            t.match_expressions.resize(n_expressions);
            t.match_fields.resize(n_fields);
          });
        });
      });
    } else if (k == "podAffinity" || k == "podAntiAffinity") {
      const bool anti = k == "podAntiAffinity";
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "requiredDuringSchedulingIgnoredDuringExecution")
          affinity_terms(c, y, anti ? s.required_pod_anti_affinity : s.required_pod_affinity, anti ? n.anti : n.pod);
      });
    }
  });
}

void containers(context& c, od::value v, std::vector<container_requests>& out, size_t& n) {
  each(c, v, [&](od::value item) {
    auto& cr = slot(out, n);
    fields(c, item, [&](field_name k, od::value x) {
      if (k == "resources") {
        fields(c, x, [&](field_name k2, od::value y) {
          if (k2 == "requests")
            resources(c, y, cr.requests);
        });
      } else if (k == "restartPolicy") {
        std::string_view policy = take_null(x) ? std::string_view{} : std::string_view{x.get_string()};
        cr.sidecar = policy == "Always";
      }
    });
  });
}

// The scheduler's arithmetic (k8s.io/component-helpers resource.PodRequests): regular containers
// and sidecars run together; each init container runs with the sidecars started before it; the
// pod needs the larger of the two, plus its overhead.
void effective_requests(const std::vector<container_requests>& regular, size_t n_regular,
                        const std::vector<container_requests>& init, size_t n_init, const resource_list& overhead,
                        resource_list& total) {
  reset(total);
  for (size_t i = 0; i < n_regular; ++i)
    total.add_all(regular[i].requests);
  resource_list sidecars;
  resource_list init_peak;
  for (size_t i = 0; i < n_init; ++i) {
    const auto& cr = init[i];
    if (cr.sidecar) {
      total.add_all(cr.requests);
      sidecars.add_all(cr.requests);
      init_peak.max_with(sidecars);
    } else {
      resource_list stage = cr.requests;
      stage.add_all(sidecars);
      init_peak.max_with(stage);
    }
  }
  total.max_with(init_peak);
  total.add_all(overhead);
}

void conditions(context& c, od::value v, std::vector<condition>& out, size_t& n) {
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

void decode_pod_spec(context& c, od::value v, pod& p) {
  thread_local pod_spec s;
  thread_local std::vector<container_requests> regular, init;
  thread_local resource_list overhead;
  s.priority_class_name.clear();
  s.preemption_policy.clear();
  s.scheduler_name.clear();
  reset(overhead);
  size_t n_gates = 0, n_selector = 0, n_tolerations = 0, n_spread = 0, n_regular = 0, n_init = 0;
  affinity_counts n_affinity;
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "nodeName") {
      set(p.node_name, x);
    } else if (k == "priority") {
      if (!take_null(x))
        p.priority = static_cast<int32_t>(x.get_int64());
    } else if (k == "priorityClassName") {
      set(s.priority_class_name, x);
    } else if (k == "preemptionPolicy") {
      set(s.preemption_policy, x);
    } else if (k == "schedulerName") {
      set(s.scheduler_name, x);
    } else if (k == "schedulingGates") {
      each(c, x, [&](od::value gate) {
        fields(c, gate, [&](field_name k2, od::value y) {
          if (k2 == "name")
            set(slot(s.scheduling_gates, n_gates), y);
        });
      });
    } else if (k == "nodeSelector") {
      string_map(c, x, s.node_selector, n_selector);
    } else if (k == "affinity") {
      affinity(c, x, s, n_affinity);
    } else if (k == "tolerations") {
      each(c, x, [&](od::value item) {
        auto& t = slot(s.tolerations, n_tolerations);
        fields(c, item, [&](field_name k2, od::value y) {
          if (k2 == "key")
            set(t.key, y);
          else if (k2 == "operator")
            set(t.op, y);
          else if (k2 == "value")
            set(t.value, y);
          else if (k2 == "effect")
            set(t.effect, y);
          else if (k2 == "tolerationSeconds" && !take_null(y))
            t.toleration_seconds = y.get_int64();
        });
      });
    } else if (k == "topologySpreadConstraints") {
      each(c, x, [&](od::value item) {
        auto& t = slot(s.topology_spread, n_spread);
        bool has_selector = false;
        fields(c, item, [&](field_name k2, od::value y) {
          if (k2 == "maxSkew") {
            t.max_skew = static_cast<int32_t>(int64(y));
          } else if (k2 == "topologyKey") {
            set(t.topology_key, y);
          } else if (k2 == "whenUnsatisfiable") {
            set(t.when_unsatisfiable, y);
          } else if (k2 == "labelSelector") {
            has_selector = true;
            selector(c, y, t.selector);
          }
        });
        if (!has_selector) {
          t.selector.match_labels.clear();
          t.selector.match_expressions.clear();
        }
      });
    } else if (k == "containers") {
      containers(c, x, regular, n_regular);
    } else if (k == "initContainers") {
      containers(c, x, init, n_init);
    } else if (k == "overhead") {
      resources(c, x, overhead);
    }
  });
  s.scheduling_gates.resize(n_gates);
  s.node_selector.resize(n_selector);
  s.required_node_affinity.resize(n_affinity.node);
  s.required_pod_affinity.resize(n_affinity.pod);
  s.required_pod_anti_affinity.resize(n_affinity.anti);
  s.tolerations.resize(n_tolerations);
  s.topology_spread.resize(n_spread);
  effective_requests(regular, n_regular, init, n_init, overhead, s.requests);
  p.spec = share(s);
}

void pod_status(context& c, od::value v, pod& p) {
  thread_local std::vector<condition> conds;
  thread_local std::vector<container_status> statuses;
  size_t n_conditions = 0, n_statuses = 0;
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "phase") {
      set(p.phase, x);
    } else if (k == "nominatedNodeName") {
      set(p.nominated_node_name, x);
    } else if (k == "conditions") {
      conditions(c, x, conds, n_conditions);
    } else if (k == "containerStatuses") {
      each(c, x, [&](od::value item) {
        auto& s = slot(statuses, n_statuses);
        fields(c, item, [&](field_name k2, od::value y) {
          if (k2 == "name") {
            set(s.name, y);
          } else if (k2 == "ready") {
            s.ready = boolean(y);
          } else if (k2 == "restartCount") {
            s.restart_count = static_cast<int32_t>(int64(y));
          } else if (k2 == "state") {
            entries(c, y, [&](std::string_view state, od::value z) {
              s.state.assign(state.data(), state.size());
              fields(c, z, [&](field_name k3, od::value w) {
                if (k3 == "reason")
                  set(s.reason, w);
              });
            });
          }
        });
      });
    }
  });
  conds.resize(n_conditions);
  statuses.resize(n_statuses);
  p.conditions = share(conds);
  p.container_statuses = share(statuses);
}

// -- one function per kind: fills T from an object value --------------------------------------------

void decode_into(context& c, od::value v, pod& p) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata")
      meta(c, x, p.meta);
    else if (k == "spec")
      decode_pod_spec(c, x, p);
    else if (k == "status")
      pod_status(c, x, p);
  });
}

void decode_into(context& c, od::value v, node& n) {
  size_t n_taints = 0, n_conditions = 0;
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata") {
      meta(c, x, n.meta);
    } else if (k == "spec") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "unschedulable") {
          n.unschedulable = boolean(y);
        } else if (k2 == "providerID") {
          set(n.provider_id, y);
        } else if (k2 == "taints") {
          each(c, y, [&](od::value item) {
            auto& t = slot(n.taints, n_taints);
            fields(c, item, [&](field_name k3, od::value z) {
              if (k3 == "key")
                set(t.key, z);
              else if (k3 == "value")
                set(t.value, z);
              else if (k3 == "effect")
                set(t.effect, z);
            });
          });
        }
      });
    } else if (k == "status") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "capacity")
          resources(c, y, n.capacity);
        else if (k2 == "allocatable")
          resources(c, y, n.allocatable);
        else if (k2 == "conditions")
          conditions(c, y, n.conditions, n_conditions);
      });
    }
  });
  n.taints.resize(n_taints);
  n.conditions.resize(n_conditions);
}

void decode_into(context& c, od::value v, priority_class& pc) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata")
      meta(c, x, pc.meta);
    else if (k == "value")
      pc.value = static_cast<int32_t>(int64(x));
    else if (k == "preemptionPolicy")
      set(pc.preemption_policy, x);
    else if (k == "globalDefault")
      pc.global_default = boolean(x);
  });
}

void decode_into(context& c, od::value v, lease& l) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata") {
      meta(c, x, l.meta);
    } else if (k == "spec") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "holderIdentity")
          set(l.holder_identity, y);
        else if (k2 == "leaseDurationSeconds" && !take_null(y))
          l.lease_duration_seconds = static_cast<int32_t>(y.get_int64());
        else if (k2 == "acquireTime")
          set(l.acquire_time, y);
        else if (k2 == "renewTime")
          set(l.renew_time, y);
        else if (k2 == "leaseTransitions")
          l.lease_transitions = static_cast<int32_t>(int64(y));
      });
    }
  });
}

void decode_into(context& c, od::value v, event& e) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata") {
      meta(c, x, e.meta);
    } else if (k == "involvedObject") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "kind")
          set(e.involved_kind, y);
        else if (k2 == "namespace")
          set(e.involved_namespace, y);
        else if (k2 == "name")
          set(e.involved_name, y);
        else if (k2 == "uid")
          set(e.involved_uid, y);
      });
    } else if (k == "reason") {
      set(e.reason, x);
    } else if (k == "message") {
      set(e.message, x);
    } else if (k == "type") {
      set(e.type, x);
    } else if (k == "count") {
      e.count = static_cast<int32_t>(int64(x));
    } else if (k == "source") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "component")
          set(e.source_component, y);
      });
    } else if (k == "reportingComponent") {
      set(e.reporting_component, x);
    } else if (k == "lastTimestamp" || k == "eventTime") {
      e.last_seen = std::max(e.last_seen, timestamp(x).value_or(0));
    } else if (k == "series") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "lastObservedTime")
          e.last_seen = std::max(e.last_seen, timestamp(y).value_or(0));
      });
    }
  });
}

void decode_into(context& c, od::value v, unstructured& u) {
  if (v.type() != od::json_type::object)
    throw field_failure{"expected an object"};
  od::object obj = v.get_object();
  u.raw = std::string{std::string_view{obj.raw_json()}};
  // Second pass over the kept copy for the metadata: raw_json consumed the value.
  simdjson::ondemand::parser inner;
  simdjson::padded_string copy{u.raw};
  backslash_index copy_backslashes;  // the names below are in the copy
  c.backslashes = index_backslashes(copy, copy_backslashes);
  auto doc = inner.iterate(copy);
  for (auto field : doc.get_object()) {
    std::string_view k = field.unescaped_key();
    od::value x = field.value();
    try {
      if (k == "metadata")
        meta(c, x, u.meta);
      else if (k == "apiVersion")
        set(u.api_version, x);
      else if (k == "kind")
        set(u.kind, x);
    } catch (...) {
      c.unwound.emplace_back(std::string{k}, -1);  // copied now: `k` points into `inner`
      throw;
    }
  }
}

template <class T> constexpr const char* kind_name = "Object";
template <class T> constexpr const char* list_kind_name = "ObjectList";
template <class T> constexpr const char* watch_kind_name = "watch event of Object";
template <> constexpr const char* list_kind_name<pod> = "PodList";
template <> constexpr const char* list_kind_name<node> = "NodeList";
template <> constexpr const char* list_kind_name<priority_class> = "PriorityClassList";
template <> constexpr const char* list_kind_name<lease> = "LeaseList";
template <> constexpr const char* list_kind_name<event> = "EventList";
template <> constexpr const char* watch_kind_name<pod> = "watch event of Pod";
template <> constexpr const char* watch_kind_name<node> = "watch event of Node";
template <> constexpr const char* watch_kind_name<priority_class> = "watch event of PriorityClass";
template <> constexpr const char* watch_kind_name<lease> = "watch event of Lease";
template <> constexpr const char* watch_kind_name<event> = "watch event of Event";
template <> constexpr const char* kind_name<pod> = "Pod";
template <> constexpr const char* kind_name<node> = "Node";
template <> constexpr const char* kind_name<priority_class> = "PriorityClass";
template <> constexpr const char* kind_name<lease> = "Lease";
template <> constexpr const char* kind_name<event> = "Event";
template <> constexpr const char* kind_name<unstructured> = "Object";

// Runs `body` and turns any failure into a decode_error that names where it happened.
template <class Body>
std::optional<decode_error> guarded(context& c, Body&& body) {
  try {
    body();
    return std::nullopt;
  } catch (const field_failure& f) {
    return decode_error{c.where() + ": " + f.message};
  } catch (const simdjson::simdjson_error& e) {
    return decode_error{c.where() + ": " + simdjson::error_message(e.error())};
  } catch (const std::exception& e) {
    return decode_error{c.where() + ": " + e.what()};
  }
}

// Padded copy of the input: simdjson reads up to SIMDJSON_PADDING bytes past the end.
simdjson::padded_string_view padded(std::string_view json, std::string& buffer) {
  buffer.assign(json);
  const size_t size = buffer.size();
  buffer.resize(size + simdjson::SIMDJSON_PADDING, '\0');
  return simdjson::padded_string_view{buffer.data(), size, buffer.size()};
}

// The calling thread's decode buffers: the parser (its structural index and string buffer keep
// the capacity of the largest document it has read, about six times that document's size), the
// input's padded copy, and the input's backslashes.
struct scratch {
  od::parser parser;
  std::string buffer;
  backslash_index backslashes;
};

scratch& thread_scratch() {
  thread_local scratch s;
  return s;
}

od::parser& thread_parser() { return thread_scratch().parser; }

template <class T>
decoded<T> decode_one(std::string_view json) {
  auto& buffer = thread_scratch().buffer;
  context c{kind_name<T>, {}, {}, {}};
  T out;
  auto err = guarded(c, [&] {
    auto& backslashes = thread_scratch().backslashes;
    const auto input = padded(json, buffer);
    c.backslashes = index_backslashes(input, backslashes);
    auto doc = thread_parser().iterate(input);
    od::value root = doc.get_value();
    decode_into(c, root, out);
  });
  if (err)
    return *err;
  return out;
}

}  // namespace

void release_decode_buffers(size_t keep) {
  auto& s = thread_scratch();
  bool released = false;
  if (s.parser.capacity() > keep) {
    s.parser = od::parser{};
    released = true;
  }
  if (s.buffer.capacity() > keep) {
    std::string{}.swap(s.buffer);
    released = true;
  }
  if (s.backslashes.at.capacity() * sizeof(const char*) > keep)
    decltype(s.backslashes.at){}.swap(s.backslashes.at);
#ifdef __GLIBC__
  // glibc keeps freed memory in its arenas (this thread's is not the main one): give the pages
  // back, or the process's RSS would not fall. A few milliseconds, once per list.
  if (released)
    malloc_trim(0);
#else
  (void)released;
#endif
}

decoded<pod> decode_pod(std::string_view json) { return decode_one<pod>(json); }
decoded<node> decode_node(std::string_view json) { return decode_one<node>(json); }
decoded<priority_class> decode_priority_class(std::string_view json) { return decode_one<priority_class>(json); }
decoded<lease> decode_lease(std::string_view json) { return decode_one<lease>(json); }
decoded<event> decode_event(std::string_view json) { return decode_one<event>(json); }
decoded<unstructured> decode_unstructured(std::string_view json) { return decode_one<unstructured>(json); }

namespace {

// The document itself is broken, not a value in it: cut short, unbalanced, unreadable.
bool document_broken(simdjson::error_code e) {
  switch (e) {
    case simdjson::TAPE_ERROR:
    case simdjson::DEPTH_ERROR:
    case simdjson::UNCLOSED_STRING:
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
    case simdjson::OUT_OF_BOUNDS:
    case simdjson::TRAILING_CONTENT:
    case simdjson::EMPTY:
    case simdjson::CAPACITY:
    case simdjson::MEMALLOC:
    case simdjson::UTF8_ERROR:
      return true;
    default:
      return false;
  }
}

// Thrown through an item's guard (it is no std::exception) to the list's.
struct list_broken {
  std::string message;
};

template <class T>
decoded<list_result<T>> decode_padded_list(simdjson::padded_string_view input) {
  list_result<T> out;
  context list_ctx{list_kind_name<T>, {}, {}, {}};
  std::optional<decode_error> err;
  try {
    err = guarded(list_ctx, [&] {
      auto& backslashes = thread_scratch().backslashes;
      list_ctx.backslashes = index_backslashes(input, backslashes);
      auto doc = thread_parser().iterate(input);
      fields(list_ctx, doc.get_value(), [&](field_name k, od::value x) {
        if (k == "metadata") {
          fields(list_ctx, x, [&](field_name k2, od::value y) {
            if (k2 == "resourceVersion")
              set(out.resource_version, y);
            else if (k2 == "continue")
              set(out.continue_token, y);
          });
        } else if (k == "items") {
          int64_t i = 0;
          for (auto element : x.get_array()) {
            context c{kind_name<T>, {}, {}, {}};
            c.backslashes = list_ctx.backslashes;
            T item;
            // A bad item is recorded and skipped; the iteration continues with the next one, so
            // one malformed object never hides the rest of the list. A broken document is not a
            // bad item: a body cut short (or unbalanced) ends the iteration early, and accepting
            // what came before it would make a partial list look whole; the list is undecodable.
            od::value item_value = element.value();
            auto item_err = guarded(c, [&] {
              try {
                decode_into(c, item_value, item);
              } catch (const simdjson::simdjson_error& e) {
                if (document_broken(e.error()))
                  throw list_broken{"items[" + std::to_string(i) + "]: " + simdjson::error_message(e.error())};
                throw;
              }
            });
            if (item_err)
              out.errors.push_back(decode_error{"items[" + std::to_string(i) + "]: " + item_err->message});
            else
              out.items.push_back(std::move(item));
            ++i;
          }
        }
      });
    });
  } catch (const list_broken& b) {
    err = decode_error{std::string{list_kind_name<T>} + ": " + b.message};
  }
  if (err)
    return *err;
  return out;
}

}  // namespace

template <class T>
decoded<list_result<T>> decode_list(std::string_view json) {
  return decode_padded_list<T>(padded(json, thread_scratch().buffer));
}

template <class T>
decoded<list_result<T>> decode_list(std::string& json) {
  // The padding is made part of the string's own capacity: a list page is not copied. Reading it
  // is defined behaviour, as resize() wrote it.
  const size_t size = json.size();
  json.resize(size + simdjson::SIMDJSON_PADDING, '\0');
  json.resize(size);
  return decode_padded_list<T>(simdjson::padded_string_view{json.data(), size, json.capacity()});
}

template <class T>
decoded<watch_event<T>> decode_watch_event(std::string_view json) {
  auto& buffer = thread_scratch().buffer;
  watch_event<T> out;
  context c{watch_kind_name<T>, {}, {}, {}};
  std::string type;
  auto err = guarded(c, [&] {
    auto& backslashes = thread_scratch().backslashes;
    const auto input = padded(json, buffer);
    c.backslashes = index_backslashes(input, backslashes);
    auto doc = thread_parser().iterate(input);
    fields(c, doc.get_value(), [&](field_name k, od::value x) {
      if (k == "type") {
        set(type, x);
      } else if (k == "object") {
        if (type == "ERROR") {  // a metav1.Status: {code, message, reason}
          fields(c, x, [&](field_name k2, od::value y) {
            if (k2 == "code")
              out.error_code = static_cast<int32_t>(int64(y));
            else if (k2 == "message")
              set(out.error_message, y);
          });
        } else {
          c.kind = kind_name<T>;
          decode_into(c, x, out.object);
        }
      }
    });
  });
  if (err)
    return *err;
  if (type == "ADDED")
    out.type = watch_event<T>::added;
  else if (type == "MODIFIED")
    out.type = watch_event<T>::modified;
  else if (type == "DELETED")
    out.type = watch_event<T>::deleted;
  else if (type == "BOOKMARK")
    out.type = watch_event<T>::bookmark;
  else if (type == "ERROR")
    out.type = watch_event<T>::error;
  else
    return decode_error{"watch event: unknown type \"" + type.substr(0, 32) + "\""};
  return out;
}

std::string newest_event_from(std::string_view event_list_json, std::string_view component) {
  constexpr size_t max_message = 400;
  auto list = decode_list<event>(event_list_json);
  const auto* l = std::get_if<list_result<event>>(&list);
  if (l == nullptr)
    return {};
  const event* newest = nullptr;
  for (const auto& e : l->items)
    if ((e.source_component == component || e.reporting_component == component) && (newest == nullptr || e.last_seen >= newest->last_seen))
      newest = &e;
  if (newest == nullptr)
    return {};
  std::string out = newest->reason.empty() ? std::string{"said"} : newest->reason;
  if (!newest->message.empty())
    out += ": " + newest->message.substr(0, max_message) + (newest->message.size() > max_message ? "…" : "");
  return out;
}

#define HEADROOM_DECODE_INSTANTIATE(T)                                 \
  template decoded<list_result<T>> decode_list<T>(std::string_view);  \
  template decoded<list_result<T>> decode_list<T>(std::string&);      \
  template decoded<watch_event<T>> decode_watch_event<T>(std::string_view);
HEADROOM_DECODE_INSTANTIATE(pod)
HEADROOM_DECODE_INSTANTIATE(node)
HEADROOM_DECODE_INSTANTIATE(priority_class)
HEADROOM_DECODE_INSTANTIATE(lease)
HEADROOM_DECODE_INSTANTIATE(event)
HEADROOM_DECODE_INSTANTIATE(unstructured)
#undef HEADROOM_DECODE_INSTANTIATE

}  // namespace headroom::k8s
