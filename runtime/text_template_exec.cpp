// Executing the Go text/template subset (runtime/text_template.hpp): the tree walked over the
// data with Go's rules for truth, printing, fields, variables and the built-in functions.

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "runtime/text_template_impl.hpp"

namespace headroom::runtime::text_template {

const value* record::field(std::string_view name) const {
  for (const auto& [k, v] : fields)
    if (k == name)
      return &v;
  return nullptr;
}

bool is_function(const std::string& name) {
  static const char* const known[] = {"and", "or", "not", "len", "index", "print", "printf", "println",
                                      "eq", "ne", "lt", "le", "gt", "ge"};
  return std::any_of(std::begin(known), std::end(known), [&](const char* k) { return name == k; });
}

std::string type_name(const value& v) {
  switch (v.v.index()) {
    case 0: return "nil";
    case 1: return "bool";
    case 2: return "int";
    case 3: return "string";
    case 4: {
      const auto& l = std::get<list>(v.v);
      return "[]" + (l.empty() ? std::string{"string"} : type_name(l.front()));
    }
    default: return std::get<record>(v.v).type;
  }
}

std::string format_value(const value& v) {
  switch (v.v.index()) {
    case 0: return "<nil>";
    case 1: return std::get<bool>(v.v) ? "true" : "false";
    case 2: return std::to_string(std::get<int64_t>(v.v));
    case 3: return std::get<std::string>(v.v);
    case 4: {
      std::string out = "[";
      for (const auto& e : std::get<list>(v.v))
        out += (out.size() > 1 ? " " : "") + format_value(e);
      return out + "]";
    }
    default: {
      std::string out = "{";
      for (const auto& [k, e] : std::get<record>(v.v).fields)
        out += (out.size() > 1 ? " " : "") + format_value(e);
      return out + "}";
    }
  }
}

bool truth(const value& v) {
  switch (v.v.index()) {
    case 0: return false;
    case 1: return std::get<bool>(v.v);
    case 2: return std::get<int64_t>(v.v) != 0;
    case 3: return !std::get<std::string>(v.v).empty();
    case 4: return !std::get<list>(v.v).empty();
    default: return true;
  }
}

namespace {

// strconv.Quote for what a template meets: quotes, backslashes and control bytes escaped.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// One verb of one value; `bad` when the verb does not fit the value (Go's %!verb(type=value)).
std::string verb_of(char verb, const value& v, bool& bad) {
  bad = false;
  const auto each = [&](auto&& one) {  // a list prints as [a b], each element by the verb
    std::string out = "[";
    for (const auto& e : std::get<list>(v.v))
      out += (out.size() > 1 ? " " : "") + one(e);
    return out + "]";
  };
  switch (verb) {
    case 'v': return format_value(v);
    case 's':
    case 'q':
      if (std::holds_alternative<list>(v.v))
        return each([&](const value& e) { bool b; return verb_of(verb, e, b); });
      if (const auto* s = std::get_if<std::string>(&v.v))
        return verb == 'q' ? quote(*s) : *s;
      break;
    case 'd':
      if (std::holds_alternative<int64_t>(v.v))
        return format_value(v);
      if (std::holds_alternative<list>(v.v))
        return each([&](const value& e) { bool b; return verb_of(verb, e, b); });
      break;
    case 't':
      if (std::holds_alternative<bool>(v.v))
        return format_value(v);
      break;
    default: break;
  }
  bad = true;
  return std::string{"%!"} + verb + "(" + type_name(v) + "=" + format_value(v) + ")";
}

}  // namespace

std::string sprintf_go(const std::string& f, const std::vector<value>& args) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%' || i + 1 >= f.size()) {
      out += f[i] == '%' ? "%!(NOVERB)" : std::string(1, f[i]);
      continue;
    }
    bool left = false, zero = false;
    for (++i; i < f.size() && (f[i] == '-' || f[i] == '0' || f[i] == '+' || f[i] == ' ' || f[i] == '#'); ++i)
      left |= f[i] == '-', zero |= f[i] == '0';
    size_t width = 0;
    for (; i < f.size() && std::isdigit(static_cast<unsigned char>(f[i])) && width < 1000; ++i)
      width = width * 10 + static_cast<size_t>(f[i] - '0');
    if (i >= f.size()) {
      out += "%!(NOVERB)";
      break;
    }
    if (f[i] == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) {
      out += std::string{"%!"} + f[i] + "(MISSING)";
      continue;
    }
    bool bad;
    std::string one = verb_of(f[i], args[next++], bad);
    if (!bad && one.size() < width) {
      const bool pad_zero = zero && !left && std::holds_alternative<int64_t>(args[next - 1].v);
      const std::string pad(width - one.size(), pad_zero ? '0' : ' ');
      if (pad_zero && !one.empty() && one[0] == '-')
        one = "-" + pad + one.substr(1);
      else
        one = left ? one + pad : pad + one;
    }
    out += one;
  }
  if (next < args.size()) {
    out += "%!(EXTRA ";
    for (size_t k = next; k < args.size(); ++k)
      out += (k > next ? ", " : "") + type_name(args[k]) + "=" + format_value(args[k]);
    out += ")";
  }
  return out;
}

