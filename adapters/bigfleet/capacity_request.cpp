#include "adapters/bigfleet/capacity_request.hpp"

#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "adapters/json/ondemand.hpp"
#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/quantity.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::bigfleet {

namespace {

namespace od = simdjson::ondemand;
using json::failure;
using json::fields;
using json::is_null;
using json::items;
constexpr auto str = json::text;

void read_selector_requirements(od::value v, std::vector<k8s::selector_requirement>& out, const std::string& path) {
  items(v, [&](size_t i, od::value x) {
    k8s::selector_requirement r;
    fields(x, [&](std::string_view k, od::value y) {
      if (k == "key")
        r.key = str(y);
      else if (k == "operator")
        r.op = str(y);
      else if (k == "values")
        items(y, [&](size_t, od::value z) { r.values.push_back(str(z)); });
    });
    if (r.key.empty() || r.op.empty())
      throw failure{path + "[" + std::to_string(i) + "]: key and operator are required"};
    out.push_back(std::move(r));
  });
}

void read_label_selector(od::value v, k8s::label_selector& s, const std::string& path) {
  fields(v, [&](std::string_view k, od::value x) {
    if (k == "matchLabels")
      fields(x, [&](std::string_view key, od::value val) { s.match_labels.emplace_back(std::string{key}, str(val)); });
    else if (k == "matchExpressions")
      read_selector_requirements(x, s.match_expressions, path + ".matchExpressions");
  });
}

void sort_requirements(std::vector<requirement>& rs) {
  for (auto& r : rs)
    std::sort(r.values.begin(), r.values.end());
  std::sort(rs.begin(), rs.end(), [](const requirement& a, const requirement& b) {
    return std::tie(a.key, a.op, a.values) < std::tie(b.key, b.op, b.values);
  });
  rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
}

// The aggregation key: everything that must be equal for two CRs to share a CapacityNeed.
// Separators are control characters, which Kubernetes names and label values cannot contain.
std::string profile_key(const capacity_request& cr) {
  std::string k;
  k.reserve(128);
  for (const auto& r : cr.requirements) {
    k += r.key;
    k += '\x1f';
    k += r.op;
    for (const auto& v : r.values) {
      k += '\x1e';
      k += v;
    }
    k += '\x1d';
  }
  k += "|p";
  k += std::to_string(cr.priority);
  k += "|s";
  for (const auto& s : cr.topology_spread) {
    k += s.topology_key;
    k += '\x1f';
    k += std::to_string(s.max_skew);
    k += '\x1d';
  }
  k += "|b";
  k += std::to_string(static_cast<int>(cr.interruption_bucket));
  k += ',';
  k += std::to_string(static_cast<int>(cr.reclamation_bucket));
  if (cr.colocation) {
    // One co-location group per (namespace, topology key, selector): two workloads that each
    // want their own rack must not be merged into one need.
    k += "|c";
    k += cr.meta.ns;
    k += '\x1f';
    k += cr.colocation->topology_key;
    k += '\x1f';
    k += canonical_selector(cr.colocation->selector);
  }
  return k;
}

}  // namespace

std::optional<int64_t> resource_units(std::string_view name, std::string_view quantity) {
  auto q = k8s::parse_quantity(quantity);
  if (auto* v = std::get_if<k8s::quantity>(&q))
    return name == "cpu" ? v->milli : v->units;
  return std::nullopt;
}

std::string format_units(std::string_view name, int64_t amount) {
  if (name == "cpu" && amount % 1000 != 0)
    return std::to_string(amount) + "m";
  return std::to_string(name == "cpu" ? amount / 1000 : amount);
}

