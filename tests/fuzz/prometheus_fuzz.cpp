// libFuzzer: the Prometheus query decoder, the selector parser, the remote-read response decoder
// (the input as the body, and snappy-compressed as the protobuf), the /scale decoder, kind
// discovery and the scale annotation never crash on hostile input; a failure always says why, and a success is always one
// series of finite samples (never NaN or ±Inf), a replica count never negative.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "actors/reactive/model.hpp"
#include "adapters/k8s/scale.hpp"
#include "adapters/prometheus/query.hpp"
#include "adapters/prometheus/remote_read.hpp"

#include <snappy.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in{reinterpret_cast<const char*>(data), size};
  using namespace headroom;
  auto q = prom::decode_query(in);
  if (auto* n = std::get_if<prom::no_metric>(&q)) {
    if (n->reason.empty())
      __builtin_trap();
  } else {
    const auto& s = std::get<prom::series>(q);
    if (s.samples.empty())
      __builtin_trap();
    for (const auto& x : s.samples)
      if (!std::isfinite(x.v))
        __builtin_trap();
  }
  auto sc = k8s::decode_scale(in);
  if (auto* e = std::get_if<k8s::decode_error>(&sc); e && e->message.empty())
    __builtin_trap();
  if (auto* v = std::get_if<k8s::scale>(&sc); v && (v->spec_replicas < 0 || v->status_replicas < 0))
    __builtin_trap();
  std::string error;
  if (!k8s::find_resource(in, "apps/v1", "Deployment", error) && error.empty())
    __builtin_trap();
  error.clear();
  if (auto ptr = k8s::crd_replicas_pointer(in, "v1", error); ptr ? ptr->rfind("/spec/", 0) != 0 : error.empty())
    __builtin_trap();
  error.clear();
  auto last = actors::reactive::decode_last_scale(in, error);
  if (!last && error.empty())
    __builtin_trap();
  (void)prom::is_selector(in);
  std::string why;
  if (!prom::parse_selector(in, why) && why.empty())
    __builtin_trap();
  auto check_read = [](const std::vector<prom::query_result>& results, size_t n) {
    if (results.size() != n)
      __builtin_trap();
    for (const auto& r : results) {
      if (auto* none = std::get_if<prom::no_metric>(&r); none && none->reason.empty())
        __builtin_trap();
      if (auto* s = std::get_if<prom::series>(&r))
        for (const auto& x : s->samples)
          if (!std::isfinite(x.v))
            __builtin_trap();
    }
  };
  check_read(prom::decode_read_response(in, 2), 2);
  std::string packed;
  snappy::Compress(in.data(), in.size(), &packed);
  check_read(prom::decode_read_response(packed, 1), 1);
  return 0;
}
