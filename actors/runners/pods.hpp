#pragma once

// The runner pods both runner paths make (the scale sets' runner_provisioner and the webhook
// scheduler's reconciler), their JIT Secrets, and the labels headroom puts on every pod it makes.
// Pure JSON builders; shared by the two modes, so neither includes the other.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/k8s/objects.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::actors::runners {

// Labels and annotations headroom puts on the pods it makes.
namespace keys {
inline constexpr const char* scale_set = "headroom.dev/scale-set";
inline constexpr const char* role = "headroom.dev/role";
inline constexpr const char* slot = "headroom.dev/slot";
inline constexpr const char* runner_id = "headroom.dev/runner-id";      // runner pods: GitHub's runner id
inline constexpr const char* runner_name = "headroom.dev/runner-name";  // runner pods
// Scheduler runner pods: the GitHub scope their runner is registered in (an organization or
// owner/repo), so a pod no stored worker owns can still be checked with GitHub before it goes.
inline constexpr const char* runner_scope = "headroom.dev/runner-scope";
inline constexpr const char* owner = "headroom.dev/owner";              // the scale set's owner ConfigMap
// Placeholders: a hash of the pod spec they were made with, so a later process adopts only pairs
// its own configuration would make (a changed runner template, resources or TTL: made anew).
inline constexpr const char* spec_hash = "headroom.dev/spec-hash";
// The install an object belongs to (capacity.hpp, owned_instance): on ScaleSet objects and owner
// ConfigMaps, so one install never removes another's.
inline constexpr const char* instance = "headroom.dev/instance";
// Owner ConfigMaps of scale sets declared by ScaleSet objects (owned by them; never swept).
inline constexpr const char* declared = "headroom.dev/declared";
// kubernetes-mode runner pods: the slot of the pair handed to its job whose node it is pinned to
inline constexpr const char* workflow_room = "headroom.dev/workflow-room";
// kubernetes-novolume: the scheduling gate headroom's hook template puts on every workflow pod, which
// headroom removes once it has pinned the pod to the node of the room it holds for it.
inline constexpr const char* held_room_gate = "headroom.dev/held-room";
inline constexpr const char* pool = "headroom.dev/pool";                // scheduler runner pods: the pool that made it
// ARC's labels on runner pods, so ARC users' selectors and dashboards keep working.
inline constexpr const char* arc_scale_set_name = "actions.github.com/scale-set-name";
inline constexpr const char* arc_scale_set_namespace = "actions.github.com/scale-set-namespace";
// On ARC's runner pods ("True"): the pod of an EphemeralRunner (ARC's newEphemeralRunnerPod).
inline constexpr const char* arc_ephemeral_runner = "actions-ephemeral-runner";
}  // namespace keys

// pair_probe: the pod a pair places first, in its runner placeholder's stead (and in kubernetes and dind
// modes holding the whole pair's room), so no runner takes a pair not yet placed (placeholder_pair).
enum class role { runner_placeholder, workflow_placeholder, runner, workflow, pair_probe };
const char* role_label(role r);
// A runner pod: headroom's (role runner) or, in arc mode, one ARC made for an EphemeralRunner.
bool is_runner_pod(const k8s::object_meta& m);

struct owner_ref {
  std::string api_version, kind, name, uid;
  bool empty() const { return uid.empty(); }
};

