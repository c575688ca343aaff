// runtime/yaml_json: YAML configuration that is a Kubernetes object, as the JSON kubectl would send.
#include <gtest/gtest.h>

#include "runtime/yaml_json.hpp"

namespace headroom::runtime {
namespace {

std::string json(const std::string& yaml) {
  auto r = yaml_to_json(YAML::Load(yaml));
  if (auto* e = std::get_if<yaml_json_error>(&r))
    return "error at '" + e->where + "': " + e->message;
  return std::get<std::string>(r);
}

TEST(yaml_json, plain_scalars_are_typed_as_kubectl_types_them_and_quoted_ones_stay_strings) {
  EXPECT_EQ(json("{a: true, b: False, c: 3, d: -2, e: 0.5, f: 1e3, g: ~, h: null, i: \"true\", j: '3', k: 0644, l: 0x1F, m: 2Gi}"),
            R"({"a":true,"b":false,"c":3,"d":-2,"e":0.5,"f":1000.0,"g":null,"h":null,"i":"true","j":"3","k":420,"l":31,"m":"2Gi"})");
  EXPECT_EQ(json("[.inf, 99999999999999999999, '', x y]"), R"([".inf",100000000000000000000.0,"","x y"])")
      << ".inf has no JSON form: a string, for the API server to name; an integer past int64 is a float, as kubectl reads it";
}

TEST(yaml_json, nesting_anchors_and_escapes) {
  EXPECT_EQ(json("base: &b {k: \"v\\\"q\"}\nuse: *b\nlist: [[1], {x: []}, {}]\n"),
            R"({"base":{"k":"v\"q"},"use":{"k":"v\"q"},"list":[[1],{"x":[]},{}]})");
}

TEST(yaml_json, a_key_that_is_not_a_string_or_a_nesting_too_deep_is_refused_with_its_place) {
  EXPECT_EQ(json("spec: {containers: [{? [a, b] : 1}]}"), "error at 'spec.containers[0]': a key that is not a string");
  std::string deep = "x";
  for (int i = 0; i < 80; ++i)
    deep = "[" + deep + "]";
  EXPECT_EQ(json(deep).rfind("error at '[0][0]", 0), 0u) << json(deep).substr(0, 80);
}

}  // namespace
}  // namespace headroom::runtime
