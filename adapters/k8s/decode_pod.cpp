// The Pod's decoder: its spec (containers' requests, affinity, tolerations, topology spread) and
// status, into the reused scratch values of decode_scan.hpp.
#include "adapters/k8s/decode_scan.hpp"

namespace headroom::k8s::decode_core {
namespace {

void requirements(context& c, od::value v, std::vector<selector_requirement>& out, size_t& n) {
  each(c, v, [&](od::value item) {
    auto& r = slot(out, n);
    size_t n_values = 0;
    fields(c, item, [&](field_name k, od::value x) {
      if (k == "key")
        set(r.key, x);
      else if (k == "operator")
        set(r.op, x);
      else if (k == "values")
        string_list(c, x, r.values, n_values);
    });
    r.values.resize(n_values);
  });
}

void selector(context& c, od::value v, label_selector& out) {
  size_t n_labels = 0, n_expressions = 0;
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "matchLabels")
      string_map(c, x, out.match_labels, n_labels);
    else if (k == "matchExpressions")
      requirements(c, x, out.match_expressions, n_expressions);
  });
  out.match_labels.resize(n_labels);
  out.match_expressions.resize(n_expressions);
}

void affinity_terms(context& c, od::value v, std::vector<pod_affinity_term>& out, size_t& n) {
  each(c, v, [&](od::value item) {
    auto& t = slot(out, n);
    size_t n_namespaces = 0;
    bool has_selector = false;
    fields(c, item, [&](field_name k, od::value x) {
      if (k == "labelSelector") {
        has_selector = true;
        selector(c, x, t.selector);
      } else if (k == "topologyKey") {
        set(t.topology_key, x);
      } else if (k == "namespaces") {
        string_list(c, x, t.namespaces, n_namespaces);
      }
    });
    if (!has_selector) {
      t.selector.match_labels.clear();
      t.selector.match_expressions.clear();
    }
    t.namespaces.resize(n_namespaces);
  });
}

struct affinity_counts {
  size_t node = 0, pod = 0, anti = 0;
};

void affinity(context& c, od::value v, pod_spec& s, affinity_counts& n) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "nodeAffinity") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 != "requiredDuringSchedulingIgnoredDuringExecution")
          return;
        fields(c, y, [&](field_name k3, od::value z) {
          if (k3 != "nodeSelectorTerms")
            return;
          each(c, z, [&](od::value term) {
            auto& t = slot(s.required_node_affinity, n.node);
            size_t n_expressions = 0, n_fields = 0;
            fields(c, term, [&](field_name k4, od::value w) {
              if (k4 == "matchExpressions")
                requirements(c, w, t.match_expressions, n_expressions);
              else if (k4 == "matchFields")
                requirements(c, w, t.match_fields, n_fields);
            });
            t.match_expressions.resize(n_expressions);
            t.match_fields.resize(n_fields);
          });
        });
      });
    } else if (k == "podAffinity" || k == "podAntiAffinity") {
      const bool anti = k == "podAntiAffinity";
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "requiredDuringSchedulingIgnoredDuringExecution")
          affinity_terms(c, y, anti ? s.required_pod_anti_affinity : s.required_pod_affinity, anti ? n.anti : n.pod);
      });
    }
  });
}

void containers(context& c, od::value v, std::vector<container_requests>& out, size_t& n) {
  each(c, v, [&](od::value item) {
    auto& cr = slot(out, n);
    fields(c, item, [&](field_name k, od::value x) {
      if (k == "resources") {
        fields(c, x, [&](field_name k2, od::value y) {
          if (k2 == "requests")
            resources(c, y, cr.requests);
        });
      } else if (k == "restartPolicy") {
        std::string_view policy = take_null(x) ? std::string_view{} : std::string_view{x.get_string()};
        cr.sidecar = policy == "Always";
      }
    });
  });
}

// The scheduler's arithmetic (k8s.io/component-helpers resource.PodRequests): regular containers
// and sidecars run together; each init container runs with the sidecars started before it; the
// pod needs the larger of the two, plus its overhead.
void effective_requests(const std::vector<container_requests>& regular, size_t n_regular,
                        const std::vector<container_requests>& init, size_t n_init, const resource_list& overhead,
                        resource_list& total) {
  reset(total);
  for (size_t i = 0; i < n_regular; ++i)
    total.add_all(regular[i].requests);
  resource_list sidecars;
  resource_list init_peak;
  for (size_t i = 0; i < n_init; ++i) {
    const auto& cr = init[i];
    if (cr.sidecar) {
      total.add_all(cr.requests);
      sidecars.add_all(cr.requests);
      init_peak.max_with(sidecars);
    } else {
      resource_list stage = cr.requests;
      stage.add_all(sidecars);
      init_peak.max_with(stage);
    }
  }
  total.max_with(init_peak);
  total.add_all(overhead);
}

