#pragma once

// The scheduler's dashboards (seed 003): /usage (live, by entity and labels), /jobs (= /history)
// and /workers (with failure_info), each as plain server-rendered HTML and as a .json twin.
//
// Paging is keyset, newest first: a page is an index seek after the previous page's last
// (created_at, key), never an OFFSET scan. The `Link` header (GitHub's style: rel="next",
// rel="first") carries that cursor as `after`, so following it is always a seek; `page` is kept for
// the reader and, without a cursor, walks from the first page.
//
// Every string that came from a webhook (job names, labels, repositories, entities) is
// attacker-controlled: HTML-escaped in pages, JSON-escaped in the twins.

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "adapters/store/store.hpp"

namespace headroom::actors::scheduler {

// Without a cursor, page N reads the N-1 pages before it: a bound, so a client cannot make one
// request cost a thousand queries. Past it, a 400 that names the cursor.
inline constexpr size_t max_page_without_cursor = 1000;

struct page_params {
  size_t page = 1, per_page = 100;
  std::string start, end;   // as asked, carried into the Link header
  store::page_query query;  // limit, cursor and created_at range
};

// page, per_page (1..1000), start/end (YYYY-MM-DD, or -Xd for X days ago), after (a cursor from a
// Link header). An error names the parameter and what was wrong.
std::variant<page_params, std::string> parse_page_params(const std::multimap<std::string, std::string>& query,
                                                         int64_t now_ms, bool jobs);

std::string html_escape(std::string_view text);

// The Link header for a page whose last row is `last_created`/`last_key` (`full`: the page was full,
// so a next page may exist). `base`: the route's path ("/jobs.json").
std::string link_header(const std::string& base, const page_params& p, bool full, int64_t last_created,
                        const std::string& last_key);

struct usage_row {
  std::string entity, labels;
  int64_t pending = 0, running = 0, workers_creating = 0, workers_running = 0, cap = 0;
};
std::vector<usage_row> usage(const std::vector<store::job>& active_jobs, const std::vector<store::worker>& active_workers,
                             const std::map<std::string, int64_t>& caps, int64_t default_cap);

std::string jobs_json(const std::vector<store::job>& rows);
std::string workers_json(const std::vector<store::worker>& rows);
std::string usage_json(const std::vector<usage_row>& rows);

std::string jobs_html(const std::vector<store::job>& rows, const page_params& p, const std::string& next_url);
std::string workers_html(const std::vector<store::worker>& rows, const page_params& p, const std::string& next_url);
std::string usage_html(const std::vector<usage_row>& rows, int64_t now_ms);

}  // namespace headroom::actors::scheduler
