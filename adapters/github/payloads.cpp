#include "adapters/github/payloads.hpp"

#include <simdjson.h>

#include "adapters/json/ondemand.hpp"

#include "runtime/log.hpp"
#include "runtime/secrets.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::github {

namespace {

namespace od = simdjson::ondemand;
using json::failure;
using json::fields;
using json::is_null;
constexpr auto str = json::text;

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

bool boolean(od::value v) { return is_null(v) ? false : bool(v.get_bool()); }

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

void read_scale_set(od::value v, runner_scale_set& s) {
  fields(v, [&](std::string_view k, od::value x) {
    if (k == "id")
      s.id = num(x);
    else if (k == "name")
      s.name = str(x);
    else if (k == "runnerGroupId")
      s.runner_group_id = num(x);
    else if (k == "runnerGroupName")
      s.runner_group_name = str(x);
    else if (k == "runnerJitConfigUrl")
      s.runner_jit_config_url = str(x);
    else if (k == "statistics")
      read_statistics(x, s.stats);
    else if (k == "RunnerSetting")
      fields(x, [&](std::string_view k2, od::value y) {
        if (k2 == "disableUpdate" && !is_null(y))
          s.disable_update = y.get_bool();
      });
    else if (k == "labels" && !is_null(x))
      for (auto item : x.get_array()) {
        label l;
        fields(od::value{item.value()}, [&](std::string_view k2, od::value y) {
          if (k2 == "type")
            l.type = str(y);
          else if (k2 == "name")
            l.name = str(y);
        });
        s.labels.push_back(std::move(l));
      }
  });
}

void read_runner(od::value v, runner_ref& r) {
  fields(v, [&](std::string_view k, od::value x) {
    if (k == "id")
      r.id = num(x);
    else if (k == "name")
      r.name = str(x);
    else if (k == "runnerScaleSetId")
      r.scale_set_id = num(x);
    else if (k == "status")
      r.status = str(x);
    else if (k == "busy")
      r.busy = boolean(x);
  });
}

// {count, value: [...]}: each element read by `item`; count must match when present.
template <class T, class Item>
void read_list(od::value v, std::vector<T>& out, Item&& item) {
  int64_t count = -1;
  fields(v, [&](std::string_view k, od::value x) {
    if (k == "count") {
      count = num(x);
    } else if (k == "value" && !is_null(x)) {
      for (auto element : x.get_array()) {
        T t{};
        item(od::value{element.value()}, t);
        out.push_back(std::move(t));
      }
    }
  });
  if (count >= 0 && static_cast<size_t>(count) != out.size())
    throw failure{"count " + std::to_string(count) + " but value has " + std::to_string(out.size()) + " items"};
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

decoded<runner_scale_set> decode_scale_set(std::string_view json) {
  return guarded<runner_scale_set>("scale set", json, [](od::value v, runner_scale_set& s) { read_scale_set(v, s); });
}

decoded<std::vector<runner_scale_set>> decode_scale_set_list(std::string_view json) {
  return guarded<std::vector<runner_scale_set>>("scale set list", json, [](od::value v, auto& out) {
    read_list(v, out, [](od::value x, runner_scale_set& s) { read_scale_set(x, s); });
  });
}

decoded<std::vector<runner_group>> decode_runner_group_list(std::string_view json) {
  return guarded<std::vector<runner_group>>("runner group list", json, [](od::value v, auto& out) {
    read_list(v, out, [](od::value x, runner_group& g) {
      fields(x, [&](std::string_view k, od::value y) {
        if (k == "id")
          g.id = num(y);
        else if (k == "name")
          g.name = str(y);
        else if (k == "isDefaultGroup" && !is_null(y))
          g.is_default = y.get_bool();
      });
    });
  });
}

decoded<message_session> decode_session(std::string_view json) {
  auto out = guarded<message_session>("session", json, [](od::value v, message_session& m) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "sessionId")
        m.session_id = str(x);
      else if (k == "ownerName")
        m.owner_name = str(x);
      else if (k == "messageQueueUrl")
        m.message_queue_url = str(x);
      else if (k == "messageQueueAccessToken")
        m.message_queue_access_token = str(x);
      else if (k == "statistics")
        read_statistics(x, m.stats);
      else if (k == "runnerScaleSet")
        fields(x, [&](std::string_view k2, od::value y) {
          if (k2 == "id")
            m.scale_set_id = num(y);
        });
    });
    if (m.session_id.empty() || m.message_queue_url.empty() || m.message_queue_access_token.empty())
      throw failure{"sessionId, messageQueueUrl and messageQueueAccessToken are required"};
  });
  if (auto* m = std::get_if<message_session>(&out))
    runtime::secret_registry::global().add_ephemeral(m->message_queue_access_token);  // rotates
  return out;
}

