// The scheduler dashboards' query parameters (anyone who can reach the port sends them): parsed,
// then the Link header and a page rendered from what was accepted. Invariants: no crash; an
// accepted query has 1 ≤ per_page ≤ 1000 and a start before its end; no CR/LF reaches the Link
// header; the escaped text holds no markup character and is what the page shows.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "actors/scheduler/dashboards.hpp"

using namespace headroom::actors::scheduler;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  // "k=v&k=v…", as the server hands them over (already percent-decoded).
  std::multimap<std::string, std::string> query;
  size_t start = 0;
  while (start <= in.size()) {
    const auto amp = in.find('&', start);
    const auto part = in.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    const auto eq = part.find('=');
    query.emplace(part.substr(0, eq), eq == std::string::npos ? std::string{} : part.substr(eq + 1));
    if (amp == std::string::npos)
      break;
    start = amp + 1;
  }
  const bool jobs = size % 2 == 0;
  auto parsed = parse_page_params(query, 1'800'000'000'000, jobs);
  if (auto* p = std::get_if<page_params>(&parsed)) {
    if (p->per_page < 1 || p->per_page > 1000 || p->query.since >= p->query.until)
      std::abort();
    const auto link = link_header(jobs ? "/jobs.json" : "/workers.json", *p, true, p->query.after_created_at.value_or(0),
                                  p->query.after_name);
    if (link.find('\n') != std::string::npos || link.find('\r') != std::string::npos)
      std::abort();  // header injection
    headroom::store::worker w;
    w.name = in;
    w.failure_info = in;
    const auto escaped = html_escape(in);
    if (escaped.find_first_of("<>\"'") != std::string::npos)
      std::abort();
    if (workers_html({w}, *p, "").find(escaped) == std::string::npos)
      std::abort();  // the row is shown, escaped
  }
  return 0;
}
