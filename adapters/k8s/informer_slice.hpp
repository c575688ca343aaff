#pragma once

// One informer shared by many consumers, each of which sees only the objects carrying one value of
// one label: every scale set's actors see that scale set's pods, and a thousand scale sets in a
// namespace cost one watch on the API server and one cache, not a thousand.
//
// A `label_router` subscribes once to the shared informer and hands each event only to the
// subscribers of the object's label value (a hash lookup, so an event costs O(its subscribers),
// not O(scale sets)). An object whose label value changes leaves the old slice (a `deleted` event
// there) and enters the new one (`added`). An `informer_slice` offers the part of the informer's
// interface the consumers use: get, list (through the store's label index, so O(the slice)),
// subscribe, unsubscribe, synced. The shared informer is started and stopped by its owner.
//
// Handlers run on the transport's I/O thread, like the informer's own; dispatch reads an immutable
// snapshot of the routes, so subscribing from any thread is safe.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "adapters/k8s/informer.hpp"

namespace headroom::k8s {

template <class T>
class informer_slice;

template <class T>
class label_router : public std::enable_shared_from_this<label_router<T>> {
 public:
  using handler = typename informer<T>::handler;
  using event = typename informer<T>::event;

  // Routes `source`'s events by the value of `label_key`; an index of that label's values (added
  // to the informer here) serves the slices' lists. Before or after source->start().
  static std::shared_ptr<label_router> make(std::shared_ptr<informer<T>> source, std::string label_key) {
    source->add_label_index(index_name(label_key), label_key);
    auto r = std::shared_ptr<label_router>(new label_router(std::move(source), std::move(label_key)));
    std::weak_ptr<label_router> weak = r;
    r->source_id_ = r->source_->subscribe([weak](const event& e) {
      if (auto self = weak.lock())
        self->dispatch(e);
    });
    return r;
  }
  ~label_router() { source_->unsubscribe(source_id_); }
  label_router(const label_router&) = delete;
  label_router& operator=(const label_router&) = delete;

  // The objects whose label has `value`.
  std::shared_ptr<informer_slice<T>> slice(std::string value) {
    return std::shared_ptr<informer_slice<T>>(new informer_slice<T>(this->shared_from_this(), std::move(value)));
  }

  const std::shared_ptr<informer<T>>& source() const { return source_; }
  const std::string& label_key() const { return key_; }
  static std::string index_name(const std::string& label_key) { return "label:" + label_key; }

  // The subscribers' count per value (tests; metrics).
  size_t subscribers(const std::string& value) const {
    auto snapshot = routes();
    auto it = snapshot->find(value);
    return it == snapshot->end() ? 0 : it->second.size();
  }

 private:
  friend class informer_slice<T>;
  using table = std::unordered_map<std::string, std::vector<std::pair<uint64_t, handler>>>;

  label_router(std::shared_ptr<informer<T>> source, std::string key)
      : source_(std::move(source)), key_(std::move(key)), routes_(std::make_shared<const table>()) {}

  uint64_t add(const std::string& value, handler h) {
    std::lock_guard lock{mutex_};
    auto next = std::make_shared<table>(*routes_);
    (*next)[value].emplace_back(++last_, std::move(h));
    routes_ = std::move(next);
    return last_;
  }
  void remove(const std::string& value, uint64_t id) {
    std::lock_guard lock{mutex_};
    auto next = std::make_shared<table>(*routes_);
    if (auto it = next->find(value); it != next->end()) {
      std::erase_if(it->second, [id](const auto& p) { return p.first == id; });
      if (it->second.empty())
        next->erase(it);
    }
    routes_ = std::move(next);
  }
  std::shared_ptr<const table> routes() const {
    std::lock_guard lock{mutex_};
    return routes_;
  }

  static void deliver(const table& t, const std::string* value, const event& e) {
    if (value == nullptr)
      return;
    if (auto it = t.find(*value); it != t.end())
      for (const auto& [id, h] : it->second)
        h(e);
  }

  void dispatch(const event& e) {
    const auto snapshot = routes();
    const std::string* now = e.object ? e.object->meta.label(key_) : nullptr;
    const std::string* before = e.old ? e.old->meta.label(key_) : nullptr;
    if (e.type == informer<T>::event_type::modified && before != nullptr && (now == nullptr || *now != *before)) {
      // Moved between slices (or out of all): gone from the old one, new in the new one.
      deliver(*snapshot, before, event{informer<T>::event_type::deleted, e.old, nullptr});
      deliver(*snapshot, now, event{informer<T>::event_type::added, e.object, nullptr});
      return;
    }
    deliver(*snapshot, now, e);
  }

  std::shared_ptr<informer<T>> source_;
  std::string key_;
  mutable std::mutex mutex_;
  std::shared_ptr<const table> routes_;
  uint64_t last_ = 0;
  uint64_t source_id_ = 0;
};

template <class T>
class informer_slice {
 public:
  using handler = typename informer<T>::handler;

  std::shared_ptr<const T> get(const std::string& ns, const std::string& name) const {
    auto o = router_->source()->get(ns, name);
    return o && mine(*o) ? o : nullptr;
  }
  std::vector<std::shared_ptr<const T>> list() const { return router_->source()->by_index(index_, value_); }
  size_t size() const { return list().size(); }
  bool synced() const { return router_->source()->synced(); }
  const std::string& value() const { return value_; }

  uint64_t subscribe(handler h) { return router_->add(value_, std::move(h)); }
  void unsubscribe(uint64_t id) { router_->remove(value_, id); }

 private:
  friend class label_router<T>;
  informer_slice(std::shared_ptr<label_router<T>> router, std::string value)
      : router_(std::move(router)), value_(std::move(value)), index_(label_router<T>::index_name(router_->label_key())) {}
  bool mine(const T& o) const {
    const auto* v = o.meta.label(router_->label_key());
    return v != nullptr && *v == value_;
  }

  std::shared_ptr<label_router<T>> router_;
  std::string value_, index_;
};

}  // namespace headroom::k8s
