#include "adapters/k8s/admission.hpp"

#include <algorithm>
#include <openssl/evp.h>
#include <simdjson.h>

#include "runtime/json_writer.hpp"

namespace headroom::k8s::admission {

namespace {

namespace dom = simdjson::dom;

// A decoding failure at a field path.
struct bad_field {
  std::string message;
};

[[noreturn]] void fail(const std::string& path, const std::string& problem) { throw bad_field{path + ": " + problem}; }

const char* type_name(dom::element_type t) {
  switch (t) {
    case dom::element_type::ARRAY: return "an array";
    case dom::element_type::OBJECT: return "an object";
    case dom::element_type::STRING: return "a string";
    case dom::element_type::BOOL: return "a boolean";
    case dom::element_type::NULL_VALUE: return "null";
    default: return "a number";
  }
}

// The field `key` of `obj`, or nothing when it is absent or null.
std::optional<dom::element> field(dom::object obj, std::string_view key) {
  dom::element e;
  if (obj.at_key(key).get(e) != simdjson::SUCCESS || e.is_null())
    return std::nullopt;
  return e;
}

std::string string_at(dom::object obj, std::string_view key, const std::string& path, bool required = false) {
  auto e = field(obj, key);
  if (!e) {
    if (required)
      fail(path, "required");
    return {};
  }
  std::string_view s;
  if (e->get(s) != simdjson::SUCCESS)
    fail(path, std::string{"expected a string, found "} + type_name(e->type()));
  return std::string{s};
}

std::optional<dom::object> object_at(dom::object obj, std::string_view key, const std::string& path) {
  auto e = field(obj, key);
  if (!e)
    return std::nullopt;
  dom::object o;
  if (e->get(o) != simdjson::SUCCESS)
    fail(path, std::string{"expected an object, found "} + type_name(e->type()));
  return o;
}

void read_pod(dom::object pod, review_request& r) {
  r.has_object = true;
  if (auto meta = object_at(pod, "metadata", "request.object.metadata")) {
    if (auto ann = object_at(*meta, "annotations", "request.object.metadata.annotations")) {
      r.has_annotations = true;
      const std::string key{opt_in_annotation};
      const auto value = string_at(*ann, key, "request.object.metadata.annotations[" + key + "]");
      r.opted_in = value == "true";
    }
    if (auto labels = object_at(*meta, "labels", "request.object.metadata.labels")) {
      r.has_labels = true;
      const std::string key{queue_label};
      r.queue = string_at(*labels, key, "request.object.metadata.labels[" + key + "]");
    }
  }
  auto spec = object_at(pod, "spec", "request.object.spec");
  if (!spec)
    return;
  auto gates = field(*spec, "schedulingGates");
  if (!gates)
    return;
  dom::array list;
  if (gates->get(list) != simdjson::SUCCESS)
    fail("request.object.spec.schedulingGates", std::string{"expected an array, found "} + type_name(gates->type()));
  r.gates_present = true;
  size_t i = 0;
  for (dom::element g : list) {
    const std::string where = "request.object.spec.schedulingGates[" + std::to_string(i++) + "]";
    dom::object go;
    if (g.get(go) != simdjson::SUCCESS)
      fail(where, std::string{"expected an object, found "} + type_name(g.type()));
    r.scheduling_gates.push_back(string_at(go, "name", where + ".name", true));
  }
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace

std::variant<review_request, review_error> decode_review(std::string_view body) {
  thread_local dom::parser parser;  // one per webhook thread, reused: no allocation per request
  review_error err;
  dom::element root;
  if (auto e = parser.parse(body.data(), body.size()).get(root); e != simdjson::SUCCESS) {
    err.message = std::string{"body: not JSON ("} + simdjson::error_message(e) + ")";
    return err;
  }
  try {
    dom::object top;
    if (root.get(top) != simdjson::SUCCESS)
      fail("body", std::string{"expected an AdmissionReview object, found "} + type_name(root.type()));
    review_request r;
    r.api_version = string_at(top, "apiVersion", "apiVersion", true);
    err.api_version = r.api_version;
    if (r.api_version != "admission.k8s.io/v1")
      fail("apiVersion", "expected admission.k8s.io/v1, found '" + r.api_version + "'");
    if (const auto kind = string_at(top, "kind", "kind", true); kind != "AdmissionReview")
      fail("kind", "expected AdmissionReview, found '" + kind + "'");
    auto req = object_at(top, "request", "request");
    if (!req)
      fail("request", "required");
    r.uid = string_at(*req, "uid", "request.uid", true);
    err.uid = r.uid;
    if (r.uid.empty())
      fail("request.uid", "empty");
    r.operation = string_at(*req, "operation", "request.operation", true);
    if (auto kind = object_at(*req, "kind", "request.kind")) {
      r.group = string_at(*kind, "group", "request.kind.group");
      r.version = string_at(*kind, "version", "request.kind.version");
      r.kind = string_at(*kind, "kind", "request.kind.kind");
    } else {
      fail("request.kind", "required");
    }
    r.sub_resource = string_at(*req, "subResource", "request.subResource");
    r.ns = string_at(*req, "namespace", "request.namespace");
    r.name = string_at(*req, "name", "request.name");
    if (r.group.empty() && r.version == "v1" && r.kind == "Pod")
      if (auto obj = object_at(*req, "object", "request.object"))
        read_pod(*obj, r);
    return r;
  } catch (const bad_field& b) {
    err.message = b.message;
    return err;
  }
}

namespace {

// The op that gates the pod: appended to the author's gates (never reordering or replacing them),
// or the list made when there is none.
void add_gate(runtime::json_writer& w, bool gates_present) {
  w.begin_object().field("op", "add");
  if (gates_present)
    w.field("path", "/spec/schedulingGates/-").key("value").begin_object().field("name", queue_gate).end_object();
  else
    w.field("path", "/spec/schedulingGates").key("value").begin_array().begin_object().field("name", queue_gate).end_object().end_array();
  w.end_object();
}

}  // namespace

mutation decide(const review_request& r) {
  mutation m;
  if (r.operation != "CREATE" || !r.group.empty() || r.version != "v1" || r.kind != "Pod" || !r.sub_resource.empty() ||
      !r.has_object) {
    m.what = outcome::not_pod_create;
    return m;
  }
  if (!r.opted_in) {
    m.what = outcome::not_opted_in;
    return m;
  }
  for (const auto& g : r.scheduling_gates)
    if (g == queue_gate) {
      m.what = outcome::already_gated;
      return m;
    }
  if (r.queue.empty()) {
    m.what = outcome::no_queue;
    m.warning = std::string{opt_in_annotation} + " is set but the pod names no queue (label " + std::string{queue_label} +
                "): it is not gated";
    return m;
  }
  m.what = outcome::gated;
  runtime::json_writer w;
  w.begin_array();
  add_gate(w, r.gates_present);
  w.end_array();
  m.patch = w.take();
  return m;
}

mutation enforce(const review_request& r, std::string_view queue) {
  mutation m;
  if (r.operation != "CREATE" || !r.group.empty() || r.version != "v1" || r.kind != "Pod" || !r.sub_resource.empty() ||
      !r.has_object) {
    m.what = outcome::not_pod_create;
    return m;
  }
  m.what = outcome::enforced;
  // JSON Pointer escapes '/' in a key as ~1 (RFC 6901).
  auto pointer_key = [](std::string_view key) {
    std::string out;
    for (char c : key)
      out += c == '/' ? std::string{"~1"} : c == '~' ? std::string{"~0"} : std::string{c};
    return out;
  };
  runtime::json_writer w;
  w.begin_array();
  // "add" of a member replaces it when present (RFC 6902 4.1): one op either way.
  w.begin_object().field("op", "add");
  if (r.has_labels)
    w.field("path", "/metadata/labels/" + pointer_key(queue_label)).field("value", queue);
  else
    w.field("path", "/metadata/labels").key("value").begin_object().field(queue_label, queue).end_object();
  w.end_object();
  w.begin_object().field("op", "add");
  if (r.has_annotations)
    w.field("path", "/metadata/annotations/" + pointer_key(opt_in_annotation)).field("value", "true");
  else
    w.field("path", "/metadata/annotations").key("value").begin_object().field(opt_in_annotation, "true").end_object();
  w.end_object();
  const bool gated = std::find(r.scheduling_gates.begin(), r.scheduling_gates.end(), queue_gate) != r.scheduling_gates.end();
  if (!gated)
    add_gate(w, r.gates_present);
  w.end_array();
  if (!r.queue.empty() && r.queue != queue)
    m.warning = "namespace " + r.ns.substr(0, 63) + " puts every pod behind Queue " + std::string{queue.substr(0, 63)} +
                "; the pod's " + std::string{queue_label} + " label '" + r.queue.substr(0, 63) + "' was replaced";
  m.patch = w.take();
  return m;
}

std::string encode_denial(std::string_view api_version, std::string_view uid, std::string_view message, int code) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", api_version.empty() ? std::string_view{"admission.k8s.io/v1"} : api_version);
  w.field("kind", "AdmissionReview").key("response").begin_object().field("uid", uid).field("allowed", false);
  w.key("status").begin_object().field("code", code).field("message", message).end_object();
  w.end_object().end_object();
  return w.take();
}

std::string encode_response(std::string_view api_version, std::string_view uid, std::string_view patch,
                            std::string_view warning) {
  runtime::json_writer w;
  w.begin_object().field("apiVersion", api_version.empty() ? std::string_view{"admission.k8s.io/v1"} : api_version);
  w.field("kind", "AdmissionReview").key("response").begin_object().field("uid", uid).field("allowed", true);
  if (!patch.empty())
    w.field("patchType", "JSONPatch").field("patch", base64(patch));
  if (!warning.empty())
    w.key("warnings").begin_array().value(warning).end_array();
  w.end_object().end_object();
  return w.take();
}

const char* outcome_name(outcome o) {
  switch (o) {
    case outcome::gated: return "gated";
    case outcome::already_gated: return "already_gated";
    case outcome::not_opted_in: return "not_opted_in";
    case outcome::enforced: return "enforced";
    case outcome::no_queue: return "no_queue";
    case outcome::not_pod_create: return "not_pod_create";
  }
  return "unknown";
}

}  // namespace headroom::k8s::admission
