#pragma once

// Decoders for what the Actions Service and GitHub send headroom: the long poll's message (whose
// `body` is a JSON array encoded as a string), its statistics, workflow_job webhooks, and the App
// webhook's deliveries (webhook_payloads.cpp reads GitHub's own documents, strictly).
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
  std::string name;  // the job's name (attacker-controlled text: escape it wherever it is shown)
  int64_t created_at_ms = 0;  // workflow_job.created_at (GitHub's clock), ms since the epoch; 0 absent
};

// One attempt to deliver the GitHub App's webhook, as GET /app/hook/deliveries lists it (newest
// first). `guid` is the X-GitHub-Delivery header the receiver got, the same for every redelivery of
// the event; each attempt has its own `id`, the one a redelivery is asked for by. `status` is "OK"
// when the receiver answered 2xx, else GitHub's words for the failure: GitHub itself never tries
// a failed delivery again.
struct hook_delivery {
  int64_t id = 0;
  std::string guid, delivered_at, event, action, status;  // action: "" when the event has none
  int64_t delivered_at_ms = 0;                            // delivered_at, ms since the epoch
  int status_code = 0;                                    // the receiver's answer; 0: none
  bool redelivery = false;
};

// Actions Service objects (the reference's section 2), with the fields headroom uses.
struct label {
  std::string type = "System", name;
};

struct runner_scale_set {
  int64_t id = 0, runner_group_id = 0;
  std::string name, runner_group_name, runner_jit_config_url;
  std::vector<label> labels;
  bool disable_update = false;
  statistics stats;
};

struct runner_group {
  int64_t id = 0;
  std::string name;
  bool is_default = false;
};

struct message_session {
  std::string session_id, owner_name, message_queue_url, message_queue_access_token;
  int64_t scale_set_id = 0;
  statistics stats;
};

struct runner_ref {
  int64_t id = 0, scale_set_id = 0;
  std::string name;
  std::string status;  // "online" once the runner has connected, else "offline"
  bool busy = false;   // running a job
};

struct jit_config {
  runner_ref runner;
  std::string encoded_jit_config;  // a secret: the runner's credentials
};

struct issued_token {  // installation and registration tokens: {token, expires_at}
  std::string token, expires_at;
};

struct admin_connection {  // POST actions/runner-registration: {url, token}
  std::string url, token;
};

struct service_exception {  // an error body: {typeName, message}
  std::string type_name, message;
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
// GET /app/hook/deliveries: an array of deliveries; id, guid and delivered_at are required.
decoded<std::vector<hook_delivery>> decode_hook_deliveries(std::string_view json);
// The `cursor` of a Link header's rel="next" link (GitHub's cursor paging, percent-decoded); ""
// when there is no next page. A next link without a cursor is an error, not the last page.
decoded<std::string> next_page_cursor(std::string_view link);

decoded<runner_scale_set> decode_scale_set(std::string_view json);
decoded<std::vector<runner_scale_set>> decode_scale_set_list(std::string_view json);  // {count, value}
decoded<std::vector<runner_group>> decode_runner_group_list(std::string_view json);
decoded<message_session> decode_session(std::string_view json);
decoded<jit_config> decode_jit_config(std::string_view json);
decoded<runner_ref> decode_runner(std::string_view json);
decoded<std::vector<runner_ref>> decode_runner_list(std::string_view json);
decoded<issued_token> decode_issued_token(std::string_view json);
decoded<admin_connection> decode_admin_connection(std::string_view json);
decoded<std::vector<int64_t>> decode_acquired_jobs(std::string_view json);  // {count, value: [ids]}
// Best effort: an empty exception when the body is not one (plain text, HTML, nothing).
service_exception decode_exception(std::string_view json);

// The JSON body for creating or updating a scale set.
std::string encode_scale_set(const runner_scale_set& set);

}  // namespace headroom::github
