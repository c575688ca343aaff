// Parsing the Go text/template subset (runtime/text_template.hpp): a scanner cuts the text into
// text and actions (trim markers applied, comments dropped, each action's tokens lexed), and a
// recursive parser builds the tree, checking functions and variables as Go's parser does.

#include <algorithm>
#include <cctype>

#include "runtime/text_template_impl.hpp"

namespace headroom::runtime::text_template {

namespace {

struct parse_failure {
  int line;
  std::string message;
};

enum class tok { dot, field, variable, string, number, ident, pipe, lparen, rparen, comma, declare, assign };

struct token {
  tok t;
  std::string text;  // as written (a string's value once unquoted is in `value`)
  std::string value;
  int line = 0, col = 0;  // where it starts: Go's error position (a 0-based byte in its line)
};

struct item {
  bool action = false;
  bool comment = false;
  std::string text;  // a text item's text
  std::vector<token> toks;
  int line = 0, col = 0;
  std::string source;  // an action's text between its delimiters
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class scanner {
 public:
  explicit scanner(std::string_view text) : s_(text) {}

  std::vector<item> run() {
    std::vector<item> out;
    size_t at = 0;
    bool trim_next = false;
    while (at <= s_.size()) {
      const size_t open = s_.find("{{", at);
      std::string text{s_.substr(at, open == std::string_view::npos ? std::string_view::npos : open - at)};
      if (trim_next)
        text.erase(0, std::find_if_not(text.begin(), text.end(), is_space) - text.begin());
      if (open == std::string_view::npos) {
        push_text(out, std::move(text));
        break;
      }
      size_t p = open + 2;
      if (p + 1 < s_.size() && s_[p] == '-' && is_space(s_[p + 1])) {  // {{- trims the text before
        while (!text.empty() && is_space(text.back()))
          text.pop_back();
        p += 2;
      }
      push_text(out, std::move(text));
      item a{true, false, {}, {}, line_of(open), col_of(open), {}};
      at = lex_action(a, p, trim_next);
      if (!a.comment)
        out.push_back(std::move(a));
    }
    return out;
  }

 private:
  static void push_text(std::vector<item>& out, std::string text) {
    if (!text.empty())
      out.push_back(item{false, false, std::move(text), {}, 0, 0, {}});
  }
  int line_of(size_t pos) const { return 1 + static_cast<int>(std::count(s_.begin(), s_.begin() + pos, '\n')); }
  int col_of(size_t pos) const {
    const auto nl = s_.rfind('\n', pos == 0 ? 0 : pos - 1);
    return static_cast<int>(nl == std::string_view::npos || pos == 0 ? pos : pos - nl - 1);
  }
  [[noreturn]] void fail(size_t pos, std::string message) const { throw parse_failure{line_of(pos), std::move(message)}; }

  // The end of an action at `p`: "}}" or " -}}" (which trims the text after). 0 when not there.
  size_t close_at(size_t p, bool& trim) const {
    if (s_.compare(p, 2, "}}") == 0)
      return trim = false, p + 2;
    if (p > 0 && is_space(s_[p - 1]) && s_.compare(p, 3, "-}}") == 0)
      return trim = true, p + 3;
    return 0;
  }

  // Lexes one action from `p` (after "{{" and a trim marker); returns where the text resumes.
  size_t lex_action(item& a, size_t p, bool& trim_after) {
    const size_t start = p;
    if (s_.compare(p, 2, "/*") == 0) {  // a comment: nothing but it between the delimiters
      a.comment = true;
      const auto end = s_.find("*/", p + 2);
      if (end == std::string_view::npos)
        fail(p, "unclosed comment");
      size_t q = end + 2;
      while (q < s_.size() && is_space(s_[q]) && s_.compare(q, 3, "-}}") != 0)
        ++q;
      if (const size_t next = close_at(q, trim_after))
        return next;
      fail(p, "comment ends before closing delimiter");
    }
    for (;;) {
      while (p < s_.size() && is_space(s_[p]))
        ++p;
      if (p >= s_.size())
        fail(start, "unclosed action");
      if (const size_t next = close_at(p, trim_after)) {
        a.source = std::string{s_.substr(start, p - start)};
        return next;
      }
      p = lex_token(a, p);
    }
  }

  size_t lex_token(item& a, size_t p) {
    const size_t before = a.toks.size();
    const size_t next = lex_one(a, p);
    for (size_t k = before; k < a.toks.size(); ++k)
      a.toks[k].line = line_of(p), a.toks[k].col = col_of(p);
    return next;
  }

  size_t lex_one(item& a, size_t p) {
    const char c = s_[p];
    auto simple = [&](tok t, size_t n) {
      a.toks.push_back({t, std::string{s_.substr(p, n)}, {}});
      return p + n;
    };
    switch (c) {
      case '|': return simple(tok::pipe, 1);
      case '(': return simple(tok::lparen, 1);
      case ')': return simple(tok::rparen, 1);
      case ',': return simple(tok::comma, 1);
      case '=': return simple(tok::assign, 1);
      case ':':
        if (s_.compare(p, 2, ":=") == 0)
          return simple(tok::declare, 2);
        fail(p, "expected :=");
      case '"': return lex_quoted(a, p);
      case '`': {
        const auto end = s_.find('`', p + 1);
        if (end == std::string_view::npos)
          fail(p, "unterminated raw quoted string");
        a.toks.push_back({tok::string, std::string{s_.substr(p, end + 1 - p)}, std::string{s_.substr(p + 1, end - p - 1)}});
        return end + 1;
      }
      default: break;
    }
    if (c == '.' || c == '$') {
      size_t q = p + 1;
      while (q < s_.size() && (is_ident(s_[q]) || (s_[q] == '.' && q + 1 < s_.size() && is_ident(s_[q + 1]))))
        ++q;
      const tok t = c == '$' ? tok::variable : (q == p + 1 ? tok::dot : tok::field);
      return simple(t, q - p);
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || ((c == '-' || c == '+') && p + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p + 1])))) {
      size_t q = p + 1;
      while (q < s_.size() && (is_ident(s_[q]) || s_[q] == '.'))
        ++q;
      const std::string text{s_.substr(p, q - p)};
      const bool digits = std::all_of(text.begin() + 1, text.end(), [](char d) { return std::isdigit(static_cast<unsigned char>(d)); });
      if (!digits || text.size() > 19)
        fail(p, "bad number syntax: \"" + text + "\" (this renderer takes decimal integers)");
      return simple(tok::number, q - p);
    }
    if (is_ident(c)) {
      size_t q = p;
      while (q < s_.size() && is_ident(s_[q]))
        ++q;
      return simple(tok::ident, q - p);
    }
    fail(p, std::string{"unexpected \""} + c + "\" in command");
  }

