// libFuzzer: the AdmissionReview decoder never crashes on hostile input; a failure always says
// why; a patch is only ever made for an opted-in Pod CREATE without our gate, and the answer is
// always an allowing AdmissionReview that JSON parsers accept.
#include <simdjson.h>

#include <cstdint>
#include <string_view>

#include "adapters/k8s/admission.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace headroom::k8s::admission;
  const std::string_view in{reinterpret_cast<const char*>(data), size};
  auto r = decode_review(in);
  std::string answer;
  if (auto* e = std::get_if<review_error>(&r)) {
    if (e->message.empty())
      __builtin_trap();
    answer = encode_response(e->api_version, e->uid, "", e->message);
  } else {
    const auto& req = std::get<review_request>(r);
    const auto m = decide(req);
    if (!m.patch.empty() && (m.what != outcome::gated || req.operation != "CREATE" || !req.opted_in))
      __builtin_trap();
    if (m.what == outcome::gated && m.patch.empty())
      __builtin_trap();
    for (const auto& g : req.scheduling_gates)
      if (g == queue_gate && m.what == outcome::gated)
        __builtin_trap();
    answer = encode_response(req.api_version, req.uid, m.patch);
    // Enforcement: a patch only for a pod create, always valid JSON, whatever the pod held.
    const auto enforced = enforce(req, req.queue.empty() ? std::string_view{"q"} : std::string_view{req.queue});
    if (!enforced.patch.empty() && (enforced.what != outcome::enforced || req.operation != "CREATE"))
      __builtin_trap();
    if (!enforced.patch.empty()) {
      simdjson::dom::parser pp;
      simdjson::dom::element patch;
      if (pp.parse(enforced.patch).get(patch) != simdjson::SUCCESS || !patch.is_array())
        __builtin_trap();
    }
  }
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  if (p.parse(answer).get(doc) != simdjson::SUCCESS)
    __builtin_trap();
  bool allowed = false;
  if (doc["response"]["allowed"].get(allowed) != simdjson::SUCCESS || !allowed)
    __builtin_trap();
  return 0;
}
