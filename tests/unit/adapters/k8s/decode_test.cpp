#include "adapters/k8s/decode.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

using namespace headroom::k8s;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in{std::string{HEADROOM_FIXTURES} + "/" + name};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <class T>
T ok(decoded<T> d) {
  if (auto* e = std::get_if<decode_error>(&d)) {
    ADD_FAILURE() << e->message;
    return T{};
  }
  return std::move(std::get<T>(d));
}

template <class T>
std::string err(const decoded<T>& d) {
  if (std::holds_alternative<T>(d)) {
    ADD_FAILURE() << "decoded without error";
    return "";
  }
  return std::get<decode_error>(d).message;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos)
    s.replace(pos, from.size(), to);
  return s;
}

// `json` with one byte of every object key written as a \u escape: the first byte, or the last.
std::string escape_every_key(const std::string& json, bool last) {
  std::string out;
  size_t i = 0;
  while (i < json.size()) {
    if (json[i] != '"') {
      out += json[i++];
      continue;
    }
    size_t end = i + 1;  // the closing quote
    while (json[end] != '"')
      end += json[end] == '\\' ? 2 : 1;
    size_t after = end + 1;
    while (after < json.size() && std::isspace(static_cast<unsigned char>(json[after])))
      ++after;
    std::string text = json.substr(i, end + 1 - i);
    const size_t at = last ? text.size() - 2 : 1;
    if (after < json.size() && json[after] == ':' && text.size() > 2 && text[at] != '\\' &&
        (at == 1 || text[at - 1] != '\\')) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned char>(text[at]));
      text.replace(at, 1, hex);
    }
    out += text;
    i = end + 1;
  }
  return out;
}

void expect_same_pod(const pod& a, const pod& b) {
  EXPECT_EQ(a.meta.name, b.meta.name);
  EXPECT_EQ(a.meta.ns, b.meta.ns);
  EXPECT_EQ(a.meta.uid, b.meta.uid);
  EXPECT_EQ(a.meta.resource_version, b.meta.resource_version);
  EXPECT_EQ(a.meta.created, b.meta.created);
  EXPECT_EQ(*a.meta.labels, *b.meta.labels);
  EXPECT_EQ(*a.meta.annotations, *b.meta.annotations);
  EXPECT_EQ(*a.meta.owners, *b.meta.owners);
  EXPECT_EQ(*a.spec, *b.spec);
  EXPECT_EQ(*a.conditions, *b.conditions);
  EXPECT_EQ(*a.container_statuses, *b.container_statuses);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.node_name, b.node_name);
  EXPECT_EQ(a.priority, b.priority);
}

}  // namespace

