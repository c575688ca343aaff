// The decoders of the other kinds headroom reads: Node, PriorityClass, Lease, Event, and any
// object as unstructured (metadata, its raw JSON, the fields the modes ask for).
#include "adapters/k8s/decode_scan.hpp"

namespace headroom::k8s::decode_core {
namespace {

void decode_into(context& c, od::value v, node& n) {
  size_t n_taints = 0, n_conditions = 0;
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata") {
      meta(c, x, n.meta);
    } else if (k == "spec") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "unschedulable") {
          n.unschedulable = boolean(y);
        } else if (k2 == "providerID") {
          set(n.provider_id, y);
        } else if (k2 == "taints") {
          each(c, y, [&](od::value item) {
            auto& t = slot(n.taints, n_taints);
            fields(c, item, [&](field_name k3, od::value z) {
              if (k3 == "key")
                set(t.key, z);
              else if (k3 == "value")
                set(t.value, z);
              else if (k3 == "effect")
                set(t.effect, z);
            });
          });
        }
      });
    } else if (k == "status") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "capacity")
          resources(c, y, n.capacity);
        else if (k2 == "allocatable")
          resources(c, y, n.allocatable);
        else if (k2 == "conditions")
          conditions(c, y, n.conditions, n_conditions);
      });
    }
  });
  n.taints.resize(n_taints);
  n.conditions.resize(n_conditions);
}

void decode_into(context& c, od::value v, priority_class& pc) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata")
      meta(c, x, pc.meta);
    else if (k == "value")
      pc.value = static_cast<int32_t>(int64(x));
    else if (k == "preemptionPolicy")
      set(pc.preemption_policy, x);
    else if (k == "globalDefault")
      pc.global_default = boolean(x);
  });
}

void decode_into(context& c, od::value v, lease& l) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata") {
      meta(c, x, l.meta);
    } else if (k == "spec") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "holderIdentity")
          set(l.holder_identity, y);
        else if (k2 == "leaseDurationSeconds" && !take_null(y))
          l.lease_duration_seconds = static_cast<int32_t>(y.get_int64());
        else if (k2 == "acquireTime")
          set(l.acquire_time, y);
        else if (k2 == "renewTime")
          set(l.renew_time, y);
        else if (k2 == "leaseTransitions")
          l.lease_transitions = static_cast<int32_t>(int64(y));
      });
    }
  });
}

void decode_into(context& c, od::value v, event& e) {
  fields(c, v, [&](field_name k, od::value x) {
    if (k == "metadata") {
      meta(c, x, e.meta);
    } else if (k == "involvedObject") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "kind")
          set(e.involved_kind, y);
        else if (k2 == "namespace")
          set(e.involved_namespace, y);
        else if (k2 == "name")
          set(e.involved_name, y);
        else if (k2 == "uid")
          set(e.involved_uid, y);
      });
    } else if (k == "reason") {
      set(e.reason, x);
    } else if (k == "message") {
      set(e.message, x);
    } else if (k == "type") {
      set(e.type, x);
    } else if (k == "count") {
      e.count = static_cast<int32_t>(int64(x));
    } else if (k == "source") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "component")
          set(e.source_component, y);
      });
    } else if (k == "reportingComponent") {
      set(e.reporting_component, x);
    } else if (k == "lastTimestamp" || k == "eventTime") {
      e.last_seen = std::max(e.last_seen, timestamp(x).value_or(0));
    } else if (k == "series") {
      fields(c, x, [&](field_name k2, od::value y) {
        if (k2 == "lastObservedTime")
          e.last_seen = std::max(e.last_seen, timestamp(y).value_or(0));
      });
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
  backslash_index copy_backslashes;  // the names below are in the copy
  c.backslashes = index_backslashes(copy, copy_backslashes);
  auto doc = inner.iterate(copy);
  for (auto field : doc.get_object()) {
    std::string_view k = field.unescaped_key();
    od::value x = field.value();
    try {
      if (k == "metadata")
        meta(c, x, u.meta);
      else if (k == "apiVersion")
        set(u.api_version, x);
      else if (k == "kind")
        set(u.kind, x);
    } catch (...) {
      c.unwound.emplace_back(std::string{k}, -1);  // copied now: `k` points into `inner`
      throw;
    }
  }
}

}  // namespace
}  // namespace headroom::k8s::decode_core

#include "adapters/k8s/decode_documents.hpp"  // after the decode_into overloads, which its templates call

namespace headroom::k8s {

decoded<node> decode_node(std::string_view json) { return decode_core::decode_one<node>(json); }
decoded<priority_class> decode_priority_class(std::string_view json) { return decode_core::decode_one<priority_class>(json); }
decoded<lease> decode_lease(std::string_view json) { return decode_core::decode_one<lease>(json); }
decoded<event> decode_event(std::string_view json) { return decode_core::decode_one<event>(json); }
decoded<unstructured> decode_unstructured(std::string_view json) { return decode_core::decode_one<unstructured>(json); }

std::string newest_event_from(std::string_view event_list_json, std::string_view component) {
  constexpr size_t max_message = 400;
  auto list = decode_list<event>(event_list_json);
  const auto* l = std::get_if<list_result<event>>(&list);
  if (l == nullptr)
    return {};
  const event* newest = nullptr;
  for (const auto& e : l->items)
    if ((e.source_component == component || e.reporting_component == component) && (newest == nullptr || e.last_seen >= newest->last_seen))
      newest = &e;
  if (newest == nullptr)
    return {};
  std::string out = newest->reason.empty() ? std::string{"said"} : newest->reason;
  if (!newest->message.empty())
    out += ": " + newest->message.substr(0, max_message) + (newest->message.size() > max_message ? "…" : "");
  return out;
}

HEADROOM_DECODE_INSTANTIATE(node)
HEADROOM_DECODE_INSTANTIATE(priority_class)
HEADROOM_DECODE_INSTANTIATE(lease)
HEADROOM_DECODE_INSTANTIATE(event)
HEADROOM_DECODE_INSTANTIATE(unstructured)

}  // namespace headroom::k8s
