#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/informer_outage.hpp"
#include "adapters/k8s/object_cache.hpp"
#include "adapters/k8s/watch_handover.hpp"
#include "runtime/log.hpp"
#include "runtime/clock.hpp"

namespace headroom::k8s {

// List + watch cache of one kind, the way client-go's informers behave:
//
// - paginated list (`page_size`), then a watch from the list's resourceVersion with bookmarks;
//   a watch that ends is resumed from the last resourceVersion seen (event or bookmark);
// - `410 Gone` (an expired resourceVersion, as an HTTP status or an ERROR event) relists and emits
//   only the difference to the cache: added, modified (resourceVersion changed), deleted — no
//   transition is lost or reported twice;
// - errors reconnect with exponential backoff (500 ms → 5 s, jittered: a cache is stale until it
//   reconnects, so the end of an outage is noticed within seconds; each request also honours a
//   429's Retry-After); a watch that ran 10 s before it failed resumes at once; a stream silent
//   for `stall_timeout` (no event, no bookmark) is dropped and resumed;
// - a malformed object is logged and counted; the stream goes on.
//
// Handlers run on the transport's I/O thread, after the store is updated; they must be quick (hand
// the event to an actor through a policy buffer). Store reads are safe from any thread.
template <class T>
class informer : public std::enable_shared_from_this<informer<T>> {
 public:
  enum class event_type { added, modified, deleted, resync };
  struct event {
    event_type type;
    std::shared_ptr<const T> object;
    std::shared_ptr<const T> old;  // modified: the previous version
    // A watch event: its own resourceVersion (a deletion's, where `object` is the cached one) and
    // when its line was read, on the steady clock, before it was decoded. Empty / epoch for a
    // list's difference (resync).
    std::string resource_version{};
    std::chrono::steady_clock::time_point received{};
  };
  using handler = std::function<void(const event&)>;
  using index_fn = typename store<T>::index_fn;

  struct options {
    resource_kind kind;
    std::string ns;  // "" = all namespaces
    std::string label_selector, field_selector;
    int64_t page_size = 500;
    std::chrono::seconds stall_timeout{0};  // 0: the client's (kubernetes.watchStallTimeout)
    std::chrono::seconds watch_timeout{300};  // the server ends each watch after ~this (±10 %)
    // Make-before-break (watch_handover.hpp): a successor watch starts `hand_over` before the
    // server would end the current one (0: none; the watch is resumed once it has ended).
    std::chrono::seconds hand_over{0};
    // Outages and a watch's age are measured on it; null: the client's (its exchange's, whose
    // timers the informer uses).
    const runtime::clock* clock = nullptr;
  };

  using stats = informer_stats;

  // Its counters are reported to the client (headroom_kubernetes_informer_* metrics).
  static std::shared_ptr<informer> make(client& c, options opts) {
    if (opts.clock == nullptr)
      opts.clock = &c.clock();
    auto made = std::shared_ptr<informer>(new informer(c, std::move(opts)));
    c.track_informer(made->opts_.kind.plural, made->opts_.ns, std::shared_ptr<const informer_stats>(made, &made->stats_));
    return made;
  }

  // Handlers may come and go at any time (an actor restarted by its supervisor subscribes again
  // and unsubscribes when it exits); dispatch reads an immutable snapshot. Indexes: before start().
  uint64_t subscribe(handler h) {
    std::lock_guard lock{handlers_mutex_};
    auto next = std::make_shared<std::vector<std::pair<uint64_t, handler>>>(*handlers_);
    next->emplace_back(++last_handler_, std::move(h));
    handlers_ = std::move(next);
    return last_handler_;
  }
  void unsubscribe(uint64_t id) {
    std::lock_guard lock{handlers_mutex_};
    auto next = std::make_shared<std::vector<std::pair<uint64_t, handler>>>(*handlers_);
    std::erase_if(*next, [id](const auto& p) { return p.first == id; });
    handlers_ = std::move(next);
  }
  void add_index(const std::string& name, index_fn fn) { store_.add_index(name, std::move(fn)); }
  void add_label_index(const std::string& name, std::string key) { store_.add_label_index(name, std::move(key)); }
  void add_default_indexes() { store_.add_default_indexes(); }

