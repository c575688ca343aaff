// Runner pods from a pool's pod template (a PodTemplateSpec as JSON): checked once when the
// configuration is read, then copied per runner with headroom's parts added. RapidJSON's DOM,
// since the template is the user's and may hold any field the API server knows.

#include "actors/runners/pod_json.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace headroom::actors::runners {

using namespace pod_json;

namespace {

std::optional<std::string> check_string_map(const Value& m, const std::string& where, bool refuse_ours) {
  if (!m.IsObject())
    return where + ": expected a map of strings";
  for (auto it = m.MemberBegin(); it != m.MemberEnd(); ++it) {
    const std::string key{view(it->name)};
    if (!it->value.IsString())
      return where + "." + key + ": expected a string (quote it)";
    if (refuse_ours && key.rfind("headroom.dev/", 0) == 0)
      return where + "." + key + ": headroom.dev/ labels are headroom's own";
  }
  return std::nullopt;
}

std::optional<std::string> check_metadata(const Value& md) {
  if (!md.IsObject())
    return std::string{"metadata: expected a map"};
  for (auto it = md.MemberBegin(); it != md.MemberEnd(); ++it) {
    const auto key = view(it->name);
    if (key == "labels") {
      if (auto e = check_string_map(it->value, "metadata.labels", true))
        return e;
    } else if (key == "annotations") {
      if (auto e = check_string_map(it->value, "metadata.annotations", false))
        return e;
    } else {
      return "metadata." + std::string{key} + ": only labels and annotations (headroom names each runner pod)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_containers(const Value& spec) {
  if (!spec.HasMember("containers") || !spec["containers"].IsArray() || spec["containers"].Empty())
    return std::string{"spec.containers: expected a list with a container named runner"};
  int runners = 0;
  const auto& cs = spec["containers"];
  for (rapidjson::SizeType i = 0; i < cs.Size(); ++i) {
    const std::string where = "spec.containers[" + std::to_string(i) + "]";
    if (!cs[i].IsObject() || !cs[i].HasMember("name") || !cs[i]["name"].IsString())
      return where + ".name: expected a string";
    if (view(cs[i]["name"]) != "runner")
      continue;
    ++runners;
    if (!cs[i].HasMember("image") || !cs[i]["image"].IsString() || cs[i]["image"].GetStringLength() == 0)
      return where + ".image: the runner container needs an image";
    if (cs[i].HasMember("env") && !cs[i]["env"].IsArray())
      return where + ".env: expected a list";
    if (cs[i].HasMember("resources") && !cs[i]["resources"].IsObject())
      return where + ".resources: expected a map";
  }
  if (runners != 1)
    return "spec.containers: expected exactly one container named runner (it gets the JIT config), found " + std::to_string(runners);
  return std::nullopt;
}

// The JIT config's env entries first, any of the same names the template has dropped.
void add_jit_env(Value& runner, const std::string& name, Document::AllocatorType& a) {
  Value env{rapidjson::kArrayType};
  for (const char* var : {"ACTIONS_RUNNER_INPUT_JITCONFIG", "RUNNER_JITCONFIG"}) {
    Value ref{rapidjson::kObjectType};
    ref.AddMember("name", str(name, a), a).AddMember("key", "jitToken", a);
    Value from{rapidjson::kObjectType};
    from.AddMember("secretKeyRef", ref, a);
    Value e{rapidjson::kObjectType};
    e.AddMember("name", Value{var, a}, a).AddMember("valueFrom", from, a);
    env.PushBack(e, a);
  }
  if (auto it = runner.FindMember("env"); it != runner.MemberEnd() && it->value.IsArray())
    for (auto& e : it->value.GetArray()) {
      const bool ours = e.IsObject() && e.HasMember("name") && e["name"].IsString() &&
                        (view(e["name"]) == "ACTIONS_RUNNER_INPUT_JITCONFIG" || view(e["name"]) == "RUNNER_JITCONFIG");
      if (!ours)
        env.PushBack(Value{e, a}, a);
    }
  set_member(runner, "env", std::move(env), a);
}

// One of the slot resource, requested and limited (an extended resource cannot be overcommitted).
void add_slot(Value& runner, const std::string& resource, Document::AllocatorType& a) {
  if (resource.empty())
    return;
  auto& res = object_member(runner, "resources", a);
  for (const char* side : {"requests", "limits"})
    set_member(object_member(res, side, a), resource.c_str(), Value{"1", a}, a);
}

std::optional<std::string> parse_template(const std::string& template_json, Document& d) {
  if (d.Parse(template_json.data(), template_json.size()).HasParseError() || !d.IsObject())
    return std::string{"expected a pod template: a map with metadata and spec"};
  for (auto it = d.MemberBegin(); it != d.MemberEnd(); ++it)
    if (view(it->name) != "metadata" && view(it->name) != "spec")
      return std::string{view(it->name)} + ": a pod template has only metadata and spec";
  if (d.HasMember("metadata"))
    if (auto e = check_metadata(d["metadata"]))
      return e;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_pod_template(const std::string& template_json, pod_template_facts* facts) {
  Document d;
  if (auto e = parse_template(template_json, d))
    return e;
  if (!d.HasMember("spec") || !d["spec"].IsObject())
    return std::string{"spec: expected a map (a PodSpec)"};
  const auto& spec = d["spec"];
  if (auto e = check_containers(spec))
    return e;
  if (spec.HasMember("restartPolicy") && !(spec["restartPolicy"].IsString() && view(spec["restartPolicy"]) == "Never"))
    return std::string{"spec.restartPolicy: a runner takes one job, so Never (or leave it out)"};
  if (spec.HasMember("nodeSelector")) {
    if (auto e = check_string_map(spec["nodeSelector"], "spec.nodeSelector", false))
      return e;
    if (facts != nullptr) {
      facts->node_selector.clear();
      for (auto it = spec["nodeSelector"].MemberBegin(); it != spec["nodeSelector"].MemberEnd(); ++it)
        facts->node_selector.emplace_back(std::string{view(it->name)}, std::string{view(it->value)});
    }
  }
  return std::nullopt;
}

namespace {

// A quantity as written: a string, or a number the YAML left unquoted.
std::optional<std::string> quantity_text(const Value& v) {
  if (v.IsString())
    return std::string{view(v)};
  if (v.IsInt64())
    return std::to_string(v.GetInt64());
  if (v.IsNumber()) {
    rapidjson::StringBuffer b;
    rapidjson::Writer<rapidjson::StringBuffer> w{b};
    v.Accept(w);
    return std::string{b.GetString(), b.GetSize()};
  }
  return std::nullopt;
}

std::string to_json(const Value& v) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w{b};
  v.Accept(w);
  return {b.GetString(), b.GetSize()};
}

// The runner container's requests (cpu and memory required; extended ones equal to their limits).
std::optional<std::string> runner_requests(const Value& c, const std::string& where, runner_template_facts& f) {
  const std::string at = where + ".resources.requests";
  if (!c.HasMember("resources") || !c["resources"].HasMember("requests") || !c["resources"]["requests"].IsObject())
    return at + ": required: cpu and memory (the runner placeholder holds that room, and pairs are counted by it)";
  const auto& req = c["resources"]["requests"];
  const Value* limits = c["resources"].HasMember("limits") && c["resources"]["limits"].IsObject() ? &c["resources"]["limits"] : nullptr;
  for (auto it = req.MemberBegin(); it != req.MemberEnd(); ++it) {
    const std::string key{view(it->name)};
    auto q = quantity_text(it->value);
    if (!q)
      return at + "." + key + ": expected a quantity";
    if (key == "cpu") {
      f.cpu = *q;
    } else if (key == "memory") {
      f.memory = *q;
    } else if (key != "ephemeral-storage" && key.rfind("hugepages-", 0) != 0) {
      // An extended resource (a device plugin's) cannot be overcommitted.
      const auto lim = limits && limits->HasMember(key.c_str()) ? quantity_text((*limits)[key.c_str()]) : std::nullopt;
      if (lim != q)
        return where + ".resources.limits." + key + ": an extended resource's limit must equal its request (" + *q + ")";
      f.extended.emplace_back(key, *q);
    }
  }
  if (f.cpu.empty())
    return at + ".cpu: required (the runner placeholder holds the runner's room)";
  if (f.memory.empty())
    return at + ".memory: required (the runner placeholder holds the runner's room)";
  return std::nullopt;
}

std::optional<std::string> runner_tolerations(const Value& spec, runner_template_facts& f) {
  if (!spec.HasMember("tolerations"))
    return std::nullopt;
  const auto& ts = spec["tolerations"];
  if (!ts.IsArray())
    return std::string{"spec.tolerations: expected a list"};
  for (rapidjson::SizeType i = 0; i < ts.Size(); ++i) {
    const std::string at = "spec.tolerations[" + std::to_string(i) + "]";
    if (!ts[i].IsObject())
      return at + ": expected a map";
    k8s::toleration t;
    for (auto it = ts[i].MemberBegin(); it != ts[i].MemberEnd(); ++it) {
      const auto key = view(it->name);
      if (key == "tolerationSeconds") {
        if (!it->value.IsInt64())
          return at + ".tolerationSeconds: expected a whole number";
        t.toleration_seconds = it->value.GetInt64();
        continue;
      }
      if (!it->value.IsString())
        return at + "." + std::string{key} + ": expected a string";
      if (key == "key")
        t.key = view(it->value);
      else if (key == "operator")
        t.op = view(it->value);
      else if (key == "value")
        t.value = view(it->value);
      else if (key == "effect")
        t.effect = view(it->value);
      else
        return at + "." + std::string{key} + ": not a toleration's field (key, operator, value, effect, tolerationSeconds)";
    }
    if (!t.op.empty() && t.op != "Equal" && t.op != "Exists")
      return at + ".operator: expected Equal or Exists, found '" + t.op + "'";
    f.tolerations.push_back(std::move(t));
  }
  return std::nullopt;
}

}  // namespace

runner_template_result read_runner_template(const std::string& template_json) {
  runner_template_result out;
  pod_template_facts pf;
  if (auto e = check_pod_template(template_json, &pf)) {
    out.error = *e;
    return out;
  }
  Document d;
  d.Parse(template_json.data(), template_json.size());
  const auto& spec = d["spec"];
  runner_template_facts f;
  f.node_selector = std::move(pf.node_selector);
  if (spec.HasMember("priorityClassName")) {
    out.error = "spec.priorityClassName: runner pods get the ladder's runner class (priorityClasses.runner); leave it out";
    return out;
  }
  const auto& cs = spec["containers"];
  for (rapidjson::SizeType i = 0; i < cs.Size(); ++i)
    if (named(cs[i], "runner")) {
      f.image = view(cs[i]["image"]);
      if (auto e = runner_requests(cs[i], "spec.containers[" + std::to_string(i) + "]", f)) {
        out.error = *e;
        return out;
      }
    }
  if (auto e = runner_tolerations(spec, f)) {
    out.error = *e;
    return out;
  }
  if (spec.HasMember("serviceAccountName")) {
    if (!spec["serviceAccountName"].IsString()) {
      out.error = "spec.serviceAccountName: expected a string";
      return out;
    }
    f.service_account = view(spec["serviceAccountName"]);
  }
  if (spec.HasMember("affinity")) {
    const auto& af = spec["affinity"];
    if (!af.IsObject()) {
      out.error = "spec.affinity: expected a map";
      return out;
    }
    if (af.HasMember("nodeAffinity") && af["nodeAffinity"].IsObject() &&
        af["nodeAffinity"].HasMember("requiredDuringSchedulingIgnoredDuringExecution")) {
      const auto& req = af["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
      if (!req.IsObject()) {
        out.error = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: expected a map (nodeSelectorTerms)";
        return out;
      }
      f.required_node_affinity = to_json(req);
    }
  }
  out.facts = std::move(f);
  return out;
}

namespace {

// json::workflow_room_affinity's preference, after the template's own preferred pod affinities.
void add_workflow_room_affinity(Value& spec, const runner_spec& s, Document::AllocatorType& a) {
  const auto ours = json::workflow_room_affinity(s);
  if (ours.empty())
    return;
  Document d;
  d.Parse(ours.data(), ours.size());
  constexpr const char* preferred = "preferredDuringSchedulingIgnoredDuringExecution";
  auto& pod_affinity = object_member(object_member(spec, "affinity", a), "podAffinity", a);
  if (!(pod_affinity.HasMember(preferred) && pod_affinity[preferred].IsArray()))
    set_member(pod_affinity, preferred, Value{rapidjson::kArrayType}, a);
  for (auto& term : d[preferred].GetArray())
    pod_affinity[preferred].PushBack(Value{term, a}, a);
}

}  // namespace

std::string runner_pod_from_template(const std::string& template_json, const runner_spec& s, const std::string& pool,
                                     const std::string& name, int64_t runner_id, std::string_view scope) {
  Document t;
  t.Parse(template_json.data(), template_json.size());  // checked when the configuration was read
  Document pod{rapidjson::kObjectType};
  auto& a = pod.GetAllocator();
  pod.AddMember("apiVersion", "v1", a).AddMember("kind", "Pod", a);
  Value md{rapidjson::kObjectType};
  if (t.IsObject() && t.HasMember("metadata") && t["metadata"].IsObject())
    md.CopyFrom(t["metadata"], a);
  set_member(md, "name", str(name, a), a);
  set_member(md, "namespace", str(s.ns, a), a);
  auto& labels = object_member(md, "labels", a);
  set_member(labels, keys::scale_set, str(s.name, a), a);
  set_member(labels, keys::role, Value{role_label(role::runner), a}, a);
  if (!pool.empty())
    set_member(labels, keys::pool, str(pool, a), a);
  if (s.arc_labels) {
    set_member(labels, keys::arc_scale_set_name, str(s.name, a), a);
    set_member(labels, keys::arc_scale_set_namespace, str(s.ns, a), a);
  }
  auto& notes = object_member(md, "annotations", a);
  set_member(notes, keys::runner_id, str(std::to_string(runner_id), a), a);
  set_member(notes, keys::runner_name, str(name, a), a);
  if (!scope.empty())
    set_member(notes, keys::runner_scope, str(scope, a), a);
  pod.AddMember("metadata", md, a);

  Value spec{rapidjson::kObjectType};
  if (t.IsObject() && t.HasMember("spec") && t["spec"].IsObject())
    spec.CopyFrom(t["spec"], a);
  set_member(spec, "restartPolicy", Value{"Never", a}, a);
  if (!s.runner_priority_class.empty())
    set_member(spec, "priorityClassName", str(s.runner_priority_class, a), a);
  if (s.active_deadline_seconds > 0 && !spec.HasMember("activeDeadlineSeconds"))
    spec.AddMember("activeDeadlineSeconds", Value{s.active_deadline_seconds}, a);
  add_workflow_room_affinity(spec, s, a);
  // Before walking the containers, the lists the mode's parts go into: no member moves under them.
  if (s.mode != runner_spec::container_mode::none && !(spec.HasMember("volumes") && spec["volumes"].IsArray()))
    set_member(spec, "volumes", Value{rapidjson::kArrayType}, a);
  if (workflow_in_runner_pod(s) && !(spec.HasMember("initContainers") && spec["initContainers"].IsArray()))
    set_member(spec, "initContainers", Value{rapidjson::kArrayType}, a);
  if (spec.HasMember("containers") && spec["containers"].IsArray())
    for (auto& c : spec["containers"].GetArray())
      if (named(c, "runner")) {
        add_jit_env(c, name, a);
        add_slot(c, s.slot_resource, a);
        add_mode_parts(spec, c, s, a);
      }
  pod.AddMember("spec", spec, a);

  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w{out};
  pod.Accept(w);
  return {out.GetString(), out.GetSize()};
}

std::string pinned_to_workflow_room(const std::string& runner_pod_json, const workflow_room& room) {
  Document pod;
  pod.Parse(runner_pod_json.data(), runner_pod_json.size());
  if (!pod.IsObject() || !pod.HasMember("spec") || !pod["spec"].IsObject())
    return runner_pod_json;
  auto& a = pod.GetAllocator();
  auto& notes = object_member(object_member(pod, "metadata", a), "annotations", a);
  set_member(notes, keys::workflow_room, str(room.slot, a), a);
  Value values{rapidjson::kArrayType};
  values.PushBack(str(room.node, a), a);
  Value requirement{rapidjson::kObjectType};
  requirement.AddMember("key", "metadata.name", a).AddMember("operator", "In", a).AddMember("values", values, a);
  Value fields{rapidjson::kArrayType};
  fields.PushBack(requirement, a);
  Value term{rapidjson::kObjectType};
  term.AddMember("matchFields", fields, a);
  Value terms{rapidjson::kArrayType};
  terms.PushBack(term, a);
  Value required{rapidjson::kObjectType};
  required.AddMember("nodeSelectorTerms", terms, a);
  auto& node_affinity = object_member(object_member(pod["spec"], "affinity", a), "nodeAffinity", a);
  set_member(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", std::move(required), a);
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w{out};
  pod.Accept(w);
  return {out.GetString(), out.GetSize()};
}

std::optional<std::string> check_hook_template(const std::string& template_json) {
  Document d;
  if (auto e = parse_template(template_json, d))
    return e;
  if (!d.HasMember("spec"))
    return std::nullopt;
  if (!d["spec"].IsObject())
    return std::string{"spec: expected a map (a PodSpec)"};
  if (auto it = d["spec"].FindMember("containers"); it != d["spec"].MemberEnd()) {
    if (!it->value.IsArray())
      return std::string{"spec.containers: expected a list"};
    for (rapidjson::SizeType i = 0; i < it->value.Size(); ++i) {
      const auto& c = it->value[i];
      if (!c.IsObject() || !c.HasMember("name") || !c["name"].IsString())
        return "spec.containers[" + std::to_string(i) + "].name: expected a string ($job patches the job container)";
    }
  }
  return std::nullopt;
}

std::string merge_hook_templates(const std::string& user, const std::string& ours) {
  Document out, o;
  out.Parse(user.data(), user.size());  // checked when the configuration was read
  o.Parse(ours.data(), ours.size());
  if (!out.IsObject() || !o.IsObject())
    return ours;
  auto& a = out.GetAllocator();
  auto& labels = object_member(object_member(out, "metadata", a), "labels", a);
  for (auto it = o["metadata"]["labels"].MemberBegin(); it != o["metadata"]["labels"].MemberEnd(); ++it)
    set_member(labels, it->name.GetString(), Value{it->value, a}, a);
  auto& spec = object_member(out, "spec", a);
  const bool placed = spec.HasMember("nodeSelector") || spec.HasMember("tolerations") || spec.HasMember("affinity");
  for (auto it = o["spec"].MemberBegin(); it != o["spec"].MemberEnd(); ++it) {
    const auto key = view(it->name);
    if (key == "containers")
      continue;
    if ((key == "nodeSelector" || key == "tolerations") && placed)
      continue;
    set_member(spec, it->name.GetString(), Value{it->value, a}, a);
  }
  // The `$job` patch: the user's, with headroom's resources.
  const auto& our_job = o["spec"]["containers"][0];
  auto cs = spec.FindMember("containers");
  if (cs == spec.MemberEnd() || !cs->value.IsArray()) {
    set_member(spec, "containers", Value{rapidjson::kArrayType}, a);
    cs = spec.FindMember("containers");
  }
  Value* job = nullptr;
  for (auto& c : cs->value.GetArray())
    if (c.IsObject() && c.HasMember("name") && c["name"].IsString() && view(c["name"]) == "$job")
      job = &c;
  if (job == nullptr) {
    cs->value.PushBack(Value{our_job, a}, a);
  } else {
    set_member(*job, "resources", Value{our_job["resources"], a}, a);
  }
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  out.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

}  // namespace headroom::actors::runners
