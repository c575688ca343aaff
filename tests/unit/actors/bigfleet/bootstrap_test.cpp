// The bootstrap blob (actors/bigfleet/bootstrap.cpp): a template written for BigFleet's own
// operator (Go text/template over BootstrapRendererInput) renders here unchanged; headroom's older
// syntax still renders; a parse error is found at start-up and an execution error goes back to the
// shard in the response's `error`.

#include <gtest/gtest.h>

#include <string>

#include "actors/bigfleet/bigfleet.hpp"

namespace pb = ::bigfleet::v1alpha1;
using headroom::actors::bigfleet::bootstrap_template;
using headroom::actors::bigfleet::parse_bootstrap_template;
using headroom::actors::bigfleet::render_bootstrap;

namespace {

pb::BootstrapRequest request() {
  pb::BootstrapRequest r;
  r.set_request_id("b-7");
  auto* q = r.add_requirements();
  q->set_key("node.kubernetes.io/instance-type");
  q->set_operator_(pb::NodeSelectorRequirement::OPERATOR_IN);
  q->add_values("a3-highgpu-8g");
  auto* z = r.add_requirements();
  z->set_key("topology.kubernetes.io/zone");
  z->set_operator_(pb::NodeSelectorRequirement::OPERATOR_NOT_IN);
  z->add_values("eu-1a");
  z->add_values("eu-1b");
  return r;
}

bootstrap_template parse(const std::string& text) {
  auto t = parse_bootstrap_template(text);
  EXPECT_TRUE(std::holds_alternative<bootstrap_template>(t)) << std::get<std::string>(t);
  return std::get<bootstrap_template>(std::move(t));
}

}  // namespace

TEST(bootstrap, the_reference_operators_template_renders_unchanged) {
  // pkg/operator/bootstrap_template_test.go's template; its output as Go renders it.
  const auto t = parse("cluster: {{ .ClusterID }}\n{{- range .Requirements }}\n  - {{ .Key }} {{ .Operator }} {{ .Values }}\n{{- end }}\n");
  EXPECT_FALSE(t.legacy);
  const auto out = render_bootstrap(t, "prod-eu-1", request());
  EXPECT_EQ(out.error(), "");
  EXPECT_EQ(out.request_id(), "b-7");
  EXPECT_EQ(out.user_data(),
            "cluster: prod-eu-1\n  - node.kubernetes.io/instance-type In [a3-highgpu-8g]\n  - topology.kubernetes.io/zone NotIn [eu-1a eu-1b]\n");
}

TEST(bootstrap, the_older_syntax_still_renders_and_is_marked_legacy) {
  const auto t = parse("node {{cluster_id}} {{request_id}}:{{#requirements}} {{key}} {{operator}} {{values}};{{/requirements}}");
  EXPECT_TRUE(t.legacy);
  const auto out = render_bootstrap(t, "c1", request());
  EXPECT_EQ(out.user_data(), "node c1 b-7: node.kubernetes.io/instance-type In a3-highgpu-8g; topology.kubernetes.io/zone NotIn eu-1a,eu-1b;");
  const auto bad = render_bootstrap(parse("{{cluster_id}} {{no_such_field}}"), "c1", request());
  EXPECT_EQ(bad.error(), "bootstrap template: unknown placeholder {{no_such_field}}");
  EXPECT_EQ(bad.user_data(), "");
}

TEST(bootstrap, a_field_the_input_lacks_goes_to_the_shard_as_the_error) {
  const auto out = render_bootstrap(parse("id: {{ .RequestID }}"), "c1", request());
  EXPECT_EQ(out.user_data(), "");
  EXPECT_EQ(out.error(),
            "template: bootstrap:1:7: executing \"bootstrap\" at <.RequestID>: can't evaluate field RequestID in type "
            "operator.BootstrapRendererInput");
}

TEST(bootstrap, a_template_that_does_not_parse_is_refused_at_start_up) {
  auto t = parse_bootstrap_template("ok\n{{ range .Requirements }}{{ toYaml . }}{{ end }}");
  ASSERT_TRUE(std::holds_alternative<std::string>(t));
  EXPECT_EQ(std::get<std::string>(t), "template: bootstrap:2: function \"toYaml\" not defined");
}

TEST(bootstrap, no_template_is_a_minimal_cloud_config) {
  const auto out = render_bootstrap(parse(""), "c1", request());
  EXPECT_EQ(out.user_data(), "#cloud-config\n# headroom: no bootstrap template configured (cluster c1)\n");
  EXPECT_EQ(out.ttl_seconds(), 3600);
}