// What a runner pod is made from (quantities already checked). `name` is the value of the
// headroom.dev/scale-set label: the scale set's name, or the scheduler's name prefix.
struct runner_spec {
  std::string name, ns;
  std::string runner_cpu, runner_memory;
  // Extended resources (nvidia.com/gpu, …) as configured, requested = limited.
  k8s::string_pairs runner_extended;
  std::string runner_image;
  std::vector<std::string> runner_command;
  k8s::string_pairs node_selector;
  std::vector<k8s::toleration> tolerations;
  std::string service_account;
  std::string runner_priority_class = "arc-runner";  // the ladder's; "" none (the scheduler's pods)
  std::string slot_resource;            // an extended resource one runner takes (requests = limits = 1); "" none
  int64_t active_deadline_seconds = 0;  // runner pods; 0 = none
  // As ARC's containerMode.type: kubernetes_novolume gives the runner container what the
  // runner-container-hooks' k8s-novolume hook reads (its pod's name, the hook, the runner image for
  // the workflow pod's init container, REQUIRE_JOB_CONTAINER); kubernetes what the k8s hook reads
  // (its pod's name, the hook, REQUIRE_JOB_CONTAINER, USE_KUBE_SCHEDULER) and the `work` volume it
  // shares with the workflow pod (work_volume_claim); none gives nothing.
  // dind: ARC's docker-in-docker sidecar; the job's containers run in the runner pod (pod_modes.cpp).
  enum class container_mode { none, kubernetes_novolume, kubernetes, dind } mode = container_mode::none;
  // dind: what the sidecar requests (the scale set's workflowResources: the job's room); "" none.
  std::string dind_cpu, dind_memory;
  // A hook mode: the ConfigMap holding the hook template (hook_template()), mounted read-only and
  // named by ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE; "" none.
  std::string hook_template_configmap;
  // kubernetes: the `work` volume's claim spec (JSON of a PersistentVolumeClaimSpec, ARC's
  // containerMode.kubernetesModeWorkVolumeClaim), an ephemeral volume of each runner pod.
  std::string work_volume_claim;
  bool arc_labels = false;  // ARC's scale-set labels on runner pods (the scale sets')
  // arc mode: the AutoscalingRunnerSet whose runner pods the scale set counts. Its placeholders
  // carry ARC's scale-set-name label with this value, so one pod watch sees both; "" standalone.
  std::string arc_set;
  // A scale set's runner given as a PodTemplateSpec (JSON, checked by read_runner_template): runner
  // pods are made from it (runner_pod), and the fields above hold what it says of the runner's
  // image, requests and placement. "" = the short form above.
  std::string runner_template;
  // The runner's required node affinity (JSON of nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution),
  // mirrored onto its placeholders and the hook template like nodeSelector; "" none.
  std::string required_node_affinity;
  std::string user_hook_template;  // the user's own hook template (checked JSON), merged under headroom's; "" none
  // Capacity-aware: headroom holds rooms for workflow pods (and, in kubernetes-novolume, gates them
  // until it has pinned each to its room: workflow_pods_gated).
  bool held_rooms = false;
};

// Where runner pods mount the hook template, and the file ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE names.
inline constexpr const char* hook_template_dir = "/home/runner/headroom-hook";
inline constexpr const char* hook_template_key = "template.yaml";
// The hook the runner image ships for kubernetes-novolume (actions/runner's images/Dockerfile:
// runner-container-hooks 0.8.x unpacked into k8s-novolume).
inline constexpr const char* novolume_hook = "/home/runner/k8s-novolume/index.js";
// The hook for kubernetes mode (runner-container-hooks' k8s, unpacked into k8s), and where the runner
// and its workflow pod share the job's files (the `work` volume, a claim the hook names
// <runner pod>-work: the ephemeral volume's PVC).
inline constexpr const char* kubernetes_hook = "/home/runner/k8s/index.js";
inline constexpr const char* work_mount_path = "/home/runner/_work";
// Whether the runner's hook makes a workflow pod (a hook template is then mounted).
inline bool hook_mode(const runner_spec& s) {
  return s.mode == runner_spec::container_mode::kubernetes_novolume || s.mode == runner_spec::container_mode::kubernetes;
}
// dind: the job's containers run in the runner pod (its dind sidecar holds the workflow's room), so
// a runner pod takes the whole room of its pair, and no workflow pod comes.
inline bool workflow_in_runner_pod(const runner_spec& s) { return s.mode == runner_spec::container_mode::dind; }
// No workflow pod ever comes (dind; none: the job runs in the runner container): a pair's hand-off
// is over once a runner took it, and its workflow placeholder has nothing left to hold room for.
inline bool no_workflow_pod(const runner_spec& s) { return !hook_mode(s); }
// kubernetes mode pins the workflow pod to its runner's node (the hook's required node affinity: the
// `work` volume is ReadWriteOnce), and a dind runner pod needs both rooms on its node: a pair's two
// placeholders are kept on one node.
inline bool same_node_pairs(const runner_spec& s) {
  return s.mode == runner_spec::container_mode::kubernetes || workflow_in_runner_pod(s);
}
// kubernetes-novolume: the workflow pod may go to any node, and the scheduler puts it wherever room
// is free the moment it comes, even room just freed by preemption for a runner pod still waiting
// to be bound (a workflow pod outranks a runner, so the runner's nomination does not hold it off):
// the runner then waits for a job to end, its job claimed and not started. So headroom's hook
// template gates the workflow pod (held_room_gate), and headroom pins it to the node of the room it
// holds for it before removing the gate (capacity monitor_workflow_rooms.cpp). kubernetes mode's
// hook names the runner's node itself, which a gated pod may not have.
inline bool workflow_pods_gated(const runner_spec& s) { return s.held_rooms && hook_mode(s) && !same_node_pairs(s); }
// The merge patch that ungates workflow pod `p` (held_room_gate removed, any other gate kept) and,
// with `node` not empty, pins it there: `metadata.name In [node]` added to each of its required
// node affinity's terms (a gated pod's required node affinity may only be narrowed). Carries the
// pod's resourceVersion: a pod changed meanwhile answers 409 and is judged again.
std::string held_room_patch(const k8s::pod& p, const std::string& node);

