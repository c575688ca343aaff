#pragma once

// Messages of the BigFleet operator actors.

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace headroom::msg {

/// Shard stream → shard_session: the stream of `generation` opened (Hello sent) or closed.
struct shard_link {
  uint64_t generation = 0;
  bool up = false;
  std::string reason;  // closed: why
};

/// An UpcomingNode / AvailableCapacity write for one key (a machine, a profile) finished.
struct object_written {
  std::string key;
  bool ok = false;
  std::string error;
  std::string phase;  // UpcomingNode: the phase now recorded ("" when the object was deleted)
  std::string spec, status;  // what was written, to skip identical writes next time
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_link& x) {
  return f(caf::meta::type_name("shard_link"), x.generation, x.up, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, object_written& x) {
  return f(caf::meta::type_name("object_written"), x.key, x.ok, x.error, x.phase, x.spec, x.status);
}

}  // namespace headroom::msg
