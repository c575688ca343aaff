// scheduler_http: the actor that owns the scheduler's HTTP server. Requests are served on the
// server's worker threads: a webhook's handler records it in the store (thread-safe; the commit is
// what makes the 202 true) and a dashboard's handler reads a page. Neither touches actor state.

#include <caf/all.hpp>

#include "actors/scheduler/dashboards.hpp"
#include "actors/scheduler/intake.hpp"
#include "actors/scheduler/scheduler.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/web_server.hpp"

namespace headroom::actors::scheduler {

namespace {

constexpr std::string_view actor_name = "scheduler_http";

runtime::web_reply text(int status, std::string body) {
  runtime::web_reply r;
  r.status = status;
  r.body = std::move(body) + "\n";
  return r;
}

runtime::web_reply json(std::string body) {
  runtime::web_reply r;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

runtime::web_reply html(std::string body) {
  runtime::web_reply r;
  r.content_type = "text/html; charset=utf-8";
  r.headers.emplace_back("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
  r.body = std::move(body);
  return r;
}

runtime::web_reply webhook(const http_context& ctx, const runtime::web_request& req) {
  delivery d;
  d.event = req.header("X-GitHub-Event");
  d.id = req.header("X-GitHub-Delivery");
  d.signature = req.header("X-Hub-Signature-256");
  d.body = req.body;
  d.received_ms = ctx.now_ms();
  intake_limits limits;
  limits.max_body = ctx.max_body;
  limits.pools = ctx.pools;
  if (ctx.declared_pools)
    for (auto& labels : ctx.declared_pools())
      limits.pools.push_back(std::move(labels));
  limits.repositories = ctx.repositories;
  auto a = take_delivery(d, ctx.secret, *ctx.jobs, limits);
  if (ctx.delivered)
    ctx.delivered(a.outcome, static_cast<double>(ctx.now_ms() - d.received_ms) / 1000.0);
  if (a.status >= 400)
    runtime::log::warn(actor_name, "webhook refused",
                       {{"status", a.status}, {"outcome", a.outcome}, {"delivery", d.id.substr(0, 64)}, {"why", a.message}});
  return text(a.status, a.message);
}

// One page of jobs or workers: keyset; a `page` without a cursor walks from the first page.
template <class Row, class Fetch, class Cursor>
std::variant<std::vector<Row>, std::string> fetch_page(page_params& p, Fetch&& fetch, Cursor&& cursor) {
  if (p.page > 1 && !p.query.after_created_at) {  // at most max_page_without_cursor (parse_page_params)
    for (size_t i = 1; i < p.page; ++i) {
      auto r = fetch(p.query);
      if (auto* e = std::get_if<store::error>(&r))
        return e->message;
      auto& rows = std::get<std::vector<Row>>(r);
      if (rows.empty())
        return std::vector<Row>{};
      cursor(p.query, rows.back());
    }
  }
  auto r = fetch(p.query);
  if (auto* e = std::get_if<store::error>(&r))
    return e->message;
  return std::get<std::vector<Row>>(std::move(r));
}

template <class Row, class Fetch, class Cursor, class Key, class Json, class Html>
runtime::web_reply listing(const http_context& ctx, const runtime::web_request& req, const std::string& base, bool as_json,
                           bool jobs, Fetch&& fetch, Cursor&& cursor, Key&& key, Json&& to_json, Html&& to_html) {
  auto parsed = parse_page_params(req.query, ctx.now_ms(), jobs);
  if (auto* e = std::get_if<std::string>(&parsed))
    return text(400, *e);
  auto p = std::get<page_params>(parsed);
  auto rows = fetch_page<Row>(p, fetch, cursor);
  if (auto* e = std::get_if<std::string>(&rows))
    return text(503, "the store did not answer: " + *e);
  const auto& list = std::get<std::vector<Row>>(rows);
  const bool full = list.size() == p.per_page;
  const int64_t last_created = list.empty() ? 0 : list.back().created_at;
  const std::string last_key = list.empty() ? std::string{} : key(list.back());
  const std::string json_link = link_header(base + ".json", p, full, last_created, last_key);
  if (as_json) {
    auto r = json(to_json(list));
    r.headers.emplace_back("Link", json_link);
    return r;
  }
  std::string next;
  if (full) {  // the HTML twin of the JSON Link's next
    const std::string link = link_header(base, p, true, last_created, last_key);
    const auto at = link.rfind('<');
    next = link.substr(at + 1, link.rfind('>') - at - 1);
  }
  auto r = html(to_html(list, p, next));
  r.headers.emplace_back("Link", link_header(base, p, full, last_created, last_key));
  return r;
}

std::vector<runtime::web_route> webhook_routes(std::shared_ptr<const http_context> ctx) {
  std::vector<runtime::web_route> out;
  out.push_back({"POST", "/webhook", [ctx](const runtime::web_request& r) { return webhook(*ctx, r); }});
  out.push_back({"GET", "/health", [](const runtime::web_request&) { return text(200, "ok"); }});
  return out;
}

std::vector<runtime::web_route> dashboard_routes(std::shared_ptr<const http_context> ctx) {
  std::vector<runtime::web_route> out;
  out.push_back({"GET", "/health", [](const runtime::web_request&) { return text(200, "ok"); }});
  for (bool as_json : {false, true}) {
    const std::string ext = as_json ? ".json" : "";
    out.push_back({"GET", "/usage" + ext, [ctx, as_json](const runtime::web_request&) {
                     auto jobs = ctx->jobs->active_jobs();
                     auto workers = ctx->jobs->active_workers();
                     if (std::holds_alternative<store::error>(jobs) || std::holds_alternative<store::error>(workers))
                       return text(503, "the store did not answer");
                     auto rows = usage(std::get<std::vector<store::job>>(jobs), std::get<std::vector<store::worker>>(workers),
                                       ctx->caps, ctx->default_cap);
                     return as_json ? json(usage_json(rows)) : html(usage_html(rows, ctx->now_ms()));
                   }});
    for (const std::string base : {"/jobs", "/history"})
      out.push_back({"GET", base + ext, [ctx, as_json, base](const runtime::web_request& r) {
                       return listing<store::job>(
                           *ctx, r, base, as_json, true, [&](const store::page_query& q) { return ctx->jobs->jobs_page(q); },
                           [](store::page_query& q, const store::job& last) {
                             q.after_created_at = last.created_at;
                             q.after_status = last.status;
                             q.after_id = last.id;
                           },
                           [](const store::job& j) { return std::string{store::to_string(j.status)} + ":" + std::to_string(j.id); },
                           jobs_json, jobs_html);
                     }});
    out.push_back({"GET", "/workers" + ext, [ctx, as_json](const runtime::web_request& r) {
                     return listing<store::worker>(
                         *ctx, r, "/workers", as_json, false, [&](const store::page_query& q) { return ctx->jobs->workers_page(q); },
                         [](store::page_query& q, const store::worker& last) {
                           q.after_created_at = last.created_at;
                           q.after_name = last.name;
                         },
                         [](const store::worker& w) { return w.name; }, workers_json, workers_html);
                   }});
  }
  return out;
}

struct http_state {
  std::unique_ptr<runtime::actor_system_clock> clock;  // the servers' request timing
  std::unique_ptr<runtime::web_server> server, dashboards;
  static inline const char* name = "headroom.scheduler_http";
};

scheduler_http_actor::behavior_type http_behavior(scheduler_http_actor::stateful_pointer<http_state> self, std::shared_ptr<const http_context> ctx) {
  self->state.clock = std::make_unique<runtime::actor_system_clock>(self->clock());
  auto serve = [&](const std::string& listen, std::vector<runtime::web_route> routes, int threads, const char* what,
                   std::unique_ptr<runtime::web_server>& into) {
    runtime::web_options o;
    o.listen = listen;
    o.threads = threads;
    o.max_body = ctx->max_body + 1024;  // take_delivery answers 413 itself, naming the limit
    o.routes = std::move(routes);
    o.observe = ctx->served;
    o.clock = self->state.clock.get();
    try {
      into = std::make_unique<runtime::web_server>(std::move(o));
    } catch (const std::exception& e) {
      runtime::log::error(actor_name, "cannot serve", {{"what", what}, {"listen", listen}, {"error", e.what()}});
      self->quit(caf::make_error(caf::sec::runtime_error, e.what()));
      return false;
    }
    runtime::log::info(actor_name, std::string{"serving "} + what, {{"listen", listen}, {"port", static_cast<int>(into->port())}});
    return true;
  };
  if (!serve(ctx->listen, webhook_routes(ctx), ctx->threads, "POST /webhook", self->state.server))
    return scheduler_http_actor::behavior_type::make_empty_behavior();
  // The pages are read by people, a few at a time: two threads.
  if (!ctx->dashboard_listen.empty() && !serve(ctx->dashboard_listen, dashboard_routes(ctx), 2, "the dashboards", self->state.dashboards))
    return scheduler_http_actor::behavior_type::make_empty_behavior();
  if (ctx->dashboards_bound && self->state.dashboards)
    ctx->dashboards_bound(self->state.dashboards->port());
  if (ctx->bound)
    ctx->bound(self->state.server->port());
  return {[self](caf::get_atom) { return static_cast<uint16_t>(self->state.server->port()); }};
}

}  // namespace

scheduler_http_actor spawn_scheduler_http(caf::actor_system& sys, std::shared_ptr<const http_context> ctx) {
  return sys.spawn(http_behavior, std::move(ctx));
}

}  // namespace headroom::actors::scheduler
