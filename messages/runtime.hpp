#pragma once

// Messages of the runtime layer: buffer wake-ups and supervision.

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::msg {

/// A policy buffer has items for its consumer; at most one is outstanding per buffer.
struct buffer_wakeup {
  uint32_t buffer;
};

/// One supervised child as its supervisor sees it.
struct child_status {
  std::string name;
  bool running = false;
  uint32_t restarts = 0;
  std::string last_exit;  // "" until it first exits
};

/// A supervisor's answer to `get_atom`: its children in start order.
struct supervisor_status {
  std::string name;
  bool stopping = false;
  std::vector<child_status> children;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, buffer_wakeup& x) {
  return f(caf::meta::type_name("buffer_wakeup"), x.buffer);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, child_status& x) {
  return f(caf::meta::type_name("child_status"), x.name, x.running, x.restarts, x.last_exit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, supervisor_status& x) {
  return f(caf::meta::type_name("supervisor_status"), x.name, x.stopping, x.children);
}

}  // namespace headroom::msg