// A pod as the real apiserver returns it, with every field headroom reads.
TEST(decode, pod_fields_from_the_apiserver) {
  const auto json = fixture("pod_full.json");
  const auto p = ok(decode_pod(json));
  EXPECT_EQ(p.meta.name, "workflow-placeholder-7");
  EXPECT_EQ(p.meta.ns, "ci");
  EXPECT_EQ(p.meta.uid.size(), 36u);
  EXPECT_FALSE(p.meta.resource_version.empty());
  ASSERT_NE(p.meta.label("headroom.dev/slot"), nullptr);
  EXPECT_EQ(*p.meta.label("headroom.dev/slot"), "7");
  ASSERT_NE(p.meta.annotation("note"), nullptr);
  EXPECT_EQ(*p.meta.annotation("note"), "line one\nline \"two\"") << "escapes are decoded";
  EXPECT_EQ(p.spec->priority_class_name, "placeholder-workflow");
  EXPECT_EQ(p.priority, 10) << "resolved by Priority admission";
  EXPECT_EQ(p.spec->preemption_policy, "Never");
  EXPECT_EQ(p.spec->scheduler_name, "default-scheduler");
  EXPECT_EQ(p.spec->scheduling_gates, (std::vector<std::string>{"headroom.dev/queue"}));
  EXPECT_EQ(p.spec->node_selector.size(), 2u);
  ASSERT_EQ(p.spec->required_node_affinity.size(), 1u);
  ASSERT_EQ(p.spec->required_node_affinity[0].match_expressions.size(), 2u);
  EXPECT_EQ(p.spec->required_node_affinity[0].match_expressions[0].key, "topology.kubernetes.io/zone");
  EXPECT_EQ(p.spec->required_node_affinity[0].match_expressions[0].values,
            (std::vector<std::string>{"test-zone-a", "test-zone-b"}));
  EXPECT_EQ(p.spec->required_node_affinity[0].match_expressions[1].op, "NotIn");
  ASSERT_EQ(p.spec->required_pod_affinity.size(), 1u);
  EXPECT_EQ(p.spec->required_pod_affinity[0].topology_key, "topology.kubernetes.io/zone");
  EXPECT_EQ(p.spec->required_pod_affinity[0].selector.match_labels, (string_pairs{{"app", "build-cache"}}));
  // Ours plus the not-ready toleration the DefaultTolerationSeconds admission plugin adds.
  ASSERT_EQ(p.spec->tolerations.size(), 3u);
  EXPECT_EQ(p.spec->tolerations[0].value, "ci");
  for (const auto& t : p.spec->tolerations) {
    if (t.key == "node.kubernetes.io/unreachable") {
      EXPECT_EQ(t.toleration_seconds, 30);
    } else if (t.key == "node.kubernetes.io/not-ready") {
      EXPECT_EQ(t.toleration_seconds, 300);
    }
  }
  ASSERT_EQ(p.spec->topology_spread.size(), 1u);
  EXPECT_EQ(p.spec->topology_spread[0].when_unsatisfiable, "ScheduleAnyway");
  EXPECT_EQ(p.spec->topology_spread[0].max_skew, 1);
  EXPECT_EQ(p.phase, "Pending");
  const auto* scheduled = p.find_condition("PodScheduled");
  ASSERT_NE(scheduled, nullptr);
  EXPECT_EQ(scheduled->reason, "SchedulingGated");
}

// max(containers + sidecars, largest init stage with the sidecars started before it) + overhead:
//   containers 1500m+250m, 2Gi+256Mi; sidecar 100m/64Mi → 1850m, 2368Mi
//   init stages: fetch 2 / 1Gi; warm-cache 500m+100m / 3Gi+64Mi → peak 2000m, 3136Mi
//   max → 2000m, 3136Mi; + overhead 250m, 120Mi → 2250m, 3256Mi
TEST(decode, effective_requests_follow_the_scheduler) {
  const auto p = ok(decode_pod(fixture("pod_full.json")));
  EXPECT_EQ(p.spec->requests.cpu_milli, 2250);
  EXPECT_EQ(p.spec->requests.memory, 3256ll << 20);
  EXPECT_EQ(p.spec->requests.ephemeral_storage, 10ll << 30);
  EXPECT_EQ(p.spec->requests.get("nvidia.com/gpu"), 1);
}

TEST(decode, node_fields) {
  const auto n = ok(decode_node(fixture("node_gpu.json")));
  EXPECT_EQ(n.meta.name, "kwok-gpu-0");
  EXPECT_TRUE(n.unschedulable) << "cordoned";
  EXPECT_EQ(n.capacity.cpu_milli, 8000);
  EXPECT_EQ(n.allocatable.cpu_milli, 7910);
  EXPECT_EQ(n.allocatable.memory, 31ll << 30);
  EXPECT_EQ(n.allocatable.get("nvidia.com/gpu"), 1);
  EXPECT_EQ(n.allocatable.pods, 58);
  bool gpu_taint = false, unschedulable_taint = false;
  for (const auto& t : n.taints) {
    gpu_taint = gpu_taint || (t.key == "nvidia.com/gpu" && t.effect == "NoSchedule");
    unschedulable_taint = unschedulable_taint || t.key == "node.kubernetes.io/unschedulable";
  }
  EXPECT_TRUE(gpu_taint);
  EXPECT_TRUE(unschedulable_taint);
  bool ready = false;
  for (const auto& c : n.conditions)
    ready = ready || (c.type == "Ready" && c.status == "True");
  EXPECT_TRUE(ready) << "kwok's node-initialize stage";
}