  size_t lex_quoted(item& a, size_t p) {
    std::string v;
    size_t q = p + 1;
    for (; q < s_.size() && s_[q] != '"'; ++q) {
      if (s_[q] == '\n')
        fail(p, "unterminated quoted string");
      if (s_[q] != '\\') {
        v += s_[q];
        continue;
      }
      if (++q >= s_.size())
        break;
      switch (s_[q]) {
        case 'n': v += '\n'; break;
        case 't': v += '\t'; break;
        case 'r': v += '\r'; break;
        case '\\': v += '\\'; break;
        case '"': v += '"'; break;
        case '\'': v += '\''; break;
        default: fail(q, std::string{"unknown escape sequence \\"} + s_[q]);
      }
    }
    if (q >= s_.size())
      fail(p, "unterminated quoted string");
    a.toks.push_back({tok::string, std::string{s_.substr(p, q + 1 - p)}, std::move(v)});
    return q + 1;
  }

  std::string_view s_;
};

std::vector<std::string> split_fields(std::string_view chain) {  // ".A.B" → {A, B}
  std::vector<std::string> out;
  size_t at = 0;
  while (at < chain.size()) {
    const auto dot = chain.find('.', at + 1);
    out.emplace_back(chain.substr(at + 1, dot == std::string_view::npos ? std::string_view::npos : dot - at - 1));
    at = dot == std::string_view::npos ? chain.size() : dot;
  }
  return out;
}

// The tree builder: items in, nodes out, with the variables in scope.
class parser {
 public:
  explicit parser(std::vector<item> items) : items_(std::move(items)) {}

  std::vector<node> run() {
    std::string end;
    auto nodes = list(end);
    if (!end.empty())
      throw parse_failure{line_, "unexpected {{" + end + "}}"};
    return nodes;
  }

