#pragma once

// The RapidJSON helpers the runner pod builders share (pod_template.cpp, pod_modes.cpp): the user's
// pod template is a DOM, and headroom's parts are put into it by name. Internal to actors/runners/.

// Raw pointers as member iterators: the iterator class's comparisons are ambiguous in C++20.
#define RAPIDJSON_NOMEMBERITERATORCLASS
#include <rapidjson/document.h>

#include <string_view>

#include "actors/runners/pods.hpp"

namespace headroom::actors::runners::pod_json {

using rapidjson::Document;
using rapidjson::Value;

inline std::string_view view(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

inline void set_member(Value& obj, const char* key, Value v, Document::AllocatorType& a) {
  if (auto it = obj.FindMember(key); it != obj.MemberEnd())
    it->value = std::move(v);
  else
    obj.AddMember(Value{key, a}, std::move(v), a);
}

inline Value& object_member(Value& obj, const char* key, Document::AllocatorType& a) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsObject()) {
    set_member(obj, key, Value{rapidjson::kObjectType}, a);
    it = obj.FindMember(key);
  }
  return it->value;
}

inline Value str(std::string_view s, Document::AllocatorType& a) { return Value{s.data(), static_cast<rapidjson::SizeType>(s.size()), a}; }

inline bool named(const Value& v, std::string_view name) {
  return v.IsObject() && v.HasMember("name") && v["name"].IsString() && view(v["name"]) == name;
}

// `item` (named) into the list obj[list]: over the entry of its name when `replace`, else only if none.
inline void put_named(Value& obj, const char* list, Value item, bool replace, Document::AllocatorType& a) {
  auto it = obj.FindMember(list);
  if (it == obj.MemberEnd() || !it->value.IsArray()) {
    set_member(obj, list, Value{rapidjson::kArrayType}, a);
    it = obj.FindMember(list);
  }
  for (auto& v : it->value.GetArray())
    if (named(v, view(item["name"]))) {
      if (replace)
        v = std::move(item);
      return;
    }
  it->value.PushBack(std::move(item), a);
}

// The container mode's parts on the runner container and the pod (pod_modes.cpp): the env the mode
// sets, the hook template's volume, kubernetes mode's `work` volume, dind's sidecar and volumes.
void add_mode_parts(Value& spec, Value& runner, const runner_spec& s, Document::AllocatorType& a);

}  // namespace headroom::actors::runners::pod_json