TEST(decode, priority_class_lease_and_event) {
  const auto pc = ok(decode_priority_class(fixture("priorityclass.json")));
  EXPECT_EQ(pc.meta.name, "placeholder-workflow");
  EXPECT_EQ(pc.value, 10);
  EXPECT_EQ(pc.preemption_policy, "Never");
  const auto l = ok(decode_lease(fixture("lease.json")));
  EXPECT_EQ(l.meta.name, "kwok-gpu-0");
  EXPECT_EQ(l.meta.ns, "kube-node-lease");
  EXPECT_EQ(l.holder_identity.rfind("vm_", 0), 0u) << "kwok's lease holder";
  EXPECT_EQ(l.lease_duration_seconds, 40);
  EXPECT_FALSE(l.renew_time.empty());
  const auto e = ok(decode_event(fixture("event.json")));
  EXPECT_EQ(e.reason, "RegisteredNode");
  EXPECT_EQ(e.involved_kind, "Node");
  EXPECT_EQ(e.type, "Normal");
}

// #61: a timed-out pair says what Karpenter said about its placeholder, which only an Event holds.
// Karpenter's recorder writes core/v1 Events (source.component), events.k8s.io/v1 recorders
// reportingComponent; the newest by lastTimestamp, eventTime or series.lastObservedTime wins.
TEST(decode, the_newest_event_a_component_said) {
  const std::string list = R"({"kind":"EventList","metadata":{"resourceVersion":"9"},"items":[
    {"metadata":{"name":"a","namespace":"ci"},"reason":"FailedScheduling","message":"0/3 nodes are available",
     "source":{"component":"default-scheduler"},"lastTimestamp":"2026-11-28T07:00:09Z"},
    {"metadata":{"name":"b","namespace":"ci"},"reason":"Nominated","message":"Pod should schedule on: nodeclaim/x",
     "source":{"component":"karpenter"},"lastTimestamp":"2026-11-28T07:00:01Z"},
    {"metadata":{"name":"c","namespace":"ci"},"reason":"FailedScheduling",
     "message":"Failed to schedule pod, all available instance types exceed limits for nodepool: \"default\"",
     "source":{"component":"karpenter"},"lastTimestamp":"2026-11-28T07:00:05Z"},
    {"metadata":{"name":"d","namespace":"ci"},"reason":"Old","message":"older","reportingComponent":"karpenter",
     "eventTime":"2026-11-28T06:59:00.000000Z"},
    {"metadata":{"name":"e","namespace":"ci"},"count":"not a number"}]})";
  EXPECT_EQ(newest_event_from(list, "karpenter"),
            "FailedScheduling: Failed to schedule pod, all available instance types exceed limits for nodepool: \"default\"");
  EXPECT_EQ(newest_event_from(list, "default-scheduler"), "FailedScheduling: 0/3 nodes are available");
  EXPECT_EQ(newest_event_from(list, "kubelet"), "");
  const std::string series = R"({"items":[{"metadata":{"name":"a"},"reason":"R1","reportingComponent":"karpenter","eventTime":"2026-11-28T07:00:00.000000Z",
    "series":{"count":4,"lastObservedTime":"2026-11-28T07:10:00.000000Z"}},
    {"metadata":{"name":"b"},"reason":"R2","source":{"component":"karpenter"},"lastTimestamp":"2026-11-28T07:05:00Z"}]})";
  EXPECT_EQ(newest_event_from(series, "karpenter"), "R1") << "a series' last observation counts";
  const std::string long_one = R"({"items":[{"metadata":{"name":"a"},"reason":"R","message":")" + std::string(1000, 'x') +
                               R"(","source":{"component":"karpenter"}}]})";
  EXPECT_EQ(newest_event_from(long_one, "karpenter").size(), std::string{"R: "}.size() + 400 + std::string{"…"}.size());
  for (const char* bad : {"", "null", "[]", "{\"items\":7}", "{\"items\":[1,2]", "{\"items\":[{\"source\":3}]}"})
    EXPECT_EQ(newest_event_from(bad, "karpenter"), "") << bad;
}