 private:
  // Nodes up to {{ end }} or {{ else … }} (named in `end`) or the template's end ("").
  std::vector<node> list(std::string& end) {
    std::vector<node> out;
    while (at_ < items_.size()) {
      item& it = items_[at_++];
      if (!it.action) {
        out.push_back(node{node_kind::text, std::move(it.text), {}, {}, {}});
        continue;
      }
      line_ = it.line;
      if (it.toks.empty())
        throw parse_failure{it.line, "missing value for command"};
      const std::string first = it.toks[0].t == tok::ident ? it.toks[0].text : "";
      if (first == "end" || first == "else") {
        end = first;
        else_rest_.assign(it.toks.begin() + 1, it.toks.end());
        else_item_ = &it;
        if (first == "end" && it.toks.size() > 1)
          throw parse_failure{it.line, "unexpected " + it.toks[1].text + " in end"};
        return out;
      }
      out.push_back(action(it, first));
    }
    end.clear();
    return out;
  }

  node action(const item& it, const std::string& first) {
    if (first == "if" || first == "range" || first == "with")
      return control(it, first, {it.toks.begin() + 1, it.toks.end()});
    if (first == "define" || first == "template" || first == "block" || first == "break" || first == "continue")
      throw parse_failure{it.line, "{{" + first + "}} is not supported by this renderer"};
    node n{node_kind::action, {}, pipe(it, {it.toks.begin(), it.toks.end()}, false), {}, {}};
    for (auto& d : n.pipe.decl)
      vars_.push_back(d);
    return n;
  }

  node control(const item& it, const std::string& kind, std::vector<token> toks) {
    if (toks.empty())
      throw parse_failure{it.line, "missing value for " + kind};
    const depth_guard guard{depth_, it.line};
    const size_t scope = vars_.size();
    node n{kind == "if" ? node_kind::if_ : kind == "range" ? node_kind::range : node_kind::with, {}, pipe(it, toks, kind == "range"), {}, {}};
    for (auto& d : n.pipe.decl)
      vars_.push_back(d);
    std::string end;
    n.body = list(end);
    vars_.resize(scope);
    if (end.empty())
      throw parse_failure{it.line, "unexpected EOF: {{" + kind + "}} has no {{end}}"};
    if (end == "else") {
      auto rest = std::move(else_rest_);
      const item& at = *else_item_;
      if (!rest.empty() && rest[0].t == tok::ident && (rest[0].text == "if" || rest[0].text == "with") && kind != "range") {
        const std::string chained = rest[0].text;  // {{ else if … }}: an if inside the else, sharing its {{end}}
        n.otherwise.push_back(control(at, chained, {rest.begin() + 1, rest.end()}));
        return n;
      }
      if (!rest.empty())
        throw parse_failure{at.line, "unexpected " + rest[0].text + " in else"};
      n.otherwise = list(end);
      vars_.resize(scope);
      if (end != "end")
        throw parse_failure{at.line, end.empty() ? "unexpected EOF: {{else}} has no {{end}}" : "unexpected {{else}}"};
    }
    return n;
  }

  pipeline pipe(const item& it, const std::vector<token>& toks, bool two_vars) {
    pipeline p;
    p.line = it.line;
    p.col = it.col;
    size_t i = 0;
    if (toks.size() >= 2 && toks[0].t == tok::variable && (toks[1].t == tok::declare || toks[1].t == tok::comma)) {
      p.decl.push_back(toks[0].text);
      i = 2;
      if (toks[1].t == tok::comma) {
        if (!two_vars || toks.size() < 4 || toks[2].t != tok::variable || toks[3].t != tok::declare)
          throw parse_failure{it.line, "too many declarations in command"};
        p.decl.push_back(toks[2].text);
        i = 4;
      }
    } else if (toks.size() >= 2 && toks[0].t == tok::variable && toks[1].t == tok::assign) {
      throw parse_failure{it.line, "assigning to a variable ({{" + toks[0].text + " = …}}) is not supported by this renderer"};
    }
    const size_t end = toks.size();
    commands(it, toks, i, end, p);
    return p;
  }

  // Commands joined by `|` in toks[i, end), into p.
  void commands(const item& it, const std::vector<token>& toks, size_t i, size_t end, pipeline& p) {
    command c;
    for (; i < end; ++i) {
      const token& t = toks[i];
      if (t.t == tok::pipe) {
        finish(it, c, p);
        c = command{};
        continue;
      }
      if (t.t == tok::lparen) {
        const depth_guard guard{depth_, it.line};
        const size_t close = matching(it, toks, i, end);
        auto sub = std::make_shared<pipeline>();
        sub->line = it.line;
        sub->col = it.col;
        commands(it, toks, i + 1, close, *sub);
        operand o{operand::kind::sub, {}, {}, {}, sub, "(" + text_of(toks, i + 1, close) + ")", t.line, t.col};
        i = close;
        if (i + 1 < end && toks[i + 1].t == tok::field) {
          o.fields = split_fields(toks[++i].text);
          o.text += toks[i].text;
        }
        add(c, std::move(o));
        continue;
      }
      add(c, operand_of(it, t));
    }
    finish(it, c, p);
  }

