#include "adapters/k8s/fields.hpp"

#include <simdjson.h>

namespace headroom::k8s {
namespace {

// The element at `path` in a parsed document; an error if any step is missing.
simdjson::simdjson_result<simdjson::dom::element> walk(simdjson::dom::parser& p, std::string_view body,
                                                       std::initializer_list<std::string_view> path) {
  auto v = p.parse(body.data(), body.size());
  for (auto key : path) {
    if (v.error())
      return v;
    v = v[key];
  }
  return v;
}

}  // namespace

std::string string_at(std::string_view body, std::initializer_list<std::string_view> path) {
  simdjson::dom::parser p;
  std::string_view s;
  if (walk(p, body, path).get(s) != simdjson::SUCCESS)
    return {};
  return std::string{s};
}

std::optional<int64_t> int_at(std::string_view body, std::initializer_list<std::string_view> path) {
  simdjson::dom::parser p;
  int64_t v = 0;
  if (walk(p, body, path).get(v) != simdjson::SUCCESS)
    return std::nullopt;
  return v;
}

std::optional<std::string> json_at(std::string_view body, std::initializer_list<std::string_view> path) {
  simdjson::dom::parser p;
  simdjson::dom::element e;
  if (walk(p, body, path).get(e) != simdjson::SUCCESS)
    return std::nullopt;
  return simdjson::minify(e);
}

std::vector<std::string> item_names(std::string_view body) {
  simdjson::dom::parser p;
  simdjson::dom::array items;
  std::vector<std::string> out;
  if (walk(p, body, {"items"}).get(items) != simdjson::SUCCESS)
    return out;
  for (auto item : items) {
    std::string_view name;
    if (item["metadata"]["name"].get(name) == simdjson::SUCCESS)
      out.emplace_back(name);
  }
  return out;
}

std::vector<std::string> item_names_labelled(std::string_view body, std::string_view key, std::string_view value) {
  simdjson::dom::parser p;
  simdjson::dom::array items;
  std::vector<std::string> out;
  if (walk(p, body, {"items"}).get(items) != simdjson::SUCCESS)
    return out;
  for (auto item : items) {
    std::string_view name, label;
    if (item["metadata"]["name"].get(name) != simdjson::SUCCESS)
      continue;
    if (item["metadata"]["labels"][key].get(label) != simdjson::SUCCESS)
      label = {};
    if (label == value)
      out.emplace_back(name);
  }
  return out;
}

std::optional<newest_item> newest_live_item(std::string_view body) {
  simdjson::dom::parser p;
  simdjson::dom::array items;
  if (walk(p, body, {"items"}).get(items) != simdjson::SUCCESS)
    return std::nullopt;
  std::optional<newest_item> out;
  std::string_view newest_at;
  for (auto item : items) {
    std::string_view name, created, deleting;
    if (item["metadata"]["name"].get(name) != simdjson::SUCCESS || name.empty() ||
        item["metadata"]["deletionTimestamp"].get(deleting) == simdjson::SUCCESS)
      continue;
    if (item["metadata"]["creationTimestamp"].get(created) != simdjson::SUCCESS)
      created = {};
    if (out && created < newest_at)
      continue;
    int64_t patch = 0;
    if (item["spec"]["patchID"].get(patch) != simdjson::SUCCESS)
      patch = 0;
    out = newest_item{std::string{name}, patch};
    newest_at = created;
  }
  return out;
}

std::optional<std::vector<object_key>> item_keys(std::string_view body) {
  simdjson::dom::parser p;
  simdjson::dom::array items;
  if (walk(p, body, {"items"}).get(items) != simdjson::SUCCESS)
    return std::nullopt;
  std::vector<object_key> out;
  for (auto item : items) {
    std::string_view ns, name;
    if (item["metadata"]["namespace"].get(ns) == simdjson::SUCCESS && item["metadata"]["name"].get(name) == simdjson::SUCCESS)
      out.push_back({std::string{ns}, std::string{name}});
  }
  return out;
}

scale_set_session scale_set_session_of(std::string_view body) {
  simdjson::dom::parser p;
  scale_set_session out;
  simdjson::dom::element status;
  if (walk(p, body, {"status"}).get(status) != simdjson::SUCCESS)
    return out;
  std::string_view session;
  if (status["session"].get(session) != simdjson::SUCCESS)
    return out;
  out.session = std::string{session};
  simdjson::dom::array conditions;
  if (status["conditions"].get(conditions) != simdjson::SUCCESS)
    return out;
  for (auto c : conditions) {
    std::string_view type, since;
    if (c["type"].get(type) == simdjson::SUCCESS && type == "SessionOpen" && c["lastTransitionTime"].get(since) == simdjson::SUCCESS) {
      out.open_since = std::string{since};
      break;
    }
  }
  return out;
}

}  // namespace headroom::k8s