TEST(decode, unstructured_keeps_raw_json_and_metadata) {
  const std::string cr = R"({"apiVersion":"bigfleet.lucy.sh/v1alpha1","kind":"CapacityRequest",
    "metadata":{"name":"cr-1","namespace":"ci","uid":"u-1","resourceVersion":"42","labels":{"pod-uid":"p-1"}},
    "spec":{"resources":{"cpu":"2"}},"status":{"phase":"Pending"}})";
  const auto u = ok(decode_unstructured(cr));
  EXPECT_EQ(u.kind, "CapacityRequest");
  EXPECT_EQ(u.api_version, "bigfleet.lucy.sh/v1alpha1");
  EXPECT_EQ(u.meta.name, "cr-1");
  EXPECT_EQ(*u.meta.label("pod-uid"), "p-1");
  EXPECT_NE(u.raw.find("\"phase\":\"Pending\""), std::string::npos);
}

// A list keeps its good items and names the bad one; resourceVersion and continue are read.
TEST(decode, list_keeps_good_items_and_names_the_bad_one) {
  const auto pod = fixture("pod_full.json");
  const auto bad = replace(replace(pod, "\"name\": \"workflow-placeholder-7\"", "\"name\": \"bad-pod\""),
                           "\"cpu\": \"1500m\"", "\"cpu\": \"lots\"");
  const std::string list = R"({"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"981","continue":"abc"},"items":[)" +
                           pod + "," + bad + "," + pod + "]}";
  const auto l = ok(decode_list<headroom::k8s::pod>(list));
  EXPECT_EQ(l.resource_version, "981");
  EXPECT_EQ(l.continue_token, "abc");
  EXPECT_EQ(l.items.size(), 2u);
  ASSERT_EQ(l.errors.size(), 1u);
  EXPECT_EQ(l.errors[0].message,
            "items[1]: Pod ci/bad-pod: spec.containers[0].resources.requests.cpu: invalid quantity \"lots\": "
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
}

// A body cut short is a broken list, whatever item the cut falls in: never the items before the
// cut taken for the whole list (a capped or dropped response made a partial cache look synced).
TEST(decode, a_list_cut_short_anywhere_is_undecodable_never_partial) {
  const auto pod = fixture("pod_full.json");
  const std::string list =
      R"({"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"981"},"items":[)" + pod + "," + pod + "," + pod + "]}";
  ASSERT_EQ(ok(decode_list<headroom::k8s::pod>(list)).items.size(), 3u);
  size_t partial = 0, unnamed = 0;
  for (size_t cut = 1; cut < list.size(); ++cut) {
    const auto r = decode_list<headroom::k8s::pod>(std::string_view{list}.substr(0, cut));
    if (const auto* e = std::get_if<headroom::k8s::decode_error>(&r); e && e->message.rfind("PodList", 0) != 0 && ++unnamed <= 3)
      ADD_FAILURE() << "cut at " << cut << ": the error does not name the list: " << e->message;
    if (const auto* l = std::get_if<headroom::k8s::list_result<headroom::k8s::pod>>(&r)) {
      ++partial;
      ADD_FAILURE() << "cut at " << cut << " of " << list.size() << " decoded as a list of " << l->items.size() << " items and "
                    << l->errors.size() << " errors";
      if (partial > 3)
        break;
    }
  }
  EXPECT_EQ(partial, 0u);
  EXPECT_EQ(unnamed, 0u);
}

