// A scale set's spec from its configuration (a scaleSets[] entry, or a ScaleSet object's spec).

#include <string>
#include <variant>

#include "actors/runners/pods.hpp"
#include "adapters/k8s/quantity.hpp"
#include "modes/scale_sets/mode.hpp"
#include "modes/shared/start.hpp"

namespace headroom::modes::scale_sets {

std::variant<scale_set_spec, std::string> make_spec(const scale_set_section& c, size_t index,
                                                   const priority_classes_section& ladder) {
  return make_spec(c, "scaleSets[" + std::to_string(index) + "]", ladder);
}

std::variant<scale_set_spec, std::string> make_spec(const scale_set_section& c, const std::string& at,
                                                   const priority_classes_section& ladder) {
  scale_set_spec s;
  s.priority_classes.names = {ladder.placeholder_runner, ladder.runner, ladder.placeholder_workflow, ladder.workflow};
  s.runner_priority_class = ladder.runner;
  s.name = c.name;
  s.ns = c.ns;
  s.runner_group = c.runner_group;
  s.labels = c.labels;
  s.max_runners = c.max_runners;
  s.standalone = c.mode != "arc";
  s.ephemeral_runner_set = c.ephemeral_runner_set;
  if (!s.standalone)
    s.arc_set = c.autoscaling_runner_set;
  s.capacity_aware = c.capacity_aware.enabled;
  s.held_rooms = s.capacity_aware;
  s.repoll_on_change = c.capacity_aware.repoll_on_change;
  s.queue_check_interval = c.capacity_aware.queue_check_interval;
  s.proactive_capacity = c.capacity_aware.proactive_capacity;
  s.warm_pool = c.capacity_aware.warm_pool;
  if (s.warm_pool.follow_demand && s.warm_pool.max == 0)
    s.warm_pool.max = s.max_runners;
  s.max_burst_capacity = c.capacity_aware.max_burst_capacity;
  s.recalculate_interval = c.capacity_aware.recalculate_interval;
  s.placeholder_ready_timeout = c.capacity_aware.placeholder_ready_timeout;
  s.placeholder_ttl = c.capacity_aware.placeholder_ttl;
  s.workflow_cpu = c.capacity_aware.workflow_cpu;
  s.workflow_memory = c.capacity_aware.workflow_memory;
  if (auto e = apply_runner(c.runner, at + ".runner", s, s.runner_requests))
    return *e;
  s.arc_labels = true;
  if (actors::runners::workflow_in_runner_pod(s)) {  // the dind sidecar holds the job's room
    s.dind_cpu = c.capacity_aware.workflow_cpu;
    s.dind_memory = c.capacity_aware.workflow_memory;
  }
  // The workflow pod's hook template (a ConfigMap per scale set, written by its capacity monitor).
  if (actors::runners::hook_mode(s) && s.standalone)
    s.hook_template_configmap = c.name + "-hook-template";
  int64_t v = 0;
  if (auto e = quantity(c.capacity_aware.workflow_cpu, at + ".capacityAware.workflowResources.cpu", v, true))
    return *e;
  s.workflow_requests.cpu_milli = v;
  if (auto e = quantity(c.capacity_aware.workflow_memory, at + ".capacityAware.workflowResources.memory", v, false))
    return *e;
  s.workflow_requests.memory = v;
  if (auto e = extended_requests(c.capacity_aware.workflow_extended, s.workflow_requests))
    return *e;
  s.workflow_extended = c.capacity_aware.workflow_extended;
  s.placeholder_image = c.capacity_aware.placeholder_image;
  s.placeholder_command = c.capacity_aware.placeholder_command;
  if (s.placeholder_command.empty()) {  // outlive the renewal, never the deadline (see settings.hpp)
    const auto life = c.capacity_aware.placeholder_ttl.count() > 0
                          ? (c.capacity_aware.placeholder_ttl + 2 * c.capacity_aware.placeholder_ready_timeout).count() / 1000
                          : 900;
    // A shell that ends on SIGTERM: `sleep` as a container's PID 1 ignores it (no default action
    // for PID 1), so a preempted or deleted placeholder would hold on until the kubelet's SIGKILL
    // after its 2 s minimum grace (measured on a real node: 2.1 s, tests/e2e/real_node_test.cpp).
    s.placeholder_command = {"sh", "-c", "trap 'exit 0' TERM; sleep " + std::to_string(life) + " & wait"};
  }
  s.health_check.interval = c.health.interval;
  s.health_check.registration_timeout = c.health.registration_timeout;
  s.health_check.pending_timeout = c.health.pending_timeout;
  s.health_check.idle_timeout = c.health.idle_timeout;
  s.health_check.terminal_grace = c.health.terminal_grace;
  return s;
}

}  // namespace headroom::modes::scale_sets
