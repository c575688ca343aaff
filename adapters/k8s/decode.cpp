#include "adapters/k8s/decode.hpp"

#include <simdjson.h>


#include <algorithm>
#include <deque>
#include <exception>
#include <stdexcept>

#include "adapters/k8s/quantity.hpp"

namespace headroom::k8s {

namespace {

namespace od = simdjson::ondemand;

// A semantic problem found while decoding (a bad quantity, a wrong type we detected ourselves).
struct field_failure {
  std::string message;
};

// Where the decoder is, for error messages. Frames are popped on normal exit only, so when an
// exception unwinds to the boundary the path still names the field that failed.
struct context {
  struct frame {
    std::string_view name;
    int64_t index;
  };
  std::string kind;
  std::string ns, name;
  std::vector<frame> path;
  std::deque<std::string> kept;  // names of frames kept past their source's lifetime

  std::string where() const {
    std::string out = kind;
    if (!name.empty())
      out += " " + (ns.empty() ? name : ns + "/" + name);
    std::string p;
    for (const auto& f : path) {
      if (!f.name.empty()) {
        if (!p.empty())
          p += '.';
        p.append(f.name);
      }
      if (f.index >= 0)
        p += "[" + std::to_string(f.index) + "]";
    }
    return p.empty() ? out : out + ": " + p;
  }
};

class at {
 public:
  at(context& c, std::string_view name, int64_t index = -1)
      : c_(c), exceptions_(std::uncaught_exceptions()), frame_(c.path.size()) {
    c_.path.push_back({name, index});
  }
  ~at() {
    if (std::uncaught_exceptions() == exceptions_) {
      c_.path.pop_back();
      return;
    }
    // Unwinding: the frame stays for the error message, but its name may point into a parser
    // that is about to be destroyed (a nested parse), so it is copied now, while still valid.
    auto& f = c_.path[frame_];
    c_.kept.emplace_back(f.name);
    f.name = c_.kept.back();
  }
  at(const at&) = delete;
  at& operator=(const at&) = delete;