TEST(decode, watch_events) {
  const auto added = ok(decode_watch_event<pod>("{\"type\":\"ADDED\",\"object\":" + fixture("pod_full.json") + "}"));
  EXPECT_EQ(added.type, watch_event<pod>::added);
  EXPECT_EQ(added.object.meta.name, "workflow-placeholder-7");
  const auto bookmark = ok(decode_watch_event<pod>(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12345","annotations":{"k8s.io/initial-events-end":"true"}}}})"));
  EXPECT_EQ(bookmark.type, watch_event<pod>::bookmark);
  EXPECT_EQ(bookmark.object.meta.resource_version, "12345");
  const auto gone = ok(decode_watch_event<pod>(
      R"J({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410}})J"));
  EXPECT_EQ(gone.type, watch_event<pod>::error);
  EXPECT_EQ(gone.error_code, 410);
  EXPECT_EQ(gone.error_message, "too old resource version: 1 (2)");
  EXPECT_EQ(err(decode_watch_event<pod>(R"({"type":"EXPLODED","object":{}})")), "watch event: unknown type \"EXPLODED\"");
}

// Wrong types, truncated input and garbage give errors that name the object and the field.
TEST(decode, malformed_input_is_an_error_value) {
  const auto pod = fixture("pod_full.json");
  EXPECT_EQ(err(decode_pod(replace(pod, "\"priority\": 10", "\"priority\": \"high\""))),
            "Pod ci/workflow-placeholder-7: spec.priority: The JSON element does not have the requested type.");
  // A truncated document fails simdjson's structural pass before any field is read.
  EXPECT_EQ(err(decode_pod(pod.substr(0, pod.size() / 2))).rfind("Pod: ", 0), 0u);
  EXPECT_EQ(err(decode_pod("[1,2,3]")).rfind("Pod: ", 0), 0u);
  EXPECT_FALSE(err(decode_pod("")).empty());
  EXPECT_FALSE(err(decode_pod("{\"metadata\":")).empty());
  EXPECT_FALSE(err(decode_node("{\"status\":{\"capacity\":{\"cpu\":[]}}}")).empty());
}

// Nulls where objects or lists are expected mean "absent", as the apiserver's omitempty implies.
TEST(decode, nulls_are_absent) {
  const auto p = ok(decode_pod(R"({"metadata":{"name":"a","labels":null,"ownerReferences":null},
    "spec":{"nodeName":null,"tolerations":null,"containers":[{"name":"c","resources":{"requests":null}}],"priority":null},
    "status":null})"));
  EXPECT_EQ(p.meta.name, "a");
  EXPECT_FALSE(p.priority.has_value());
  EXPECT_EQ(p.spec->requests.cpu_milli, 0);
}

// Pods from one template share one copy of their labels, spec and conditions; a pod that differs
// gets its own, and the shared copy is never changed under the pods holding it.
TEST(decode, equal_parts_are_shared_and_unequal_ones_are_not) {
  const auto json = fixture("pod_full.json");
  const auto a = ok(decode_pod(json));
  const auto b = ok(decode_pod(replace(json, "\"name\": \"workflow-placeholder-7\"", "\"name\": \"other\"")));
  EXPECT_EQ(b.meta.name, "other");
  EXPECT_TRUE(a.spec.same(b.spec));
  EXPECT_TRUE(a.meta.labels.same(b.meta.labels));
  EXPECT_TRUE(a.conditions.same(b.conditions));
  const auto c = ok(decode_pod(replace(json, "\"value\": \"ci\"", "\"value\": \"cd\"")));
  EXPECT_FALSE(a.spec.same(c.spec));
  EXPECT_EQ(c.spec->tolerations[0].value, "cd");
  EXPECT_EQ(a.spec->tolerations[0].value, "ci");
  auto d = a;
  d.meta.labels.edit().emplace_back("extra", "1");
  EXPECT_EQ(d.meta.labels.size(), 4u);
  EXPECT_EQ(a.meta.labels.size(), 3u) << "edit() copies; the shared value is untouched";
  EXPECT_EQ(b.meta.labels.size(), 3u);
}

