// The transport's small text helpers: URL encoding and priority names.
#include <cctype>
#include <string>
#include <string_view>

#include "adapters/http/transport.hpp"

namespace headroom::http {

std::string url_encode(std::string_view text) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string_view to_string(priority p) {
  switch (p) {
    case priority::urgent: return "urgent";
    case priority::normal: return "normal";
    case priority::background: return "background";
  }
  return "normal";
}

}  // namespace headroom::http
