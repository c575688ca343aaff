// The GitHub App's own webhook: the deliveries GitHub made to headroom and how each went
// (GET /app/hook/deliveries), and asking for one again (POST /app/hook/deliveries/{id}/attempts).
// GitHub never redelivers a failed delivery by itself
// (https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries): these
// calls are how the deliveries headroom refused during an outage are found and sent again. Both
// take the App's JWT (https://docs.github.com/en/rest/apps/webhooks).
#include <algorithm>

#include "adapters/github/rest_client.hpp"
#include "runtime/clock.hpp"

namespace headroom::github {

rest_result<rest_client::answer> rest_client::app_call(const std::string& operation, const std::string& method,
                                                       const std::string& path, github_app app) {
  auto jwt = jwt_of(operation, app);
  if (auto* e = std::get_if<rest_error>(&jwt))
    return *e;
  if (auto e = paused(operation))
    return *e;
  return send(operation, method, path, std::get<std::string>(jwt), {}, std::nullopt);
}

namespace {

std::string deliveries_path(const std::string& cursor) {
  std::string path = "/app/hook/deliveries?per_page=100";  // the most a page holds
  if (!cursor.empty())
    path += "&cursor=" + http::url_encode(cursor);
  return path;
}

}  // namespace

rest_result<hook_delivery_list> rest_client::list_app_hook_deliveries(const delivery_window& window, github_app app) {
  const std::string op = app == github_app::user ? "list the second GitHub App's webhook deliveries" : "list the GitHub App's webhook deliveries";
  hook_delivery_list out;
  std::string cursor;
  for (int page = 0; page < std::max(1, window.max_pages); ++page) {
    auto a = app_call(op, "GET", deliveries_path(cursor), app);
    if (auto* e = std::get_if<rest_error>(&a))
      return *e;
    auto& r = std::get<answer>(a);
    if (r.status != 200)
      return rest_error{r.status, op, message_of(r.body)};
    auto items = decode_hook_deliveries(r.body);
    if (auto* f = std::get_if<decode_failure>(&items))
      return rest_error{r.status, op, "malformed answer: " + f->message};
    // Each item is looked at, not only up to the first old one: the order is GitHub's to keep.
    bool reached_since = false;
    for (auto& d : std::get<std::vector<hook_delivery>>(items)) {
      if (d.delivered_at_ms < window.since_ms)
        reached_since = true;
      else
        out.deliveries.push_back(std::move(d));
    }
    if (reached_since)
      return out;
    auto next = next_page_cursor(r.link);
    if (auto* f = std::get_if<decode_failure>(&next))
      return rest_error{r.status, op, "malformed answer: " + f->message};
    cursor = std::get<std::string>(next);
    if (cursor.empty())
      return out;
  }
  out.complete = false;
  return out;
}

rest_result<redelivery_request> rest_client::redeliver(int64_t delivery_id, github_app app) {
  const std::string op = std::string{"redeliver "} + (app == github_app::user ? "the second GitHub App's " : "") +
                         "webhook delivery " + std::to_string(delivery_id);
  auto a = app_call(op, "POST", "/app/hook/deliveries/" + std::to_string(delivery_id) + "/attempts", app);
  if (auto* e = std::get_if<rest_error>(&a))
    return *e;
  auto& r = std::get<answer>(a);
  if (r.status == 202)
    return redelivery_request::accepted;
  if (r.status == 404)
    return redelivery_request::gone;
  return rest_error{r.status, op, message_of(r.body)};
}

}  // namespace headroom::github