// The decoder reuses its scratch values from one object to the next: nothing of a rich pod may
// show up in a sparse one decoded after it, in either order, in lists and watch events alike.
TEST(decode, nothing_carries_over_from_the_previous_object) {
  const auto rich = fixture("pod_full.json");
  const std::string sparse = R"({"metadata":{"name":"s","namespace":"ci"},
    "spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"zone"}]}},
            "topologySpreadConstraints":[{"maxSkew":2,"topologyKey":"host","whenUnsatisfiable":"DoNotSchedule"}],
            "tolerations":[{"operator":"Exists"}],
            "containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},
    "status":{"conditions":[{"type":"PodScheduled","status":"True"}]}})";
  for (int round = 0; round < 2; ++round) {
    const auto r = ok(decode_pod(rich));
    EXPECT_EQ(r.spec->tolerations.size(), 3u);
    const auto s = ok(decode_pod(sparse));
    EXPECT_TRUE(s.meta.labels.empty());
    EXPECT_TRUE(s.meta.annotations.empty());
    EXPECT_TRUE(s.spec->priority_class_name.empty());
    EXPECT_TRUE(s.spec->scheduling_gates.empty());
    EXPECT_TRUE(s.spec->node_selector.empty());
    EXPECT_TRUE(s.spec->required_node_affinity.empty());
    ASSERT_EQ(s.spec->required_pod_affinity.size(), 1u);
    EXPECT_TRUE(s.spec->required_pod_affinity[0].selector.match_labels.empty()) << "no labelSelector in this term";
    EXPECT_EQ(s.spec->required_pod_affinity[0].topology_key, "zone");
    ASSERT_EQ(s.spec->topology_spread.size(), 1u);
    EXPECT_TRUE(s.spec->topology_spread[0].selector.match_labels.empty());
    EXPECT_EQ(s.spec->topology_spread[0].max_skew, 2);
    ASSERT_EQ(s.spec->tolerations.size(), 1u);
    EXPECT_EQ(s.spec->tolerations[0].key, "");
    EXPECT_EQ(s.spec->tolerations[0].effect, "");
    EXPECT_FALSE(s.spec->tolerations[0].toleration_seconds.has_value());
    EXPECT_EQ(s.spec->requests, (resource_list{1000, 0, 0, 0, {}}));
    ASSERT_EQ(s.conditions.size(), 1u);
    EXPECT_EQ(s.conditions[0].reason, "");
    EXPECT_EQ(s.conditions[0].message, "");
    const auto list = ok(decode_list<pod>(R"({"metadata":{},"items":[)" + rich + "," + sparse + "]}"));
    ASSERT_EQ(list.items.size(), 2u);
    EXPECT_EQ(list.items[1].spec, s.spec);
    EXPECT_TRUE(list.items[1].spec.same(s.spec)) << "interned";
  }
}

// Keys and values with escapes are unescaped; the fast path only takes strings without any.
TEST(decode, escaped_keys_and_values) {
  const auto p = ok(decode_pod(R"({"metadata":{"name":"e\u0073c","labels":{"a\u002fb":"x\"y","plain":"\u00e9"}},
    "sp\u0065c":{"nodeName":"n1"}})"));
  EXPECT_EQ(p.meta.name, "esc");
  ASSERT_EQ(p.meta.labels.size(), 2u);
  EXPECT_EQ(p.meta.labels[0], (std::pair<std::string, std::string>{"a/b", "x\"y"}));
  EXPECT_EQ(p.meta.labels[1].second, "\xc3\xa9");
  EXPECT_EQ(p.node_name, "n1") << "an escaped field name is still that field";
  EXPECT_EQ(err(decode_pod(R"({"metadata":{"name":7}})")),
            "Pod: metadata.name: The JSON element does not have the requested type.");
}

