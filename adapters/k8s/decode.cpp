// The decoder's shared, out-of-line parts: unescaping (rare: only a name with a backslash in it),
// the per-thread buffers, and giving them back. Each kind's decoder is in decode_pod.cpp and
// decode_objects.cpp, over the scanning core in decode_scan.hpp.
#include <simdjson.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "adapters/k8s/decode_documents.hpp"

namespace headroom::k8s::decode_core {

std::optional<std::string> unescape(std::string_view quoted) {
  thread_local od::parser parser;
  simdjson::padded_string copy{quoted};
  auto doc = parser.iterate(copy);
  std::string_view text;
  if (doc.get_string().get(text))
    return std::nullopt;
  return std::string{text};
}

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

}  // namespace headroom::k8s::decode_core

namespace headroom::k8s {

void release_decode_buffers(size_t keep) {
  auto& s = decode_core::thread_scratch();
  bool released = false;
  if (s.parser.capacity() > keep) {
    s.parser = simdjson::ondemand::parser{};
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

}  // namespace headroom::k8s
