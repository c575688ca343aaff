#pragma once

// An http::exchange a test answers by hand: the adapter's requests wait here until the test
// answers them on its own thread, and timers (`after`) until it fires them. With CAF's
// test_coordinator, an actor's calls and their answers then run in a fixed order, with no server,
// no I/O thread and no sleeping: the test answers, runs the scheduler, and looks.

#include <algorithm>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "adapters/http/transport.hpp"

namespace headroom::test_support {

class scripted_exchange final : public http::exchange {
 private:
  const runtime::clock* clock_ = &runtime::real_clock();

 public:
  struct call {
    http::request_id id = 0;
    http::http_request request;
    http::on_done done;
    http::on_chunk chunk;
  };

  http::request_id submit(http::http_request req, http::on_done done, http::on_chunk chunk = {}) override {
    calls_.push_back({++next_id_, std::move(req), std::move(done), std::move(chunk)});
    ++submitted_;
    return next_id_;
  }
  // As the real transport does, the cancelled request's callback runs later, not inside cancel()
  // (the caller may hold a lock the callback takes): at deliver_cancelled().
  void cancel(http::request_id id) override {
    auto it = std::find_if(calls_.begin(), calls_.end(), [&](const call& c) { return c.id == id; });
    if (it == calls_.end())
      return;
    cancelled_.push_back(std::move(*it));
    calls_.erase(it);
  }
  // Runs the callbacks of the requests cancelled so far; how many.
  size_t deliver_cancelled() {
    auto due = std::move(cancelled_);
    cancelled_.clear();
    for (auto& c : due) {
      http::http_response r;
      r.cancelled = true;
      r.transport_error = "cancelled";
      c.done(std::move(r));
    }
    return due.size();
  }
  void after(std::chrono::milliseconds, std::function<void()> fn) override { timers_.push_back(std::move(fn)); }
  // The clients built over it measure on this: the real clock unless a test gives its own.
  const runtime::clock& clock() const override { return *clock_; }
  void use_clock(const runtime::clock& c) { clock_ = &c; }

  // The requests waiting for an answer, oldest first.
  const std::deque<call>& waiting() const { return calls_; }
  size_t submitted() const { return submitted_; }

  // Answers the oldest waiting request whose method and URL contain `method` and `url_part`
  // (false: there is none).
  bool answer(const std::string& method, const std::string& url_part, long status, std::string body = {},
              std::string content_type = "application/json") {
    auto it = std::find_if(calls_.begin(), calls_.end(), [&](const call& c) {
      return c.request.method == method && c.request.url.find(url_part) != std::string::npos;
    });
    if (it == calls_.end())
      return false;
    auto c = std::move(*it);
    calls_.erase(it);
    http::http_response r;
    r.status = status;
    r.body = std::move(body);
    r.content_type = std::move(content_type);
    c.done(std::move(r));
    return true;
  }
  // Hands a waiting stream (a watch) the next bytes of its body; it keeps waiting (false: none).
  bool stream(const std::string& url_part, std::string_view bytes) {
    auto it = std::find_if(calls_.begin(), calls_.end(), [&](const call& c) {
      return c.request.stream && c.request.url.find(url_part) != std::string::npos;
    });
    if (it == calls_.end() || !it->chunk)
      return false;
    auto chunk = it->chunk;  // the callback may submit or cancel requests
    chunk(bytes);
    return true;
  }
  // Fails the oldest waiting request as a transfer that never got a response.
  bool fail_transfer(const std::string& url_part, std::string why = "connection refused") {
    auto it = std::find_if(calls_.begin(), calls_.end(), [&](const call& c) { return c.request.url.find(url_part) != std::string::npos; });
    if (it == calls_.end())
      return false;
    auto c = std::move(*it);
    calls_.erase(it);
    http::http_response r;
    r.transport_error = std::move(why);
    c.done(std::move(r));
    return true;
  }
  // Runs the timers set so far (each once).
  size_t fire_timers() {
    auto due = std::move(timers_);
    timers_.clear();
    for (auto& fn : due)
      fn();
    return due.size();
  }

 private:
  std::deque<call> calls_;
  std::vector<call> cancelled_;
  std::vector<std::function<void()>> timers_;
  http::request_id next_id_ = 0;
  size_t submitted_ = 0;
};

}  // namespace headroom::test_support