 private:
  context& c_;
  int exceptions_;
  size_t frame_;
};

bool take_null(od::value& v) { return v.type() == od::json_type::null && v.is_null(); }

std::string str(od::value v) {
  if (take_null(v))
    return {};
  return std::string{std::string_view{v.get_string()}};
}

int64_t int64(od::value v) {
  if (take_null(v))
    return 0;
  return v.get_int64();
}

bool boolean(od::value v) {
  if (take_null(v))
    return false;
  return v.get_bool();
}

template <class F>
void each(context& c, od::value v, F&& fn) {
  if (take_null(v))
    return;
  int64_t i = 0;
  for (auto element : v.get_array()) {
    at here{c, "", i++};
    fn(od::value{element.value()});
  }
}

template <class F>
void fields(od::value v, F&& fn) {
  if (take_null(v))
    return;
  for (auto field : v.get_object()) {
    std::string_view key = field.unescaped_key();
    fn(key, od::value{field.value()});
  }
}

void string_map(context& c, od::value v, string_pairs& out) {
  fields(v, [&](std::string_view key, od::value value) {
    at here{c, key};
    out.emplace_back(std::string{key}, str(value));
  });
}

void string_list(context& c, od::value v, std::vector<std::string>& out) {
  each(c, v, [&](od::value item) { out.push_back(str(item)); });
}

void resources(context& c, od::value v, resource_list& out) {
  fields(v, [&](std::string_view name, od::value value) {
    at here{c, name};
    std::string_view text;
    std::string number;
    if (value.type() == od::json_type::number) {  // Quantity.UnmarshalJSON accepts bare numbers too
      number = std::string{value.raw_json_token()};
      while (!number.empty() && (number.back() == ' ' || number.back() == '\n'))
        number.pop_back();
      text = number;
    } else {
      text = value.get_string();
    }
    auto q = parse_quantity(text);
    if (auto* err = std::get_if<quantity_error>(&q))
      throw field_failure{err->message};
    const auto& parsed = std::get<quantity>(q);
    out.add(name, name == "cpu" ? parsed.milli : parsed.units);
  });
}

void meta(context& c, od::value v, object_meta& m) {
  fields(v, [&](std::string_view key, od::value value) {
    at here{c, key};
    if (key == "name") {
      m.name = str(value);
      c.name = m.name;
    } else if (key == "namespace") {
      m.ns = str(value);
      c.ns = m.ns;
    } else if (key == "uid") {
      m.uid = str(value);
    } else if (key == "resourceVersion") {
      m.resource_version = str(value);
    } else if (key == "generateName") {
      m.generate_name = str(value);
    } else if (key == "labels") {
      string_map(c, value, m.labels);
    } else if (key == "annotations") {
      string_map(c, value, m.annotations);
    } else if (key == "deletionTimestamp") {
      m.deletion_timestamp = str(value);
    } else if (key == "deletionGracePeriodSeconds") {
      m.deletion_grace_period_seconds = int64(value);
    } else if (key == "creationTimestamp") {
      m.creation_timestamp = str(value);
    } else if (key == "ownerReferences") {
      each(c, value, [&](od::value item) {
        owner_reference o;
        fields(item, [&](std::string_view k, od::value x) {
          at f{c, k};
          if (k == "apiVersion")
            o.api_version = str(x);
          else if (k == "kind")
            o.kind = str(x);
          else if (k == "name")
            o.name = str(x);
          else if (k == "uid")
            o.uid = str(x);
          else if (k == "controller")
            o.controller = boolean(x);
        });
        m.owners.push_back(std::move(o));
      });
    }
  });
}

void requirements(context& c, od::value v, std::vector<selector_requirement>& out) {
  each(c, v, [&](od::value item) {
    selector_requirement r;
    fields(item, [&](std::string_view k, od::value x) {
      at f{c, k};
      if (k == "key")
        r.key = str(x);
      else if (k == "operator")
        r.op = str(x);
      else if (k == "values")
        string_list(c, x, r.values);
    });
    out.push_back(std::move(r));
  });
}

void selector(context& c, od::value v, label_selector& out) {
  fields(v, [&](std::string_view k, od::value x) {
    at f{c, k};
    if (k == "matchLabels")
      string_map(c, x, out.match_labels);
    else if (k == "matchExpressions")
      requirements(c, x, out.match_expressions);
  });
}

void affinity_terms(context& c, od::value v, std::vector<pod_affinity_term>& out) {
  each(c, v, [&](od::value item) {
    pod_affinity_term t;
    fields(item, [&](std::string_view k, od::value x) {
      at f{c, k};
      if (k == "labelSelector")
        selector(c, x, t.selector);
      else if (k == "topologyKey")
        t.topology_key = str(x);
      else if (k == "namespaces")
        string_list(c, x, t.namespaces);
    });
    out.push_back(std::move(t));
  });
}

void affinity(context& c, od::value v, pod& p) {
  fields(v, [&](std::string_view k, od::value x) {
    at f{c, k};
    if (k == "nodeAffinity") {
      fields(x, [&](std::string_view k2, od::value y) {
        at g{c, k2};
        if (k2 != "requiredDuringSchedulingIgnoredDuringExecution")
          return;
        fields(y, [&](std::string_view k3, od::value z) {
          at h{c, k3};
          if (k3 != "nodeSelectorTerms")
            return;
          each(c, z, [&](od::value term) {
            node_selector_term t;
            fields(term, [&](std::string_view k4, od::value w) {
              at i{c, k4};
              if (k4 == "matchExpressions")
                requirements(c, w, t.match_expressions);
              else if (k4 == "matchFields")
                requirements(c, w, t.match_fields);
            });
            p.required_node_affinity.push_back(std::move(t));
          });
        });
      });
    } else if (k == "podAffinity" || k == "podAntiAffinity") {
      auto& target = k == "podAffinity" ? p.required_pod_affinity : p.required_pod_anti_affinity;
      fields(x, [&](std::string_view k2, od::value y) {
        at g{c, k2};
        if (k2 == "requiredDuringSchedulingIgnoredDuringExecution")
          affinity_terms(c, y, target);
      });
    }
  });
}

struct container_requests {
  resource_list requests;
  bool sidecar = false;  // an init container with restartPolicy: Always
};

void containers(context& c, od::value v, std::vector<container_requests>& out) {
  each(c, v, [&](od::value item) {
    container_requests cr;
    fields(item, [&](std::string_view k, od::value x) {
      at f{c, k};
      if (k == "resources") {
        fields(x, [&](std::string_view k2, od::value y) {
          at g{c, k2};
          if (k2 == "requests")
            resources(c, y, cr.requests);
        });
      } else if (k == "restartPolicy") {
        cr.sidecar = str(x) == "Always";
      }
    });
    out.push_back(std::move(cr));
  });
}

// The scheduler's arithmetic (k8s.io/component-helpers resource.PodRequests): regular containers
// and sidecars run together; each init container runs with the sidecars started before it; the
// pod needs the larger of the two, plus its overhead.
resource_list effective_requests(const std::vector<container_requests>& regular,
                                 const std::vector<container_requests>& init, const resource_list& overhead) {
  resource_list total;
  for (const auto& cr : regular)
    total.add_all(cr.requests);
  resource_list sidecars;
  resource_list init_peak;
  for (const auto& cr : init) {
    resource_list stage;
    if (cr.sidecar) {
      total.add_all(cr.requests);
      sidecars.add_all(cr.requests);
      stage = sidecars;
    } else {
      stage = cr.requests;
      stage.add_all(sidecars);
    }
    init_peak.max_with(stage);
  }
  total.max_with(init_peak);
  total.add_all(overhead);
  return total;
}

void conditions(context& c, od::value v, std::vector<condition>& out) {
  each(c, v, [&](od::value item) {
    condition cond;
    fields(item, [&](std::string_view k, od::value x) {
      at f{c, k};
      if (k == "type")
        cond.type = str(x);
      else if (k == "status")
        cond.status = str(x);
      else if (k == "reason")
        cond.reason = str(x);
      else if (k == "message")
        cond.message = str(x);
    });
    out.push_back(std::move(cond));
  });
}

void pod_spec(context& c, od::value v, pod& p) {
  std::vector<container_requests> regular, init;
  resource_list overhead;
  fields(v, [&](std::string_view k, od::value x) {
    at f{c, k};
    if (k == "nodeName") {
      p.node_name = str(x);
    } else if (k == "priority") {
      if (!take_null(x))
        p.priority = static_cast<int32_t>(x.get_int64());
    } else if (k == "priorityClassName") {
      p.priority_class_name = str(x);
    } else if (k == "preemptionPolicy") {
      p.preemption_policy = str(x);
    } else if (k == "schedulerName") {
      p.scheduler_name = str(x);
    } else if (k == "schedulingGates") {
      each(c, x, [&](od::value gate) {
        fields(gate, [&](std::string_view k2, od::value y) {
          at g{c, k2};
          if (k2 == "name")
            p.scheduling_gates.push_back(str(y));
        });
      });
    } else if (k == "nodeSelector") {
      string_map(c, x, p.node_selector);
    } else if (k == "affinity") {
      affinity(c, x, p);
    } else if (k == "tolerations") {
      each(c, x, [&](od::value item) {
        toleration t;
        fields(item, [&](std::string_view k2, od::value y) {
          at g{c, k2};
          if (k2 == "key")
            t.key = str(y);
          else if (k2 == "operator")
            t.op = str(y);
          else if (k2 == "value")
            t.value = str(y);
          else if (k2 == "effect")
            t.effect = str(y);
          else if (k2 == "tolerationSeconds" && !take_null(y))
            t.toleration_seconds = y.get_int64();
        });
        p.tolerations.push_back(std::move(t));
      });
    } else if (k == "topologySpreadConstraints") {
      each(c, x, [&](od::value item) {
        topology_spread_constraint t;
        fields(item, [&](std::string_view k2, od::value y) {
          at g{c, k2};
          if (k2 == "maxSkew")
            t.max_skew = static_cast<int32_t>(int64(y));
          else if (k2 == "topologyKey")
            t.topology_key = str(y);
          else if (k2 == "whenUnsatisfiable")
            t.when_unsatisfiable = str(y);
          else if (k2 == "labelSelector")
            selector(c, y, t.selector);
        });
        p.topology_spread.push_back(std::move(t));
      });
    } else if (k == "containers") {
      containers(c, x, regular);
    } else if (k == "initContainers") {
      containers(c, x, init);
    } else if (k == "overhead") {
      resources(c, x, overhead);
    }
  });
  p.requests = effective_requests(regular, init, overhead);
}

void pod_status(context& c, od::value v, pod& p) {
  fields(v, [&](std::string_view k, od::value x) {
    at f{c, k};
    if (k == "phase") {
      p.phase = str(x);
    } else if (k == "nominatedNodeName") {
      p.nominated_node_name = str(x);
    } else if (k == "startTime") {
      p.start_time = str(x);
    } else if (k == "conditions") {
      conditions(c, x, p.conditions);
    } else if (k == "containerStatuses") {
      each(c, x, [&](od::value item) {
        container_status s;
        fields(item, [&](std::string_view k2, od::value y) {
          at g{c, k2};
          if (k2 == "name") {
            s.name = str(y);
          } else if (k2 == "ready") {
            s.ready = boolean(y);
          } else if (k2 == "restartCount") {
            s.restart_count = static_cast<int32_t>(int64(y));
          } else if (k2 == "state") {
            fields(y, [&](std::string_view state, od::value z) {
              at h{c, state};
              s.state = std::string{state};
              fields(z, [&](std::string_view k3, od::value w) {
                at i{c, k3};
                if (k3 == "reason")
                  s.reason = str(w);
              });
            });
          }
        });
        p.container_statuses.push_back(std::move(s));
      });
    }
  });
}

// -- one function per kind: fills T from an object value --------------------------------------------

void decode_into(context& c, od::value v, pod& p) {
  fields(v, [&](std::string_view k, od::value x) {
    at f{c, k};
    if (k == "metadata")
      meta(c, x, p.meta);
    else if (k == "spec")
      pod_spec(c, x, p);
    else if (k == "status")
      pod_status(c, x, p);
  });
}

void decode_into(context& c, od::value v, node& n) {
  fields(v, [&](std::string_view k, od::value x) {
    at f{c, k};
    if (k == "metadata") {
      meta(c, x, n.meta);
    } else if (k == "spec") {
      fields(x, [&](std::string_view k2, od::value y) {
        at g{c, k2};
        if (k2 == "unschedulable") {
          n.unschedulable = boolean(y);
        } else if (k2 == "providerID") {
          n.provider_id = str(y);
        } else if (k2 == "taints") {
          each(c, y, [&](od::value item) {
            taint t;
            fields(item, [&](std::string_view k3, od::value z) {
              at h{c, k3};
              if (k3 == "key")
                t.key = str(z);
              else if (k3 == "value")
                t.value = str(z);
              else if (k3 == "effect")
                t.effect = str(z);
            });
            n.taints.push_back(std::move(t));
          });
        }
      });
    } else if (k == "status") {
      fields(x, [&](std::string_view k2, od::value y) {
        at g{c, k2};
        if (k2 == "capacity")
          resources(c, y, n.capacity);
        else if (k2 == "allocatable")
          resources(c, y, n.allocatable);
        else if (k2 == "conditions")
          conditions(c, y, n.conditions);
      });
    }
  });
}

void decode_into(context& c, od::value v, priority_class& pc) {
  fields(v, [&](std::string_view k, od::value x) {
    at f{c, k};
    if (k == "metadata")
      meta(c, x, pc.meta);
    else if (k == "value")
      pc.value = static_cast<int32_t>(int64(x));
    else if (k == "preemptionPolicy")
      pc.preemption_policy = str(x);
    else if (k == "globalDefault")
      pc.global_default = boolean(x);
  });
}

void decode_into(context& c, od::value v, lease& l) {
  fields(v, [&](std::string_view k, od::value x) {
    at f{c, k};
    if (k == "metadata") {
      meta(c, x, l.meta);
    } else if (k == "spec") {
      fields(x, [&](std::string_view k2, od::value y) {
        at g{c, k2};
        if (k2 == "holderIdentity")
          l.holder_identity = str(y);
        else if (k2 == "leaseDurationSeconds" && !take_null(y))
          l.lease_duration_seconds = static_cast<int32_t>(y.get_int64());
        else if (k2 == "acquireTime")
          l.acquire_time = str(y);
        else if (k2 == "renewTime")
          l.renew_time = str(y);
        else if (k2 == "leaseTransitions")
          l.lease_transitions = static_cast<int32_t>(int64(y));
      });
    }
  });
}

void decode_into(context& c, od::value v, event& e) {
  fields(v, [&](std::string_view k, od::value x) {
    at f{c, k};
    if (k == "metadata") {
      meta(c, x, e.meta);
    } else if (k == "involvedObject") {
      fields(x, [&](std::string_view k2, od::value y) {
        at g{c, k2};
        if (k2 == "kind")
          e.involved_kind = str(y);
        else if (k2 == "namespace")
          e.involved_namespace = str(y);
        else if (k2 == "name")
          e.involved_name = str(y);
        else if (k2 == "uid")
          e.involved_uid = str(y);
      });
    } else if (k == "reason") {
      e.reason = str(x);
    } else if (k == "message") {
      e.message = str(x);
    } else if (k == "type") {
      e.type = str(x);
    } else if (k == "count") {
      e.count = static_cast<int32_t>(int64(x));
    }
  });
}

void decode_into(context& c, od::value v, unstructured& u) {
  if (v.type() != od::json_type::object)
    throw field_failure{"expected an object"};
  od::object obj = v.get_object();
  u.raw = std::string{std::string_view{obj.raw_json()}};
  // Second pass over the kept copy for the metadata: raw_json consumed the value.
  simdjson::ondemand::parser inner;
  simdjson::padded_string copy{u.raw};
  auto doc = inner.iterate(copy);
  for (auto field : doc.get_object()) {
    std::string_view k = field.unescaped_key();
    at f{c, k};
    od::value x = field.value();
    if (k == "metadata")
      meta(c, x, u.meta);
    else if (k == "apiVersion")
      u.api_version = str(x);
    else if (k == "kind")
      u.kind = str(x);
  }
}

template <class T> constexpr const char* kind_name = "Object";
template <> constexpr const char* kind_name<pod> = "Pod";
template <> constexpr const char* kind_name<node> = "Node";
template <> constexpr const char* kind_name<priority_class> = "PriorityClass";
template <> constexpr const char* kind_name<lease> = "Lease";
template <> constexpr const char* kind_name<event> = "Event";
template <> constexpr const char* kind_name<unstructured> = "Object";

// Runs `body` and turns any failure into a decode_error that names where it happened.
template <class Body>
std::optional<decode_error> guarded(context& c, Body&& body) {
  try {
    body();
    return std::nullopt;
  } catch (const field_failure& f) {
    return decode_error{c.where() + ": " + f.message};
  } catch (const simdjson::simdjson_error& e) {
    return decode_error{c.where() + ": " + simdjson::error_message(e.error())};
  } catch (const std::exception& e) {
    return decode_error{c.where() + ": " + e.what()};
  }
}

// Padded copy of the input: simdjson reads up to SIMDJSON_PADDING bytes past the end.
simdjson::padded_string_view padded(std::string_view json, std::string& buffer) {
  buffer.assign(json);
  buffer.resize(json.size() + simdjson::SIMDJSON_PADDING, '\0');
  return simdjson::padded_string_view{buffer.data(), json.size(), buffer.size()};
}

od::parser& thread_parser() {
  thread_local od::parser parser;
  return parser;
}

template <class T>
decoded<T> decode_one(std::string_view json) {
  thread_local std::string buffer;
  context c{kind_name<T>, {}, {}, {}, {}};
  T out;
  auto err = guarded(c, [&] {
    auto doc = thread_parser().iterate(padded(json, buffer));
    od::value root = doc.get_value();
    decode_into(c, root, out);
  });
  if (err)
    return *err;
  return out;
}

}  // namespace

decoded<pod> decode_pod(std::string_view json) { return decode_one<pod>(json); }
decoded<node> decode_node(std::string_view json) { return decode_one<node>(json); }
decoded<priority_class> decode_priority_class(std::string_view json) { return decode_one<priority_class>(json); }
decoded<lease> decode_lease(std::string_view json) { return decode_one<lease>(json); }
decoded<event> decode_event(std::string_view json) { return decode_one<event>(json); }
decoded<unstructured> decode_unstructured(std::string_view json) { return decode_one<unstructured>(json); }

template <class T>
decoded<list_result<T>> decode_list(std::string_view json) {
  thread_local std::string buffer;
  list_result<T> out;
  context list_ctx{std::string{kind_name<T>} + "List", {}, {}, {}, {}};
  auto err = guarded(list_ctx, [&] {
    auto doc = thread_parser().iterate(padded(json, buffer));
    for (auto field : doc.get_object()) {
      std::string_view k = field.unescaped_key();
      at f{list_ctx, k};
      od::value x = field.value();
      if (k == "metadata") {
        fields(x, [&](std::string_view k2, od::value y) {
          if (k2 == "resourceVersion")
            out.resource_version = str(y);
          else if (k2 == "continue")
            out.continue_token = str(y);
        });
      } else if (k == "items") {
        int64_t i = 0;
        for (auto element : x.get_array()) {
          context c{kind_name<T>, {}, {}, {}, {}};
          T item;
          // A bad item is recorded and skipped; the iteration continues with the next one, so
          // one malformed object never hides the rest of the list.
          od::value item_value = element.value();
          auto item_err = guarded(c, [&] { decode_into(c, item_value, item); });
          if (item_err)
            out.errors.push_back(decode_error{"items[" + std::to_string(i) + "]: " + item_err->message});
          else
            out.items.push_back(std::move(item));
          ++i;
        }
      }
    }
  });
  if (err)
    return *err;
  return out;
}

template <class T>
decoded<watch_event<T>> decode_watch_event(std::string_view json) {
  thread_local std::string buffer;
  watch_event<T> out;
  context c{std::string{"watch event of "} + kind_name<T>, {}, {}, {}, {}};
  std::string type;
  auto err = guarded(c, [&] {
    auto doc = thread_parser().iterate(padded(json, buffer));
    for (auto field : doc.get_object()) {
      std::string_view k = field.unescaped_key();
      at f{c, k};
      od::value x = field.value();
      if (k == "type") {
        type = str(x);
      } else if (k == "object") {
        if (type == "ERROR") {  // a metav1.Status: {code, message, reason}
          fields(x, [&](std::string_view k2, od::value y) {
            if (k2 == "code")
              out.error_code = static_cast<int32_t>(int64(y));
            else if (k2 == "message")
              out.error_message = str(y);
          });
        } else {
          c.kind = kind_name<T>;
          decode_into(c, x, out.object);
        }
      }
    }
  });
  if (err)
    return *err;
  if (type == "ADDED")
    out.type = watch_event<T>::added;
  else if (type == "MODIFIED")
    out.type = watch_event<T>::modified;
  else if (type == "DELETED")
    out.type = watch_event<T>::deleted;
  else if (type == "BOOKMARK")
    out.type = watch_event<T>::bookmark;
  else if (type == "ERROR")
    out.type = watch_event<T>::error;
  else
    return decode_error{"watch event: unknown type \"" + type.substr(0, 32) + "\""};
  return out;
}

#define HEADROOM_DECODE_INSTANTIATE(T)                                 \
  template decoded<list_result<T>> decode_list<T>(std::string_view);  \
  template decoded<watch_event<T>> decode_watch_event<T>(std::string_view);
HEADROOM_DECODE_INSTANTIATE(pod)
HEADROOM_DECODE_INSTANTIATE(node)
HEADROOM_DECODE_INSTANTIATE(priority_class)
HEADROOM_DECODE_INSTANTIATE(lease)
HEADROOM_DECODE_INSTANTIATE(event)
HEADROOM_DECODE_INSTANTIATE(unstructured)
#undef HEADROOM_DECODE_INSTANTIATE

}  // namespace headroom::k8s
