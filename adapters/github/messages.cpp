#include "adapters/github/messages.hpp"

#include <simdjson.h>

namespace headroom::github {

namespace {

namespace od = simdjson::ondemand;

struct failure {
  std::string message;
};

bool is_null(od::value& v) { return v.type() == od::json_type::null && v.is_null(); }

std::string str(od::value v) {
  if (is_null(v))
    return {};
  if (v.type() == od::json_type::number)  // ids the service sends as numbers or strings alike
    return std::string{v.raw_json_token()};
  return std::string{std::string_view{v.get_string()}};
}

int64_t num(od::value v) {
  if (is_null(v))
    return 0;
  if (v.type() == od::json_type::string) {
    const std::string_view s = v.get_string();
    int64_t out = 0;
    for (char c : s) {
      if (c < '0' || c > '9')
        throw failure{"expected a number, found \"" + std::string{s.substr(0, 32)} + "\""};
      if (__builtin_mul_overflow(out, 10, &out) || __builtin_add_overflow(out, c - '0', &out))
        throw failure{"number out of range: \"" + std::string{s.substr(0, 32)} + "\""};
    }
    return out;
  }
  return v.get_int64();
}

template <class F>
void fields(od::value v, F&& fn) {
  if (is_null(v))
    return;
  for (auto field : v.get_object()) {
    std::string_view key = field.unescaped_key();
    fn(key, od::value{field.value()});
  }
}

void strings(od::value v, std::vector<std::string>& out) {
  if (is_null(v))
    return;
  for (auto item : v.get_array())
    out.push_back(str(od::value{item.value()}));
}

void read_statistics(od::value v, statistics& s) {
  fields(v, [&](std::string_view k, od::value x) {
    if (k == "totalAvailableJobs")
      s.total_available_jobs = num(x);
    else if (k == "totalAcquiredJobs")
      s.total_acquired_jobs = num(x);
    else if (k == "totalAssignedJobs")
      s.total_assigned_jobs = num(x);
    else if (k == "totalRunningJobs")
      s.total_running_jobs = num(x);
    else if (k == "totalRegisteredRunners")
      s.total_registered_runners = num(x);
    else if (k == "totalBusyRunners")
      s.total_busy_runners = num(x);
    else if (k == "totalIdleRunners")
      s.total_idle_runners = num(x);
  });
}

job_message read_job(od::value v) {
  job_message j;
  fields(v, [&](std::string_view k, od::value x) {
    if (k == "messageType") {
      j.message_type = str(x);
      j.type = j.message_type == "JobAvailable"   ? job_message::available
               : j.message_type == "JobAssigned"  ? job_message::assigned
               : j.message_type == "JobStarted"   ? job_message::started
               : j.message_type == "JobCompleted" ? job_message::completed
                                                  : job_message::unknown;
    } else if (k == "runnerRequestId") {
      j.runner_request_id = num(x);
    } else if (k == "jobId") {
      j.job_id = str(x);
    } else if (k == "workflowRunId") {
      j.workflow_run_id = num(x);
    } else if (k == "runnerId") {
      j.runner_id = num(x);
    } else if (k == "repositoryName") {
      j.repository_name = str(x);
    } else if (k == "ownerName") {
      j.owner_name = str(x);
    } else if (k == "jobWorkflowRef") {
      j.job_workflow_ref = str(x);
    } else if (k == "jobDisplayName") {
      j.job_display_name = str(x);
    } else if (k == "eventName") {
      j.event_name = str(x);
    } else if (k == "requestLabels") {
      strings(x, j.request_labels);
    } else if (k == "queueTime") {
      j.queue_time = str(x);
    } else if (k == "scaleSetAssignTime") {
      j.scale_set_assign_time = str(x);
    } else if (k == "runnerAssignTime") {
      j.runner_assign_time = str(x);
    } else if (k == "finishTime") {
      j.finish_time = str(x);
    } else if (k == "acquireJobUrl") {
      j.acquire_job_url = str(x);
    } else if (k == "runnerName") {
      j.runner_name = str(x);
    } else if (k == "result") {
      j.result = str(x);
    }
  });
  return j;
}

template <class T, class Body>
decoded<T> guarded(std::string_view what, std::string_view json, Body&& body) {
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded{strip_bom(json)};
    auto doc = parser.iterate(padded);
    T out;
    body(od::value{doc.get_value()}, out);
    return out;
  } catch (const failure& f) {
    return decode_failure{std::string{what} + ": " + f.message};
  } catch (const simdjson::simdjson_error& e) {
    return decode_failure{std::string{what} + ": " + simdjson::error_message(e.error())};
  }
}

}  // namespace

std::string_view strip_bom(std::string_view body) {
  if (body.size() >= 3 && body.substr(0, 3) == "\xEF\xBB\xBF")
    body.remove_prefix(3);
  return body;
}

decoded<statistics> decode_statistics(std::string_view json) {
  return guarded<statistics>("statistics", json, [](od::value v, statistics& s) { read_statistics(v, s); });
}

decoded<session_message> decode_session_message(std::string_view json) {
  std::string body;
  auto outer = guarded<session_message>("message", json, [&](od::value v, session_message& m) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "messageId")
        m.message_id = num(x);
      else if (k == "messageType")
        m.message_type = str(x);
      else if (k == "statistics")
        read_statistics(x, m.stats);
      else if (k == "body")
        body = str(x);  // a JSON array encoded as a string
    });
  });
  if (std::holds_alternative<decode_failure>(outer) || body.empty())
    return outer;
  auto& m = std::get<session_message>(outer);
  auto jobs = guarded<std::vector<job_message>>("message body", body, [](od::value v, std::vector<job_message>& out) {
    if (v.type() != od::json_type::array)
      throw failure{"expected an array of job messages"};
    for (auto item : v.get_array())
      out.push_back(read_job(od::value{item.value()}));
  });
  if (auto* f = std::get_if<decode_failure>(&jobs))
    return decode_failure{"message " + std::to_string(m.message_id) + ": " + f->message};
  m.jobs = std::move(std::get<std::vector<job_message>>(jobs));
  return outer;
}

decoded<workflow_job_event> decode_workflow_job(std::string_view json) {
  return guarded<workflow_job_event>("workflow_job", json, [](od::value v, workflow_job_event& e) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "action") {
        e.action = str(x);
      } else if (k == "workflow_job") {
        fields(x, [&](std::string_view k2, od::value y) {
          if (k2 == "id")
            e.job_id = num(y);
          else if (k2 == "run_id")
            e.run_id = num(y);
          else if (k2 == "runner_id")
            e.runner_id = num(y);
          else if (k2 == "labels")
            strings(y, e.labels);
          else if (k2 == "status")
            e.status = str(y);
          else if (k2 == "conclusion")
            e.conclusion = str(y);
          else if (k2 == "runner_name")
            e.runner_name = str(y);
        });
      } else if (k == "repository") {
        fields(x, [&](std::string_view k2, od::value y) {
          if (k2 == "full_name")
            e.repository = str(y);
        });
      } else if (k == "organization") {
        fields(x, [&](std::string_view k2, od::value y) {
          if (k2 == "login")
            e.organization = str(y);
        });
      }
    });
  });
}

}  // namespace headroom::github
