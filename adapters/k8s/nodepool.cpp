#include "adapters/k8s/nodepool.hpp"

#include <simdjson.h>

#include "adapters/k8s/quantity.hpp"

namespace headroom::k8s {

namespace {

namespace dom = simdjson::dom;

struct bad_field {
  std::string message;
};

std::string text_of(dom::element v) {
  if (v.is_string())
    return std::string{std::string_view{v.get_string()}};
  if (v.is_int64() || v.is_uint64())
    return std::string{simdjson::to_string(v)};
  return {};
}

// A mapping of resource name → quantity (limits, status.resources).
resource_amounts amounts(dom::object o, const std::string& where) {
  resource_amounts out;
  for (auto [key, value] : o) {
    const std::string name{key};
    const auto text = text_of(value);
    if (text.empty())
      throw bad_field{where + "[" + name + "]: expected a quantity"};
    auto parsed = parse_quantity(text);
    if (auto* e = std::get_if<quantity_error>(&parsed))
      throw bad_field{where + "[" + name + "]: " + e->message};
    const auto& q = std::get<quantity>(parsed);
    out.emplace_back(name, name == "cpu" ? q.milli : q.units);
  }
  return out;
}

std::string string_field(dom::object o, std::string_view key, const std::string& where) {
  std::string_view s;
  auto e = o[key].get(s);
  if (e == simdjson::NO_SUCH_FIELD)
    return {};
  if (e != simdjson::SUCCESS)
    throw bad_field{where + "." + std::string{key} + ": expected a string"};
  return std::string{s};
}

}  // namespace

decoded<nodepool> decode_nodepool(std::string_view json) {
  thread_local dom::parser parser;
  dom::element root;
  nodepool p;
  auto where = [&p](const std::string& field) { return "NodePool " + (p.name.empty() ? std::string{"?"} : p.name) + ": " + field; };
  if (auto e = parser.parse(json.data(), json.size()).get(root); e != simdjson::SUCCESS)
    return decode_error{std::string{"NodePool: not JSON ("} + simdjson::error_message(e) + ")"};
  try {
    std::string_view s;
    if (root["metadata"]["name"].get(s) == simdjson::SUCCESS)
      p.name = std::string{s};
    dom::object spec, tmpl, o;
    if (root["spec"].get(spec) != simdjson::SUCCESS)
      throw bad_field{where("spec: required, an object")};
    if (spec["limits"].get(o) == simdjson::SUCCESS)
      p.limits = amounts(o, where("spec.limits"));
    if (root["status"]["resources"].get(o) == simdjson::SUCCESS)
      p.used = amounts(o, where("status.resources"));
    if (spec["template"].get(tmpl) != simdjson::SUCCESS)
      throw bad_field{where("spec.template: required, an object")};
    if (tmpl["metadata"]["labels"].get(o) == simdjson::SUCCESS)
      for (auto [key, value] : o) {
        std::string_view v;
        if (value.get(v) != simdjson::SUCCESS)
          throw bad_field{where("spec.template.metadata.labels[" + std::string{key} + "]: expected a string")};
        p.labels.emplace_back(std::string{key}, std::string{v});
      }
    dom::array list;
    if (tmpl["spec"]["requirements"].get(list) == simdjson::SUCCESS)
      for (dom::element item : list) {
        dom::object r;
        const auto at = where("spec.template.spec.requirements[" + std::to_string(p.requirements.size()) + "]");
        if (item.get(r) != simdjson::SUCCESS)
          throw bad_field{at + ": expected an object"};
        selector_requirement req;
        req.key = string_field(r, "key", at);
        req.op = string_field(r, "operator", at);
        if (req.key.empty() || req.op.empty())
          throw bad_field{at + ": key and operator are required"};
        dom::array values;
        if (r["values"].get(values) == simdjson::SUCCESS)
          for (dom::element v : values) {
            std::string_view t;
            if (v.get(t) != simdjson::SUCCESS)
              throw bad_field{at + ".values: expected strings"};
            req.values.emplace_back(t);
          }
        p.requirements.push_back(std::move(req));
      }
    if (tmpl["spec"]["taints"].get(list) == simdjson::SUCCESS)
      for (dom::element item : list) {
        dom::object t;
        const auto at = where("spec.template.spec.taints[" + std::to_string(p.taints.size()) + "]");
        if (item.get(t) != simdjson::SUCCESS)
          throw bad_field{at + ": expected an object"};
        p.taints.push_back(taint{string_field(t, "key", at), string_field(t, "value", at), string_field(t, "effect", at)});
      }
  } catch (const bad_field& b) {
    return decode_error{b.message};
  } catch (const simdjson::simdjson_error& e) {
    return decode_error{where(std::string{"malformed ("} + e.what() + ")")};
  }
  return p;
}

}  // namespace headroom::k8s