std::variant<pb::PenaltyBucket, decode_error> penalty_bucket(std::string_view text) {
  if (text.empty())
    return pb::PENALTY_BUCKET_UNSPECIFIED;
  const std::string s{text};
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v))
    return decode_error{"penalty \"" + s + "\": not a number"};
  const std::string_view suffix{end};
  static const std::pair<std::string_view, double> suffixes[] = {
      {"", 1},        {"n", 1e-9},    {"u", 1e-6},          {"m", 1e-3},          {"k", 1e3},
      {"M", 1e6},     {"G", 1e9},     {"T", 1e12},          {"P", 1e15},          {"E", 1e18},
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0}};
  bool known = false;
  for (const auto& [sfx, mult] : suffixes)
    if (suffix == sfx) {
      v *= mult;
      known = true;
      break;
    }
  if (!known && !suffix.empty() && (suffix[0] == 'e' || suffix[0] == 'E'))
    known = true;  // strtod consumed a decimal exponent already ("1e3"); anything else is junk
  if (!known)
    return decode_error{"penalty \"" + s + "\": unknown suffix \"" + std::string{suffix} + "\""};
  if (v < 0)
    return decode_error{"penalty \"" + s + "\": negative"};
  if (v == 0)
    return pb::PENALTY_BUCKET_ZERO;
  if (v <= 0.5)
    return pb::PENALTY_BUCKET_HALF_DOLLAR;
  // ($0.50, $1] → PENALTY_BUCKET_1 (3); each power of two up to $8,388,608 (2^23) its own bucket.
  const int k = std::max(0, static_cast<int>(std::ceil(std::log2(v) - 1e-12)));
  if (k > 23)
    return pb::PENALTY_BUCKET_PINNED;
  return static_cast<pb::PenaltyBucket>(pb::PENALTY_BUCKET_1 + k);
}

std::string canonical_selector(const k8s::label_selector& s) {
  std::vector<requirement> all;
  for (const auto& [k, v] : s.match_labels)
    all.push_back({k, "In", {v}});
  for (const auto& e : s.match_expressions)
    all.push_back({e.key, e.op, e.values});
  sort_requirements(all);
  std::string out;
  for (const auto& r : all) {
    out += r.key;
    out += ' ';
    out += r.op;
    out += ' ';
    for (size_t i = 0; i < r.values.size(); ++i) {
      if (i)
        out += ',';
      out += r.values[i];
    }
    out += ';';
  }
  return out;
}

std::variant<capacity_request, decode_error> decode_capacity_request(const k8s::unstructured& object) {
  capacity_request cr;
  cr.meta = object.meta;
  const std::string who = "CapacityRequest " + object.meta.ns + "/" + object.meta.name;
  bool has_resources = false, has_priority = false;
  try {
    od::parser parser;
    simdjson::padded_string padded{object.raw};
    auto doc = parser.iterate(padded);
    fields(od::value{doc.get_value()}, [&](std::string_view top, od::value v) {
      if (top == "spec") {
        fields(v, [&](std::string_view k, od::value x) {
          if (k == "requirements") {
            std::vector<k8s::selector_requirement> rs;
            read_selector_requirements(x, rs, "spec.requirements");
            for (auto& r : rs)
              cr.requirements.push_back({std::move(r.key), std::move(r.op), std::move(r.values)});
          } else if (k == "resources") {
            has_resources = true;
            fields(x, [&](std::string_view name, od::value q) {
              const std::string text = str(q);
              auto units = resource_units(name, text);
              if (!units)
                throw failure{"spec.resources." + std::string{name} + ": invalid quantity \"" + text + "\""};
              cr.resources.push_back({std::string{name}, *units});
            });
          } else if (k == "priority") {
            has_priority = true;
            const int64_t p = x.get_int64();
            if (p < INT32_MIN || p > INT32_MAX)
              throw failure{"spec.priority: out of int32 range"};
            cr.priority = static_cast<int32_t>(p);
          } else if (k == "interruptionPenalty") {
            cr.interruption_penalty = str(x);
          } else if (k == "reclamationPenalty") {
            cr.reclamation_penalty = str(x);
          } else if (k == "topologySpread") {
            items(x, [&](size_t, od::value t) {
              spread s;
              fields(t, [&](std::string_view k2, od::value y) {
                if (k2 == "topologyKey")
                  s.topology_key = str(y);
                else if (k2 == "maxSkew")
                  s.max_skew = static_cast<int32_t>(int64_t(y.get_int64()));
                else if (k2 == "whenUnsatisfiable")
                  s.when_unsatisfiable = str(y);
              });
              if (s.when_unsatisfiable != "ScheduleAnyway")  // advisory: not a provisioning constraint
                cr.topology_spread.push_back(std::move(s));
            });
          } else if (k == "coLocation" && !is_null(x)) {
            co_location c;
            fields(x, [&](std::string_view k2, od::value y) {
              if (k2 == "topologyKey")
                c.topology_key = str(y);
              else if (k2 == "labelSelector")
                read_label_selector(y, c.selector, "spec.coLocation.labelSelector");
            });
            if (c.topology_key.empty())
              throw failure{"spec.coLocation.topologyKey: required"};
            cr.colocation = std::move(c);
          }
        });
      } else if (top == "status") {
        fields(v, [&](std::string_view k, od::value x) {
          if (k == "phase")
            cr.phase = str(x);
        });
      }
    });
  } catch (const failure& f) {
    return decode_error{who + ": " + f.message};
  } catch (const simdjson::simdjson_error& e) {
    return decode_error{who + ": " + simdjson::error_message(e.error())};
  }
  if (!has_resources || !has_priority)
    return decode_error{who + ": spec.resources and spec.priority are required"};
  for (auto* p : {&cr.interruption_penalty, &cr.reclamation_penalty}) {
    auto b = penalty_bucket(*p);
    if (auto* e = std::get_if<decode_error>(&b))
      return decode_error{who + ": spec." +
                          (p == &cr.interruption_penalty ? "interruptionPenalty" : "reclamationPenalty") + ": " +
                          e->message};
    (p == &cr.interruption_penalty ? cr.interruption_bucket : cr.reclamation_bucket) = std::get<pb::PenaltyBucket>(b);
  }
  sort_requirements(cr.requirements);
  std::sort(cr.resources.begin(), cr.resources.end(),
            [](const resource_amount& a, const resource_amount& b) { return a.name < b.name; });
  std::sort(cr.topology_spread.begin(), cr.topology_spread.end(), [](const spread& a, const spread& b) {
    return std::tie(a.topology_key, a.max_skew, a.when_unsatisfiable) <
           std::tie(b.topology_key, b.max_skew, b.when_unsatisfiable);
  });
  cr.profile_key = profile_key(cr);
  cr.profile_hash = std::hash<std::string_view>{}(cr.profile_key);
  return cr;
}

