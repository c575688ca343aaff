// The pod objects the capacity loop creates (pure JSON builders): placeholders on the priority
// ladder, the runners' PodDisruptionBudget, the PriorityClasses. Runner pods: actors/runners/pods.cpp.

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "actors/capacity/capacity.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::actors::capacity {

using runners::json::labels_object;
using runners::json::owner_refs;
using runners::json::placement;
using runners::json::resources;

std::string placeholder_pod_name(const scale_set_spec& s, const std::string& slot, role r) {
  return s.name + "-ph-" + slot + (r == role::runner_placeholder ? "-runner" : r == role::pair_probe ? "-probe" : "-workflow");
}

namespace {

// The probe's room: the runner's and the workflow's requests together (memory limited alike).
void pair_resources(runtime::json_writer& w, const scale_set_spec& s) {
  k8s::resource_list both = s.runner_requests;
  both.add_all(s.workflow_requests);
  k8s::string_pairs extended;
  for (const auto& [name, amount] : both.extended)
    extended.emplace_back(name, std::to_string(amount));
  resources(w, std::to_string(both.cpu_milli) + "m", std::to_string(both.memory), extended);
}

// none mode: no workflow pod comes, and a pair's placeholders are made at once with nothing that
// keeps them together. Apart, a warm pair holds two nodes from going back once empty where one
// would do (a day's trace in bench/job_outcomes: two warm pairs held three nodes through the
// night). So each prefers (weight 100, as a runner pod prefers its workflow room) a node holding a
// placeholder of its own pair (its slot) of the other role: whichever the scheduler places second
// joins the first where it fits, and goes elsewhere where not (preferred: a full node never strands
// it). The spec hash is taken without the slot.
// A pair starts as its probe (the runner placeholder's stand-in, which is then made on the probe's
// node) beside its workflow placeholder: those two prefer each other, the workflow placeholder its
// runner placeholder's node too. (The e2e on two kwok nodes failed now and then while the probe
// was left out, and again while any pair's pod would do: two pairs made at once crossed.) Empty in
// the other modes (kubernetes, dind: the probe places the pair on one node; kubernetes-novolume:
// the workflow pod goes anywhere, by design).
std::string pair_affinity(const scale_set_spec& s, role r, const std::string& slot) {
  if (s.mode != runners::runner_spec::container_mode::none)
    return {};
  if (r == role::workflow_placeholder)
    return runners::json::prefer_node_with(s, std::vector<role>{role::runner_placeholder, role::pair_probe}, slot);
  return runners::json::prefer_node_with(s, std::vector<role>{role::workflow_placeholder}, slot);
}

}  // namespace

namespace {

// A placeholder's pod spec: all but its name, labels and owner.
std::string placeholder_spec(const scale_set_spec& s, role r, const std::string& pinned_node, const std::string& slot) {
  const bool runner = r == role::runner_placeholder || r == role::pair_probe;
  // A probe sits on the workflow placeholder's rung: above the runner pods, which take every
  // runner placeholder they can, so no runner takes room its pair has not yet held for the
  // workflow (see placeholder_pair.cpp).
  const std::string& priority =
      s.priority_classes.of(r == role::runner_placeholder ? rung::placeholder_runner : rung::placeholder_workflow);
  runtime::json_writer w;
  w.begin_object().field("priorityClassName", priority).field("preemptionPolicy", "Never");
  w.field("terminationGracePeriodSeconds", 0).field("restartPolicy", "Never");
  // A leak guard that needs no headroom: the kubelet ends a placeholder that outlived its TTL
  // and one more ready timeout (by then headroom has long renewed it, unless headroom is gone).
  if (s.placeholder_ttl.count() > 0)
    w.field("activeDeadlineSeconds", (s.placeholder_ttl + 2 * s.placeholder_ready_timeout).count() / 1000);
  w.field("automountServiceAccountToken", false);
  placement(w, s, pinned_node, true, pair_affinity(s, r, slot));
  w.key("containers").begin_array().begin_object().field("name", "placeholder").field("image", s.placeholder_image);
  w.key("command").strings(s.placeholder_command);
  // Admitted where the Pod Security "restricted" profile is enforced: a placeholder only sleeps.
  w.key("securityContext").begin_object().field("runAsNonRoot", true).field("runAsUser", 65534).field("runAsGroup", 65534);
  w.field("allowPrivilegeEscalation", false).field("readOnlyRootFilesystem", true);
  w.key("capabilities").begin_object().key("drop").strings({"ALL"}).end_object();
  w.key("seccompProfile").begin_object().field("type", "RuntimeDefault").end_object();
  w.end_object();
  w.key("resources");
  if (r == role::pair_probe && runners::same_node_pairs(s))
    pair_resources(w, s);
  else if (runner)
    resources(w, s.runner_cpu, s.runner_memory, s.runner_extended);
  else
    resources(w, s.workflow_cpu, s.workflow_memory, s.workflow_extended);
  w.end_object().end_array();  // the container, the containers
  w.end_object();
  return w.take();
}

}  // namespace

