#pragma once

// What a scale set's listener tells the other actors: plain values, copied out of the Actions
// Service protocol objects by the listener (the adapter's types stay below this layer).

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::msg {

/// The scale set's statistics as the service last reported them.
struct scale_set_statistics {
  int64_t total_available_jobs = 0, total_acquired_jobs = 0, total_assigned_jobs = 0, total_running_jobs = 0,
          total_registered_runners = 0, total_busy_runners = 0, total_idle_runners = 0;
  friend bool operator==(const scale_set_statistics&, const scale_set_statistics&) = default;
};

/// A job of this scale set started on a runner, or completed.
struct job_transition {
  enum kind : uint8_t { started, completed } type = started;
  int64_t runner_request_id = 0, runner_id = 0;
  std::string runner_name, result;
  std::string scale_set_assign_time, runner_assign_time, finish_time;  // RFC 3339, as the service sent them
  // What ARC's job series are labelled with.
  std::string repository, owner, job_name, event_name;
};

/// listener_session → runner_provisioner and capacity_monitor: the scale set's latest statistics
/// and its job transitions, in order.
struct scale_set_update {
  int64_t scale_set_id = 0;
  scale_set_statistics stats;
  std::vector<job_transition> jobs;
};

/// The session a listener_session holds (an empty id: none, it deleted it), written to its
/// session_memo as it opens and after each message it has handled, and read by a restarted
/// listener_session: the session its predecessor held and did not delete. Not a message. A
/// listener that crashed leaves its session in the service, which would refuse its successor's (409) until it
/// expires, for minutes; the successor adopts it (a session refresh gives it a token of its own),
/// so the messages still queued in it are not lost, and goes on after `last_message_id`, so a
/// message the predecessor handled and could not ack is not handled twice. Only the id travels,
/// never a token.
struct session_held {
  int64_t scale_set_id = 0;
  std::string session_id;
  int64_t last_message_id = 0;  // the newest message handled in this session
};


template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scale_set_statistics& x) {
  return f(caf::meta::type_name("scale_set_statistics"), x.total_available_jobs, x.total_acquired_jobs,
           x.total_assigned_jobs, x.total_running_jobs, x.total_registered_runners, x.total_busy_runners,
           x.total_idle_runners);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_transition& x) {
  return f(caf::meta::type_name("job_transition"), x.type, x.runner_request_id, x.runner_id, x.runner_name, x.result,
           x.scale_set_assign_time, x.runner_assign_time, x.finish_time, x.repository, x.owner, x.job_name, x.event_name);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scale_set_update& x) {
  return f(caf::meta::type_name("scale_set_update"), x.scale_set_id, x.stats, x.jobs);
}

}  // namespace headroom::msg