std::variant<capacity_request, decode_error> decode_capacity_request(std::string_view json) {
  auto u = k8s::decode_unstructured(json);
  if (auto* e = std::get_if<k8s::decode_error>(&u))
    return decode_error{e->message};
  return decode_capacity_request(std::get<k8s::unstructured>(u));
}

// ---- Pod → CapacityRequest ----

std::variant<penalty_defaults, decode_error> parse_penalty_defaults(std::string_view yaml_text) {
  penalty_defaults out;
  try {
    YAML::Node root = YAML::Load(std::string{yaml_text});
    if (!root || root.IsNull())
      return out;
    YAML::Node classes = root["priorityClasses"];
    if (!classes)
      return out;
    if (!classes.IsMap())
      return decode_error{"priorityClasses: must be a map of PriorityClass name to penalties"};
    for (const auto& kv : classes) {
      const auto name = kv.first.as<std::string>();
      penalty_defaults::entry e;
      for (const auto& field : kv.second) {
        const auto key = field.first.as<std::string>();
        const auto value = field.second.as<std::string>();
        if (key != "interruptionPenalty" && key != "reclamationPenalty")
          return decode_error{"priorityClasses." + name + "." + key + ": unknown key"};
        if (auto b = penalty_bucket(value); std::holds_alternative<decode_error>(b))
          return decode_error{"priorityClasses." + name + "." + key + ": " + std::get<decode_error>(b).message};
        (key == "interruptionPenalty" ? e.interruption : e.reclamation) = value;
      }
      out.by_priority_class[name] = std::move(e);
    }
  } catch (const YAML::Exception& e) {
    return decode_error{std::string{"penalty defaults: "} + e.what()};
  }
  return out;
}

std::string capacity_request_name(const k8s::pod& pod) {
  // Pod names are DNS subdomains of at most 253 characters, and so is the CR's name: the Pod's
  // own name is unique in its namespace and already valid.
  return pod.meta.name;
}

