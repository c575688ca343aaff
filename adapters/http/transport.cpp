#include "adapters/http/transport.hpp"
#include "adapters/http/token_bucket.hpp"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>

namespace headroom::http {
namespace {

using steady = runtime::clock;  // its time_point and duration: std::chrono::steady_clock's

struct curl_global {
  curl_global() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

}  // namespace

struct transport::impl {
  struct transfer {
    request_id id = 0;
    http_request req;
    on_done done;
    on_chunk chunk;
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    http_response response;
    steady::time_point not_before;
    curl_blob ca_blob{}, cert_blob{}, key_blob{};  // curl keeps pointers to these (NOCOPY)
    bool too_big = false;                          // the body passed req.max_body_bytes
  };

  explicit impl(options o)
      : opts(std::move(o)),
        clock(opts.clock ? *opts.clock : throw std::invalid_argument{"http::transport: options.clock is required"}),
        bucket(opts.qps, opts.burst, clock.now()) {
    static curl_global init;
    multi = curl_multi_init();
    if (multi == nullptr)
      throw std::runtime_error("curl_multi_init failed");
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    // Event-driven: libcurl says which sockets to watch and when its next timer is due, and is
    // told only about the sockets that are ready (curl_multi_socket_action). curl_multi_perform
    // walks every transfer on each turn and checks each one's socket: with a thousand long polls
    // held open (one per scale set) that was 31,000 poll(2) calls a second, 15 % of a core, at idle.
    if (opts.event_driven) {
      epoll = epoll_create1(EPOLL_CLOEXEC);
      wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (epoll < 0 || wake_fd < 0)
        throw std::runtime_error("epoll_create1 or eventfd failed");
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = wake_fd;
      epoll_ctl(epoll, EPOLL_CTL_ADD, wake_fd, &ev);
      curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &impl::on_socket);
      curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
      curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &impl::on_timer);
      curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
    }
    io = std::thread([this] { run(); });
  }

  ~impl() {
    {
      std::lock_guard<std::mutex> g{mutex};
      stopping = true;
    }
    wake();
    io.join();
    curl_multi_cleanup(multi);
    if (opts.event_driven) {
      close(wake_fd);
      close(epoll);
    }
  }

  void wake() {
    if (!opts.event_driven) {
      curl_multi_wakeup(multi);
      return;
    }
    const uint64_t one = 1;
    [[maybe_unused]] const auto n = write(wake_fd, &one, sizeof one);  // a full counter still wakes the loop
  }

  // -- any thread ----------------------------------------------------------------------------------

  request_id submit(http_request req, on_done done, on_chunk chunk) {
    auto t = std::make_unique<transfer>();
    t->id = next_id.fetch_add(1);
    t->not_before = clock.now() + req.delay;
    t->req = std::move(req);
    t->done = std::move(done);
    t->chunk = std::move(chunk);
    const auto id = t->id;
    {
      std::lock_guard<std::mutex> g{mutex};
      incoming.push_back(std::move(t));
    }
    wake();
    return id;
  }

  void cancel(request_id id) {
    {
      std::lock_guard<std::mutex> g{mutex};
      cancels.push_back(id);
    }
    wake();
  }