decoded<jit_config> decode_jit_config(std::string_view json) {
  auto out = guarded<jit_config>("JIT config", json, [](od::value v, jit_config& j) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "runner")
        read_runner(x, j.runner);
      else if (k == "encodedJITConfig")
        j.encoded_jit_config = str(x);
    });
    if (j.encoded_jit_config.empty() || j.runner.id == 0)
      throw failure{"runner.id and encodedJITConfig are required"};
  });
  if (auto* j = std::get_if<jit_config>(&out))
    runtime::secret_registry::global().add_ephemeral(j->encoded_jit_config);  // single use
  return out;
}

decoded<runner_ref> decode_runner(std::string_view json) {
  return guarded<runner_ref>("runner", json, [](od::value v, runner_ref& r) { read_runner(v, r); });
}

decoded<std::vector<runner_ref>> decode_runner_list(std::string_view json) {
  return guarded<std::vector<runner_ref>>("runner list", json, [](od::value v, auto& out) {
    read_list(v, out, [](od::value x, runner_ref& r) { read_runner(x, r); });
  });
}

decoded<issued_token> decode_issued_token(std::string_view json) {
  auto out = guarded<issued_token>("token", json, [](od::value v, issued_token& t) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "token")
        t.token = str(x);
      else if (k == "expires_at")
        t.expires_at = str(x);
    });
    if (t.token.empty())
      throw failure{"token is required"};
  });
  if (auto* t = std::get_if<issued_token>(&out))
    runtime::secret_registry::global().add(t->token);
  return out;
}

decoded<admin_connection> decode_admin_connection(std::string_view json) {
  auto out = guarded<admin_connection>("admin connection", json, [](od::value v, admin_connection& a) {
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "url")
        a.url = str(x);
      else if (k == "token")
        a.token = str(x);
    });
    if (a.url.empty() || a.token.empty())
      throw failure{"url and token are required"};
  });
  if (auto* a = std::get_if<admin_connection>(&out))
    runtime::secret_registry::global().add(a->token);
  return out;
}

decoded<std::vector<int64_t>> decode_acquired_jobs(std::string_view json) {
  return guarded<std::vector<int64_t>>("acquired jobs", json, [](od::value v, std::vector<int64_t>& out) {
    read_list(v, out, [](od::value x, int64_t& id) { id = num(x); });
  });
}

service_exception decode_exception(std::string_view json) {
  auto out = guarded<service_exception>("error", json, [](od::value v, service_exception& e) {
    if (v.type() != od::json_type::object)
      return;
    fields(v, [&](std::string_view k, od::value x) {
      if (k == "typeName")
        e.type_name = str(x);
      else if (k == "message")
        e.message = str(x);
    });
  });
  if (auto* e = std::get_if<service_exception>(&out))
    return std::move(*e);
  return {};
}

std::string encode_scale_set(const runner_scale_set& set) {
  runtime::json_writer w;
  w.begin_object().field("name", set.name).field("runnerGroupId", set.runner_group_id);
  if (set.id != 0)
    w.field("id", set.id);
  w.key("labels").begin_array();
  for (const auto& label : set.labels)
    w.begin_object().field("type", label.type).field("name", label.name).end_object();
  w.end_array();
  w.key("RunnerSetting").begin_object().field("disableUpdate", set.disable_update).end_object().end_object();
  return w.take();
}

}  // namespace headroom::github
