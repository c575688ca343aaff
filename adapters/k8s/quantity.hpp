#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace headroom::k8s {

// A resource.Quantity reduced to what headroom computes with. Parsing follows Kubernetes'
// apimachinery `ParseQuantity` exactly (grammar, suffixes, quirks: "." and "-" are 0, "1.G" is
// allowed, "K" is not a suffix), and the value is then rounded *up* (away from zero), as
// `MilliValue()` and `Value()` do, so a request never shrinks: 0.1m of CPU is 1m.
// Kubernetes caps a quantity at 2^63-1 units; milli then saturates at the int64 maximum.
struct quantity {
  int64_t milli = 0;  // ceil(q × 1000)
  int64_t units = 0;  // ceil(q)

  friend bool operator==(const quantity&, const quantity&) = default;
};

struct quantity_error {
  std::string message;  // names the input and what is wrong with it
};

std::variant<quantity, quantity_error> parse_quantity(std::string_view text);

// The general parser alone, without the fast path for common forms; for tests that check the two
// agree.
std::variant<quantity, quantity_error> parse_quantity_general(std::string_view text);

}  // namespace headroom::k8s
