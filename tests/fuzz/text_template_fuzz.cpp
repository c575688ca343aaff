// libFuzzer: a Go text/template (runtime/text_template.hpp; the BigFleet bootstrap template) never
// crashes or hangs the parser or the executor: any input parses or is refused with Go's
// "template: NAME:LINE: …", and what parses renders the reference renderer's input or stops with
// "template: NAME…", within the output bound.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/text_template.hpp"

namespace tt = headroom::runtime::text_template;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text{reinterpret_cast<const char*>(data), size};
  static const tt::value input = [] {
    tt::list reqs;
    reqs.push_back(tt::record{"operator.RequirementInput", {{"Key", "node.kubernetes.io/instance-type"}, {"Operator", "In"},
                                                             {"Values", tt::list{"a3-highgpu-8g", "m5.large"}}}});
    reqs.push_back(tt::record{"operator.RequirementInput", {{"Key", "zone"}, {"Operator", "Exists"}, {"Values", tt::list{}}}});
    return tt::value{tt::record{"operator.BootstrapRendererInput", {{"ClusterID", "c"}, {"Requirements", std::move(reqs)}}}};
  }();
  auto parsed = tt::parsed::parse(text, "fuzz");
  if (const auto* e = std::get_if<std::string>(&parsed)) {
    if (e->rfind("template: fuzz:", 0) != 0)
      std::abort();
    return 0;
  }
  const auto r = std::get<tt::parsed>(parsed).execute(input);
  if (!r.error.empty() && (r.error.rfind("template: fuzz", 0) != 0 || !r.text.empty()))
    std::abort();
  if (r.text.size() > (4u << 20) + (1u << 16))
    std::abort();
  return 0;
}
