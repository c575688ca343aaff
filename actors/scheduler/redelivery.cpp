// After a job store outage: the webhook deliveries the intake refused meanwhile (503) are found
// through the GitHub App's webhook-deliveries API and redelivered. GitHub never redelivers a failed
// delivery by itself, so a job whose `queued` delivery was refused was never recorded and never got
// a runner (#61). Each event's deliveries share a guid (X-GitHub-Delivery): a guid with any
// delivery GitHub saw answered "OK" is done; for the others the newest attempt is redelivered, once
// per look, and the store takes a redelivery of something it recorded as a duplicate, so a look
// repeated (or overlapping a manual redelivery) records every job once.

#include <algorithm>
#include <map>

#include "actors/scheduler/cycle.hpp"

namespace headroom::actors::scheduler {

std::vector<int64_t> deliveries_to_redeliver(const std::vector<github::hook_delivery>& deliveries, size_t max) {
  struct seen {
    bool ok = false;
    int64_t newest_id = 0, newest_at = 0, first_at = 0;
  };
  std::map<std::string, seen> by_guid;
  for (const auto& d : deliveries) {
    if (d.event != "workflow_job" || d.guid.empty())
      continue;
    auto& s = by_guid[d.guid];
    s.ok = s.ok || d.status == "OK";
    if (s.newest_id == 0 || d.delivered_at_ms > s.newest_at || (d.delivered_at_ms == s.newest_at && d.id > s.newest_id)) {
      s.newest_id = d.id;
      s.newest_at = d.delivered_at_ms;
    }
    s.first_at = s.first_at == 0 ? d.delivered_at_ms : std::min(s.first_at, d.delivered_at_ms);
  }
  std::vector<std::pair<int64_t, int64_t>> order;  // (first attempt, id): oldest event first
  for (const auto& [guid, s] : by_guid)
    if (!s.ok)
      order.emplace_back(s.first_at, s.newest_id);
  std::sort(order.begin(), order.end());
  std::vector<int64_t> out;
  for (const auto& [at, id] : order) {
    if (out.size() == max)
      break;
    out.push_back(id);
  }
  return out;
}

namespace reconcile {

namespace {

// One App's webhook: its deliveries since `since_ms`, the refused ones asked again.
void redeliver_missed_of(reconciler_state& s, int64_t since_ms, github::github_app app) {
  auto* gh = s.ctx->github;
  const char* which = app == github::github_app::user ? "user" : "first";
  github::delivery_window window;
  window.since_ms = since_ms;
  auto listed = gh->list_app_hook_deliveries(window, app);
  if (auto* e = std::get_if<github::rest_error>(&listed)) {
    s.ctx->metrics.error("github");
    runtime::log::warn(actor_name,
                       "could not list the webhook deliveries refused during the store outage: redeliver them by hand "
                       "(the App's Advanced settings, or POST /app/hook/deliveries/{id}/attempts)",
                       {{"app", which}, {"error", e->describe()}, {"since_ms", since_ms}});
    return;
  }
  const auto& list = std::get<github::hook_delivery_list>(listed);
  const auto ids = deliveries_to_redeliver(list.deliveries, max_redeliveries);
  int64_t asked = 0, gone = 0, failed = 0;
  for (const auto id : ids) {
    auto r = gh->redeliver(id, app);
    if (auto* e = std::get_if<github::rest_error>(&r)) {
      ++failed;
      s.ctx->metrics.error("github");
      runtime::log::warn(actor_name, "a redelivery was refused", {{"app", which}, {"delivery", id}, {"error", e->describe()}});
      if (e->rate_limited)
        break;
      continue;
    }
    if (std::get<github::redelivery_request>(r) == github::redelivery_request::gone) {
      ++gone;
      continue;
    }
    ++asked;
    s.ctx->metrics.action("webhook_redelivered");
  }
  runtime::log::info(actor_name, "asked GitHub to redeliver the webhook deliveries refused during the store outage",
                     {{"app", which}, {"redelivered", asked}, {"gone", gone}, {"failed", failed},
                      {"listed", static_cast<int64_t>(list.deliveries.size())}, {"complete", list.complete}, {"since_ms", since_ms}});
}

}  // namespace

// Each App has its own webhook, and its own deliveries to look through.
void redeliver_missed(reconciler_state& s, int64_t since_ms) {
  auto* gh = s.ctx->github;
  if (gh == nullptr)
    return;
  const auto apps = gh->apps();
  if (apps.empty())
    redeliver_missed_of(s, since_ms, github::github_app::first);  // says why it cannot (a PAT)
  for (const auto app : apps)
    redeliver_missed_of(s, since_ms, app);
}

}  // namespace reconcile
}  // namespace headroom::actors::scheduler
