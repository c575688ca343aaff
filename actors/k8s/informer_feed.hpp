#pragma once

#include <caf/actor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/k8s/informer.hpp"
#include "messages/k8s.hpp"
#include "runtime/mailbox/actor_waker.hpp"
#include "runtime/mailbox/keyed_coalescer.hpp"

namespace headroom::actors {

// Brings an informer's events into one actor, bounded: a keyed coalescer per object
// (namespace/name) keeps the latest change of each object, and the actor is woken with one
// msg::buffer_wakeup{buffer} however many events arrived. Reconcilers are level-based, so the
// latest state per object is what they need; a burst of 1,000 status updates for one pod costs one
// handler run. Bounded by `max_objects`; an event for a new object beyond it is dropped and counted
// (the periodic resync brings it back).
//
// Lives in the consuming actor's state; `drain` is called from that actor's wake-up handler.
template <class T>
class informer_feed {
 public:
  using event = msg::object_event<T>;

  // `consumer`: the actor's `this` or its typed handle (its contract must take msg::buffer_wakeup).
  template <class Consumer>
  informer_feed(std::string name, const Consumer& consumer, uint32_t buffer,
                size_t max_objects = runtime::keyed_coalescer<std::string, event>::default_max_keys)
      : buffer_(std::make_shared<runtime::keyed_coalescer<std::string, event>>(
            std::move(name), runtime::wake_actor(consumer, buffer), max_objects)) {}

  ~informer_feed() {
    for (auto& d : detach_)
      d();
  }
  informer_feed(const informer_feed&) = delete;
  informer_feed& operator=(const informer_feed&) = delete;

  // Subscribes to an informer, and unsubscribes when the feed (the actor's state) goes. The
  // handler runs on the I/O thread and only offers into the coalescer.
  // `Source` is a k8s::informer<T> or a k8s::informer_slice<T> (one scale set's share of an informer).
  // `keep`, when given, runs on the I/O thread too and decides which events are offered at all: a
  // consumer that cares about few of a busy informer's objects (a capacity monitor and the nodes
  // that stopped taking pods) is not woken for the rest.
  template <class Source>
  void attach(const std::shared_ptr<Source>& source, std::function<bool(const event&)> keep = {}) {
    const uint64_t id = source->subscribe(handler_for(buffer_, std::move(keep)));
    std::weak_ptr<Source> weak = source;
    detach_.push_back([weak, id] {
      if (auto s = weak.lock())
        s->unsubscribe(id);
    });
  }

  // The same for any source that takes an informer handler (tests feed events directly).
  void attach(const std::function<void(typename k8s::informer<T>::handler)>& subscribe) { subscribe(handler_for(buffer_)); }

  // In the wake-up handler: hands every pending object change to `fn`.
  template <class F>
  size_t drain(F&& fn) {
    buffer_->rearm();
    size_t n = 0;
    while (auto item = buffer_->next()) {
      fn(item->second);
      buffer_->done(item->first);
      ++n;
    }
    return n;
  }

  const runtime::buffer_stats_ptr& stats() const { return buffer_->stats(); }

 private:
  using coalescer = runtime::keyed_coalescer<std::string, event>;
  static std::string key(const T& o) { return o.meta.ns + "/" + o.meta.name; }
  static typename k8s::informer<T>::handler handler_for(std::shared_ptr<coalescer> buffer, std::function<bool(const event&)> keep = {}) {
    return [buffer, keep = std::move(keep)](const typename k8s::informer<T>::event& e) {
      event out;
      out.change = static_cast<msg::object_change>(static_cast<int>(e.type));
      out.object = e.object;
      out.trace.resource_version = e.resource_version;
      out.trace.received = e.received;
      if (keep && !keep(out))
        return;
      buffer->offer(key(*e.object), std::move(out));
    };
  }
  std::shared_ptr<coalescer> buffer_;
  std::vector<std::function<void()>> detach_;  // one per source attached (several informers may feed one actor)
};

}  // namespace headroom::actors
