// The App webhook's deliveries: the list's decoder and Link-header cursor, and the REST client's
// calls (GET /app/hook/deliveries, POST …/attempts) against answers scripted here. The client
// blocks on each answer, so the exchange below answers inside submit() (scripted_exchange answers
// later, from the test's thread, which a blocking caller would need a second thread for).
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <deque>
#include <memory>

#include "adapters/github/payloads.hpp"
#include "adapters/github/rest_client.hpp"

using namespace headroom;
using namespace headroom::github;

namespace {

// The example of "List deliveries for an app webhook" in GitHub's REST reference
// (https://docs.github.com/en/rest/apps/webhooks#list-deliveries-for-an-app-webhook).
const char* documented_example = R"([
  {"id": 12345678, "guid": "0b989ba4-242f-11e5-81e1-c7b6966d2516", "delivered_at": "2019-06-03T00:57:16Z",
   "redelivery": false, "duration": 0.27, "status": "OK", "status_code": 200, "event": "issues",
   "action": "opened", "installation_id": 123, "repository_id": 456, "throttled_at": "2019-06-03T00:57:16Z"},
  {"id": 123456789, "guid": "0b989ba4-242f-11e5-81e1-c7b6966d2516", "delivered_at": "2019-06-04T00:57:16Z",
   "redelivery": true, "duration": 0.28, "status": "OK", "status_code": 200, "event": "issues",
   "action": "opened", "installation_id": 123, "repository_id": 456, "throttled_at": null}
])";

std::string failure_of(const decoded<std::vector<hook_delivery>>& r) {
  const auto* f = std::get_if<decode_failure>(&r);
  return f ? f->message : "(decoded)";
}

// Answers each request at once from `answers` (a transport error when none is left) and keeps it.
class canned_exchange final : public http::exchange {
 public:
  struct canned {
    long status = 0;
    std::string body, link;
  };
  std::deque<canned> answers;
  std::vector<http::http_request> requests;

  http::request_id submit(http::http_request req, http::on_done done, http::on_chunk = {}) override {
    requests.push_back(req);
    http::http_response r;
    if (answers.empty()) {
      r.transport_error = "nothing scripted";
    } else {
      r.status = answers.front().status;
      r.body = answers.front().body;
      r.link = answers.front().link;
      answers.pop_front();
    }
    done(std::move(r));
    return requests.size();
  }
  void cancel(http::request_id) override {}
  void after(std::chrono::milliseconds, std::function<void()>) override {}
  const runtime::clock& clock() const override { return runtime::real_clock(); }

  std::string header(size_t i, std::string_view name) const {
    for (const auto& h : requests.at(i).headers)
      if (h.rfind(std::string{name} + ": ", 0) == 0)
        return h.substr(name.size() + 2);
    return {};
  }
};

std::string app_private_key() {
  static const std::string pem = [] {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{EVP_RSA_gen(2048), &EVP_PKEY_free};
    std::unique_ptr<BIO, decltype(&BIO_free)> bio{BIO_new(BIO_s_mem()), &BIO_free};
    PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<size_t>(n));
  }();
  return pem;
}

credentials app_credentials() {
  credentials c;
  c.app_id = "12345";
  c.installation_id = 42;
  c.private_key_pem = app_private_key();
  return c;
}

// One delivery as GitHub lists it, delivered `minute` minutes after 2026-11-26T10:00:00Z.
std::string item(int64_t id, int minute, std::string_view status = "OK", int code = 200) {
  return R"({"id":)" + std::to_string(id) + R"(,"guid":"g-)" + std::to_string(id) + R"(","delivered_at":"2026-11-26T10:)" +
         (minute < 10 ? "0" : "") + std::to_string(minute) + R"(:00Z","redelivery":false,"duration":0.1,"status":")" +
         std::string{status} + R"(","status_code":)" + std::to_string(code) +
         R"(,"event":"workflow_job","action":"queued","installation_id":42,"repository_id":7})";
}

