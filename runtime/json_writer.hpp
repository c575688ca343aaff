#pragma once
// JSON written through RapidJSON's Writer (Debian rapidjson-dev): the library escapes every string
// and places the commas and brackets, so an object is never assembled by string concatenation.
// A thin layer over it for the shapes headroom writes: fields of any scalar, string lists and
// string maps, and values spelled with std::string_view.
//
//   runtime::json_writer w;
//   w.begin_object().field("kind", "Pod").key("metadata").begin_object().field("name", name).end_object();
//   w.end_object();
//   client.create(kind, ns, w.str());

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom::runtime {

class json_writer {
 public:
  json_writer() : writer_{buffer_} {}
  json_writer(const json_writer&) = delete;
  json_writer& operator=(const json_writer&) = delete;

  json_writer& begin_object() {
    writer_.StartObject();
    return *this;
  }
  json_writer& end_object() {
    writer_.EndObject();
    return *this;
  }
  json_writer& begin_array() {
    writer_.StartArray();
    return *this;
  }
  json_writer& end_array() {
    writer_.EndArray();
    return *this;
  }

  json_writer& key(std::string_view k) {
    writer_.Key(k.data(), size(k));
    return *this;
  }

  json_writer& value(std::string_view s) {
    writer_.String(s.data(), size(s));
    return *this;
  }
  // Without these a string literal would take the bool overload (a standard conversion beats
  // string_view's user-defined one).
  json_writer& value(const char* s) { return value(std::string_view{s}); }
  json_writer& value(const std::string& s) { return value(std::string_view{s}); }
  json_writer& value(bool b) {
    writer_.Bool(b);
    return *this;
  }
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  json_writer& value(T n) {
    if constexpr (std::is_signed_v<T>)
      writer_.Int64(static_cast<int64_t>(n));
    else
      writer_.Uint64(static_cast<uint64_t>(n));
    return *this;
  }
  // The shortest text that reads back as the same double; null for NaN and the infinities, which
  // JSON cannot spell.
  json_writer& value(double d) {
    if (std::isfinite(d))
      writer_.Double(d);
    else
      writer_.Null();
    return *this;
  }
  json_writer& null() {
    writer_.Null();
    return *this;
  }
  // A whole JSON value written elsewhere by a json_writer (an object's spec kept to compare before
  // writing), placed as it is.
  json_writer& raw(std::string_view json) {
    writer_.RawValue(json.data(), json.size(), rapidjson::kObjectType);
    return *this;
  }

  template <class T>
  json_writer& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  // ["a","b"]
  json_writer& strings(const std::vector<std::string>& items) {
    begin_array();
    for (const auto& item : items)
      value(item);
    return end_array();
  }
  // {"k":"v",…} in the pairs' order.
  json_writer& string_map(const std::vector<std::pair<std::string, std::string>>& pairs) {
    begin_object();
    for (const auto& [k, v] : pairs)
      field(k, v);
    return end_object();
  }

  // The text so far; a whole value once every object and array is closed (complete()).
  std::string str() const { return {buffer_.GetString(), buffer_.GetSize()}; }
  bool complete() const { return writer_.IsComplete(); }

 private:
  static rapidjson::SizeType size(std::string_view s) { return static_cast<rapidjson::SizeType>(s.size()); }

  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_;
};

}  // namespace headroom::runtime
