#pragma once

// A PromQL instant-vector selector (`name`, `name{label="v",…}`, `{…}`) read into its label
// matchers, as Prometheus' parser reads it: =, !=, =~, !~; strings in "…", '…' (Go escapes) or
// `…` (raw); a trailing comma allowed. The metric name becomes __name__="name". Used to ask for
// many selectors' raw samples in one remote read; anything that is not a plain selector (a
// function, an operator, a range, an offset) is refused with the reason and goes through the query
// API instead.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::prom {

struct label_matcher {
  enum class op { eq, neq, re, nre };
  op type = op::eq;
  std::string name, value;
  friend bool operator==(const label_matcher&, const label_matcher&) = default;
};

std::optional<std::vector<label_matcher>> parse_selector(std::string_view expr, std::string& error);

}  // namespace headroom::prom
