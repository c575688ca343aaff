#pragma once

// The admission webhook's wire format (admission.k8s.io/v1 AdmissionReview) and the queue gate's
// one mutation (seed 002): a Pod created with the annotation
// `headroom.dev/queue-allocation-gate: "true"` gets the scheduling gate of the same name, once.
// Everything here is a pure function of the request body, safe on any thread.

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace headroom::k8s::admission {

inline constexpr std::string_view queue_gate = "headroom.dev/queue-allocation-gate";
inline constexpr std::string_view opt_in_annotation = "headroom.dev/queue-allocation-gate";
inline constexpr std::string_view queue_label = "headroom.dev/queue";

// What headroom reads of one AdmissionReview's request.
struct review_request {
  std::string api_version;  // of the AdmissionReview itself; the answer uses the same
  std::string uid;
  std::string operation;            // CREATE | UPDATE | DELETE | CONNECT
  std::string group, version, kind;  // request.kind
  std::string sub_resource;         // request.subResource ("" for the object itself)
  std::string ns, name;             // name is "" for a Pod made from generateName
  bool has_object = false;
  bool has_labels = false, has_annotations = false;  // metadata.labels / metadata.annotations are present
  bool opted_in = false;                     // the annotation is exactly "true"
  std::string queue;                         // the label naming the pod's Queue
  bool gates_present = false;                // spec.schedulingGates is set (maybe empty)
  std::vector<std::string> scheduling_gates;  // their names, in order
};

// A body that is not an AdmissionReview this webhook can read; `uid` when it could be read, so
// the answer still names the request.
struct review_error {
  std::string api_version, uid;
  std::string message;  // the field and what is wrong with it, e.g. `request.object.spec.schedulingGates[1].name: expected a string`
};

std::variant<review_request, review_error> decode_review(std::string_view body);

enum class outcome {
  gated,           // the gate is added
  already_gated,   // the Pod carries the gate already (set by its author): nothing to add
  not_opted_in,    // no annotation, or not "true"
  no_queue,        // opted in but names no queue: not gated (it could never be admitted), with a warning
  not_pod_create,  // another kind, operation or subresource: never mutated
  enforced,        // a pod of an enforced namespace: put behind the namespace's Queue (label, annotation, gate)
};

struct mutation {
  outcome what = outcome::not_opted_in;
  std::string patch;    // a JSON Patch (RFC 6902), "" when nothing changes
  std::string warning;  // for the client, when the pod asked for something it does not get
};

// Only Pod CREATE of the object itself is ever mutated; gates set by others are never touched. A
// pod must name its queue (label headroom.dev/queue) to be gated: nothing would ever ungate it.
mutation decide(const review_request& r);

// Namespace enforcement: the namespace is labelled headroom.dev/queue: `queue`, so every pod created
// in it goes behind that Queue whatever it says: its queue label is set (replaced if it names
// another), the opt-in annotation is set to "true", and the gate is added unless present.
mutation enforce(const review_request& r, std::string_view queue);

// A refusal (allowed: false) with `message` and HTTP-like `code` (the API server shows both).
std::string encode_denial(std::string_view api_version, std::string_view uid, std::string_view message, int code);

// The AdmissionReview answer: always allowed (the seed never blocks pod creation); with the patch
// when there is one. `warning` (optional) is shown to the client (kubectl prints it).
std::string encode_response(std::string_view api_version, std::string_view uid, std::string_view patch,
                            std::string_view warning = {});

const char* outcome_name(outcome o);

}  // namespace headroom::k8s::admission