// Field names are compared as they stand in the input unless a backslash lies within them (the
// decoder indexes an input's backslashes): names after escaped values, names in later list
// items, a name whose escape is past its first 64 bytes, and a name that unescapes to a quote.
TEST(decode, escaped_names_are_found_wherever_the_backslashes_are) {
  const auto p = ok(decode_pod(
      R"({"metadata":{"annotations":{"note":"a\"b\\c"},"na\u006de":"x","\u006eamespace":"ns"},)"
      R"("spec":{"nodeName":"n\"1","sch\u0065dulerName":"s"},"status":{"ph\u0061se":"Pending"}})"));
  EXPECT_EQ(p.meta.annotations[0].second, "a\"b\\c");
  EXPECT_EQ(p.meta.name, "x") << "an escaped name after an escaped value";
  EXPECT_EQ(p.meta.ns, "ns") << "an escape in a name's first byte";
  EXPECT_EQ(p.node_name, "n\"1");
  EXPECT_EQ(p.spec->scheduler_name, "s");
  EXPECT_EQ(p.phase, "Pending");

  const auto list = ok(decode_list<pod>(
      R"({"metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a","annotations":{"x":"\t"}}},)"
      R"({"metadata":{"n\u0061me":"b"}},{"metadata":{"name":"c"}}]})"));
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_EQ(list.items[1].meta.name, "b") << "an escaped name in a later item";
  EXPECT_EQ(list.items[2].meta.name, "c");

  // A name that holds a quote, or is long and escaped past its 64th byte, is no field headroom
  // reads; it is skipped like any other unknown field, and the fields around it are read.
  const std::string long_name = std::string(70, 'a') + "\\u0062";
  const auto q = ok(decode_pod(R"({"metadata":{"na\"me":"wrong",")" + long_name + R"(":"y","name":"right"}})"));
  EXPECT_EQ(q.meta.name, "right");

  // A watch event whose type's name is escaped, and an error naming an escaped field.
  const auto w = ok(decode_watch_event<pod>(R"({"t\u0079pe":"ADDED","object":{"metadata":{"name":"w"}}})"));
  EXPECT_EQ(w.type, watch_event<pod>::added);
  EXPECT_EQ(w.object.meta.name, "w");
  EXPECT_EQ(err(decode_pod(R"({"metadata":{"annotations":{"a":"\n"},"n\u0061me":7}})")),
            "Pod: metadata.name: The JSON element does not have the requested type.");
}

// Every field name the decoder reads, escaped at its first byte or its last, decodes to the same
// Pod: in a single object, in a list (escaped in one item only) and in a watch event.
TEST(decode, a_pod_with_every_field_name_escaped_decodes_the_same) {
  const auto plain_json = fixture("pod_full.json");
  const auto plain = ok(decode_pod(plain_json));
  ASSERT_FALSE(plain.spec->tolerations.empty()) << "the fixture reads many fields";
  for (bool last : {false, true}) {
    SCOPED_TRACE(last ? "last byte escaped" : "first byte escaped");
    const auto escaped_json = escape_every_key(plain_json, last);
    ASSERT_NE(escaped_json, plain_json);
    ASSERT_NE(escaped_json.find(last ? "\"metadat\\u0061\"" : "\"\\u006detadata\""), std::string::npos);
    expect_same_pod(ok(decode_pod(escaped_json)), plain);

    const auto list = ok(decode_list<pod>(R"({"metadata":{"resourceVersion":"1"},"items":[)" + plain_json + "," +
                                          escaped_json + "," + plain_json + "]}"));
    ASSERT_EQ(list.items.size(), 3u);
    for (const auto& item : list.items)
      expect_same_pod(item, plain);

    const auto event = ok(decode_watch_event<pod>(escape_every_key(R"({"type":"MODIFIED","object":)" + plain_json + "}", last)));
    EXPECT_EQ(event.type, watch_event<pod>::modified);
    expect_same_pod(event.object, plain);
  }
}