  // Once: an informer shared by several modes (informer_set) is started by each that uses it.
  void start() {
    if (!started_.exchange(true))
      list_page({}, std::chrono::milliseconds(0));
  }
  void stop() {
    stopped_ = true;
    for (const auto* w : {&watch_id_, &successor_id_})
      if (auto id = w->load())
        client_.cancel(id);
  }

  bool synced() const { return synced_.load(); }
  std::string resource_version() const {
    std::shared_lock lock{mutex_};
    return resource_version_;
  }

  std::shared_ptr<const T> get(const std::string& ns, const std::string& name) const { return store_.get(key(ns, name)); }
  std::vector<std::shared_ptr<const T>> list() const { return store_.list(); }
  std::vector<std::shared_ptr<const T>> by_index(const std::string& index, const std::string& value) const {
    return store_.by_index(index, value);
  }
  size_t size() const { return store_.size(); }

  // Emits a resync event for every cached object (the owning actor calls this on its own timer).
  void resync() {
    for (const auto& obj : list())
      emit({event_type::resync, obj, nullptr});
  }

  const stats& counters() const { return stats_; }
  bool watching() const { return watch_id_.load() != 0 || successor_id_.load() != 0; }

  // Test hooks. interrupt_watch_for_test: the watch drops and stays down (a partition).
  // resume_watch_for_test: watching resumes from `rv`; an expired one ("1") makes the server
  // answer 410, which must lead to a relist that reports exactly what changed meanwhile.
  void interrupt_watch_for_test() {
    paused_ = true;
    for (const auto* w : {&watch_id_, &successor_id_})
      if (auto id = w->load())
        client_.cancel(id);
  }
  void resume_watch_for_test(const std::string& rv) {
    {
      std::unique_lock lock{mutex_};
      resource_version_ = rv;
    }
    paused_ = false;
    start_watch(std::chrono::milliseconds(0));
  }

 private:
  informer(client& c, options opts) : client_(c), opts_(std::move(opts)) {}

  static std::string key(const std::string& ns, const std::string& name) { return store<T>::key(ns, name); }
  static std::string key(const T& o) { return store<T>::key(o); }

  void emit(const event& e) {
    stats_.events.fetch_add(1, std::memory_order_relaxed);
    std::shared_ptr<const std::vector<std::pair<uint64_t, handler>>> snapshot;
    {
      std::lock_guard lock{handlers_mutex_};
      snapshot = handlers_;
    }
    for (const auto& [id, h] : *snapshot)
      h(e);
  }