constexpr int64_t ten_oclock_ms = 1795687200000;  // 2026-11-26T10:00:00Z

std::string next_link(std::string_view cursor) {
  return "<https://api.github.com/app/hook/deliveries?per_page=100&cursor=" + std::string{cursor} + R"(>; rel="next")";
}

}  // namespace

TEST(github_hook_deliveries, the_documented_example_decodes) {
  auto r = decode_hook_deliveries(documented_example);
  ASSERT_TRUE(std::holds_alternative<std::vector<hook_delivery>>(r)) << failure_of(r);
  const auto& d = std::get<std::vector<hook_delivery>>(r);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].id, 12345678);
  EXPECT_EQ(d[0].guid, "0b989ba4-242f-11e5-81e1-c7b6966d2516");
  EXPECT_EQ(d[0].delivered_at, "2019-06-03T00:57:16Z");
  EXPECT_EQ(d[0].delivered_at_ms, 1559523436000);
  EXPECT_FALSE(d[0].redelivery);
  EXPECT_EQ(d[0].status, "OK");
  EXPECT_EQ(d[0].status_code, 200);
  EXPECT_EQ(d[0].event, "issues");
  EXPECT_EQ(d[0].action, "opened");
  EXPECT_EQ(d[1].id, 123456789);
  EXPECT_EQ(d[1].guid, d[0].guid) << "a redelivery keeps the guid (X-GitHub-Delivery) and gets its own id";
  EXPECT_TRUE(d[1].redelivery);

  auto failed = decode_hook_deliveries("\xEF\xBB\xBF" R"([{"id":1,"guid":"g","delivered_at":"2026-11-26T10:00:00Z",
      "status":"failed to connect to host","status_code":0,"event":"ping","action":null}])");
  ASSERT_TRUE(std::holds_alternative<std::vector<hook_delivery>>(failed)) << failure_of(failed);
  EXPECT_EQ(std::get<std::vector<hook_delivery>>(failed)[0].status_code, 0);
  EXPECT_EQ(std::get<std::vector<hook_delivery>>(failed)[0].action, "") << "an event without actions has action null";
  EXPECT_TRUE(std::get<std::vector<hook_delivery>>(decode_hook_deliveries("[]")).empty());
}

TEST(github_hook_deliveries, malformed_lists_are_refused_naming_what_and_where) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"message":"Not Found"})", "hook deliveries: (document): expected an array, found an object"},
      {R"([null])", "hook deliveries: [0]: expected an object, found null"},
      {R"([{"id":"12","guid":"g","delivered_at":"2026-11-26T10:00:00Z"}])", "hook deliveries: [0].id: expected a number, found a string"},
      {R"([{"id":1,"guid":"g","delivered_at":"2026-11-26T10:00:00Z"},{"id":2,"guid":"h","delivered_at":"yesterday"}])",
       "hook deliveries: [1].delivered_at: expected an RFC 3339 time, found 'yesterday'"},
      {R"([{"id":1,"delivered_at":"2026-11-26T10:00:00Z"}])", "hook deliveries: [0].guid: required"},
      {R"([{"id":1,"guid":"g"}])", "hook deliveries: [0].delivered_at: required"},
      {R"([{"guid":"g","delivered_at":"2026-11-26T10:00:00Z"}])", "hook deliveries: [0].id: a positive integer is required"},
      {R"([{"id":1,"guid":"g","delivered_at":"2026-11-26T10:00:00Z","redelivery":"yes"}])",
       "hook deliveries: [0].redelivery: expected a boolean, found a string"},
      {R"([{"id":1,"guid":"g","delivered_at":"2026-11-26T10:00:00Z","status_code":70000}])",
       "hook deliveries: [0].status_code: expected an HTTP status, found 70000"},
      {R"([] [])", "hook deliveries: trailing content after the JSON document"},
  };
  for (const auto& [body, want] : cases)
    EXPECT_EQ(failure_of(decode_hook_deliveries(body)), want) << body;
  EXPECT_EQ(failure_of(decode_hook_deliveries("")).rfind("hook deliveries: ", 0), 0u);
}

