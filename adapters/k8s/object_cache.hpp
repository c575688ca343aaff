#pragma once

// The object cache behind an informer: objects keyed "namespace/name", and the indexes its
// consumers add, each from a value (a label's value, a node name, a queue) to the objects that
// have it.
//
// One writer (the informer's I/O thread), any number of readers. Index entries point at the
// store's own entries (node-based, so stable until erased) instead of copying keys (see
// bench/k8s_decode_bench, bytes_per_cached_pod). Most index values have one or a few objects (a
// pod's own label, an owner's uid), a few have many (a namespace): a bucket is a small vector
// until it grows past 16 entries, then a hash set.

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace headroom::k8s {

template <class T>
class store {
 public:
  // An object's key, "namespace/name", held as views of the object's own namespace and name (the
  // entry holds the object, so the views live as long as the entry): a copy of the key was 32-48
  // bytes a pod.
  struct object_key {
    std::string_view ns, name;
    bool operator==(const object_key&) const = default;
  };
  struct key_hash {
    size_t operator()(const object_key& k) const {
      const size_t h = std::hash<std::string_view>{}(k.name);
      return k.ns.empty() ? h : h ^ (std::hash<std::string_view>{}(k.ns) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
    }
  };
  using entry = std::pair<const object_key, std::shared_ptr<const T>>;
  using index_fn = std::function<std::vector<std::string>(const T&)>;

  // General indexes: by namespace, by "key=value" of every label, by owner uid. An informer has
  // none of its own: each costs a bucket entry per object, and at 100,000 pods the three cost
  // about 140 bytes a pod that nothing read (bench/k8s_decode_bench, bytes_per_cached_pod). A consumer adds the index it reads (the label
  // router: one label's values).
  void add_default_indexes() {
    add_index("namespace", [](const T& o) { return std::vector<std::string>{o.meta.ns}; });
    add_index("label", [](const T& o) {
      std::vector<std::string> out;
      for (const auto& [k, v] : o.meta.labels)
        out.push_back(k + "=" + v);
      return out;
    });
    add_index("owner", [](const T& o) {
      std::vector<std::string> out;
      for (const auto& ref : o.meta.owners)
        out.push_back(ref.uid);
      return out;
    });
  }

  // At any time: the objects already held are indexed at once. Adding a name again replaces its
  // function and rebuilds its buckets.
  void add_index(const std::string& name, index_fn fn) {
    std::unique_lock lock{mutex_};
    auto& idx = indexes_[name];
    idx.fn = std::move(fn);
    idx.buckets.clear();
    for (const auto& e : objects_)
      for (auto& v : idx.fn(*e.second))
        idx.buckets[std::move(v)].insert(&e);
  }

  // The index `name` holds values of label `key`: a pod is in bucket "<value>" when it has the
  // label.
  void add_label_index(const std::string& name, std::string key) {
    add_index(name, [key = std::move(key)](const T& o) {
      const auto* v = o.meta.label(key);
      return v == nullptr ? std::vector<std::string>{} : std::vector<std::string>{*v};
    });
  }

  static std::string key(const std::string& ns, const std::string& name) { return ns.empty() ? name : ns + "/" + name; }
  static std::string key(const T& o) { return key(o.meta.ns, o.meta.name); }

  // Inserts or replaces; returns the previous version.
  std::shared_ptr<const T> put(std::shared_ptr<const T> obj) {
    std::unique_lock lock{mutex_};
    const object_key k{obj->meta.ns, obj->meta.name};
    auto it = objects_.find(k);
    if (it == objects_.end()) {
      it = objects_.emplace(k, std::move(obj)).first;
      index(&*it, *it->second);
      return nullptr;
    }
    auto old = std::move(it->second);  // keeps the old key's views valid until the key is replaced
    unindex(&*it, *old);
    // The same element, re-keyed on the new version's strings: the index entries point at it.
    auto node = objects_.extract(it);
    node.key() = k;
    node.mapped() = std::move(obj);
    it = objects_.insert(std::move(node)).position;
    index(&*it, *it->second);
    return old;
  }

  std::shared_ptr<const T> erase(const std::string& k) {
    std::unique_lock lock{mutex_};
    auto it = objects_.find(split(k));
    if (it == objects_.end())
      return nullptr;
    auto old = std::move(it->second);
    unindex(&*it, *old);
    objects_.erase(it);
    return old;
  }

  std::shared_ptr<const T> get(const std::string& k) const {
    std::shared_lock lock{mutex_};
    auto it = objects_.find(split(k));
    return it == objects_.end() ? nullptr : it->second;
  }

  std::vector<std::shared_ptr<const T>> list() const {
    std::shared_lock lock{mutex_};
    std::vector<std::shared_ptr<const T>> out;
    out.reserve(objects_.size());
    for (const auto& [k, v] : objects_)
      out.push_back(v);
    return out;
  }

  std::vector<std::string> keys() const {
    std::shared_lock lock{mutex_};
    std::vector<std::string> out;
    out.reserve(objects_.size());
    for (const auto& [k, v] : objects_)
      out.push_back(k.ns.empty() ? std::string{k.name} : std::string{k.ns} + "/" + std::string{k.name});
    return out;
  }

  std::vector<std::shared_ptr<const T>> by_index(const std::string& name, const std::string& value) const {
    std::shared_lock lock{mutex_};
    std::vector<std::shared_ptr<const T>> out;
    auto idx = indexes_.find(name);
    if (idx == indexes_.end())
      return out;
    auto found = idx->second.buckets.find(value);
    if (found == idx->second.buckets.end())
      return out;
    out.reserve(found->second.size());
    found->second.each([&](const entry* e) { out.push_back(e->second); });
    return out;
  }

  size_t size() const {
    std::shared_lock lock{mutex_};
    return objects_.size();
  }

 private:
  class bucket {
   public:
    void insert(const entry* e) {
      if (large_) {
        large_->insert(e);
      } else if (std::find(small_.begin(), small_.end(), e) == small_.end()) {
        small_.push_back(e);
        if (small_.size() > 16) {
          large_ = std::make_unique<std::unordered_set<const entry*>>(small_.begin(), small_.end());
          std::vector<const entry*>{}.swap(small_);
        }
      }
    }
    void erase(const entry* e) {
      if (large_) {
        large_->erase(e);
      } else if (auto it = std::find(small_.begin(), small_.end(), e); it != small_.end()) {
        *it = small_.back();
        small_.pop_back();
      }
    }
    size_t size() const { return large_ ? large_->size() : small_.size(); }
    bool empty() const { return size() == 0; }
    template <class F>
    void each(F&& fn) const {
      if (large_)
        for (const entry* e : *large_)
          fn(e);
      else
        for (const entry* e : small_)
          fn(e);
    }

   private:
    std::vector<const entry*> small_;
    std::unique_ptr<std::unordered_set<const entry*>> large_;
  };

  struct index_state {
    index_fn fn;
    std::unordered_map<std::string, bucket> buckets;
  };

  void index(const entry* e, const T& o) {
    for (auto& [name, idx] : indexes_)
      for (auto& v : idx.fn(o))
        idx.buckets[std::move(v)].insert(e);
  }
  void unindex(const entry* e, const T& o) {
    for (auto& [name, idx] : indexes_)
      for (const auto& v : idx.fn(o)) {
        auto it = idx.buckets.find(v);
        if (it == idx.buckets.end())
          continue;
        it->second.erase(e);
        if (it->second.empty())
          idx.buckets.erase(it);
      }
  }

  // "namespace/name" (or "name") as the views a lookup compares.
  static object_key split(const std::string& k) {
    const std::string_view v{k};
    const auto slash = v.find('/');
    return slash == std::string_view::npos ? object_key{{}, v} : object_key{v.substr(0, slash), v.substr(slash + 1)};
  }

  mutable std::shared_mutex mutex_;
  std::unordered_map<object_key, std::shared_ptr<const T>, key_hash> objects_;
  std::map<std::string, index_state> indexes_;
};

}  // namespace headroom::k8s
