#pragma once

// The parse tree of runtime/text_template.hpp: text_template_parse.cpp builds it,
// text_template_exec.cpp walks it.

#include <memory>
#include <string>
#include <vector>

#include "runtime/text_template.hpp"

namespace headroom::runtime::text_template {

struct pipeline;

struct operand {
  enum class kind { dot, variable, literal, function, sub } k = kind::dot;
  std::string name;                 // the variable ("$", "$x") or the function
  std::vector<std::string> fields;  // .A.B after the dot, a variable or a ( pipeline )
  value literal;
  std::shared_ptr<const pipeline> sub;
  std::string text;  // as written, for errors: "<.Foo>"
  int line = 0, col = 0;
};

struct command {
  std::vector<operand> args;
  std::string text;
};

struct pipeline {
  std::vector<std::string> decl;  // variables declared: `$x :=`, or range's `$i, $v :=`
  std::vector<command> cmds;
  int line = 0, col = 0;
};

enum class node_kind { text, action, if_, range, with };

struct node {
  node_kind kind = node_kind::text;
  std::string text;
  pipeline pipe;
  std::vector<node> body, otherwise;  // otherwise: {{ else }}'s part
};

// The built-in functions this subset knows (a parse error names any other).
bool is_function(const std::string& name);

// Go's %v of a value, and its truth (if, with, and, or, not).
std::string format_value(const value& v);
bool truth(const value& v);
std::string type_name(const value& v);

// printf: Go's fmt.Sprintf for the verbs the header lists.
std::string sprintf_go(const std::string& format, const std::vector<value>& args);

}  // namespace headroom::runtime::text_template
