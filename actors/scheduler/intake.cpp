#include "actors/scheduler/intake.hpp"

#include <algorithm>

#include "adapters/github/auth.hpp"
#include "adapters/github/payloads.hpp"

namespace headroom::actors::scheduler {

std::string labels_key(std::vector<std::string> labels) {
  for (auto& l : labels)
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  std::string out;
  for (const auto& l : labels)
    out += (out.empty() ? "" : ",") + l;
  return out;
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

bool serves(const std::vector<std::string>& runner_labels, const std::vector<std::string>& job_labels) {
  if (runner_labels.empty())
    return std::any_of(job_labels.begin(), job_labels.end(), [](const std::string& l) { return lower(l) == "self-hosted"; });
  return std::all_of(job_labels.begin(), job_labels.end(), [&](const std::string& l) {
    const auto want = lower(l);
    return want == "self-hosted" ||
           std::any_of(runner_labels.begin(), runner_labels.end(), [&](const std::string& r) { return lower(r) == want; });
  });
}

intake_answer take_delivery(const delivery& d, std::string_view secret, store::store& jobs, const intake_limits& limits) {
  if (d.body.size() > limits.max_body)
    return {413, "body of " + std::to_string(d.body.size()) + " bytes is over the limit of " + std::to_string(limits.max_body), "too_large"};
  if (d.signature.empty())
    return {401, "X-Hub-Signature-256 is missing", "bad_signature"};
  if (!github::verify_webhook_signature(secret, d.body, d.signature))
    return {401, "X-Hub-Signature-256 does not match the body", "bad_signature"};
  if (d.id.empty())
    return {400, "X-GitHub-Delivery is missing", "malformed"};
  if (d.event != "workflow_job")
    return {202, "event \"" + d.event.substr(0, 64) + "\" ignored", "ignored"};
  auto decoded = github::decode_workflow_job(d.body);
  if (auto* f = std::get_if<github::decode_failure>(&decoded))
    return {400, f->message, "malformed"};
  const auto& e = std::get<github::workflow_job_event>(decoded);
  store::job_status to;
  if (e.action == "queued")
    to = store::job_status::pending;
  else if (e.action == "in_progress")
    to = store::job_status::running;
  else if (e.action == "completed")
    to = store::job_status::completed;
  else
    return {202, "action \"" + e.action.substr(0, 64) + "\" ignored", "ignored"};
  if (e.job_id <= 0)
    return {400, "workflow_job.id: missing or not a positive number", "malformed"};
  if (e.repository.empty())
    return {400, "repository.full_name: missing", "malformed"};
  // A job the scheduler does not serve is kept as history (status unmatched, never demand), so
  // /history shows what went elsewhere and why nothing was provisioned for it.
  std::string unmatched;
  const bool served = limits.pools.empty() ? serves({}, e.labels)
                                           : std::any_of(limits.pools.begin(), limits.pools.end(),
                                                         [&](const std::vector<std::string>& p) { return serves(p, e.labels); });
  if (!served)
    unmatched = "job " + std::to_string(e.job_id) + " asks for [" + labels_key(e.labels).substr(0, 200) +
                "], which no runner pool of this scheduler serves: recorded as unmatched";
  else if (!e.organization.empty() && !limits.repositories.empty() &&
           std::none_of(limits.repositories.begin(), limits.repositories.end(),
                        [&](const std::string& r) { return lower(r) == lower(e.repository); }))
    unmatched = "job " + std::to_string(e.job_id) + " of " + e.repository.substr(0, 200) +
                ", a repository this scheduler's runner group is not for: recorded as unmatched";
  if (!unmatched.empty())
    to = store::job_status::unmatched;
  store::job_event ev;
  ev.delivery_id = d.id;
  ev.at = d.received_ms;
  ev.change.id = e.job_id;
  ev.change.run_id = e.run_id;
  ev.change.entity = e.organization.empty() ? e.repository : e.organization;
  ev.change.labels = labels_key(e.labels);
  ev.change.name = e.name;
  ev.change.repository = e.repository;
  ev.change.conclusion = e.conclusion;
  ev.change.runner_name = e.runner_name;
  ev.change.status = to;
  // GitHub's creation time orders the queue (FIFO by creation, not by delivery); never after the
  // delivery's receipt (a clock ahead of ours), and the receipt when the payload has none.
  ev.change.created_at = e.created_at_ms > 0 ? std::min(e.created_at_ms, d.received_ms) : d.received_ms;
  auto r = jobs.record(ev);
  if (auto* err = std::get_if<store::error>(&r))
    return {503, "not recorded: " + err->message, "store_error"};
  const auto outcome = std::get<store::recorded>(r);
  if (!unmatched.empty() && outcome != store::recorded::duplicate)
    return {202, unmatched, "unmatched"};
  switch (outcome) {
    case store::recorded::applied:
      return {202, "recorded", "recorded"};
    case store::recorded::duplicate:
      return {202, "delivery " + d.id.substr(0, 64) + " was recorded before", "duplicate"};
    case store::recorded::unchanged:
      break;
  }
  return {202, "recorded; job " + std::to_string(e.job_id) + " is already past " + e.action, "unchanged"};
}

}  // namespace headroom::actors::scheduler
