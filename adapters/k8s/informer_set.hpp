#pragma once

// One informer per kind, namespace and selectors for the whole process: the modes that watch the
// same objects (the scale sets and the runner scheduler both follow the nodes) share one watch
// and one cache. The composition root (app/agent.cpp) owns the set and hands it to every mode;
// a mode asks for what it watches instead of making its own. Used while the modes prepare (one
// thread); an informer is started by each user (start() runs once) and stopped with the set.
// Indexes go on before its first start: a mode that adds one asks for selectors no other mode uses.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <typeindex>
#include <vector>

#include "adapters/k8s/informer.hpp"

namespace headroom::k8s {

class informer_set {
 public:
  explicit informer_set(client& c) : client_(c) {}
  informer_set(const informer_set&) = delete;
  informer_set& operator=(const informer_set&) = delete;
  ~informer_set() { stop(); }

  // The informer of these options' kind, namespace and selectors: made on first request, the same
  // one after that (its other options are the first request's).
  template <class T>
  std::shared_ptr<informer<T>> get(const typename informer<T>::options& o) {
    const key k{std::type_index(typeid(T)), o.kind.group + "/" + o.kind.version + "/" + o.kind.plural, o.ns, o.label_selector,
                o.field_selector};
    if (auto it = made_.find(k); it != made_.end())
      return std::static_pointer_cast<informer<T>>(it->second);
    auto opts = o;
    // The process's informers hand a watch over before the server ends it (informer.hpp).
    if (opts.hand_over.count() == 0)
      opts.hand_over = std::chrono::seconds(10);
    auto made = informer<T>::make(client_, std::move(opts));
    made_.emplace(k, made);
    stops_.push_back([made] { made->stop(); });
    return made;
  }

  size_t size() const { return made_.size(); }

  // Every informer's watch ends (the modes stop theirs too; a second stop does nothing).
  void stop() {
    for (auto& s : stops_)
      s();
    stops_.clear();
  }

 private:
  using key = std::tuple<std::type_index, std::string, std::string, std::string, std::string>;
  client& client_;
  std::map<key, std::shared_ptr<void>> made_;
  std::vector<std::function<void()>> stops_;
};

}  // namespace headroom::k8s
