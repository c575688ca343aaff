#include "adapters/k8s/scale.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "runtime/log.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::k8s {

namespace od = simdjson::ondemand;

namespace {

int32_t replicas_of(od::value v, const char* where) {
  const int64_t n = v.get_int64();
  if (n < 0 || n > INT32_MAX)
    throw decode_error{std::string{where} + ": " + std::to_string(n) + " is not a replica count"};
  return static_cast<int32_t>(n);
}

}  // namespace

decoded<scale> decode_scale(std::string_view json) {
  scale s;
  std::string at = "(top level)";
  try {
    od::parser parser;
    simdjson::padded_string padded{json};
    auto doc = parser.iterate(padded);
    for (auto f : doc.get_object()) {
      std::string_view key = f.unescaped_key();
      od::value v = f.value();
      if (key == "metadata") {
        at = "metadata";
        for (auto m : v.get_object())
          if (m.unescaped_key().value() == "resourceVersion")
            s.resource_version = std::string{std::string_view{m.value().get_string()}};
      } else if (key == "spec") {
        at = "spec";
        for (auto m : v.get_object())
          if (m.unescaped_key().value() == "replicas")
            s.spec_replicas = replicas_of(m.value(), "spec.replicas");
      } else if (key == "status") {
        at = "status";
        for (auto m : v.get_object()) {
          std::string_view k = m.unescaped_key();
          if (k == "replicas")
            s.status_replicas = replicas_of(m.value(), "status.replicas");
          else if (k == "selector")
            s.selector = std::string{std::string_view{m.value().get_string()}};
        }
      }
    }
  } catch (const decode_error& e) {
    return decode_error{"Scale: " + e.message};
  } catch (const simdjson::simdjson_error& e) {
    return decode_error{"Scale: " + at + ": " + simdjson::error_message(e.error())};
  }
  return s;
}

std::string encode_scale(std::string_view ns, std::string_view name, std::string_view resource_version, int32_t replicas) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "autoscaling/v1").field("kind", "Scale");
  w.key("metadata").begin_object().field("name", name).field("namespace", ns);
  if (!resource_version.empty())
    w.field("resourceVersion", resource_version);
  w.end_object();
  w.key("spec").begin_object().field("replicas", replicas).end_object().end_object();
  return w.take();
}

std::optional<found_resource> find_resource(std::string_view json, std::string_view api_version, std::string_view kind,
                                            std::string& error) {
  std::string plural;
  bool namespaced = true;
  std::vector<std::string> subresources;  // "deployments/scale", …: they may come before their resource
  try {
    od::parser parser;
    simdjson::padded_string padded{json};
    auto doc = parser.iterate(padded);
    for (auto f : doc.get_object()) {
      if (f.unescaped_key().value() != "resources")
        continue;
      for (auto item : f.value().get_array()) {
        std::string name, k;
        bool ns = false;
        for (auto g : item.get_object()) {
          std::string_view key = g.unescaped_key();
          if (key == "name")
            name = std::string{std::string_view{g.value().get_string()}};
          else if (key == "kind")
            k = std::string{std::string_view{g.value().get_string()}};
          else if (key == "namespaced")
            ns = g.value().get_bool();
        }
        if (name.find('/') != std::string::npos) {
          subresources.push_back(std::move(name));
        } else if (k == kind && plural.empty()) {
          plural = std::move(name);
          namespaced = ns;
        }
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    error = "APIResourceList of " + std::string{api_version} + ": " + simdjson::error_message(e.error());
    return std::nullopt;
  }
  if (plural.empty()) {
    error = std::string{api_version} + " serves no kind " + std::string{kind};
    return std::nullopt;
  }
  const auto slash = api_version.find('/');
  found_resource out;
  out.kind.group = slash == std::string_view::npos ? "" : std::string{api_version.substr(0, slash)};
  out.kind.version = std::string{slash == std::string_view::npos ? api_version : api_version.substr(slash + 1)};
  out.kind.plural = plural;
  out.kind.namespaced = namespaced;
  out.has_scale = std::find(subresources.begin(), subresources.end(), plural + "/scale") != subresources.end();
  return out;
}

std::optional<std::string> builtin_replicas_pointer(const resource_kind& kind) {
  const bool apps = kind.group == "apps" && (kind.plural == "deployments" || kind.plural == "statefulsets" || kind.plural == "replicasets");
  const bool core = kind.group.empty() && kind.plural == "replicationcontrollers";
  if (apps || core)
    return std::string{"/spec/replicas"};
  return std::nullopt;
}

std::string crd_name(const resource_kind& kind) { return kind.plural + "." + kind.group; }

std::string json_pointer_escape(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key)
    out += c == '~' ? std::string_view{"~0"} : c == '/' ? std::string_view{"~1"} : std::string_view{&c, 1};
  return out;
}

std::optional<std::string> crd_replicas_pointer(std::string_view json, std::string_view version, std::string& error) {
  std::string path;
  bool served = false;
  try {
    od::parser parser;
    simdjson::padded_string padded{json};
    auto doc = parser.iterate(padded);
    for (auto f : doc.get_object()) {
      if (f.unescaped_key().value() != "spec")
        continue;
      for (auto g : f.value().get_object()) {
        if (g.unescaped_key().value() != "versions")
          continue;
        for (auto v : g.value().get_array()) {
          std::string name, replicas;
          for (auto h : v.get_object()) {
            std::string_view key = h.unescaped_key();
            if (key == "name") {
              name = std::string{std::string_view{h.value().get_string()}};
            } else if (key == "subresources") {
              for (auto sub : h.value().get_object()) {
                if (sub.unescaped_key().value() != "scale")
                  continue;
                for (auto sc : sub.value().get_object())
                  if (sc.unescaped_key().value() == "specReplicasPath")
                    replicas = std::string{std::string_view{sc.value().get_string()}};
              }
            }
          }
          if (name == version) {
            served = true;
            path = std::move(replicas);
          }
        }
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    error = "CustomResourceDefinition: " + std::string{simdjson::error_message(e.error())};
    return std::nullopt;
  }
  if (!served) {
    error = "CustomResourceDefinition: no version " + std::string{version};
    return std::nullopt;
  }
  if (path.empty()) {
    error = "CustomResourceDefinition: version " + std::string{version} + " has no subresources.scale.specReplicasPath";
    return std::nullopt;
  }
  // ".spec.a.b" → "/spec/a/b": dotted segments only (the API server refuses array notation there).
  std::string pointer;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] != '.') {
      error = "specReplicasPath " + path + " is not a dotted path";
      return std::nullopt;
    }
    const size_t end = std::min(path.find('.', i + 1), path.size());
    const auto segment = std::string_view{path}.substr(i + 1, end - i - 1);
    if (segment.empty() || segment.find_first_of("[]*'\" ") != std::string_view::npos) {
      error = "specReplicasPath " + path + " is not a dotted path";
      return std::nullopt;
    }
    pointer += '/';
    pointer += json_pointer_escape(segment);
    i = end;
  }
  if (pointer.rfind("/spec/", 0) != 0) {
    error = "specReplicasPath " + path + " is not under .spec";
    return std::nullopt;
  }
  return pointer;
}

}  // namespace headroom::k8s
