#pragma once

// The ScaleSet object (deploy/crds/scalesets.yaml): what kubectl shows of one scale set. The
// documents are written with RapidJSON's Writer (escaping, numbers), never by concatenation.

#include <cstdint>
#include <string>

#include "messages/capacity.hpp"
#include "messages/listener.hpp"

namespace headroom::actors::capacity {

// What the scale set's actors last said, merged by scale_set_status.
struct scale_set_view {
  msg::capacity_view capacity;  // from capacity_monitor
  bool capacity_known = false;
  int64_t scale_set_id = 0;  // from listener_session's statistics
  msg::scale_set_statistics stats;
  bool stats_known = false;
  std::string session;  // from listener_session; "" until it says (then the object keeps what it has)
  std::string session_message;
  std::string session_since;  // RFC 3339: when `session` last changed (the condition's transition)
  std::string last_poll;      // RFC 3339: when the newest poll started; "" before the first
  std::string pairs_since;    // RFC 3339: when capacity.unplaced last became empty or not
  int64_t generation = 0;     // of a declaring ScaleSet's spec this subtree runs (0: from the file)
};

// The object headroom creates: no spec to set, labelled as headroom's, and as this deployment's
// (`instance`: headroom.dev/instance, when not empty) so a later start can remove it once its scale
// set is no longer configured.
std::string scale_set_object(const std::string& ns, const std::string& name, const std::string& instance = {});

// A merge patch of the status subresource: every field known so far (the session and its
// SessionOpen and Ready conditions once the listener has told it), `observed` (RFC 3339) as
// observedTime, and the generation run as observedGeneration (of a declared scale set).
std::string scale_set_status_patch(const scale_set_view& v, const std::string& observed);

// The status of a declared ScaleSet headroom does not run (the object catalog): observedGeneration
// and a Ready condition, False, with the reason and the message naming the field or the conflict.
std::string scale_set_refused_patch(int64_t generation, const std::string& reason, const std::string& message,
                                    const std::string& now);

}  // namespace headroom::actors::capacity
