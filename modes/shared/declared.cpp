#include "modes/shared/declared.hpp"

#include "adapters/k8s/fields.hpp"
#include "runtime/config_reader.hpp"

namespace headroom::modes {

std::optional<std::string> read_declared(std::string_view object_json, std::string_view kind, declared_object& meta,
                                         const std::function<std::optional<std::string>(YAML::Node& spec)>& read) {
  meta.name = k8s::string_at(object_json, {"metadata", "name"});
  meta.ns = k8s::string_at(object_json, {"metadata", "namespace"});
  if (meta.name.empty() || meta.ns.empty())
    return "metadata: a " + std::string{kind} + " needs a name and a namespace";
  meta.uid = k8s::uid_of(object_json);
  meta.generation = k8s::int_at(object_json, {"metadata", "generation"}).value_or(0);
  const auto spec = k8s::json_at(object_json, {"spec"});
  try {
    YAML::Node node = spec ? YAML::Load(*spec) : YAML::Node{YAML::NodeType::Map};
    if (node.IsNull())
      node = YAML::Node{YAML::NodeType::Map};
    if (!node.IsMap())
      return "spec: expected a mapping, found " + runtime::yaml_kind(node);
    return read(node);
  } catch (const runtime::config_failure& f) {
    auto message = f.error.message();
    if (message.starts_with("spec.name:"))
      message = "metadata.name:" + message.substr(10);
    return message;
  } catch (const YAML::Exception& e) {
    return std::string{"spec: not readable: "} + e.what();
  }
}

}  // namespace headroom::modes
