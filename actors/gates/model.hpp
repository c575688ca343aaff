#pragma once

// Queue admission by scheduling gate (seed 002), as pure functions of one queue and its pods as
// the informer cache holds them right now. Nothing is counted incrementally: `allocated` and
// `reserved` are recomputed from the pods on every change, which is the seed's cache
// invalidation by construction.
//
//   allocated = requests of the queue's bound, non-terminal pods
//   reserved  = requests of its opted-in pods that are not gated by us, not bound, not finished,
//               whose reservation (from the ungating, or the pod's creation) has not expired
//   a gated pod (ours its only gate) is ungated, in order of priority then age, while
//               allocated + reserved + pod <= capacity for every resource the queue names;
//               a gang (gang_annotation) as one unit: all its gated members or none.

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adapters/k8s/objects.hpp"
#include "adapters/k8s/queue.hpp"

namespace headroom::actors::gates {

using wall_time = std::chrono::system_clock::time_point;

inline constexpr std::string_view ungated_at_annotation = "headroom.dev/ungated-at";
// Gang admission: pods of one namespace sharing headroom.dev/gang (the group's name) with
// headroom.dev/gang-size N are admitted all or nothing: none is ungated until N members are
// there (ungated ones included) and the queue has room for every one still gated; until then no
// member holds room. Once N have been admitted, a further member is judged on its own.
inline constexpr std::string_view gang_annotation = "headroom.dev/gang";
inline constexpr std::string_view gang_size_annotation = "headroom.dev/gang-size";
inline constexpr std::string_view admitted_condition = "headroom.dev/QueueAdmitted";

struct queue_rules {
  k8s::queue spec;
  std::chrono::milliseconds reservation_timeout{600'000};  // the queue's own, or the config default
};

struct ungate {
  std::string ns, name, uid, resource_version;
  size_t gate_index = 0;  // where our gate sits in spec.schedulingGates (the patch tests it)
};

struct condition_write {
  std::string ns, name;
  std::string status, reason, message;
};

struct queue_plan {
  k8s::queue_status status;
  std::vector<ungate> ungates;             // in order
  std::vector<condition_write> conditions;  // only where the pod's condition differs
  std::vector<std::string> expired;         // ns/name of reservations that have expired (for Events)
  std::optional<wall_time> next_expiry;     // when to look again for one
};

// The amount of `resource` a pod takes from a queue: its requests (cpu in milli), 1 for "pods".
int64_t amount_of(const k8s::pod& p, std::string_view resource);

bool has_our_gate(const k8s::pod& p);
bool opted_in(const k8s::pod& p);

// `in_flight`: ns/name of pods whose ungating was sent but is not in the cache yet; they count as
// reserved and are not ungated again.
queue_plan plan_queue(const queue_rules& q, const std::vector<std::shared_ptr<const k8s::pod>>& pods, wall_time now,
                      const std::set<std::string>& in_flight);

// A gated pod of a queue that does not exist: its condition.
condition_write queue_not_found(const k8s::pod& p, const std::string& queue);

// The annotation's text for a time, and back (RFC 3339, UTC, milliseconds).
std::string format_wall(wall_time t);
std::optional<wall_time> parse_wall(std::string_view text);

// What plan_queue and queue_book (queue_book.hpp) share: one pod's facts and the texts they write.
namespace detail {
bool terminal(const k8s::pod& p);
std::string key_of(const k8s::pod& p);
std::string describe(const k8s::resource_amounts& amounts);  // "cpu=1, memory=1073741824"
std::optional<wall_time> reservation_start(const k8s::pod& p);
// A pod's gang: its key (namespace/name) and size; `error` for annotations that do not make one.
struct gang_of {
  std::string key, name, error;
  int64_t size = 0;
};
std::optional<gang_of> gang(const k8s::pod& p);
std::string other_gates_message(const queue_rules& q, const k8s::pod& p);
std::string gang_incomplete_message(const std::string& gang, int64_t have, int64_t size);
// `whose`: "" for a pod alone, "gang NAME (N pods) " for a gang's gated members.
std::string waiting_message(const queue_rules& q, const std::string& whose, const k8s::resource_amounts& needs, bool too_big);
std::string admitted_message(const queue_rules& q);
}  // namespace detail

}  // namespace headroom::actors::gates
