#pragma once
// JSON written through RapidJSON's Writer (Debian rapidjson-dev): the library escapes every string
// and places the commas and brackets, so an object is never assembled by string concatenation.
// A thin layer over it for the shapes headroom writes: fields of any scalar, string lists and
// string maps, and values spelled with std::string_view.
//
//   runtime::json_writer w;
//   w.begin_object().field("kind", "Pod").key("metadata").begin_object().field("name", name).end_object();
//   w.end_object();
//   client.create(kind, ns, w.take());

#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstring>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom::runtime {

// RapidJSON's output stream for json_writer: the text goes straight into the std::string that
// str() hands over (no copy at the end), through a raw cursor (RapidJSON reserves room before it
// writes a value, then puts characters unchecked).
class json_output {
 public:
  using Ch = char;
  json_output() { grow(1024); }  // most objects headroom writes fit in 1 KiB

  void Put(char c) {
    if (cur_ == end_)
      grow(1);
    *cur_++ = c;
  }
  void Flush() {}
  void reserve(size_t n) {
    if (static_cast<size_t>(end_ - cur_) < n)
      grow(n);
  }
  void put_unchecked(char c) { *cur_++ = c; }
  void put_all(std::string_view s) {  // after reserve()
    std::memcpy(cur_, s.data(), s.size());
    cur_ += s.size();
  }

  std::string_view view() const { return {text_.data(), static_cast<size_t>(cur_ - text_.data())}; }
  std::string take() {
    text_.resize(static_cast<size_t>(cur_ - text_.data()));
    std::string out = std::move(text_);
    text_.clear();
    cur_ = end_ = text_.data();
    return out;
  }

 private:
  void grow(size_t n) {
    const size_t used = static_cast<size_t>(cur_ - text_.data());
    text_.resize(std::max(text_.size() * 2, used + n));
    cur_ = text_.data() + used;
    end_ = text_.data() + text_.size();
  }

  std::string text_;  // sized to its room; the text is [data, cur_)
  char* cur_ = text_.data();
  char* end_ = text_.data();
};

// Found by argument-dependent lookup from RapidJSON's Writer, in place of its generic ones.
inline void PutReserve(json_output& o, size_t n) { o.reserve(n); }
inline void PutUnsafe(json_output& o, char c) { o.put_unchecked(c); }

// RapidJSON's Writer with one fast path: a string that needs no escape (no quote, backslash or
// control byte: nearly every name and value headroom writes) is copied in one go between its
// quotes. The Writer's own state machine still places it (commas, nesting); a string that needs
// an escape goes through the Writer's escaping as before.
class json_text_writer : public rapidjson::Writer<json_output> {
 public:
  using rapidjson::Writer<json_output>::Writer;

  bool string(std::string_view s) {
    if (needs_escape(s))
      return String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
    Prefix(rapidjson::kStringType);
    os_->reserve(s.size() + 2);
    os_->put_unchecked('"');
    os_->put_all(s);
    os_->put_unchecked('"');
    return EndValue(true);
  }

  // Eight bytes at a time (SWAR): a byte below 0x20, a quote or a backslash.
  static bool needs_escape(std::string_view s) {
    constexpr uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    constexpr uint64_t quotes = ones * '"', backslashes = ones * '\\';
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      const uint64_t q = w ^ quotes, b = w ^ backslashes;
      // below 0x20: (w - 0x20…) borrows into the high bit of a byte that was < 0x20 and had its high
      // bit clear; a zero byte after the xor marks a quote or a backslash.
      if ((((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs)
        return true;
    }
    for (; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x20 || c == '"' || c == '\\')
        return true;
    }
    return false;
  }
};

class json_writer {
 public:
  json_writer() : writer_{out_} {}
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
    writer_.string(k);  // a key is written as a string, in the key's place
    return *this;
  }

  json_writer& value(std::string_view s) {
    writer_.string(s);
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

  // The text, handed over (no copy): a whole value once every object and array is closed
  // (complete()). The writer is spent afterwards.
  std::string take() { return out_.take(); }
  // The text so far, kept.
  std::string_view view() const { return out_.view(); }
  bool complete() const { return writer_.IsComplete(); }

 private:
  static rapidjson::SizeType size(std::string_view s) { return static_cast<rapidjson::SizeType>(s.size()); }

  json_output out_;
  json_text_writer writer_;
};

}  // namespace headroom::runtime
