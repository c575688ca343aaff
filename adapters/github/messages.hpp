#pragma once

// Decoders for what the Actions Service and GitHub send headroom: the long poll's message (whose
// `body` is a JSON array encoded as a string), its statistics, and workflow_job webhooks.
// Malformed input is an error value naming the field; a UTF-8 byte-order mark is accepted.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace headroom::github {

struct statistics {
  int64_t total_available_jobs = 0, total_acquired_jobs = 0, total_assigned_jobs = 0, total_running_jobs = 0,
          total_registered_runners = 0, total_busy_runners = 0, total_idle_runners = 0;
};

struct job_message {
  enum kind { available, assigned, started, completed, unknown } type = unknown;
  std::string message_type;  // as sent, for logs when unknown
  int64_t runner_request_id = 0, job_id_number = 0, workflow_run_id = 0, runner_id = 0;
  std::string job_id, repository_name, owner_name, job_workflow_ref, job_display_name, event_name;
  std::vector<std::string> request_labels;
  std::string queue_time, scale_set_assign_time, runner_assign_time, finish_time;
  std::string acquire_job_url, runner_name, result;
};

struct session_message {
  int64_t message_id = 0;
  std::string message_type;
  statistics stats;
  std::vector<job_message> jobs;
};

struct workflow_job_event {
  std::string action;  // queued | in_progress | completed | waiting
  int64_t job_id = 0, run_id = 0, runner_id = 0;
  std::vector<std::string> labels;
  std::string status, conclusion, runner_name, repository, organization;
};

struct decode_failure {
  std::string message;
};

template <class T>
using decoded = std::variant<T, decode_failure>;

std::string_view strip_bom(std::string_view body);

decoded<session_message> decode_session_message(std::string_view json);
decoded<statistics> decode_statistics(std::string_view json);
decoded<workflow_job_event> decode_workflow_job(std::string_view json);

}  // namespace headroom::github
