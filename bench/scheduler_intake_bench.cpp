// Webhook intake, durable (issue #14's goal: ≥ 2,000 deliveries/s sustained, p99 ≤ 20 ms to the
// 202, on this 2-core machine), SQLite and PostgreSQL side by side in one run; and /jobs.json
// pages over a large table (goal ≤ 50 ms for any page at 1 M rows).
//
// The real path: the scheduler_http actor serving POST /webhook over cpp-httplib, take_delivery
// verifying the signature, decoding and committing each delivery before its 202. Clients are
// keep-alive libcurl connections on this machine, each delivery a distinct job and delivery id.
// PostgreSQL is Debian's server started on loopback by the test fixture.
//
//   scheduler_intake_bench [--deliveries N] [--clients C] [--rows R]
//
// Prints one JSON line per backend: {"mode":"intake","store":…,"deliveries":…,"per_second":…,
// "p50_ms":…,"p99_ms":…,"max_ms":…} and {"mode":"jobs_page",…}.

#include <caf/all.hpp>
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "actors/scheduler/scheduler.hpp"
#include "testenv/actions_peer.hpp"
#include "testenv/postgres_server.hpp"

namespace {

using namespace headroom;
using clock_type = std::chrono::steady_clock;

const std::string secret = "whsec_bench_0123456789abcdef";

size_t discard(char*, size_t size, size_t n, void*) { return size * n; }

std::string body_for(int64_t id, const char* action) {
  return std::string{R"({"action":")"} + action + R"(","workflow_job":{"id":)" + std::to_string(id) +
         R"(,"run_id":)" + std::to_string(9000 + id) +
         R"(,"name":"build","labels":["self-hosted","linux","x64"],"status":"queued","conclusion":null,"runner_name":null},)"
         R"("repository":{"full_name":"acme/app"},"organization":{"login":"acme"}})";
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct result {
  int ok = 0, failed = 0;
  double seconds = 0;
  std::vector<double> latencies_ms;
};

result drive(uint16_t port, int deliveries, int clients, int64_t first_id) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::atomic<int> ok{0}, failed{0};
  std::atomic<int64_t> next{0};
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/webhook";
  // Bodies and signatures made before the clock starts: the bench measures headroom, not HMAC here.
  std::vector<std::pair<std::string, std::string>> prepared(static_cast<size_t>(deliveries));
  for (int i = 0; i < deliveries; ++i) {
    auto b = body_for(first_id + i, "queued");
    prepared[static_cast<size_t>(i)] = {b, "X-Hub-Signature-256: sha256=" + testpeer::hmac_sha256_hex(secret, b)};
  }
  const auto start = clock_type::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      CURL* h = curl_easy_init();
      curl_easy_setopt(h, CURLOPT_URL, url.c_str());
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &discard);
      curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
      for (int64_t i; (i = next.fetch_add(1)) < deliveries;) {
        const auto& [body, sig] = prepared[static_cast<size_t>(i)];
        const std::string id = "X-GitHub-Delivery: bench-" + std::to_string(first_id + i);
        curl_slist* hdr = curl_slist_append(nullptr, "Content-Type: application/json");
        hdr = curl_slist_append(hdr, "X-GitHub-Event: workflow_job");
        hdr = curl_slist_append(hdr, id.c_str());
        hdr = curl_slist_append(hdr, sig.c_str());
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
        const auto t0 = clock_type::now();
        long status = 0;
        if (curl_easy_perform(h) == CURLE_OK)
          curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        lat[static_cast<size_t>(c)].push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
        (status == 202 ? ok : failed)++;
        curl_slist_free_all(hdr);
      }
      curl_easy_cleanup(h);
    });
  for (auto& t : threads)
    t.join();
  result r;
  r.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  r.ok = ok;
  r.failed = failed;
  for (auto& l : lat)
    r.latencies_ms.insert(r.latencies_ms.end(), l.begin(), l.end());
  return r;
}