TEST(github_hook_deliveries, the_next_cursor_comes_from_the_link_header) {
  auto cursor = [](std::string_view link) {
    auto r = next_page_cursor(link);
    return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : "error: " + std::get<decode_failure>(r).message;
  };
  EXPECT_EQ(cursor(R"(<https://api.github.com/app/hook/deliveries?per_page=2&cursor=v1_12077215967>; rel="next", )"
                   R"(<https://api.github.com/app/hook/deliveries?per_page=2&cursor=v1_12077215999>; rel="prev")"),
            "v1_12077215967");
  EXPECT_EQ(cursor(R"(<https://api.github.com/app/hook/deliveries?cursor=v1_9>; rel="prev")"), "") << "the last page";
  EXPECT_EQ(cursor(""), "") << "no Link header: one page";
  EXPECT_EQ(cursor(R"(<https://ghes.example/api/v3/app/hook/deliveries?cursor=a%2Bb%3D&per_page=100>; REL=next)"), "a+b=")
      << "percent-decoded; the relation is case-insensitive and may be unquoted";
  EXPECT_EQ(cursor(R"(<https://api.github.com/app/hook/deliveries?page=2>; rel="next")"),
            "error: Link header: the next page's link has no cursor: https://api.github.com/app/hook/deliveries?page=2");
  EXPECT_EQ(cursor(R"(<https://api.github.com/app/hook/deliveries?cursor=%zz>; rel="next")"),
            "error: Link header: a bad percent-escape in cursor=%zz");
  EXPECT_EQ(cursor(R"(<https://api.github.com/x; rel="next")"), "error: Link header: a link without its closing '>'");
}