namespace {

void write_requirement(runtime::json_writer& w, const requirement& r) {
  w.begin_object().field("key", r.key).field("operator", r.op);
  if (!r.values.empty())
    w.key("values").strings(r.values);
  w.end_object();
}

void write_selector(runtime::json_writer& w, const k8s::label_selector& s) {
  w.begin_object();
  if (!s.match_labels.empty())
    w.key("matchLabels").string_map(s.match_labels);
  if (!s.match_expressions.empty()) {
    w.key("matchExpressions").begin_array();
    for (const auto& e : s.match_expressions)
      write_requirement(w, {e.key, e.op, e.values});
    w.end_array();
  }
  w.end_object();
}

void write_resource(runtime::json_writer& w, std::string_view name, int64_t amount) {
  if (amount > 0)
    w.field(name, format_units(name, amount));
}

void write_spec(runtime::json_writer& w, const k8s::pod& pod, const penalty_defaults& defaults) {
  std::vector<requirement> reqs;
  if (!pod.spec->required_node_affinity.empty())
    for (const auto& e : pod.spec->required_node_affinity.front().match_expressions)
      reqs.push_back({e.key, e.op, e.values});
  for (const auto& [k, v] : pod.spec->node_selector)
    reqs.push_back({k, "In", {v}});
  if (reqs.empty())
    reqs.push_back({"node.kubernetes.io/instance-type", "Exists", {}});
  sort_requirements(reqs);

  w.begin_object().key("requirements").begin_array();
  for (const auto& r : reqs)
    write_requirement(w, r);
  w.end_array();
  w.key("resources").begin_object();
  const auto& r = pod.spec->requests;
  write_resource(w, "cpu", r.cpu_milli);
  write_resource(w, "memory", r.memory);
  write_resource(w, "ephemeral-storage", r.ephemeral_storage);
  for (const auto& [name, amount] : r.extended)
    write_resource(w, name, amount);
  w.end_object();
  w.field("priority", pod.priority.value_or(0));

  std::string interruption, reclamation;
  if (auto it = defaults.by_priority_class.find(pod.spec->priority_class_name); it != defaults.by_priority_class.end()) {
    interruption = it->second.interruption;
    reclamation = it->second.reclamation;
  }
  if (const auto* a = pod.meta.annotation(interruption_penalty_annotation))
    interruption = *a;
  if (const auto* a = pod.meta.annotation(reclamation_penalty_annotation))
    reclamation = *a;
  // A penalty that does not parse is left out rather than sent (the CRD would refuse the object).
  if (!interruption.empty() && std::holds_alternative<pb::PenaltyBucket>(penalty_bucket(interruption)))
    w.field("interruptionPenalty", interruption);
  if (!reclamation.empty() && std::holds_alternative<pb::PenaltyBucket>(penalty_bucket(reclamation)))
    w.field("reclamationPenalty", reclamation);

  bool spreads = false;
  for (const auto& t : pod.spec->topology_spread) {
    if (t.when_unsatisfiable == "ScheduleAnyway")
      continue;
    if (!spreads)
      w.key("topologySpread").begin_array();
    spreads = true;
    w.begin_object().field("topologyKey", t.topology_key).field("maxSkew", t.max_skew);
    w.field("whenUnsatisfiable", t.when_unsatisfiable.empty() ? std::string_view{"DoNotSchedule"} : std::string_view{t.when_unsatisfiable});
    w.end_object();
  }
  if (spreads)
    w.end_array();
  if (!pod.spec->required_pod_affinity.empty()) {
    const auto& term = pod.spec->required_pod_affinity.front();
    w.key("coLocation").begin_object().field("topologyKey", term.topology_key).key("labelSelector");
    write_selector(w, term.selector);
    w.end_object();
  }
  w.end_object();
}

}  // namespace

std::string capacity_request_object(const k8s::pod& pod, const penalty_defaults& defaults) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", "bigfleet.lucy.sh/v1alpha1").field("kind", "CapacityRequest");
  w.key("metadata").begin_object().field("name", capacity_request_name(pod)).field("namespace", pod.meta.ns);
  w.key("labels").begin_object().field(pod_uid_label, pod.meta.uid).end_object();
  w.key("ownerReferences").begin_array().begin_object().field("apiVersion", "v1").field("kind", "Pod");
  w.field("name", pod.meta.name).field("uid", pod.meta.uid).field("blockOwnerDeletion", false).end_object().end_array();
  w.end_object();
  w.key("spec");
  write_spec(w, pod, defaults);
  w.end_object();
  return w.take();
}

}  // namespace headroom::bigfleet
