#pragma once

// The decoder's documents: one object, a list page, a watch event, each read with the calling
// thread's reused buffers and every failure turned into a decode_error naming where it happened.
// Included by each kind's file after its decode_into, which these templates call; the public
// templates are instantiated there (HEADROOM_DECODE_INSTANTIATE).

#include "adapters/k8s/decode_scan.hpp"

namespace headroom::k8s::decode_core {

// The calling thread's decode buffers: the parser (its structural index and string buffer keep
// the capacity of the largest document it has read, about six times that document's size), the
// input's padded copy, and the input's backslashes.
struct scratch {
  od::parser parser;
  std::string buffer;
  backslash_index backslashes;
};

// The calling thread's: one per thread, whichever file decodes (an inline function's static).
inline scratch& thread_scratch() {
  thread_local scratch s;
  return s;
}

// [[maybe_unused]]: a file that decodes no Pod uses no Pod helper, and each file has its own copy.
namespace {

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
[[maybe_unused]] simdjson::padded_string_view padded(std::string_view json, std::string& buffer) {
  buffer.assign(json);
  const size_t size = buffer.size();
  buffer.resize(size + simdjson::SIMDJSON_PADDING, '\0');
  return simdjson::padded_string_view{buffer.data(), size, buffer.size()};
}

[[maybe_unused]] od::parser& thread_parser() { return thread_scratch().parser; }

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

// The document itself is broken, not a value in it: cut short, unbalanced, unreadable.
[[maybe_unused]] bool document_broken(simdjson::error_code e) {
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
}  // namespace headroom::k8s::decode_core

namespace headroom::k8s {

template <class T>
decoded<list_result<T>> decode_list(std::string_view json) {
  using namespace decode_core;
  return decode_padded_list<T>(padded(json, thread_scratch().buffer));
}

template <class T>
decoded<list_result<T>> decode_list(std::string& json) {
  using namespace decode_core;
  // The padding is made part of the string's own capacity: a list page is not copied. Reading it
  // is defined behaviour, as resize() wrote it.
  const size_t size = json.size();
  json.resize(size + simdjson::SIMDJSON_PADDING, '\0');
  json.resize(size);
  return decode_padded_list<T>(simdjson::padded_string_view{json.data(), size, json.capacity()});
}

template <class T>
decoded<watch_event<T>> decode_watch_event(std::string_view json) {
  using namespace decode_core;
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

#define HEADROOM_DECODE_INSTANTIATE(T)                                 \
  template decoded<list_result<T>> decode_list<T>(std::string_view);  \
  template decoded<list_result<T>> decode_list<T>(std::string&);      \
  template decoded<watch_event<T>> decode_watch_event<T>(std::string_view);

}  // namespace headroom::k8s