  static std::string text_of(const std::vector<token>& toks, size_t from, size_t to) {
    std::string s;
    for (size_t k = from; k < to; ++k)
      s += (k > from ? " " : "") + toks[k].text;
    return s;
  }

  static void add(command& c, operand o) {
    c.text += (c.text.empty() ? "" : " ") + o.text;
    c.args.push_back(std::move(o));
  }

  size_t matching(const item& it, const std::vector<token>& toks, size_t open, size_t end) const {
    int depth = 0;
    for (size_t k = open; k < end; ++k) {
      depth += toks[k].t == tok::lparen ? 1 : toks[k].t == tok::rparen ? -1 : 0;
      if (depth == 0)
        return k;
    }
    throw parse_failure{it.line, "unclosed left paren"};
  }

  void finish(const item& it, command& c, pipeline& p) const {
    if (c.args.empty())
      throw parse_failure{it.line, p.cmds.empty() ? "missing value for command" : "missing command after |"};
    const bool fn = c.args[0].k == operand::kind::function;
    if (!fn && (c.args.size() > 1 || !p.cmds.empty()))
      throw parse_failure{it.line, "can't give argument to non-function " + c.args[0].text};
    p.cmds.push_back(std::move(c));
  }

  operand operand_of(const item& it, const token& t) const {
    operand o;
    o.text = t.text;
    o.line = t.line;
    o.col = t.col;
    switch (t.t) {
      case tok::dot: o.k = operand::kind::dot; return o;
      case tok::field: o.k = operand::kind::dot; o.fields = split_fields(t.text); return o;
      case tok::variable: {
        o.k = operand::kind::variable;
        const auto dot = t.text.find('.');
        o.name = t.text.substr(0, dot);
        if (dot != std::string::npos)
          o.fields = split_fields(std::string_view{t.text}.substr(dot));
        if (std::find(vars_.begin(), vars_.end(), o.name) == vars_.end())
          throw parse_failure{it.line, "undefined variable \"" + o.name + "\""};
        return o;
      }
      case tok::string: o.k = operand::kind::literal; o.literal = value{t.value}; return o;
      case tok::number: o.k = operand::kind::literal; o.literal = value{static_cast<int64_t>(std::stoll(t.text))}; return o;
      case tok::ident:
        if (t.text == "true" || t.text == "false") {
          o.k = operand::kind::literal;
          o.literal = value{t.text == "true"};
          return o;
        }
        if (t.text == "nil")
          throw parse_failure{it.line, "nil is not a command"};
        if (!is_function(t.text))
          throw parse_failure{it.line, "function \"" + t.text + "\" not defined"};
        o.k = operand::kind::function;
        o.name = t.text;
        return o;
      default: throw parse_failure{it.line, "unexpected \"" + t.text + "\" in operand"};
    }
  }

  // Blocks and parentheses nest at most 100 deep (Go sets no bound; this keeps a hostile template
  // from exhausting the stack).
  struct depth_guard {
    int& depth;
    depth_guard(int& d, int line) : depth(d) {
      if (++depth > 100)
        throw parse_failure{line, "nested more than 100 deep"};
    }
    ~depth_guard() { --depth; }
    depth_guard(const depth_guard&) = delete;
    depth_guard& operator=(const depth_guard&) = delete;
  };

  std::vector<item> items_;
  int depth_ = 0;
  size_t at_ = 0;
  int line_ = 1;
  std::vector<std::string> vars_{"$"};
  std::vector<token> else_rest_;
  const item* else_item_ = nullptr;
};

}  // namespace

std::variant<parsed, std::string> parsed::parse(std::string_view text, std::string name) {
  try {
    parser p{scanner{text}.run()};
    parsed out;
    out.tree_ = std::make_shared<const std::vector<node>>(p.run());
    out.name_ = std::move(name);
    return out;
  } catch (const parse_failure& f) {
    return "template: " + name + ":" + std::to_string(f.line) + ": " + f.message;
  }
}

}  // namespace headroom::runtime::text_template