// The hook template: a PodTemplateSpec the hook merges into every workflow pod it makes
// (runner-container-hooks: spec keys replace the hook's, `$job` patches the job container). It gives
// the workflow pod the ladder's workflow PriorityClass (so it preempts its workflow placeholder),
// the workflow's resources (the room the placeholder held), the runner's nodeSelector and
// tolerations (where the placeholder could go), and headroom's labels (role workflow).
// `priority_class` "" = none.
std::string hook_template(const runner_spec& s, const std::string& priority_class, const std::string& cpu, const std::string& memory,
                          const k8s::string_pairs& extended);
// Why `template_json` cannot be a user's hook template, naming the field; nullopt when it can. A
// PodTemplateSpec for the workflow pod: only metadata (labels, annotations) and spec; its
// containers named (`$job` patches the job container, as the hook reads it).
std::optional<std::string> check_hook_template(const std::string& template_json);
// headroom's hook template (`ours`) over the user's (`user`, checked): the user's keys pass through;
// headroom's labels, priorityClassName and the `$job` container's resources replace the user's (they
// are the room the workflow placeholder holds); the runner's nodeSelector and tolerations only where
// the user's template sets no placement (nodeSelector, tolerations, affinity) of its own.
std::string merge_hook_templates(const std::string& user, const std::string& ours);
// The ConfigMap `name` holding it, under hook_template_key.
std::string hook_template_configmap(const runner_spec& s, const std::string& name, const std::string& template_json);

// `pool`, when given, is the headroom.dev/pool label (the scheduler's pools).
std::string runner_pod(const runner_spec& s, const std::string& name, int64_t runner_id, std::string_view scope = {},
                       std::string_view pool = {});
// kubernetes mode: a pair handed to a job, whose workflow placeholder still holds the workflow's
// room on `node`, and that no runner pod has been pinned to yet.
struct workflow_room {
  std::string node, slot;
};
// `runner_pod_json` (runner_pod's) pinned to the room's node: a required node affinity on the
// node's name in place of the runner's own (the pair was placed under it) and the workflow_room
// annotation. The runner then takes the room its pair's runner placeholder left, beside the
// workflow placeholder its workflow pod (pinned by the hook to the runner's node) preempts; a
// runner put elsewhere left that pod to preempt what it could there, running runners included.
std::string pinned_to_workflow_room(const std::string& runner_pod_json, const workflow_room& room);
std::string runner_secret(const runner_spec& s, const std::string& name, const std::string& pod_uid,
                          const std::string& encoded_jit_config);

// ---- runner pools' pod templates (the scheduler's scheduler.pools[].template) -----------------
//
// A template is a PodTemplateSpec (metadata.labels/annotations, spec) as JSON. Its container named
// `runner` is the runner: it gets the JIT config (ACTIONS_RUNNER_INPUT_JITCONFIG, which the runner
// reads as --jitconfig, and RUNNER_JITCONFIG, from the pod's Secret) and one of the pool's slot
// resource. Everything else (sidecars, init containers, volumes, security contexts, ephemeral
// storage, runtime class, affinity) goes to the API server as written, which validates it.

struct pod_template_facts {
  k8s::string_pairs node_selector;  // spec.nodeSelector: where the pool's capacity is counted
};

// Why `template_json` cannot be a runner pool's template, naming the field; nullopt when it can.
// Refused: not an object; keys other than metadata and spec; metadata other than labels and
// annotations (headroom names the pods); labels under headroom.dev/; no spec.containers; none or
// two named runner; a runner without an image; restartPolicy other than Never (a runner is one job).
std::optional<std::string> check_pod_template(const std::string& template_json, pod_template_facts* facts = nullptr);

// A scale set's runner as a PodTemplateSpec (scaleSets[].runner.template, as ARC's `template:`):
// what headroom needs to know of it.
struct runner_template_facts {
  std::string image;              // the runner container's
  std::string cpu, memory;        // its requests, as written
  k8s::string_pairs extended;     // its other requests (extended resources), as written
  k8s::string_pairs node_selector;
  std::vector<k8s::toleration> tolerations;
  std::string required_node_affinity;  // as runner_spec's; "" none
  std::string service_account;
};
// Why `template_json` cannot be a scale set's runner template, naming the path below the template;
// otherwise its facts. On top of check_pod_template: the runner container's requests.cpu and
// requests.memory (the runner placeholder holds that room, and the pair is counted by it), each
// extended request equal to its limit, a string nodeSelector, well-formed tolerations, and no
// priorityClassName (the ladder's runner class is headroom's).
struct runner_template_result {
  std::optional<runner_template_facts> facts;
  std::string error;
};
runner_template_result read_runner_template(const std::string& template_json);

