#pragma once

// Messages between the reactive scalers and their tenants' quota keeper (local-only; registered in
// type_ids.hpp). A tenant's quota is a hard cap on the replicas of all its targets together.

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace headroom::msg {

/// reactive_scaler → reactive_quota, at every evaluation and after every write: its replicas now.
struct quota_report {
  std::string tenant, target;
  int32_t replicas = 0;
};

/// reactive_scaler → reactive_quota (request): may `target` go from `current` to `wanted`?
/// Answered with quota_verdict.
struct quota_claim {
  std::string tenant, target;
  int32_t current = 0, wanted = 0;
};

struct quota_verdict {
  bool granted = false;
  std::string detail;  // why not: "tenant ml: 10 of 10 replicas in use", "waiting for 2 targets to report"
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quota_report& x) {
  return f(caf::meta::type_name("quota_report"), x.tenant, x.target, x.replicas);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quota_claim& x) {
  return f(caf::meta::type_name("quota_claim"), x.tenant, x.target, x.current, x.wanted);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quota_verdict& x) {
  return f(caf::meta::type_name("quota_verdict"), x.granted, x.detail);
}

}  // namespace headroom::msg
