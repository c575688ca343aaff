// The container modes' parts of a runner pod made from a template (ARC's containerMode, as
// gha-runner-scale-set 0.14.2 renders it in _helpers.tpl and autoscalingrunnerset.yaml): the env
// each mode sets on the runner container, the hook template's volume, kubernetes mode's `work`
// volume, and dind's init container, sidecar and volumes. What the template already has by name
// stays (as ARC's chart does), except headroom's own hook template volume.

#include "actors/runners/pod_json.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "runtime/json_writer.hpp"

namespace headroom::actors::runners::pod_json {

namespace {

// The container mode's env entries (runner_pod's, json::container_mode_env) after the template's:
// an entry the template sets already is the user's choice and stays (as ARC's chart does).
void add_mode_env(Value& runner, const runner_spec& s, Document::AllocatorType& a) {
  runtime::json_writer w;
  w.begin_array();
  json::container_mode_env(w, s);
  w.end_array();
  const std::string text = w.take();
  Document ours;
  ours.Parse(text.data(), text.size());
  for (auto& e : ours.GetArray())  // add_jit_env made env a list
    put_named(runner, "env", Value{e, a}, false, a);
}

// The hook template's ConfigMap volume and its mount at hook_template_dir (headroom's: replaced).
void add_hook_volume(Value& spec, Value& runner, const std::string& configmap, Document::AllocatorType& a) {
  Value mount{rapidjson::kObjectType};
  mount.AddMember("name", Value{json::hook_volume, a}, a).AddMember("mountPath", Value{hook_template_dir, a}, a);
  mount.AddMember("readOnly", true, a);
  put_named(runner, "volumeMounts", std::move(mount), true, a);
  Value cm{rapidjson::kObjectType};
  cm.AddMember("name", str(configmap, a), a);
  Value volume{rapidjson::kObjectType};
  volume.AddMember("name", Value{json::hook_volume, a}, a).AddMember("configMap", cm, a);
  put_named(spec, "volumes", std::move(volume), true, a);
}

// kubernetes mode's `work` volume and its mount at work_mount_path, as ARC's chart: the user's stay.
void add_work_volume(Value& spec, Value& runner, const runner_spec& s, Document::AllocatorType& a) {
  Value mount{rapidjson::kObjectType};
  mount.AddMember("name", Value{json::work_volume, a}, a).AddMember("mountPath", Value{work_mount_path, a}, a);
  put_named(runner, "volumeMounts", std::move(mount), false, a);
  Document ours;
  ours.Parse(json::work_volume_object(s).c_str());
  put_named(spec, "volumes", Value{ours, a}, false, a);
}

// A pod template's outline, parsed into `d`: an object of metadata (labels and annotations only)
// and spec; why not, naming the field.
// dind: ARC's `init-dind-externals` (the runner image copies its externals for the sidecar) and the
// `dind` sidecar (Kubernetes >= 1.29: an init container restarted Always, ready once `docker info`
// answers) before the template's own init containers; the runner container's DOCKER_HOST and
// RUNNER_WAIT_FOR_DOCKER_IN_SECONDS, and its `work` and `dind-sock` mounts; the `dind-sock`,
// `dind-externals` and `work` (emptyDir) volumes. headroom adds one thing: the sidecar requests the
// scale set's workflowResources, since the job's containers run under it and the pod must hold the
// room its pair reserved for them (ARC's sidecar requests nothing).
void add_dind(Value& spec, Value& runner, const runner_spec& s, Document::AllocatorType& a) {
  Document ours;
  const std::string text = json::dind_parts(s);
  ours.Parse(text.data(), text.size());
  for (auto& e : ours["env"].GetArray())
    put_named(runner, "env", Value{e, a}, false, a);
  for (auto& m : ours["mounts"].GetArray())
    put_named(runner, "volumeMounts", Value{m, a}, false, a);
  for (auto& v : ours["volumes"].GetArray())
    put_named(spec, "volumes", Value{v, a}, false, a);
  Value init{rapidjson::kArrayType};
  for (auto& c : ours["init"].GetArray())
    init.PushBack(Value{c, a}, a);
  if (auto it = spec.FindMember("initContainers"); it != spec.MemberEnd() && it->value.IsArray())
    for (auto& c : it->value.GetArray())
      init.PushBack(Value{c, a}, a);
  set_member(spec, "initContainers", std::move(init), a);
}

}  // namespace

void add_mode_parts(Value& spec, Value& runner, const runner_spec& s, Document::AllocatorType& a) {
  add_mode_env(runner, s, a);
  if (hook_mode(s) && !s.hook_template_configmap.empty())
    add_hook_volume(spec, runner, s.hook_template_configmap, a);
  if (s.mode == runner_spec::container_mode::kubernetes)
    add_work_volume(spec, runner, s, a);
  if (s.mode == runner_spec::container_mode::dind)
    add_dind(spec, runner, s, a);
}

}  // namespace headroom::actors::runners::pod_json

namespace headroom::actors::runners {

std::optional<std::string> dind_name_clash(const std::string& template_json) {
  pod_json::Document t;
  t.Parse(template_json.data(), template_json.size());  // checked by read_runner_template
  if (!t.IsObject() || !t.HasMember("spec") || !t["spec"].IsObject())
    return std::nullopt;
  for (const char* list : {"initContainers", "containers"}) {
    auto it = t["spec"].FindMember(list);
    if (it == t["spec"].MemberEnd() || !it->value.IsArray())
      continue;
    for (rapidjson::SizeType i = 0; i < it->value.Size(); ++i)
      if (pod_json::named(it->value[i], "dind") || pod_json::named(it->value[i], "init-dind-externals"))
        return "spec." + std::string{list} + "[" + std::to_string(i) + "]";
  }
  return std::nullopt;
}

std::string with_dind(const std::string& pod_json, const runner_spec& s) {
  pod_json::Document pod;
  pod.Parse(pod_json.data(), pod_json.size());  // runner_pod's own
  auto& a = pod.GetAllocator();
  auto& spec = pod["spec"];
  if (!spec.HasMember("volumes"))
    spec.AddMember("volumes", pod_json::Value{rapidjson::kArrayType}, a);  // before the walk: no member moves under it
  if (!spec.HasMember("initContainers"))
    spec.AddMember("initContainers", pod_json::Value{rapidjson::kArrayType}, a);
  for (auto& c : spec["containers"].GetArray())
    if (pod_json::named(c, "runner"))
      pod_json::add_dind(spec, c, s, a);
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w{out};
  pod.Accept(w);
  return {out.GetString(), out.GetSize()};
}

}  // namespace headroom::actors::runners
