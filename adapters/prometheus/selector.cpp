#include "adapters/prometheus/selector.hpp"

#include <cctype>

namespace headroom::prom {

namespace {

struct reader {
  std::string_view in;
  size_t i = 0;
  std::string error;

  bool fail(std::string why) {
    if (error.empty())
      error = std::move(why) + " at offset " + std::to_string(i);
    return false;
  }
  void skip_space() {
    while (i < in.size() && std::isspace(static_cast<unsigned char>(in[i])))
      ++i;
  }
  static bool name_start(char c, bool metric) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (metric && c == ':');
  }
  static bool name_char(char c, bool metric) { return name_start(c, metric) || std::isdigit(static_cast<unsigned char>(c)); }
  std::string name(bool metric) {
    size_t start = i;
    if (i < in.size() && name_start(in[i], metric))
      for (++i; i < in.size() && name_char(in[i], metric); ++i) {
      }
    return std::string{in.substr(start, i - start)};
  }
  static void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool hex(size_t digits, uint32_t& out) {
    out = 0;
    for (size_t k = 0; k < digits; ++k, ++i) {
      if (i >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i])))
        return fail("bad escape: expected " + std::to_string(digits) + " hex digits");
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(in[i])));
      out = out * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : c - 'a' + 10);
    }
    return true;
  }
  // A string literal, Go's rules (as PromQL's lexer): escapes in "…" and '…', none in `…`.
  bool string(std::string& out) {
    if (i >= in.size() || (in[i] != '"' && in[i] != '\'' && in[i] != '`'))
      return fail("expected a quoted string");
    const char quote = in[i++];
    for (;;) {
      if (i >= in.size())
        return fail("unterminated string");
      const char c = in[i++];
      if (c == quote)
        return true;
      if (c == '\n' && quote != '`')
        return fail("newline in string");
      if (c != '\\' || quote == '`') {
        out += c;
        continue;
      }
      if (i >= in.size())
        return fail("unterminated string");
      const char e = in[i++];
      uint32_t cp = 0;
      switch (e) {
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '"':
        case '\'':
          if (e != quote)
            return fail("unknown escape \\" + std::string(1, e));
          out += e;
          break;
        case 'x':
          if (!hex(2, cp))
            return false;
          out += static_cast<char>(cp);
          break;
        case 'u':
        case 'U':
          if (!hex(e == 'u' ? 4 : 8, cp))
            return false;
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail("escape is not a Unicode code point");
          utf8(out, cp);
          break;
        default:
          if (e >= '0' && e <= '7') {  // three octal digits
            cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2; ++k, ++i) {
              if (i >= in.size() || in[i] < '0' || in[i] > '7')
                return fail("bad octal escape");
              cp = cp * 8 + static_cast<uint32_t>(in[i] - '0');
            }
            if (cp > 255)
              return fail("octal escape above \\377");
            out += static_cast<char>(cp);
            break;
          }
          return fail("unknown escape \\" + std::string(1, e));
      }
    }
  }
};

}  // namespace

std::optional<std::vector<label_matcher>> parse_selector(std::string_view expr, std::string& error) {
  reader r{expr, 0, {}};
  std::vector<label_matcher> out;
  r.skip_space();
  const auto metric = r.name(true);
  // Keywords that only make sense inside a larger expression: such a "selector" is left to the
  // query API, which knows the whole grammar.
  static constexpr std::string_view keywords[] = {"bool", "by", "group_left", "group_right", "ignoring", "on", "offset",
                                                  "without", "and", "or", "unless", "atan2"};
  for (auto k : keywords)
    if (metric == k) {
      error = "'" + metric + "' is a PromQL keyword, not a metric name";
      return std::nullopt;
    }
  if (!metric.empty())
    out.push_back({label_matcher::op::eq, "__name__", metric});
  r.skip_space();
  if (r.i < expr.size() && expr[r.i] == '{') {
    ++r.i;
    for (;;) {
      r.skip_space();
      if (r.i < expr.size() && expr[r.i] == '}') {
        ++r.i;
        break;
      }
      label_matcher m;
      m.name = r.name(false);
      if (m.name.empty()) {
        r.fail("expected a label name");
        break;
      }
      r.skip_space();
      const auto rest = expr.substr(r.i);
      if (rest.starts_with("=~")) {
        m.type = label_matcher::op::re;
        r.i += 2;
      } else if (rest.starts_with("!~")) {
        m.type = label_matcher::op::nre;
        r.i += 2;
      } else if (rest.starts_with("!=")) {
        m.type = label_matcher::op::neq;
        r.i += 2;
      } else if (rest.starts_with("=")) {
        m.type = label_matcher::op::eq;
        r.i += 1;
      } else {
        r.fail("expected =, !=, =~ or !~ after label " + m.name);
        break;
      }
      r.skip_space();
      if (!r.string(m.value))
        break;
      out.push_back(std::move(m));
      r.skip_space();
      if (r.i < expr.size() && expr[r.i] == ',') {
        ++r.i;
        continue;
      }
      if (r.i < expr.size() && expr[r.i] == '}') {
        ++r.i;
        break;
      }
      r.fail("expected , or }");
      break;
    }
    if (!r.error.empty()) {
      error = "not a plain selector: " + r.error;
      return std::nullopt;
    }
  }
  r.skip_space();
  if (r.i != expr.size()) {
    error = "not a plain selector: unexpected '" + std::string{expr.substr(r.i, 20)} + "' at offset " + std::to_string(r.i);
    return std::nullopt;
  }
  if (out.empty()) {
    error = "not a plain selector: no metric name and no label matcher";
    return std::nullopt;
  }
  return out;
}

}  // namespace headroom::prom