void decode_pod_spec(context& c, od::value v, pod& p) {
  thread_local pod_spec s;
  thread_local std::vector<container_requests> regular, init;
  thread_local resource_list overhead;
  s.priority_class_name.clear();
  s.preemption_policy.clear();
  s.scheduler_name.clear();
  reset(overhead);
  size_t n_gates = 0, n_selector = 0, n_tolerations = 0, n_spread = 0, n_regular = 0, n_init = 0;
  affinity_counts n_affinity;
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "nodeName") {
      set(p.node_name, x);
    } else if (k == "priority") {
      if (!take_null(x))
        p.priority = static_cast<int32_t>(x.get_int64());
    } else if (k == "priorityClassName") {
      set(s.priority_class_name, x);
    } else if (k == "preemptionPolicy") {
      set(s.preemption_policy, x);
    } else if (k == "schedulerName") {
      set(s.scheduler_name, x);
    } else if (k == "schedulingGates") {
      each(c, x, [&](od::value gate) {
        fields(c, gate, [&](field_name k2, od::value y) {
          if (k2 == "name")
            set(slot(s.scheduling_gates, n_gates), y);
        });
      });
    } else if (k == "nodeSelector") {
      string_map(c, x, s.node_selector, n_selector);
    } else if (k == "affinity") {
      affinity(c, x, s, n_affinity);
    } else if (k == "tolerations") {
      each(c, x, [&](od::value item) {
        auto& t = slot(s.tolerations, n_tolerations);
        fields(c, item, [&](field_name k2, od::value y) {
          if (k2 == "key")
            set(t.key, y);
          else if (k2 == "operator")
            set(t.op, y);
          else if (k2 == "value")
            set(t.value, y);
          else if (k2 == "effect")
            set(t.effect, y);
          else if (k2 == "tolerationSeconds" && !take_null(y))
            t.toleration_seconds = y.get_int64();
        });
      });
    } else if (k == "topologySpreadConstraints") {
      each(c, x, [&](od::value item) {
        auto& t = slot(s.topology_spread, n_spread);
        bool has_selector = false;
        fields(c, item, [&](field_name k2, od::value y) {
          if (k2 == "maxSkew") {
            t.max_skew = static_cast<int32_t>(int64(y));
          } else if (k2 == "topologyKey") {
            set(t.topology_key, y);
          } else if (k2 == "whenUnsatisfiable") {
            set(t.when_unsatisfiable, y);
          } else if (k2 == "labelSelector") {
            has_selector = true;
            selector(c, y, t.selector);
          }
        });
        if (!has_selector) {
          t.selector.match_labels.clear();
          t.selector.match_expressions.clear();
        }
      });
    } else if (k == "containers") {
      containers(c, x, regular, n_regular);
    } else if (k == "initContainers") {
      containers(c, x, init, n_init);
    } else if (k == "overhead") {
      resources(c, x, overhead);
    }
  });
  s.scheduling_gates.resize(n_gates);
  s.node_selector.resize(n_selector);
  s.required_node_affinity.resize(n_affinity.node);
  s.required_pod_affinity.resize(n_affinity.pod);
  s.required_pod_anti_affinity.resize(n_affinity.anti);
  s.tolerations.resize(n_tolerations);
  s.topology_spread.resize(n_spread);
  effective_requests(regular, n_regular, init, n_init, overhead, s.requests);
  p.spec = share(s);
}

void pod_status(context& c, od::value v, pod& p) {
  thread_local std::vector<condition> conds;
  thread_local std::vector<container_status> statuses;
  size_t n_conditions = 0, n_statuses = 0;
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "phase") {
      set(p.phase, x);
    } else if (k == "nominatedNodeName") {
      set(p.nominated_node_name, x);
    } else if (k == "conditions") {
      conditions(c, x, conds, n_conditions);
    } else if (k == "containerStatuses") {
      each(c, x, [&](od::value item) {
        auto& s = slot(statuses, n_statuses);
        fields(c, item, [&](field_name k2, od::value y) {
          if (k2 == "name") {
            set(s.name, y);
          } else if (k2 == "ready") {
            s.ready = boolean(y);
          } else if (k2 == "restartCount") {
            s.restart_count = static_cast<int32_t>(int64(y));
          } else if (k2 == "state") {
            entries(c, y, [&](std::string_view state, od::value z) {
              s.state.assign(state.data(), state.size());
              fields(c, z, [&](field_name k3, od::value w) {
                if (k3 == "reason")
                  set(s.reason, w);
              });
            });
          }
        });
      });
    }
  });
  conds.resize(n_conditions);
  statuses.resize(n_statuses);
  p.conditions = share(conds);
  p.container_statuses = share(statuses);
}

// -- one function per kind: fills T from an object value --------------------------------------------

[[gnu::noinline]] void decode_into(context& c, od::value v, pod& p) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata")
      meta(c, x, p.meta);
    else if (k == "spec")
      decode_pod_spec(c, x, p);
    else if (k == "status")
      pod_status(c, x, p);
  });
}

}  // namespace
}  // namespace headroom::k8s::decode_core

#include "adapters/k8s/decode_documents.hpp"  // after decode_into(pod), which its templates call

namespace headroom::k8s {

decoded<pod> decode_pod(std::string_view json) { return decode_core::decode_one<pod>(json); }

HEADROOM_DECODE_INSTANTIATE(pod)

}  // namespace headroom::k8s
