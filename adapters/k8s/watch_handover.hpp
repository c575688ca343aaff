#pragma once

// Make-before-break for a watch the API server is about to end (#62). The server ends every watch
// after its timeoutSeconds; resuming only then leaves a gap (the end read, a new request through
// the API server's admission and priority queues, its first bytes) in which the changes wait. At
// 1,000 scale sets they reached headroom 0.6–1.7 s after a Go client's watch that did not end.
// So a successor watch starts from the current resourceVersion shortly before the end, and takes
// over once it has caught up with what the current one applied meanwhile.
//
// Both watches deliver the one ordered sequence of events after the successor's start; the
// current one has applied a prefix of it. resourceVersions are opaque (compared for equality
// only, as the API conventions require): the successor's events are held until one of them is the
// last event the current watch applied; the ones after it are new. If the current watch applied
// nothing since the successor began, the successor's first event is new. Bookmarks carry no event
// to match and are held with the events.
//
// Pure logic on the informer's I/O thread; informer.hpp starts, promotes and cancels the watches.

#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace headroom::k8s {

template <class Event>
class watch_handover {
 public:
  struct verdict {
    bool take_over = false;     // the successor becomes the watch now (the current one is cancelled)
    std::vector<Event> apply;   // the successor's events to apply, in order
  };

  bool active() const { return active_; }
  void begin() {
    active_ = true;
    last_applied_.clear();
    held_.clear();
  }
  void abandon() {
    active_ = false;
    held_.clear();
  }

  // The current watch applied an event (`rv`: its resourceVersion).
  verdict current_applied(const std::string& rv) {
    if (!active_)
      return {};
    last_applied_ = rv;
    for (size_t i = 0; i < held_.size(); ++i)
      if (held_[i].first == rv)
        return take_over(i + 1);
    return {};
  }
  // An event of the successor (`rv` empty: a bookmark).
  verdict successor_event(Event e, const std::string& rv) {
    if (!active_)
      return {};
    held_.emplace_back(rv, std::move(e));
    if (last_applied_.empty())
      return take_over(0);
    if (!rv.empty() && rv == last_applied_)
      return take_over(held_.size());
    return {};
  }
  // The current watch ended (the server's timeout, or a failure) before the successor caught up.
  verdict current_ended() {
    if (!active_ || !last_applied_.empty())
      return {};  // the successor still has to deliver what the current one applied
    return take_over(0);
  }

 private:
  verdict take_over(size_t from) {
    verdict v{true, {}};
    for (size_t i = from; i < held_.size(); ++i)
      v.apply.push_back(std::move(held_[i].second));
    abandon();
    return v;
  }

  bool active_ = false;
  std::string last_applied_;
  std::deque<std::pair<std::string, Event>> held_;
};

}  // namespace headroom::k8s