// Any page of /jobs.json at `rows` rows: the first, one deep in, and the last, each timed.
void pages(uint16_t port, store::store& jobs, const char* backend, int rows) {
  const int64_t base = 10'000'000;
  // Bulk rows straight through the store (the same record() the intake uses), in batches of threads.
  const auto t0 = clock_type::now();
  std::vector<std::thread> fill;
  std::atomic<int64_t> next{0};
  for (int t = 0; t < 4; ++t)
    fill.emplace_back([&] {
      for (int64_t i; (i = next.fetch_add(1)) < rows;) {
        store::job_event e;
        e.delivery_id = "fill-" + std::to_string(i);
        e.change.id = base + i;
        e.change.run_id = i;
        e.change.entity = "acme";
        e.change.labels = "linux";
        e.change.name = "build";
        e.change.repository = "acme/app";
        e.at = 1'700'000'000'000 + i;
        (void)jobs.record(e);
      }
    });
  for (auto& t : fill)
    t.join();
  const double fill_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  auto timed = [&](const std::string& path) {
    CURL* h = curl_easy_init();
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + path;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &discard);
    std::vector<double> ms;
    for (int i = 0; i < 20; ++i) {
      const auto s = clock_type::now();
      curl_easy_perform(h);
      ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - s).count());
    }
    curl_easy_cleanup(h);
    return percentile(ms, 0.5);
  };
  const double first = timed("/jobs.json?per_page=100");
  const double deep = timed("/jobs.json?per_page=100&after=" + std::to_string(1'700'000'000'000 + rows / 2) + "%3A" +
                            std::to_string(base + rows / 2));
  const double last = timed("/jobs.json?per_page=100&after=" + std::to_string(1'700'000'000'000 + 50) + "%3A" + std::to_string(base + 50));
  std::printf("{\"mode\":\"jobs_page\",\"store\":\"%s\",\"rows\":%d,\"fill_s\":%.1f,\"first_ms\":%.2f,\"middle_ms\":%.2f,\"last_ms\":%.2f}\n",
              backend, rows, fill_s, first, deep, last);
  std::fflush(stdout);
}

void run(caf::actor_system& sys, std::unique_ptr<store::store> jobs, const char* backend, int deliveries, int clients, int rows) {
  auto ctx = std::make_shared<actors::scheduler::http_context>();
  ctx->jobs = jobs.get();
  ctx->secret = secret;
  ctx->listen = "127.0.0.1:0";
  ctx->dashboard_listen = "127.0.0.1:0";
  ctx->threads = 16;
  ctx->now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  auto bound = std::make_shared<std::promise<uint16_t>>(), dashboards = std::make_shared<std::promise<uint16_t>>();
  ctx->bound = [bound](uint16_t p) { bound->set_value(p); };
  ctx->dashboards_bound = [dashboards](uint16_t p) { dashboards->set_value(p); };
  auto http = actors::scheduler::spawn_scheduler_http(sys, ctx);
  const uint16_t port = bound->get_future().get();
  const uint16_t pages_port = dashboards->get_future().get();
  drive(port, std::min(500, deliveries), clients, 1);  // warm-up: connections, page cache
  auto r = drive(port, deliveries, clients, 1'000'000);
  std::printf("{\"mode\":\"intake\",\"store\":\"%s\",\"deliveries\":%d,\"clients\":%d,\"accepted\":%d,\"refused\":%d,"
              "\"per_second\":%.0f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f}\n",
              backend, deliveries, clients, r.ok, r.failed, r.ok / r.seconds, percentile(r.latencies_ms, 0.5),
              percentile(r.latencies_ms, 0.99), percentile(r.latencies_ms, 1.0));
  std::fflush(stdout);
  if (rows > 0)
    pages(pages_port, *jobs, backend, rows);
  caf::anon_send_exit(http, caf::exit_reason::user_shutdown);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

}  // namespace

int main(int argc, char** argv) {
  int deliveries = 20'000, clients = 8, rows = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--deliveries")
      deliveries = std::stoi(argv[i + 1]);
    else if (k == "--clients")
      clients = std::stoi(argv[i + 1]);
    else if (k == "--rows")
      rows = std::stoi(argv[i + 1]);
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  const auto dir = std::filesystem::temp_directory_path() / ("headroom-intake-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto lite = store::open_sqlite((dir / "jobs.db").string());
  if (auto* e = std::get_if<store::error>(&lite)) {
    std::cerr << "sqlite: " << e->message << "\n";
    return 1;
  }
  run(sys, std::move(std::get<std::unique_ptr<store::store>>(lite)), "sqlite", deliveries, clients, rows);
  std::string why;
  auto pg = testenv::postgres_server::start(why);
  if (!pg || !pg->create_database("bench", why)) {
    std::cerr << "postgres: " << why << "\n";
    return 1;
  }
  auto opened = store::open_postgres(pg->conninfo("bench"), 10);
  if (auto* e = std::get_if<store::error>(&opened)) {
    std::cerr << "postgres: " << e->message << "\n";
    return 1;
  }
  run(sys, std::move(std::get<std::unique_ptr<store::store>>(opened)), "postgres", deliveries, clients, rows);
  std::filesystem::remove_all(dir);
  return 0;
}