// The runner pod `name` of `pool` from its (checked) template: headroom's labels and annotations
// over the template's, restartPolicy Never, the pool's activeDeadlineSeconds unless the template
// sets one, the JIT config and the slot resource on the runner container.
// A scale set's runner pod from its template (`pool` ""): also the ladder's runner PriorityClass,
// ARC's labels, and the container mode's env and the hook template's mount on the runner container,
// as runner_pod gives them.
std::string runner_pod_from_template(const std::string& template_json, const runner_spec& s, const std::string& pool,
                                     const std::string& name, int64_t runner_id, std::string_view scope = {});
// dind: the path of a container or init container of the template that dind's parts would name
// again (`dind`, `init-dind-externals`: "spec.initContainers[0]"), or nullopt.
std::optional<std::string> dind_name_clash(const std::string& template_json);
// A short-form runner pod (runner_pod's JSON) with dind's parts added (pod_modes.cpp).
std::string with_dind(const std::string& pod_json, const runner_spec& s);

// Pieces of a pod object, for the other pods a mode makes beside its runners: each writes one
// value (placement: two fields) where the writer stands.
namespace json {
// {"headroom.dev/scale-set":…,"headroom.dev/role":…[,"headroom.dev/slot":…][,"headroom.dev/pool":…]
//  [,"headroom.dev/spec-hash":…]}
void labels_object(runtime::json_writer& w, const runner_spec& s, role r, const std::string& slot,
                   std::string_view pool = {}, std::string_view spec_hash = {});
// [] or [{apiVersion, kind, name, uid, blockOwnerDeletion: false}]
void owner_refs(runtime::json_writer& w, const owner_ref& o);
// The fields "nodeSelector":{…}, "tolerations":[…] and "affinity":{"nodeAffinity":{required…}} from
// the runner template, when it has them; `pinned_node`, when given, is the one node the pod may go
// to (a required node affinity on its name, instead of the runner's: the node satisfied that);
// `node_affinity` false leaves the runner's node affinity out.
// `pod_affinity`: a "podAffinity" object's JSON to add (workflow_room_affinity), or empty.
void placement(runtime::json_writer& w, const runner_spec& s, std::string_view pinned_node = {}, bool node_affinity = true,
               std::string_view pod_affinity = {});
// kubernetes mode's runner pod: a strong preference (weight 100) for a node holding a workflow
// placeholder of its scale set, as a "podAffinity" object's JSON; empty in the other modes. The
// hook pins the workflow pod to its runner's node (the `work` volume is ReadWriteOnce), so a runner
// the scheduler put where no workflow placeholder holds room (a node with more free room, which the
// default scoring favours) left its workflow pod to preempt whatever it could there: a running
// runner, its own among them, whose claim then went with it and the job waited for a pod that
// could never start. Preferred, not required: a runner is never left unschedulable for want of a
// placeholder. The consumed pair's node wins: its runner placeholder is gone, so the runner fits
// there without preempting, beside the workflow placeholder its workflow pod then takes.
std::string workflow_room_affinity(const runner_spec& s);
// A "podAffinity" object's JSON: a strong preference (weight 100) for a node holding a pod of the
// scale set in role `r` (workflow_room_affinity; the none-mode placeholders' pair_affinity).
std::string prefer_node_with(const runner_spec& s, role r);
// any of them; with `slot`, only the pods of that pair
std::string prefer_node_with(const runner_spec& s, const std::vector<role>& roles, const std::string& slot = "");
// The runner container's env entries for its container mode (kubernetes-novolume: the hook, its
// pod's name, a job container required, the runner image, the hook template's path; kubernetes:
// the hook, its pod's name, a job container required, the kube scheduler, the hook template's
// path), into an open array.
void container_mode_env(runtime::json_writer& w, const runner_spec& s);
// The runner pod's volume holding the hook template (mounted at hook_template_dir).
inline constexpr const char* hook_volume = "headroom-hook-template";
// kubernetes mode's volume the runner and its workflow pods share (ARC's name; the hook's claim is
// <pod>-work), and that volume as an ephemeral one of s.work_volume_claim, as a JSON object.
inline constexpr const char* work_volume = "work";
std::string work_volume_object(const runner_spec& s);
// dind's parts, as ARC's chart renders them, with the sidecar's requests (dind_cpu, dind_memory):
// {"env":[…],"mounts":[…],"init":[init-dind-externals, dind],"volumes":[dind-sock, dind-externals, work]}
std::string dind_parts(const runner_spec& s);
// {"requests":…,"limits":…}; `slot`, when given, is one of that extended resource.
void resources(runtime::json_writer& w, const std::string& cpu, const std::string& memory,
               const k8s::string_pairs& more, const std::string& slot = {});
}  // namespace json

}  // namespace headroom::actors::runners