namespace {

struct exec_failure {
  std::string at;  // the node, as written
  std::string message;
  int line, col;
};

bool is_string(const value& v) { return std::holds_alternative<std::string>(v.v); }

// Go's ordering of two basic values: -1, 0, 1; throws its message when they cannot be compared.
int compare(const value& a, const value& b, bool ordered) {
  if (a.v.index() != b.v.index())
    throw std::string{"incompatible types for comparison"};
  switch (a.v.index()) {
    case 1:
      if (ordered)
        throw std::string{"invalid type for comparison"};
      return std::get<bool>(a.v) == std::get<bool>(b.v) ? 0 : 1;
    case 2: {
      const auto x = std::get<int64_t>(a.v), y = std::get<int64_t>(b.v);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 3: return std::get<std::string>(a.v).compare(std::get<std::string>(b.v)) < 0 ? -1 : std::get<std::string>(a.v) == std::get<std::string>(b.v) ? 0 : 1;
    default: throw std::string{ordered ? "invalid type for comparison" : "non-comparable type"};
  }
}

void want_args(const std::string& fn, size_t got, size_t want) {
  if (got != want)
    throw "wrong number of args for " + fn + ": want " + std::to_string(want) + " got " + std::to_string(got);
}

value call(const std::string& fn, const std::vector<value>& a) {
  if (fn == "not")
    return want_args(fn, a.size(), 1), value{!truth(a[0])};
  if (fn == "len") {
    want_args(fn, a.size(), 1);
    if (is_string(a[0]))
      return value{static_cast<int64_t>(std::get<std::string>(a[0].v).size())};
    if (const auto* l = std::get_if<list>(&a[0].v))
      return value{static_cast<int64_t>(l->size())};
    throw "len of type " + type_name(a[0]);
  }
  if (fn == "index") {
    if (a.empty())
      throw std::string{"wrong number of args for index: want at least 1 got 0"};
    value item = a[0];
    for (size_t k = 1; k < a.size(); ++k) {
      const auto* l = std::get_if<list>(&item.v);
      const auto* i = std::get_if<int64_t>(&a[k].v);
      if (!l || !i)
        throw "can't index item of type " + type_name(item) + " with " + type_name(a[k]);
      if (*i < 0 || static_cast<size_t>(*i) >= l->size())
        throw "index out of range: " + std::to_string(*i);
      value next = (*l)[static_cast<size_t>(*i)];
      item = std::move(next);
    }
    return item;
  }
  if (fn == "print" || fn == "println") {
    std::string out;
    for (size_t k = 0; k < a.size(); ++k) {
      if (k > 0 && (fn == "println" || (!is_string(a[k - 1]) && !is_string(a[k]))))
        out += ' ';
      out += format_value(a[k]);
    }
    return value{fn == "println" ? out + "\n" : out};
  }
  if (fn == "printf") {
    if (a.empty() || !is_string(a[0]))
      throw std::string{"printf: the first argument must be a format string"};
    return value{sprintf_go(std::get<std::string>(a[0].v), {a.begin() + 1, a.end()})};
  }
  if (fn == "eq") {
    if (a.size() < 2)
      throw std::string{"missing argument for comparison"};
    for (size_t k = 1; k < a.size(); ++k)
      if (compare(a[0], a[k], false) == 0)
        return value{true};
    return value{false};
  }
  want_args(fn, a.size(), 2);
  const int c = compare(a[0], a[1], fn != "ne");
  return value{fn == "ne" ? c != 0 : fn == "lt" ? c < 0 : fn == "le" ? c <= 0 : fn == "gt" ? c > 0 : c >= 0};
}

class executor {
 public:
  static constexpr size_t max_output = 4u << 20;  // nested ranges multiply: a bound, where Go has none

  executor(const value& root) { vars_.emplace_back("$", root); }

  void walk(const std::vector<node>& nodes, const value& dot) {
    for (const auto& n : nodes) {
      step(n, dot);
      if (out.size() > max_output)
        throw exec_failure{"", "output larger than " + std::to_string(max_output >> 20) + " MiB", 0, 0};
    }
  }

  std::string out;

 private:
  void step(const node& n, const value& dot) {
    const size_t scope = vars_.size();
    switch (n.kind) {
      case node_kind::text: out += n.text; return;
      case node_kind::action: {
        value v = eval(n.pipe, dot);
        if (n.pipe.decl.empty())
          out += format_value(v);
        else
          vars_.emplace_back(n.pipe.decl[0], std::move(v));  // in scope to the enclosing block's end
        return;
      }
      case node_kind::if_:
      case node_kind::with: {
        value v = eval(n.pipe, dot);
        const bool yes = truth(v);
        if (yes && !n.pipe.decl.empty())
          vars_.emplace_back(n.pipe.decl[0], v);
        if (yes)
          walk(n.body, n.kind == node_kind::with ? v : dot);
        else
          walk(n.otherwise, dot);
        break;
      }
      case node_kind::range: range(n, dot); break;
    }
    vars_.resize(scope);
  }

  void range(const node& n, const value& dot) {
    const value v = eval(n.pipe, dot);
    const auto* l = std::get_if<list>(&v.v);
    if (!l && !std::holds_alternative<std::monostate>(v.v))
      throw exec_failure{n.pipe.cmds.back().text, "range can't iterate over " + format_value(v), n.pipe.cmds.back().args[0].line,
                         n.pipe.cmds.back().args[0].col};
    if (!l || l->empty())
      return walk(n.otherwise, dot);
    const size_t scope = vars_.size();
    for (size_t i = 0; i < l->size(); ++i) {
      if (n.pipe.decl.size() == 1)
        vars_.emplace_back(n.pipe.decl[0], (*l)[i]);
      if (n.pipe.decl.size() == 2) {
        vars_.emplace_back(n.pipe.decl[0], value{static_cast<int64_t>(i)});
        vars_.emplace_back(n.pipe.decl[1], (*l)[i]);
      }
      walk(n.body, (*l)[i]);
      vars_.resize(scope);
    }
  }

  value eval(const pipeline& p, const value& dot) {
    value result;
    bool piped = false;
    for (const auto& c : p.cmds) {
      result = command_value(c, dot, piped ? &result : nullptr);
      piped = true;
    }
    return result;
  }

  value command_value(const command& c, const value& dot, const value* piped) {
    const operand& head = c.args[0];
    if (head.k != operand::kind::function)
      return operand_value(head, dot);
    try {
      if (head.name == "and" || head.name == "or") {  // lazy, as Go's since 1.18
        const size_t n = c.args.size() - 1 + (piped ? 1 : 0);
        if (n == 0)
          throw "wrong number of args for " + head.name + ": want at least 1 got 0";
        value v;
        for (size_t k = 1; k <= n; ++k) {
          v = k < c.args.size() ? operand_value(c.args[k], dot) : *piped;
          if (truth(v) == (head.name == "or"))
            break;
        }
        return v;
      }
      std::vector<value> args;
      for (size_t k = 1; k < c.args.size(); ++k)
        args.push_back(operand_value(c.args[k], dot));
      if (piped)
        args.push_back(*piped);
      return call(head.name, args);
    } catch (const std::string& message) {
      throw exec_failure{c.text, "error calling " + head.name + ": " + message, head.line, head.col};
    }
  }

  value operand_value(const operand& o, const value& dot) {
    value base;
    switch (o.k) {
      case operand::kind::dot: base = dot; break;
      case operand::kind::literal: return o.literal;
      case operand::kind::sub: base = eval(*o.sub, dot); break;
      case operand::kind::variable: {
        const auto it = std::find_if(vars_.rbegin(), vars_.rend(), [&](const auto& kv) { return kv.first == o.name; });
        base = it->second;  // the parser checked it is declared
        break;
      }
      case operand::kind::function: return call_bare(o);
    }
    // Go names the field that failed: its place in the chain as written (".A.B", "$x.A.B").
    int at = o.col + (o.k == operand::kind::variable ? static_cast<int>(o.name.size()) : 0);
    for (const auto& f : o.fields) {
      const auto* r = std::get_if<record>(&base.v);
      const value* next = r ? r->field(f) : nullptr;
      if (!next)
        throw exec_failure{o.text, "can't evaluate field " + f + " in type " + type_name(base), o.line,
                           o.k == operand::kind::sub ? o.col : at};
      at += 1 + static_cast<int>(f.size());
      value copy = *next;
      base = std::move(copy);
    }
    return base;
  }

  value call_bare(const operand& o) {  // a function as an argument: called with none
    try {
      return call(o.name, {});
    } catch (const std::string& message) {
      throw exec_failure{o.text, "error calling " + o.name + ": " + message, o.line, o.col};
    }
  }

  std::vector<std::pair<std::string, value>> vars_;
};

}  // namespace

rendered parsed::execute(const value& dot) const {
  executor e{dot};
  try {
    e.walk(*tree_, dot);
    return {std::move(e.out), {}};
  } catch (const exec_failure& f) {
    if (f.line == 0)
      return {{}, "template: " + name_ + ": executing \"" + name_ + "\": " + f.message};
    return {{}, "template: " + name_ + ":" + std::to_string(f.line) + ":" + std::to_string(f.col) + ": executing \"" + name_ +
                    "\" at <" + f.at + ">: " + f.message};
  }
}

}  // namespace headroom::runtime::text_template
