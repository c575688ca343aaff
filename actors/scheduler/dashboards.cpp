#include "actors/scheduler/dashboards.hpp"
#include "actors/scheduler/scheduler.hpp"


#include "adapters/http/transport.hpp"
#include "runtime/json_writer.hpp"
#include "runtime/log.hpp"
#include "runtime/rfc3339.hpp"

namespace headroom::actors::scheduler {

namespace {

constexpr int64_t day_ms = 86'400'000;

// A non-negative 64-bit number, digits only.
std::optional<int64_t> parse_i64(std::string_view v) {
  if (v.empty() || v.size() > 18)
    return std::nullopt;
  int64_t out = 0;
  for (char c : v) {
    if (c < '0' || c > '9')
      return std::nullopt;
    out = out * 10 + (c - '0');
  }
  return out;
}

// parse_i64 within [min, max].
std::optional<int64_t> parse_count(const std::string& v, int64_t min, int64_t max) {
  auto out = parse_i64(v);
  if (!out || *out < min || *out > max)
    return std::nullopt;
  return out;
}

// YYYY-MM-DD (00:00 UTC that day) or -Xd (X days before now).
std::optional<int64_t> parse_date(const std::string& v, int64_t now_ms) {
  if (v.size() >= 3 && v.front() == '-' && v.back() == 'd') {
    auto days = parse_count(v.substr(1, v.size() - 2), 0, 100'000);
    if (!days)
      return std::nullopt;
    return now_ms - *days * day_ms;
  }
  if (v.size() != 10 || v[4] != '-' || v[7] != '-')
    return std::nullopt;
  if (!parse_count(v.substr(0, 4), 1970, 9999) || !parse_count(v.substr(5, 2), 1, 12) || !parse_count(v.substr(8, 2), 1, 31))
    return std::nullopt;
  // The one RFC 3339 reader: it refuses 2026-02-31 too.
  const auto at = runtime::parse_rfc3339(v + "T00:00:00Z");
  if (!at)
    return std::nullopt;
  return static_cast<int64_t>(*at) * 1000;
}

std::string iso(int64_t ms) {
  if (ms <= 0)
    return "";
  return runtime::format_rfc3339(static_cast<double>(ms / 1000), 0);
}

std::string page_head(const std::string& title) {
  return "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>headroom · " + title +
         "</title><style>"
         "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1440px;color:#1f2328;padding:0 1em}"
         "nav a{margin-right:1em}h1{font-size:20px}table{border-collapse:collapse;width:100%}"
         "th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #d0d7de;vertical-align:top;white-space:nowrap}"
         "td.wrap{white-space:normal;overflow-wrap:anywhere;min-width:12em}"
         "th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}"
         ".s-pending,.s-creating{color:#9a6700}.s-running{color:#0969da}.s-completed{color:#1a7f37}.s-failed{color:#cf222e}.s-unmatched{color:#57606a}"
         "code{font-size:12px}</style></head><body><nav><a href=\"/usage\">Usage</a><a href=\"/jobs\">Jobs</a>"
         "<a href=\"/workers\">Workers</a></nav><h1>" +
         title + "</h1>";
}

std::string pager(const page_params& p, const std::string& next_url) {
  std::string out = "<p>Page " + std::to_string(p.page) + " · " + std::to_string(p.per_page) + " per page";
  if (!next_url.empty())
    out += " · <a rel=\"next\" href=\"" + html_escape(next_url) + "\">next</a>";
  return out + "</p>";
}

std::string cell(const std::string& text, const char* cls = nullptr) {
  return std::string{"<td"} + (cls ? std::string{" class=\""} + cls + "\"" : "") + ">" + html_escape(text) + "</td>";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::variant<page_params, std::string> parse_page_params(const std::multimap<std::string, std::string>& query,
                                                         int64_t now_ms, bool jobs) {
  page_params p;
  for (const auto& [k, v] : query) {
    if (k == "page") {
      auto n = parse_count(v, 1, 1'000'000);
      if (!n)
        return "page: expected a number from 1, found \"" + v.substr(0, 32) + "\"";
      p.page = static_cast<size_t>(*n);
    } else if (k == "per_page") {
      auto n = parse_count(v, 1, 1000);
      if (!n)
        return "per_page: expected a number from 1 to 1000, found \"" + v.substr(0, 32) + "\"";
      p.per_page = static_cast<size_t>(*n);
    } else if (k == "start") {
      auto t = parse_date(v, now_ms);
      if (!t)
        return "start: expected YYYY-MM-DD or -Xd, found \"" + v.substr(0, 32) + "\"";
      p.query.since = *t;
      p.start = v;
    } else if (k == "end") {
      auto t = parse_date(v, now_ms);
      if (!t)
        return "end: expected YYYY-MM-DD or -Xd, found \"" + v.substr(0, 32) + "\"";
      p.query.until = v.front() == '-' ? *t : *t + day_ms;  // a date includes its whole day
      p.end = v;
    } else if (k == "after") {
      // <created_at>:<status>:<id> (jobs, which page status first) or <created_at>:<name> (workers),
      // as a Link header gives it
      const auto colon = v.find(':');
      auto at = colon == std::string::npos ? std::nullopt : parse_i64(v.substr(0, colon));
      if (!at)
        return "after: expected a cursor from a Link header, found \"" + v.substr(0, 32) + "\"";
      const std::string key = v.substr(colon + 1);
      p.query.after_created_at = *at;
      if (jobs) {
        const auto sep = key.find(':');
        auto status = sep == std::string::npos ? std::nullopt : store::job_status_from(key.substr(0, sep));
        if (!status)
          return "after: the cursor's job status is not one of pending, running, completed, failed, unmatched";
        auto id = parse_i64(key.substr(sep + 1));
        if (!id)
          return "after: the cursor's job id is not a number";
        p.query.after_status = *status;
        p.query.after_id = *id;
      } else {
        if (key.empty() || key.size() > 253)
          return "after: the cursor's worker name is empty or too long";
        p.query.after_name = key;
      }
    } else {
      return "unknown parameter \"" + k.substr(0, 32) + "\" (known: page, per_page, start, end, after)";
    }
  }
  if (p.query.since >= p.query.until)
    return "start: must be before end";
  if (p.page > max_page_without_cursor && !p.query.after_created_at)
    return "page: without a cursor (after) at most page " + std::to_string(max_page_without_cursor) + "; follow the Link header";
  p.query.limit = p.per_page;
  return p;
}

std::string link_header(const std::string& base, const page_params& p, bool full, int64_t last_created,
                        const std::string& last_key) {
  std::string common = "per_page=" + std::to_string(p.per_page);
  if (!p.start.empty())
    common += "&start=" + http::url_encode(p.start);
  if (!p.end.empty())
    common += "&end=" + http::url_encode(p.end);
  std::string out = "<" + base + "?" + common + "&page=1>; rel=\"first\"";
  if (full)
    out += ", <" + base + "?" + common + "&page=" + std::to_string(p.page + 1) + "&after=" + std::to_string(last_created) +
           "%3A" + http::url_encode(last_key) + ">; rel=\"next\"";
  return out;
}

std::vector<usage_row> usage(const std::vector<store::job>& active_jobs, const std::vector<store::worker>& active_workers,
                             const std::map<std::string, int64_t>& caps, int64_t default_cap) {
  std::map<std::pair<std::string, std::string>, usage_row> rows;
  auto row = [&](const std::string& entity, const std::string& labels) -> usage_row& {
    auto& r = rows[{entity, labels}];
    r.entity = entity;
    r.labels = labels;
    auto it = caps.find(account_of(entity));  // the cap is the account's, every repository together
    r.cap = it == caps.end() ? default_cap : it->second;
    return r;
  };
  for (const auto& j : active_jobs)
    ++(j.status == store::job_status::pending ? row(j.entity, j.labels).pending : row(j.entity, j.labels).running);
  for (const auto& w : active_workers)
    ++(w.status == store::worker_status::creating ? row(w.entity, w.labels).workers_creating : row(w.entity, w.labels).workers_running);
  std::vector<usage_row> out;
  for (auto& [k, r] : rows)
    out.push_back(std::move(r));
  return out;
}

std::string jobs_json(const std::vector<store::job>& rows) {
  runtime::json_writer w;
  w.begin_array();
  for (const auto& j : rows) {
    w.begin_object().field("id", j.id).field("run_id", j.run_id).field("entity", j.entity).field("labels", j.labels);
    w.field("name", j.name).field("repository", j.repository).field("status", store::to_string(j.status));
    w.field("conclusion", j.conclusion).field("runner_name", j.runner_name).field("created_at", iso(j.created_at));
    w.field("updated_at", iso(j.updated_at)).field("created_at_ms", j.created_at).end_object();
  }
  w.end_array();
  return w.take();
}

std::string workers_json(const std::vector<store::worker>& rows) {
  runtime::json_writer w;
  w.begin_array();
  for (const auto& r : rows) {
    w.begin_object().field("name", r.name).field("entity", r.entity).field("labels", r.labels).field("job_id", r.job_id);
    w.field("runner_id", r.runner_id).field("status", store::to_string(r.status)).field("failure_info", r.failure_info);
    w.field("created_at", iso(r.created_at)).field("updated_at", iso(r.updated_at)).field("created_at_ms", r.created_at);
    w.end_object();
  }
  w.end_array();
  return w.take();
}

std::string usage_json(const std::vector<usage_row>& rows) {
  runtime::json_writer w;
  w.begin_array();
  for (const auto& r : rows) {
    w.begin_object().field("entity", r.entity).field("labels", r.labels).field("jobs_pending", r.pending);
    w.field("jobs_running", r.running).field("workers_creating", r.workers_creating);
    w.field("workers_running", r.workers_running).field("max_workers", r.cap).end_object();
  }
  w.end_array();
  return w.take();
}

std::string jobs_html(const std::vector<store::job>& rows, const page_params& p, const std::string& next_url) {
  std::string out = page_head("Jobs") + pager(p, next_url) +
                    "<table><thead><tr><th>Job</th><th>Name</th><th>Repository</th><th>Entity</th><th>Labels</th><th>Status</th>"
                    "<th>Runner</th><th>Created</th><th>Updated</th></tr></thead><tbody>";
  for (const auto& j : rows) {
    const std::string status = store::to_string(j.status);
    const std::string cls = "s-" + status;
    out += "<tr>" + cell(std::to_string(j.id), "num") + cell(j.name, "wrap") + cell(j.repository) + cell(j.entity) + "<td><code>" +
           html_escape(j.labels) + "</code></td>" + cell(status + (j.conclusion.empty() ? "" : " (" + j.conclusion + ")"), cls.c_str()) +
           cell(j.runner_name) + cell(iso(j.created_at)) + cell(iso(j.updated_at)) + "</tr>";
  }
  return out + "</tbody></table>" + pager(p, next_url) + "</body></html>";
}

std::string workers_html(const std::vector<store::worker>& rows, const page_params& p, const std::string& next_url) {
  std::string out = page_head("Workers") + pager(p, next_url) +
                    "<table><thead><tr><th>Worker</th><th>Entity</th><th>Labels</th><th>Status</th><th>Job</th><th>Runner id</th>"
                    "<th>Failure</th><th>Created</th><th>Updated</th></tr></thead><tbody>";
  for (const auto& w : rows) {
    const std::string status = store::to_string(w.status);
    const std::string cls = "s-" + status;
    out += "<tr>" + cell(w.name) + cell(w.entity) + "<td><code>" + html_escape(w.labels) + "</code></td>" + cell(status, cls.c_str()) +
           cell(w.job_id ? std::to_string(w.job_id) : "", "num") + cell(w.runner_id ? std::to_string(w.runner_id) : "", "num") +
           cell(w.failure_info, "wrap") + cell(iso(w.created_at)) + cell(iso(w.updated_at)) + "</tr>";
  }
  return out + "</tbody></table>" + pager(p, next_url) + "</body></html>";
}

std::string usage_html(const std::vector<usage_row>& rows, int64_t now_ms) {
  std::string out = page_head("Usage") + "<p>Live at " + iso(now_ms) +
                    "</p><table><thead><tr><th>Entity</th><th>Labels</th><th>Jobs pending</th><th>Jobs running</th>"
                    "<th>Workers creating</th><th>Workers running</th><th>Max workers</th></tr></thead><tbody>";
  for (const auto& r : rows)
    out += "<tr>" + cell(r.entity) + "<td><code>" + html_escape(r.labels) + "</code></td>" + cell(std::to_string(r.pending), "num") +
           cell(std::to_string(r.running), "num") + cell(std::to_string(r.workers_creating), "num") +
           cell(std::to_string(r.workers_running), "num") + cell(std::to_string(r.cap), "num") + "</tr>";
  if (rows.empty())
    out += "<tr><td colspan=\"7\">Nothing queued or running.</td></tr>";
  return out + "</tbody></table></body></html>";
}

}  // namespace headroom::actors::scheduler
