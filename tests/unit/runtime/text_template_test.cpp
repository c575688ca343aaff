// The Go text/template subset (runtime/text_template.hpp). Expected outputs and error texts are
// what Go's text/template (go1.26) gave for the same template and data, run side by side, except
// where a comment says otherwise.

#include "runtime/text_template.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tt = headroom::runtime::text_template;

namespace {

tt::value input() {
  tt::list reqs;
  reqs.push_back(tt::record{"operator.RequirementInput",
                            {{"Key", "node.kubernetes.io/instance-type"}, {"Operator", "In"}, {"Values", tt::list{"a3-highgpu-8g", "m5.large"}}}});
  reqs.push_back(tt::record{"operator.RequirementInput", {{"Key", "zone"}, {"Operator", "Exists"}, {"Values", tt::list{}}}});
  return tt::record{"operator.BootstrapRendererInput", {{"ClusterID", "prod-eu-1"}, {"Requirements", std::move(reqs)}}};
}

// The output, or "ERROR: <the parse or execution error>".
std::string run(const std::string& text, const tt::value& data = input()) {
  auto p = tt::parsed::parse(text, "bootstrap");
  if (auto* e = std::get_if<std::string>(&p))
    return "ERROR: " + *e;
  auto r = std::get<tt::parsed>(p).execute(data);
  return r.error.empty() ? r.text : "ERROR: " + r.error;
}

}  // namespace

TEST(text_template, renders_the_reference_renderers_own_test_template) {
  // pkg/operator/bootstrap_template_test.go's template, with its input.
  const std::string tpl = "cluster: {{ .ClusterID }}\n{{- range .Requirements }}\n  - {{ .Key }} {{ .Operator }} {{ .Values }}\n{{- end }}\n";
  EXPECT_EQ(run(tpl), "cluster: prod-eu-1\n  - node.kubernetes.io/instance-type In [a3-highgpu-8g m5.large]\n  - zone Exists []\n");
}

TEST(text_template, text_without_actions_and_comments) {
  EXPECT_EQ(run(""), "");
  EXPECT_EQ(run("#cloud-config\nruncmd: []\n"), "#cloud-config\nruncmd: []\n");
  EXPECT_EQ(run("a {{/* a comment */}}b"), "a b");
  EXPECT_EQ(run("a  {{- /* trimmed */ -}}  b"), "ab");
  EXPECT_EQ(run("x}} y"), "x}} y");
}

TEST(text_template, trim_markers_take_the_whitespace_beside_them) {
  EXPECT_EQ(run("a \n\t{{- .ClusterID -}}\n b"), "aprod-eu-1b");
  EXPECT_EQ(run("{{ 23 -}} < {{- 45 }}"), "23<45");
  EXPECT_EQ(run("{{-3}}"), "-3");  // no space: a negative number, not a trim marker
}

TEST(text_template, if_else_if_else_and_truth) {
  const std::string t = "{{ if eq .ClusterID \"x\" }}x{{ else if eq .ClusterID \"prod-eu-1\" }}prod{{ else }}other{{ end }}";
  EXPECT_EQ(run(t), "prod");
  EXPECT_EQ(run("{{ if .Requirements }}some{{ end }}"), "some");
  EXPECT_EQ(run("{{ if \"\" }}y{{ else }}n{{ end }}{{ if 0 }}y{{ else }}n{{ end }}{{ if false }}y{{ else }}n{{ end }}"), "nnn");
  EXPECT_EQ(run("{{ if and .ClusterID (not false) }}both{{ end }}"), "both");
  EXPECT_EQ(run("{{ or \"\" \"fallback\" }} {{ and 1 0 }} {{ and 1 2 }}"), "fallback 0 2");
}

TEST(text_template, range_with_variables_else_and_nesting) {
  EXPECT_EQ(run("{{ range $i, $r := .Requirements }}{{ $i }}={{ $r.Key }};{{ end }}"),
            "0=node.kubernetes.io/instance-type;1=zone;");
  EXPECT_EQ(run("{{ range .Requirements }}{{ range .Values }}<{{ . }}>{{ else }}(none){{ end }}{{ end }}"),
            "<a3-highgpu-8g><m5.large>(none)");
  EXPECT_EQ(run("{{ range $v := .Requirements }}{{ $.ClusterID }}:{{ $v.Operator }} {{ end }}"), "prod-eu-1:In prod-eu-1:Exists ");
  EXPECT_EQ(run("{{ range (index .Requirements 1).Values }}x{{ else }}empty{{ end }}"), "empty");
}

TEST(text_template, with_and_declared_variables) {
  EXPECT_EQ(run("{{ with .ClusterID }}[{{ . }}]{{ end }}"), "[prod-eu-1]");
  EXPECT_EQ(run("{{ with \"\" }}x{{ else }}none{{ end }}"), "none");
  EXPECT_EQ(run("{{ $c := .ClusterID }}{{ range .Requirements }}{{ $c }} {{ end }}"), "prod-eu-1 prod-eu-1 ");
}