// As the App (its JWT, no installation token): newest first, 100 a page, the next page by the
// Link header's cursor, until a page reaches back before `since` (its older items left out).
TEST(github_hook_deliveries, listing_pages_by_cursor_as_the_app_and_stops_at_the_time_bound) {
  canned_exchange io;
  io.answers.push_back({200, "[" + item(30, 30) + "," + item(29, 29, "Invalid HTTP Response: 503", 503) + "]", next_link("v1_28")});
  io.answers.push_back({200, "[" + item(28, 21) + "," + item(27, 19) + "]", next_link("v1_26")});
  io.answers.push_back({200, "[" + item(26, 5) + "]", ""});  // never asked for
  rest_client gh{"https://api.github.com", app_credentials(), io};
  auto r = gh.list_app_hook_deliveries({.since_ms = ten_oclock_ms + 20 * 60'000, .max_pages = 10});
  ASSERT_TRUE(std::holds_alternative<hook_delivery_list>(r)) << std::get<rest_error>(r).describe();
  const auto& got = std::get<hook_delivery_list>(r);
  ASSERT_EQ(got.deliveries.size(), 3u) << "delivered at 10:30, 10:29, 10:21; not 10:19";
  EXPECT_EQ(got.deliveries[1].status_code, 503);
  EXPECT_TRUE(got.complete);
  ASSERT_EQ(io.requests.size(), 2u) << "the page reaching back before `since` was the last one read";
  EXPECT_EQ(io.requests[0].method, "GET");
  EXPECT_EQ(io.requests[0].url, "https://api.github.com/app/hook/deliveries?per_page=100");
  EXPECT_EQ(io.requests[1].url, "https://api.github.com/app/hook/deliveries?per_page=100&cursor=v1_28");
  const auto auth = io.header(0, "Authorization");
  ASSERT_EQ(auth.rfind("Bearer ", 0), 0u) << auth;
  EXPECT_EQ(std::count(auth.begin(), auth.end(), '.'), 2) << "the App's JWT: " << auth;
  EXPECT_EQ(io.header(0, "X-GitHub-Api-Version"), "2022-11-28");
}

TEST(github_hook_deliveries, listing_is_bounded_by_its_page_count) {
  canned_exchange io;
  for (int page = 0; page < 5; ++page)
    io.answers.push_back({200, "[" + item(100 - page, 50 - page) + "]", next_link("v1_" + std::to_string(99 - page))});
  rest_client gh{"https://api.github.com", app_credentials(), io};
  auto r = gh.list_app_hook_deliveries({.since_ms = 0, .max_pages = 2});
  ASSERT_TRUE(std::holds_alternative<hook_delivery_list>(r)) << std::get<rest_error>(r).describe();
  EXPECT_EQ(std::get<hook_delivery_list>(r).deliveries.size(), 2u);
  EXPECT_FALSE(std::get<hook_delivery_list>(r).complete) << "older deliveries were left unread";
  EXPECT_EQ(io.requests.size(), 2u);
}

TEST(github_hook_deliveries, a_listing_that_fails_is_an_error_value) {
  canned_exchange io;
  io.answers.push_back({200, R"([{"id":1,"guid":"g","delivered_at":"soon"}])", ""});
  io.answers.push_back({401, R"({"message":"A JSON web token could not be decoded"})", ""});
  rest_client gh{"https://api.github.com", app_credentials(), io};
  auto malformed = gh.list_app_hook_deliveries({});
  ASSERT_TRUE(std::holds_alternative<rest_error>(malformed));
  EXPECT_EQ(std::get<rest_error>(malformed).describe(),
            "list the GitHub App's webhook deliveries: 200 malformed answer: hook deliveries: [0].delivered_at: expected an RFC "
            "3339 time, found 'soon'");
  auto refused = gh.list_app_hook_deliveries({});
  ASSERT_TRUE(std::holds_alternative<rest_error>(refused));
  EXPECT_EQ(std::get<rest_error>(refused).status, 401);
  EXPECT_NE(std::get<rest_error>(refused).message.find("JSON web token"), std::string::npos);

  canned_exchange none;
  credentials pat;
  pat.personal_access_token = "ghp_not_an_app";
  rest_client with_pat{"https://api.github.com", pat, none};
  auto no_app = with_pat.list_app_hook_deliveries({});
  ASSERT_TRUE(std::holds_alternative<rest_error>(no_app));
  EXPECT_NE(std::get<rest_error>(no_app).message.find("GitHub App's credentials"), std::string::npos);
  EXPECT_TRUE(none.requests.empty()) << "nothing is sent without an App";
}

TEST(github_hook_deliveries, redeliver_posts_the_attempts_url_as_the_app) {
  canned_exchange io;
  io.answers.push_back({202, "{}", ""});
  io.answers.push_back({404, R"({"message":"Not Found"})", ""});
  io.answers.push_back({422, R"({"message":"Validation Failed"})", ""});
  rest_client gh{"https://ghes.example/api/v3", app_credentials(), io};
  auto accepted = gh.redeliver(12345678);
  ASSERT_TRUE(std::holds_alternative<redelivery_request>(accepted)) << std::get<rest_error>(accepted).describe();
  EXPECT_EQ(std::get<redelivery_request>(accepted), redelivery_request::accepted);
  ASSERT_EQ(io.requests.size(), 1u) << "no installation token is fetched first";
  EXPECT_EQ(io.requests[0].method, "POST");
  EXPECT_EQ(io.requests[0].url, "https://ghes.example/api/v3/app/hook/deliveries/12345678/attempts");
  const auto auth = io.header(0, "Authorization");
  EXPECT_EQ(std::count(auth.begin(), auth.end(), '.'), 2) << "the App's JWT: " << auth;
  auto gone = gh.redeliver(1);
  ASSERT_TRUE(std::holds_alternative<redelivery_request>(gone));
  EXPECT_EQ(std::get<redelivery_request>(gone), redelivery_request::gone);
  auto refused = gh.redeliver(2);
  ASSERT_TRUE(std::holds_alternative<rest_error>(refused));
  EXPECT_EQ(std::get<rest_error>(refused).describe(), "redeliver webhook delivery 2: 422 Validation Failed");
}
