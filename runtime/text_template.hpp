#pragma once

// The part of Go's text/template (https://pkg.go.dev/text/template) that a template written for a
// Go program's renderer uses, so such a template renders here unchanged: BigFleet's bootstrap
// template is one (its operator parses the file with Go's text/template). Written by hand because
// no packaged C++ library renders Go's template language.
//
// What it takes, with Go's meaning:
//   text and {{ actions }}, trim markers ({{- and -}}), comments ({{/* … */}});
//   {{ pipeline }}: a command, or commands joined by `|` (each result is the next call's last
//   argument); operands: `.`, `.Field.Field`, `$`, `$var.Field`, "strings" (Go escapes), `raw
//   strings`, integers, true, false, and ( pipelines );
//   {{ if }} / {{ else if }} / {{ else }} / {{ end }}, {{ range }} (with `$v :=` or `$i, $v :=`,
//   and {{ else }} for an empty list), {{ with }}, {{ $x := pipeline }};
//   functions: and, or, not, len, index, print, printf, println, eq, ne, lt, le, gt, ge.
//   printf takes %s %v %d %q %t %% with a width and the `-` and `0` flags.
// What it refuses at parse time, naming the line as Go does: anything else (define, template,
// block, break, continue, other functions, methods), an unknown variable, an unclosed action, a
// missing {{ end }}; and, where Go sets no bound, blocks or parentheses nested over 100 deep.
// Executing stops with an error past 4 MiB of output.
// Values print as Go's fmt does with %v: a list as [a b], a record as {a b}.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace headroom::runtime::text_template {

struct value;
using list = std::vector<value>;
// A Go struct: its type's name (named in errors) and its fields in order.
struct record {
  std::string type;
  std::vector<std::pair<std::string, value>> fields;
  const value* field(std::string_view name) const;
};
struct value {
  std::variant<std::monostate, bool, int64_t, std::string, list, record> v;
  value() = default;
  value(bool b) : v(b) {}
  value(int64_t i) : v(i) {}
  value(std::string s) : v(std::move(s)) {}
  value(const char* s) : v(std::string{s}) {}
  value(list l) : v(std::move(l)) {}
  value(record r) : v(std::move(r)) {}
};

struct node;  // text_template_impl.hpp

// The output, or what stopped it: Go's wording, "template: NAME:LINE:COL: executing "NAME" at
// <.Foo>: can't evaluate field Foo in type T".
struct rendered {
  std::string text;
  std::string error;  // "" = rendered
};

class parsed {
 public:
  // The template, or Go's parse error ("template: NAME:LINE: function "x" not defined").
  static std::variant<parsed, std::string> parse(std::string_view text, std::string name);
  rendered execute(const value& dot) const;

 private:
  std::string name_;
  std::shared_ptr<const std::vector<node>> tree_;
};

}  // namespace headroom::runtime::text_template