TEST(text_template, functions_and_pipelines) {
  EXPECT_EQ(run("{{ len .Requirements }} {{ .Requirements | len }} {{ len .ClusterID }}"), "2 2 9");
  EXPECT_EQ(run("{{ index .Requirements 0 | printf \"%v\" }}"), "{node.kubernetes.io/instance-type In [a3-highgpu-8g m5.large]}");
  EXPECT_EQ(run("{{ printf \"%s-%d-%q-%t-%5s|%-5s|%03d%%\" .ClusterID 7 \"a\\\"b\" true \"ab\" \"cd\" 5 }}"),
            "prod-eu-1-7-\"a\\\"b\"-true-   ab|cd   |005%");
  EXPECT_EQ(run("{{ print 1 2 \"a\" \"b\" 3 }}|{{ println 1 \"a\" }}"), "1 2ab3|1 a\n");
  EXPECT_EQ(run("{{ printf \"%d\" \"x\" }} {{ printf \"%s\" }} {{ printf \"x\" 1 }}"), "%!d(string=x) %!s(MISSING) x%!(EXTRA int=1)");
  EXPECT_EQ(run("{{ lt 1 2 }} {{ ge \"b\" \"a\" }} {{ ne 1 1 }} {{ eq 3 1 2 3 }}"), "true true false true");
  EXPECT_EQ(run("{{ `raw \\n` }}"), "raw \\n");
}

TEST(text_template, parse_errors_name_the_line_as_go_does) {
  EXPECT_EQ(run("a\n{{ .Unclosed "), "ERROR: template: bootstrap:2: unclosed action");
  // Go: "unexpected EOF"; this one says which block is open.
  EXPECT_EQ(run("{{ if .ClusterID }}x"), "ERROR: template: bootstrap:1: unexpected EOF: {{if}} has no {{end}}");
  EXPECT_EQ(run("x{{ end }}"), "ERROR: template: bootstrap:1: unexpected {{end}}");
  EXPECT_EQ(run("\n\n{{ toYaml . }}"), "ERROR: template: bootstrap:3: function \"toYaml\" not defined");
  EXPECT_EQ(run("{{ $x }}"), "ERROR: template: bootstrap:1: undefined variable \"$x\"");
  EXPECT_EQ(run("{{ range .Requirements }}{{ $v := 1 }}{{ end }}{{ $v }}"), "ERROR: template: bootstrap:1: undefined variable \"$v\"");
  // Go finds this one when executing ("ClusterID has arguments but cannot be invoked as function").
  EXPECT_EQ(run("{{ .ClusterID 3 }}"), "ERROR: template: bootstrap:1: can't give argument to non-function .ClusterID");
  EXPECT_EQ(run("{{ \"abc }}"), "ERROR: template: bootstrap:1: unterminated quoted string");
  EXPECT_EQ(run("{{ define \"x\" }}{{ end }}"), "ERROR: template: bootstrap:1: {{define}} is not supported by this renderer");
  EXPECT_EQ(run("{{ }}"), "ERROR: template: bootstrap:1: missing value for command");
  // Go takes floats, runes and hex; the bootstrap input has none.
  EXPECT_EQ(run("{{ 1.5 }}"), "ERROR: template: bootstrap:1: bad number syntax: \"1.5\" (this renderer takes decimal integers)");
}

TEST(text_template, execution_errors_name_the_node) {
  EXPECT_EQ(run("ok\n  {{ .NoSuchField }}"),
            "ERROR: template: bootstrap:2:5: executing \"bootstrap\" at <.NoSuchField>: can't evaluate field NoSuchField in type "
            "operator.BootstrapRendererInput");
  EXPECT_EQ(run("{{ range .Requirements }}{{ .Key.Sub }}{{ end }}"),
            "ERROR: template: bootstrap:1:32: executing \"bootstrap\" at <.Key.Sub>: can't evaluate field Sub in type string");
  EXPECT_EQ(run("{{ index .Requirements 5 }}"),
            "ERROR: template: bootstrap:1:3: executing \"bootstrap\" at <index .Requirements 5>: error calling index: index out of "
            "range: 5");
  EXPECT_EQ(run("{{ lt true false }}"),
            "ERROR: template: bootstrap:1:3: executing \"bootstrap\" at <lt true false>: error calling lt: invalid type for comparison");
  EXPECT_EQ(run("{{ range .ClusterID }}{{ end }}"),
            "ERROR: template: bootstrap:1:9: executing \"bootstrap\" at <.ClusterID>: range can't iterate over prod-eu-1");
  EXPECT_EQ(run("{{ len 3 }}"), "ERROR: template: bootstrap:1:3: executing \"bootstrap\" at <len 3>: error calling len: len of type int");
}

TEST(text_template, hostile_input_is_an_error_not_a_crash) {
  for (const std::string t : {"{{", "{{-", "{{ (", "{{ ) }}", "{{ ((.ClusterID) }}", "{{ | }}", "{{ len | }}", "{{/*", "{{/* x */ y }}",
                              "{{ else }}", "{{ range $a, $b, $c := . }}{{ end }}", "{{ $x = 1 }}", "{{ \"\\q\" }}", "{{ 99999999999999999999 }}",
                              "{{ nil }}", "{{ if }}{{ end }}", "{{ .A..B }}", "{{ printf }}", "{{ % }}"}) {
    const auto out = run(t);
    EXPECT_EQ(out.rfind("ERROR: template: bootstrap:", 0), 0u) << t << " gave: " << out;
  }
}