  void after(std::chrono::milliseconds delay, std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> g{mutex};
      timers.emplace(clock.now() + delay, std::move(fn));
    }
    wake();
  }

  // -- I/O thread ----------------------------------------------------------------------------------

  // libcurl: watch socket `s` for `what` (or stop watching it). `socketp` is non-null once the
  // socket is in the epoll set (curl_multi_assign).
  static int on_socket(CURL*, curl_socket_t s, int what, void* user, void* socketp) {
    auto* self = static_cast<impl*>(user);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(self->epoll, EPOLL_CTL_DEL, s, nullptr);  // may already be closed: nothing to undo
      curl_multi_assign(self->multi, s, nullptr);
      return 0;
    }
    epoll_event ev{};
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    ev.data.fd = s;
    if (socketp == nullptr) {
      if (epoll_ctl(self->epoll, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST)
        epoll_ctl(self->epoll, EPOLL_CTL_MOD, s, &ev);
      curl_multi_assign(self->multi, s, self);
    } else {
      epoll_ctl(self->epoll, EPOLL_CTL_MOD, s, &ev);
    }
    return 0;
  }

  // libcurl: its next timer is due in `ms` (-1: none).
  static int on_timer(CURLM*, long ms, void* user) {
    static_cast<impl*>(user)->set_curl_due(ms);
    return 0;
  }

  static size_t on_write(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<transfer*>(user);
    const size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    const bool ok = status >= 200 && status < 300;
    if (t->req.stream && t->chunk && ok) {
      t->chunk(std::string_view{data, len});
    } else if (t->response.body.size() + len <= t->req.max_body_bytes) {
      t->response.body.append(data, len);
    } else if (ok) {
      // A body cut short would be read as whole (or fail to decode with a misleading message): the
      // transfer fails instead, saying why.
      t->too_big = true;
      return 0;  // CURLE_WRITE_ERROR
    }
    // Otherwise an error body past the limit: the rest is dropped (a hostile endless one).
    return len;
  }

  // The value of header `name` (lower case, with the colon) when `line` is that header.
  static std::optional<std::string_view> header_value(std::string_view line, std::string_view name) {
    if (line.size() <= name.size())
      return std::nullopt;
    for (size_t i = 0; i < name.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(line[i])) != name[i])
        return std::nullopt;
    auto v = line.substr(name.size());
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
      v.remove_prefix(1);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' '))
      v.remove_suffix(1);
    return v;
  }

  static size_t on_header(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<transfer*>(user);
    std::string_view line{data, size * n};
    if (auto v = header_value(line, "retry-after:"))
      t->response.retry_after = std::string{*v};
    else if (auto ct = header_value(line, "content-type:"))
      t->response.content_type = std::string{*ct};
    else if (auto l = header_value(line, "link:"))
      t->response.link = std::string{*l};
    return size * n;
  }

  void start(std::unique_ptr<transfer> t) {
    CURL* e = curl_easy_init();
    t->easy = e;
    curl_easy_setopt(e, CURLOPT_URL, t->req.url.c_str());
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t->req.method.c_str());
    if (t->req.method == "HEAD")
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    if (!t->req.body.empty() || t->req.method == "POST" || t->req.method == "PUT" || t->req.method == "PATCH") {
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->req.body.data());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->req.body.size()));
    }
    for (const auto& h : t->req.headers)
      t->headers = curl_slist_append(t->headers, h.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &impl::on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &impl::on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
    // Wait for a connection that can multiplex only where one can: HTTP/2 is negotiated over TLS
    // alone (2TLS). On plain http every connection is HTTP/1.1, and waiting made a request queue
    // behind a long poll to the same host (the HUD fetch behind the Actions poll: 20 s).
    if (t->req.url.rfind("https://", 0) == 0)
      curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    if (opts.read_buffer_bytes > 0)
      curl_easy_setopt(e, CURLOPT_BUFFERSIZE, opts.read_buffer_bytes);
    if (t->req.compressed)
      curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opts.connect_timeout.count()));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(t->req.timeout.count()));
    if (t->req.stall_timeout.count() > 0) {
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(t->req.stall_timeout.count()));
    }
    // Verification is never switched off.
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    // With CURL_BLOB_NOCOPY curl keeps a pointer to the blob struct itself: the structs live in
    // the transfer, the PEM data in the request's shared tls_config, both as long as the handle.
    if (const auto& tls = t->req.tls) {
      if (!tls->ca_pem.empty()) {
        t->ca_blob = {const_cast<char*>(tls->ca_pem.data()), tls->ca_pem.size(), CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &t->ca_blob);
      }
      if (!tls->client_cert_pem.empty()) {
        t->cert_blob = {const_cast<char*>(tls->client_cert_pem.data()), tls->client_cert_pem.size(), CURL_BLOB_NOCOPY};
        t->key_blob = {const_cast<char*>(tls->client_key_pem.data()), tls->client_key_pem.size(), CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &t->cert_blob);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &t->key_blob);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
      }
    }
    curl_multi_add_handle(multi, e);
    started_count.fetch_add(1, std::memory_order_relaxed);
    if (opts.on_start)
      opts.on_start(std::max(steady::duration::zero(), clock.now() - t->not_before), t->req.priority);
    active.emplace(t->id, std::move(t));
  }

  void finish(transfer* t, http_response r) {
    curl_multi_remove_handle(multi, t->easy);
    curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->headers);
    auto done = std::move(t->done);
    active.erase(t->id);
    if (done)
      done(std::move(r));
  }

  void run() {
    for (;;) {
      std::deque<std::unique_ptr<transfer>> fresh;
      std::vector<request_id> to_cancel;
      {
        std::lock_guard<std::mutex> g{mutex};
        if (stopping)
          break;
        fresh.swap(incoming);
        to_cancel.swap(cancels);
      }
      for (auto& t : fresh) {
        // After the last one waiting of its priority or a higher one (searched from the back: a
        // normal request with no background ones waiting goes straight to the end).
        const auto p = t->req.priority;
        const auto after = std::find_if(waiting.rbegin(), waiting.rend(), [p](const auto& w) { return w->req.priority <= p; });
        waiting.insert(after.base(), std::move(t));
      }
      for (auto id : to_cancel) {
        auto it = active.find(id);
        if (it != active.end()) {
          http_response r;
          r.cancelled = true;
          finish(it->second.get(), std::move(r));
          continue;
        }
        auto w = std::find_if(waiting.begin(), waiting.end(), [&](const auto& t) { return t->id == id; });
        if (w != waiting.end()) {
          auto t = std::move(*w);
          waiting.erase(w);
          http_response r;
          r.cancelled = true;
          if (t->done)
            t->done(std::move(r));
        }
      }
      // Start what is due, in submission order, as tokens allow.
      const auto now = clock.now();
      steady::duration sleep = opts.max_wait;
      std::vector<std::function<void()>> due;
      {
        std::lock_guard<std::mutex> g{mutex};
        while (!timers.empty() && timers.begin()->first <= now) {
          due.push_back(std::move(timers.begin()->second));
          timers.erase(timers.begin());
        }
        if (!timers.empty())
          sleep = std::min(sleep, timers.begin()->first - now);
      }
      for (auto& fn : due)
        fn();
      for (auto it = waiting.begin(); it != waiting.end();) {
        if ((*it)->not_before > now) {
          sleep = std::min(sleep, (*it)->not_before - now);
          ++it;
          continue;
        }
        steady::duration wait{};
        if (!bucket.take(now, wait)) {
          sleep = std::min(sleep, wait);
          break;
        }
        start(std::move(*it));
        it = waiting.erase(it);
      }
      if (!opts.event_driven) {
        int running = 0;
        curl_multi_perform(multi, &running);
        read_done();
        const int timeout_ms =
            static_cast<int>(std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(sleep).count()));
        const auto waiting_from = turned();
        curl_multi_poll(multi, nullptr, 0, timeout_ms, nullptr);
        woke(waiting_from, timeout_ms);
        continue;
      }
      int running = 0;
      if (curl_due && *curl_due <= clock.now()) {
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        sync_curl_timer();
      }
      read_done();
      if (curl_due)
        sleep = std::min(sleep, std::max(steady::duration::zero(), *curl_due - clock.now()));
      const int timeout_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(sleep + std::chrono::microseconds(999)).count());
      epoll_event events[64];
      const auto waiting_from = turned();
      const int n = epoll_wait(epoll, events, 64, timeout_ms);
      woke(waiting_from, timeout_ms);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.fd == wake_fd) {
          uint64_t count = 0;
          [[maybe_unused]] const auto r = read(wake_fd, &count, sizeof count);
          continue;
        }
        int flags = 0;
        if (events[i].events & EPOLLIN)
          flags |= CURL_CSELECT_IN;
        if (events[i].events & EPOLLOUT)
          flags |= CURL_CSELECT_OUT;
        if (events[i].events & (EPOLLERR | EPOLLHUP))
          flags |= CURL_CSELECT_ERR;
        curl_multi_socket_action(multi, events[i].data.fd, flags, &running);
      }
      if (n > 0)
        sync_curl_timer();
      read_done();
    }
    stop_all();
  }

  // A turn runs from the end of one wait (woke) to the start of the next (turned, which returns that
  // start); options::on_turn hears how long it was busy and how far past its timeout the wait ran.
  steady::time_point turned() {
    busy_in_turn = clock.now() - turn_began;
    return turn_began + busy_in_turn;
  }
  void woke(steady::time_point waiting_from, int timeout_ms) {
    turn_began = clock.now();
    if (opts.on_turn)
      opts.on_turn(busy_in_turn, std::max(steady::duration::zero(), turn_began - waiting_from - std::chrono::milliseconds(timeout_ms)));
  }

  // libcurl's next timer, asked again after each action rather than left to
  // CURLMOPT_TIMERFUNCTION alone: libcurl calls the timer function only when its earliest timer
  // changes, and reports it in whole milliseconds. A loop that acted on a timer a fraction of a
  // millisecond before it expired would find nothing due and never hear of that timer again; a
  // transfer waiting on it would stall until some other socket woke the loop. Asking keeps the
  // loop's timer equal to libcurl's own; a timer under 1 ms away is reported as 1 ms, so this
  // never spins.
  void sync_curl_timer() {
    long ms = -1;
    if (curl_multi_timeout(multi, &ms) == CURLM_OK)
      set_curl_due(ms);
  }
  void set_curl_due(long ms) {
    curl_due = ms < 0 ? std::optional<steady::time_point>{} : clock.now() + std::chrono::milliseconds(ms);
  }

  // Transfers libcurl has finished: answered.
  void read_done() {
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE)
        continue;
      transfer* t = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &t);
      http_response r = std::move(t->response);
      if (m->data.result == CURLE_OK) {
        curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &r.status);
      } else {
        r.status = 0;
        r.transport_error = t->too_big ? "response body larger than " + std::to_string(t->req.max_body_bytes) + " bytes"
                                       : curl_easy_strerror(m->data.result);
        if (t->too_big)
          r.body.clear();
      }
      finish(t, std::move(r));
    }
  }

  // Stopping: every transfer still open or waiting reports cancelled.
  void stop_all() {
    while (!active.empty()) {
      http_response r;
      r.cancelled = true;
      finish(active.begin()->second.get(), std::move(r));
    }
    for (auto& t : waiting)
      if (t->done) {
        http_response r;
        r.cancelled = true;
        t->done(std::move(r));
      }
    waiting.clear();
  }

  options opts;
  const runtime::clock& clock;
  token_bucket bucket;
  CURLM* multi = nullptr;
  int epoll = -1, wake_fd = -1;
  std::thread io;
  std::mutex mutex;
  std::deque<std::unique_ptr<transfer>> incoming;
  std::vector<request_id> cancels;
  std::multimap<steady::time_point, std::function<void()>> timers;
  bool stopping = false;
  std::atomic<request_id> next_id{1};
  std::atomic<uint64_t> started_count{0};
  // I/O thread only:
  std::deque<std::unique_ptr<transfer>> waiting;
  std::unordered_map<request_id, std::unique_ptr<transfer>> active;
  std::optional<steady::time_point> curl_due;  // libcurl's next timer
  steady::time_point turn_began = clock.now(); // the I/O thread's turn: when its last wait returned
  steady::duration busy_in_turn{};
};

transport::transport(options opts) : impl_(std::make_unique<impl>(std::move(opts))) {}
transport::~transport() = default;

request_id transport::submit(http_request req, on_done done, on_chunk chunk) {
  return impl_->submit(std::move(req), std::move(done), std::move(chunk));
}

void transport::cancel(request_id id) { impl_->cancel(id); }

void transport::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  impl_->after(delay, std::move(fn));
}

const runtime::clock& transport::clock() const { return impl_->clock; }

uint64_t transport::started() const { return impl_->started_count.load(std::memory_order_relaxed); }

}  // namespace headroom::http
