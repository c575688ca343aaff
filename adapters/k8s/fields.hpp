#pragma once

// One fact read from an API server's answer: what an actor needs of a create's, get's or list's
// body when it needs no whole object (the uid to own something by, a PriorityClass's value, the
// names in a list, a status field). Actors never parse JSON themselves (scripts/check-layers): they
// call these. Each takes any input: a malformed or hostile body gives the empty answer, never a
// crash or an exception (fuzzed: tests/fuzz/decode_fuzz.cpp, target api_answer).

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::k8s {

// The string at `path` (object keys from the top), or "" when any step is missing or not an
// object, or the value is not a string.
std::string string_at(std::string_view body, std::initializer_list<std::string_view> path);

// The integer at `path`, or nullopt (missing, not an integer, or not a JSON document).
std::optional<int64_t> int_at(std::string_view body, std::initializer_list<std::string_view> path);

// The value at `path` as compact JSON text (an object's spec, to hand to a reader), or nullopt.
std::optional<std::string> json_at(std::string_view body, std::initializer_list<std::string_view> path);

// metadata.uid of an object ("" if it has none).
inline std::string uid_of(std::string_view body) { return string_at(body, {"metadata", "uid"}); }

// metadata.name of each of a list's items, in order; items without one are left out.
std::vector<std::string> item_names(std::string_view body);

// metadata.name of each of a list's items whose label `key` is `value`; with `value` "" the items
// without that label (an empty value counts as none).
std::vector<std::string> item_names_labelled(std::string_view body, std::string_view key, std::string_view value);

// The list's newest item not being deleted (the latest metadata.creationTimestamp; RFC 3339 UTC
// strings order as text), with its spec.patchID (0 when absent): the EphemeralRunnerSet ARC's
// AutoscalingRunnerSet currently scales. nullopt when there is none.
struct newest_item {
  std::string name;
  int64_t patch_id = 0;
};
std::optional<newest_item> newest_live_item(std::string_view body);

// metadata.namespace and metadata.name of each of a list's items that has both; nullopt when the
// body is no list (no `items` array).
struct object_key {
  std::string ns, name;
};
std::optional<std::vector<object_key>> item_keys(std::string_view body);

// status.session of a headroom ScaleSet and the lastTransitionTime of its SessionOpen condition
// ("" each when absent).
struct scale_set_session {
  std::string session;
  std::string open_since;
};
scale_set_session scale_set_session_of(std::string_view body);

}  // namespace headroom::k8s