  std::chrono::milliseconds next_backoff() {
    const int64_t base = std::min<int64_t>(5'000, int64_t{500} << std::min(failures_, 6));
    ++failures_;
    std::uniform_int_distribution<int64_t> jitter{base / 2, base};
    return std::chrono::milliseconds(jitter(rng_));
  }

  // -- the store (I/O thread writes, any thread reads) --------------------------------------------

  std::shared_ptr<const T> put(std::shared_ptr<const T> obj) { return store_.put(std::move(obj)); }
  std::shared_ptr<const T> erase(const std::string& k) { return store_.erase(k); }

  // -- list ------------------------------------------------------------------------------------------

  // `paged` false: one list without a limit (client-go's pager falls back to it when a continue
  // token expires, which a slow paginated list can do forever on a busy cluster).
  void list_page(std::string continue_token, std::chrono::milliseconds delay, bool paged = true) {
    if (stopped_)
      return;
    if (continue_token.empty()) {
      pending_.clear();
      stats_.lists.fetch_add(1, std::memory_order_relaxed);
    }
    list_options lo;
    lo.label_selector = opts_.label_selector;
    lo.field_selector = opts_.field_selector;
    lo.limit = paged ? opts_.page_size : 0;
    lo.continue_token = continue_token;
    lo.delay = delay;
    lo.urgent = true;  // what the controller sees comes before what it writes (and a page waiting
                       // behind writes can outlive its continue token)
    std::weak_ptr<informer> weak = this->shared_from_this();
    client_.list(opts_.kind, opts_.ns, lo, [weak](api_result r) {
      if (auto self = weak.lock())
        self->on_list_page(std::move(r));
    });
  }

  void on_list_page(api_result r) {
    if (stopped_)
      return;
    if (auto* e = std::get_if<api_error>(&r)) {
      if (e->what == api_error::kind::gone) {
        // The continue token expired mid-pagination (etcd compacted past it): list everything
        // in one request instead of paging again into the same fate.
        stats_.list_full_fallbacks.fetch_add(1, std::memory_order_relaxed);
        runtime::log::warn("k8s/informer", "continue token expired, listing without pagination",
                           {{"resource", opts_.kind.plural}});
        list_page({}, std::chrono::milliseconds(0), /*paged=*/false);
        return;
      }
      const auto wait = next_backoff();
      outage_.failed("list failed", *e, wait);
      list_page({}, wait);
      return;
    }
    auto decoded = decode_list<T>(std::get<std::string>(r));
    if (auto* e = std::get_if<decode_error>(&decoded)) {
      stats_.decode_errors.fetch_add(1, std::memory_order_relaxed);
      runtime::log::error("k8s/informer", "list undecodable", {{"resource", opts_.kind.plural}, {"error", e->message}});
      list_page({}, next_backoff());
      return;
    }
    auto& page = std::get<list_result<T>>(decoded);
    stats_.list_pages.fetch_add(1, std::memory_order_relaxed);
    for (const auto& err : page.errors) {
      stats_.decode_errors.fetch_add(1, std::memory_order_relaxed);
      runtime::log::warn("k8s/informer", "object skipped", {{"resource", opts_.kind.plural}, {"error", err.message}});
    }
    for (auto& item : page.items) {
      auto k = key(item);
      pending_[k] = std::make_shared<const T>(std::move(item));
    }
    if (!page.continue_token.empty()) {
      list_page(page.continue_token, std::chrono::milliseconds(0));
      return;
    }
    // The pages' decode buffers (several MiB for a page of 500 large objects) are not kept for
    // the watch's small events.
    release_decode_buffers();
    apply_list(page.resource_version);
  }

  // Replaces the store with the listed state, emitting only what changed.
  void apply_list(const std::string& rv) {
    std::vector<event> changes;
    std::vector<std::string> gone;
    for (auto& k : store_.keys())
      if (pending_.find(k) == pending_.end())
        gone.push_back(std::move(k));
    for (const auto& k : gone)
      if (auto old = erase(k))
        changes.push_back({event_type::deleted, old, nullptr});
    for (auto& [k, obj] : pending_) {
      auto current = get_by_key(k);
      if (current && current->meta.resource_version == obj->meta.resource_version)
        continue;  // unchanged: not a transition
      auto old = put(obj);
      changes.push_back({old ? event_type::modified : event_type::added, obj, old});
    }
    pending_.clear();
    {
      std::unique_lock lock{mutex_};
      resource_version_ = rv;
    }
    failures_ = 0;
    outage_.succeeded();
    synced_ = true;
    for (const auto& e : changes)
      emit(e);
    start_watch(std::chrono::milliseconds(0));
  }

  std::shared_ptr<const T> get_by_key(const std::string& k) const { return store_.get(k); }

  // -- watch -----------------------------------------------------------------------------------------

  void start_watch(std::chrono::milliseconds delay) { open_watch(delay, false); }

  // A watch from the current resourceVersion (`successor`: beside the current one, to take over from
  // it; watch_handover). Its lines and end carry its generation: a cancelled one's are dropped.
  void open_watch(std::chrono::milliseconds delay, bool successor) {
    if (stopped_)
      return;
    watch_options wo;
    wo.resource_version = resource_version();
    wo.label_selector = opts_.label_selector;
    wo.field_selector = opts_.field_selector;
    wo.allow_bookmarks = true;
    std::uniform_int_distribution<int64_t> spread{opts_.watch_timeout.count() * 9 / 10,
                                                  opts_.watch_timeout.count() * 11 / 10};
    const int64_t lifetime = std::max<int64_t>(1, spread(rng_));
    wo.timeout_seconds = lifetime + opts_.hand_over.count();
    wo.stall_timeout = opts_.stall_timeout;
    wo.delay = delay;
    stats_.watches.fetch_add(1, std::memory_order_relaxed);
    const uint64_t gen = ++last_gen_;
    if (successor) {
      successor_gen_ = gen;
      successor_began_ = opts_.clock->now() + delay;
      handover_.begin();
    } else {
      watch_gen_ = gen;
      watch_began_ = opts_.clock->now() + delay;
      relist_requested_ = false;
    }
    std::weak_ptr<informer> weak = this->shared_from_this();
    const auto id = client_.watch(
        opts_.kind, opts_.ns, wo,
        [weak, gen](std::string_view line) {
          if (auto self = weak.lock())
            self->on_watch_line(gen, line);
        },
        [weak, gen](std::optional<api_error> e) {
          if (auto self = weak.lock())
            self->on_watch_end(gen, std::move(e));
        });
    (successor ? successor_id_ : watch_id_) = id;
    if (opts_.hand_over.count() > 0)  // its successor, before the server ends it
      client_.after(delay + std::chrono::seconds(lifetime), [weak, gen] {
        if (auto self = weak.lock(); self && gen == self->watch_gen_ && self->successor_gen_ == 0 && !self->stopped_ && !self->paused_)
          self->open_watch(std::chrono::milliseconds(0), true);
      });
  }

  // The successor takes over: the current watch is cancelled, and the successor's events the
  // current one had not applied are applied.
  void take_over(typename watch_handover<watch_event<T>>::verdict v, runtime::clock::time_point received) {
    if (!v.take_over)
      return;
    if (auto old = watch_id_.exchange(successor_id_.exchange(0)))
      client_.cancel(old);
    watch_gen_ = std::exchange(successor_gen_, 0);
    watch_began_ = successor_began_;
    current_ended_ = false;
    stats_.handovers.fetch_add(1, std::memory_order_relaxed);
    for (auto& ev : v.apply)
      apply(std::move(ev), received);
  }

  void drop_successor() {
    handover_.abandon();
    successor_gen_ = 0;
    if (auto id = successor_id_.exchange(0))
      client_.cancel(id);
  }

  void on_watch_line(uint64_t gen, std::string_view line) {
    if (stopped_ || relist_requested_ || (gen != watch_gen_ && gen != successor_gen_))
      return;
    const auto received = opts_.clock->now();
    auto decoded = decode_watch_event<T>(line);
    if (line.size() > 256 * 1024)  // a rare large object: its buffers are not kept for the next
      release_decode_buffers();
    if (auto* e = std::get_if<decode_error>(&decoded)) {
      stats_.decode_errors.fetch_add(1, std::memory_order_relaxed);
      runtime::log::warn("k8s/informer", "watch event skipped", {{"resource", opts_.kind.plural}, {"error", e->message}});
      return;
    }
    auto& ev = std::get<watch_event<T>>(decoded);
    using W = watch_event<T>;
    if (ev.type == W::error) {
      if (gen == successor_gen_)  // it could not start where the current one is: that one goes on
        return drop_successor();
      if (ev.error_code == 410) {
        // Our resourceVersion is too old: the difference must come from a fresh list.
        drop_successor();
        relist_requested_ = true;
        stats_.relists_410.fetch_add(1, std::memory_order_relaxed);
        client_.cancel(watch_id_.load());
      } else {
        runtime::log::warn("k8s/informer", "watch error event",
                           {{"resource", opts_.kind.plural}, {"code", ev.error_code}, {"message", ev.error_message}});
      }
      return;
    }
    const std::string rv = ev.type == W::bookmark ? std::string{} : ev.object.meta.resource_version;
    if (gen == successor_gen_)
      return take_over(handover_.successor_event(std::move(ev), rv), received);
    apply(std::move(ev), received);
    if (!rv.empty() && handover_.active())
      take_over(handover_.current_applied(rv), received);
  }

  // One event into the store, then to the handlers.
  void apply(watch_event<T> ev, runtime::clock::time_point received) {
    using W = watch_event<T>;
    const auto rv = ev.object.meta.resource_version;
    {
      std::unique_lock lock{mutex_};
      resource_version_ = rv;
    }
    if (ev.type == W::added || ev.type == W::modified) {
      auto obj = std::make_shared<const T>(std::move(ev.object));
      auto old = put(obj);
      emit({old ? event_type::modified : event_type::added, obj, old, rv, received});
    } else if (ev.type == W::deleted) {
      auto old = erase(key(ev.object));
      emit({event_type::deleted, old ? old : std::make_shared<const T>(std::move(ev.object)), nullptr, rv, received});
    }
  }

  void on_watch_end(uint64_t gen, std::optional<api_error> e) {
    if (gen == successor_gen_) {  // the successor ended before it took over
      successor_id_ = 0;
      drop_successor();
      if (std::exchange(current_ended_, false) && !stopped_ && !paused_)
        start_watch(std::chrono::milliseconds(0));  // and the current one had ended: resume as after an end
      return;
    }
    if (gen != watch_gen_)
      return;  // one taken over from
    watch_id_ = 0;
    if (stopped_ || paused_)
      return drop_successor();
    if (handover_.active() && !relist_requested_ && !(e && e->what == api_error::kind::gone)) {
      // The successor goes on, and takes over once it has what this one applied (not in 10 s: resume).
      current_ended_ = true;
      client_.after(std::chrono::seconds(10), [weak = std::weak_ptr<informer>(this->shared_from_this()), successor = successor_gen_] {
        if (auto self = weak.lock(); self && self->successor_gen_ == successor && self->current_ended_ && !self->stopped_) {
          self->drop_successor();
          self->current_ended_ = false;
          self->start_watch(std::chrono::milliseconds(0));
        }
      });
      return take_over(handover_.current_ended(), opts_.clock->now());
    }
    drop_successor();
    if (relist_requested_ || (e && e->what == api_error::kind::gone)) {
      if (!relist_requested_)
        stats_.relists_410.fetch_add(1, std::memory_order_relaxed);
      runtime::log::info("k8s/informer", "resourceVersion expired, relisting", {{"resource", opts_.kind.plural}});
      list_page({}, std::chrono::milliseconds(0));
      return;
    }
    if (!e) {  // the server's watch timeout: resume where we were
      failures_ = 0;
      runtime::log::debug("k8s/informer", "watch ended by the server, resuming", {{"resource", opts_.kind.plural}});
      start_watch(std::chrono::milliseconds(0));
      return;
    }
    stats_.watch_errors.fetch_add(1, std::memory_order_relaxed);
    // A watch that ran a while before it failed (a stream silenced past stall_timeout, a
    // connection cut) had worked: resume at once, as after a clean end, rather than after a
    // backoff that grew with every earlier failure (found by the chaos suite: quiet watches on a
    // short stall timeout backed off 27 s).
    if (opts_.clock->now() - watch_began_ >= std::chrono::seconds(10)) {
      failures_ = 0;
      outage_.succeeded();  // it had worked: this failure is news
    }
    const auto wait = next_backoff();
    outage_.failed("watch failed, reconnecting", *e, wait);
    start_watch(wait);
  }

  client& client_;
  options opts_;
  std::mutex handlers_mutex_;
  std::shared_ptr<const std::vector<std::pair<uint64_t, handler>>> handlers_ =
      std::make_shared<const std::vector<std::pair<uint64_t, handler>>>();
  uint64_t last_handler_ = 0;

  store<T> store_;
  mutable std::shared_mutex mutex_;  // resource_version_
  std::string resource_version_;

  // I/O thread only:
  std::unordered_map<std::string, std::shared_ptr<const T>> pending_;
  int failures_ = 0;
  informer_outage outage_{opts_.kind.plural, *opts_.clock};  // when failures are worth a log line
  std::chrono::steady_clock::time_point watch_began_;  // the current watch's start (after its delay)
  bool relist_requested_ = false;
  std::mt19937_64 rng_{std::random_device{}()};

  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> synced_{false};
  std::atomic<request_id> watch_id_{0};
  // Make-before-break (I/O thread, but the ids, which stop() cancels): the current watch's
  // generation, the successor's (0: none), and whether the current one ended before it took over.
  std::atomic<request_id> successor_id_{0};
  uint64_t last_gen_ = 0, watch_gen_ = 0, successor_gen_ = 0;
  bool current_ended_ = false;
  std::chrono::steady_clock::time_point successor_began_;
  watch_handover<watch_event<T>> handover_;
  stats stats_;
};

}  // namespace headroom::k8s
