// libFuzzer: the BigFleet decoders of user input (CapacityRequest objects, penalty quantities,
// the PriorityClass penalty-defaults YAML) never crash and always explain a failure.
#include <cstdint>
#include <string_view>

#include "adapters/bigfleet/capacity_request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in{reinterpret_cast<const char*>(data), size};
  using namespace headroom::bigfleet;
  auto cr = decode_capacity_request(in);
  if (auto* e = std::get_if<decode_error>(&cr); e && e->message.empty())
    __builtin_trap();
  auto b = penalty_bucket(in.substr(0, 64));
  if (auto* e = std::get_if<decode_error>(&b); e && e->message.empty())
    __builtin_trap();
  auto d = parse_penalty_defaults(in);
  if (auto* e = std::get_if<decode_error>(&d); e && e->message.empty())
    __builtin_trap();
  return 0;
}
