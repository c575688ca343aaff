#pragma once

// simdjson On-Demand decoders for the objects in objects.hpp, for single objects, lists (with
// their resourceVersion and continue token) and watch events.
//
// Malformed or unexpected JSON yields a decode_error naming the object (kind, namespace/name when
// the metadata was readable) and the field path, never an exception: an informer logs it, counts
// it and goes on with the next object.

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "adapters/k8s/objects.hpp"

namespace headroom::k8s {

struct decode_error {
  std::string message;  // e.g. `Pod ci/runner-7: spec.containers[0].resources.requests.cpu: invalid quantity "x": …`
};

template <class T>
using decoded = std::variant<T, decode_error>;

decoded<pod> decode_pod(std::string_view json);
decoded<node> decode_node(std::string_view json);
decoded<priority_class> decode_priority_class(std::string_view json);
decoded<lease> decode_lease(std::string_view json);
decoded<event> decode_event(std::string_view json);
decoded<unstructured> decode_unstructured(std::string_view json);

template <class T>
struct list_result {
  std::string resource_version;
  std::string continue_token;
  std::vector<T> items;
  std::vector<decode_error> errors;  // items that could not be decoded; the rest are kept
};

template <class T>
struct watch_event {
  enum kind { added, modified, deleted, bookmark, error } type = added;
  T object;                     // for bookmark: only meta.resource_version is set
  int32_t error_code = 0;       // for error events (a Status object): e.g. 410
  std::string error_message;
};

// T is one of the object types above.
template <class T>
decoded<list_result<T>> decode_list(std::string_view json);
// The same, decoding `json` where it is (a list page is not copied): its capacity grows by
// simdjson's padding, its text is unchanged.
template <class T>
decoded<list_result<T>> decode_list(std::string& json);
template <class T>
decoded<watch_event<T>> decode_watch_event(std::string_view json);

// From an EventList (GET …/events): "Reason: message" of the newest Event `component` reported
// (its source.component or reportingComponent), the message cut at 400 bytes; "" when that
// component said nothing there or the text is no EventList (items that fail to decode are skipped).
std::string newest_event_from(std::string_view event_list_json, std::string_view component);

// The calling thread's decode buffers keep the capacity of the largest document decoded (about
// seven times its size: the parser's structural index and string buffer, the input's padded
// copy). A list keeps them from page to page; an informer releases them when its list is done,
// and after a watch event over 256 KiB. Buffers over `keep` bytes are freed. (Releasing them
// inside the decoders cost a third of their speed: it changed what the compiler inlined.)
void release_decode_buffers(size_t keep = 256 * 1024);

}  // namespace headroom::k8s