std::string placeholder_spec_hash(const scale_set_spec& s, role r) {
  // FNV-1a over the spec as made with no node pinned: the same value on every platform and in
  // every process (std::hash is neither), and a label value (8 hex digits).
  uint32_t h = 2166136261u;
  for (unsigned char c : placeholder_spec(s, r, "", ""))
    h = (h ^ c) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

std::string placeholder_pod(const scale_set_spec& s, const std::string& slot, role r, const owner_ref& owner,
                            const std::string& pinned_node) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "v1").field("kind", "Pod");
  w.key("metadata").begin_object().field("name", placeholder_pod_name(s, slot, r)).field("namespace", s.ns);
  w.key("labels");
  labels_object(w, s, r, slot, {}, placeholder_spec_hash(s, r));
  w.key("ownerReferences");
  owner_refs(w, owner);
  w.end_object();
  w.key("spec").raw(placeholder_spec(s, r, pinned_node, slot));
  w.end_object();
  return w.take();
}

std::string runner_pdb_name(const owner_ref& owner) { return owner.name + "-runners"; }

namespace {

std::string pdb(const scale_set_spec& s, const owner_ref& owner, const std::string& name, role over, int64_t min_available) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "policy/v1").field("kind", "PodDisruptionBudget");
  w.key("metadata").begin_object().field("name", name).field("namespace", s.ns);
  w.key("labels").begin_object().field("app.kubernetes.io/managed-by", "headroom").field(keys::scale_set, s.name).end_object();
  w.key("ownerReferences");
  owner_refs(w, owner);
  w.end_object();
  w.key("spec").begin_object().field("minAvailable", min_available);
  w.key("selector").begin_object().key("matchLabels").begin_object();
  w.field(keys::scale_set, s.name).field(keys::role, role_label(over));
  w.end_object().end_object().end_object();  // matchLabels, selector, spec
  w.end_object();
  return w.take();
}

}  // namespace

// An integer minAvailable, never maxUnavailable or a percentage: runner pods have no controller,
// and for those kube-controller-manager can only count the selected pods against an integer; with
// anything else it warns UnmanagedPods on every sync (#61: 25 Warnings on one budget in six
// minutes). A scale set never has more than maxRunners runner pods alive (terminating ones are not
// counted as healthy), so minAvailable = maxRunners allows no disruption, as maxUnavailable 0 did.
std::string runner_pdb(const scale_set_spec& s, const owner_ref& owner) {
  return pdb(s, owner, runner_pdb_name(owner), role::runner, std::max<int64_t>(1, s.max_runners));
}

std::string runner_placeholder_pdb_name(const owner_ref& owner) { return owner.name + "-runner-placeholders"; }

// #54: on the ladder a workflow pod (20) may preempt any pod below it, and kube-scheduler prefers
// the node whose most important victim is the least important: another pair's runner placeholder
// (-10) over a workflow placeholder (10). Found once the runner simulator made workflow pods as the
// container hook does and needed its runner pod to the end: the workflow pods took other pairs'
// runner placeholders, those pairs' runners then found no room held, and their workflow pods
// preempted running runners (4 jobs of 200 lost). The scheduler first picks nodes whose victims
// violate no PodDisruptionBudget, so runner placeholders get one that allows no disruption
// (minAvailable 2 × maxRunners: the pairs and their make-before-break renewals never reach it): a
// workflow pod then takes a workflow placeholder's room wherever one makes it, and a runner pod,
// which can only ever take a runner placeholder, still does (preemption overrides a budget when
// every victim is under one).
std::string runner_placeholder_pdb(const scale_set_spec& s, const owner_ref& owner) {
  return pdb(s, owner, runner_placeholder_pdb_name(owner), role::runner_placeholder, 2 * std::max<int64_t>(1, s.max_runners));
}

std::string priority_class_object(const priority_class_spec& p, const std::string& name) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "scheduling.k8s.io/v1").field("kind", "PriorityClass");
  w.key("metadata").begin_object().field("name", name);
  w.key("labels").begin_object().field("app.kubernetes.io/managed-by", "headroom").end_object().end_object();
  w.field("value", p.value).field("globalDefault", false);
  w.field("preemptionPolicy", p.preempts ? "PreemptLowerPriority" : "Never").field("description", p.description);
  w.end_object();
  return w.take();
}

}  // namespace headroom::actors::capacity
