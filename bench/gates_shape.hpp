#pragma once

// Kueue's own scalability shape (its test/performance/scheduler/configs/baseline), translated to
// plain Pods, for gates_kueue_side_by_side --shape baseline (#60). Per Queue (30 by default, each
// with a quota of 20 CPUs, as Kueue's ClusterQueues' nominal quota):
//   small   350 pods, one every 100 ms,  1 CPU,  priority  50, running 200 ms once bound
//   medium  100 pods, one every 500 ms,  5 CPUs, priority 100, running 500 ms
//   large    50 pods, one every 1.2 s,  20 CPUs, priority 200, running 1 s
// 15,000 pods in all. The bench plays the workload's runtime: a pod bound to a node is deleted
// (grace 0) its class's runtime later, which gives its quota back. Measured per class, as
// Kueue's rangespec does: time to admission (the bench's create request → the pod first seen
// without scheduling gates), average, p50, p99, max; for the run, wall time, admitted pods per
// second, and the controller's CPU and peak RSS. `stretch` multiplies the creation intervals:
// Kueue's shape creates 385 pods/s (30 queues), more than this 2-core test control plane takes
// with admission webhooks in the path (creates time out, and a webhook that times out lets a pod
// in ungated); a pod the watch first sees without any gate is counted as "never gated", not as
// admitted. Time to admission starts when the bench's watch
// first sees the pod (it exists), so the bench's own client queue never counts; the bench's client
// runs at 2,000 requests/s so that it is not the bound (15,000 creates and 15,000 deletes).
//
// What does not translate: Kueue's cohorts (5 × 6 ClusterQueues that borrow up to 100 CPUs from
// each other) have no counterpart in headroom's Queues, so both systems run 30 independent
// queues of 20 CPUs here; Kueue's published figures (with borrowing) are not comparable to these.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer.hpp"
#include "histogram_text.hpp"
#include "soak_probe.hpp"

namespace headroom::bench::shape {

struct pod_class {
  std::string name;
  int count, interval_ms, runtime_ms, priority, cpus;
};

inline std::vector<pod_class> baseline() {
  return {{"small", 350, 100, 200, 50, 1}, {"medium", 100, 500, 500, 100, 5}, {"large", 50, 1200, 1000, 200, 20}};
}

// How a system's pods join a queue.
struct queue_membership {
  std::string label_key;         // the queue's label on the pod
  std::string annotations_json;  // the pod's annotations, a JSON object
};

struct class_result {
  std::vector<double> admission_ms;
};

struct result {
  std::map<std::string, class_result> classes;
  int created = 0, admitted = 0, finished = 0, never_gated = 0;
  double wall_s = 0, cpu_s = 0, rss_peak = 0;
  bool complete = false;
};

class shape_run {
 public:
  using clock = std::chrono::steady_clock;

  shape_run(k8s::client& api, std::string ns, queue_membership m, std::vector<pod_class> classes, int queues, double scale,
            double stretch)
      : api_{api}, ns_{std::move(ns)}, m_{std::move(m)}, classes_{std::move(classes)}, queues_{queues} {
    for (auto& c : classes_) {
      c.count = std::max(1, static_cast<int>(c.count * scale));
      c.interval_ms = static_cast<int>(c.interval_ms * stretch);
    }
  }

  static std::string queue_name(int i) { return "shape-" + std::to_string(i); }

  // The pods' PriorityClasses (cluster-wide; made once).
  static std::string priority_classes_yaml(const std::vector<pod_class>& classes) {
    std::string out;
    for (const auto& c : classes)
      out += "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: shape-" + c.name + "}\nvalue: " +
             std::to_string(c.priority) + "\n---\n";
    return out;
  }

  // Runs the shape against the system whose controller is `pid`; `limit` bounds the whole run.
  result run(pid_t pid, std::chrono::seconds limit) {
    result r;
    watch();
    std::atomic<bool> running{true};
    std::vector<sample> samples;
    std::thread sampler{[&] {
      const auto t0 = clock::now();
      while (running) {
        auto s = probe(pid);
        s.t = std::chrono::duration<double>(clock::now() - t0).count();
        samples.push_back(s);
        std::this_thread::sleep_for(std::chrono::seconds{1});
      }
    }};
    std::thread reaper{[&] { reap(running); }};
    const auto t0 = clock::now();
    std::vector<std::thread> creators;
    for (const auto& c : classes_)
      creators.emplace_back([this, c, t0] { create_class(c, t0); });
    for (auto& t : creators)
      t.join();
    {
      std::unique_lock lock{m_mutex_};
      r.complete = cv_.wait_until(lock, t0 + limit, [&] { return gone_.size() >= created_.size(); });
      r.created = static_cast<int>(created_.size());
      r.admitted = 0;
      for (const auto& [name, at] : ungated_)
        r.admitted += gated_.contains(name);
      r.finished = static_cast<int>(gone_.size());
      clock::time_point last = t0;
      for (const auto& [name, at] : ungated_) {
        last = std::max(last, at);
        if (!gated_.contains(name)) {
          ++r.never_gated;
          continue;
        }
        auto made = seen_.find(name);
        if (made == seen_.end())
          continue;
        r.classes[class_of(name)].admission_ms.push_back(std::chrono::duration<double, std::milli>(at - made->second).count());
      }
      r.wall_s = std::chrono::duration<double>(last - t0).count();
    }
    running = false;
    cv_.notify_all();
    reaper.join();
    sampler.join();
    pods_->stop();
    if (!samples.empty()) {
      r.cpu_s = samples.back().cpu_s - samples.front().cpu_s;
      for (const auto& s : samples)
        r.rss_peak = std::max(r.rss_peak, s.rss_mib);
    }
    return r;
  }

 private:
  static std::string class_of(const std::string& pod) {  // shape-CLASS-QUEUE-I
    const auto a = pod.find('-') + 1;
    return pod.substr(a, pod.find('-', a) - a);
  }

  std::string pod_json(const std::string& name, const pod_class& c, int queue) const {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","labels":{"headroom.test/phase":"shape",")" +
           m_.label_key + R"(":")" + queue_name(queue) + R"("},"annotations":)" + m_.annotations_json +
           R"(},"spec":{"terminationGracePeriodSeconds":0,"priorityClassName":"shape-)" + c.name +
           R"(","nodeSelector":{"headroom.test/pool":"sbs"},"tolerations":[{"key":"headroom.test/pool","operator":"Exists","effect":"NoSchedule"}],)"
           R"("containers":[{"name":"main","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":")" +
           std::to_string(c.cpus) + R"(","memory":"8Mi"}}}]}})";
  }

  // One pod of the class per queue every interval, `count` times.
  void create_class(const pod_class& c, clock::time_point t0) {
    for (int i = 0; i < c.count; ++i) {
      std::this_thread::sleep_until(t0 + std::chrono::milliseconds{static_cast<int64_t>(i) * c.interval_ms});
      for (int q = 0; q < queues_; ++q) {
        const std::string name = "shape-" + c.name + "-" + std::to_string(q) + "-" + std::to_string(i);
        {
          std::lock_guard lock{m_mutex_};
          created_.emplace(name, clock::now());
          runtime_ms_[name] = c.runtime_ms;
        }
        api_.create(k8s::kinds::pods, ns_, pod_json(name, c, q), [this, name](k8s::api_result r) {
          if (auto* e = std::get_if<k8s::api_error>(&r)) {
            std::fprintf(stderr, "[shape] %s\n", e->describe().substr(0, 300).c_str());
            std::lock_guard lock{m_mutex_};
            created_.erase(name);  // not counted: it never existed
            cv_.notify_all();
          }
        });
      }
    }
  }

  void watch() {
    k8s::informer<k8s::pod>::options o;
    o.kind = k8s::kinds::pods;
    o.ns = ns_;
    o.label_selector = "headroom.test/phase=shape";
    pods_ = k8s::informer<k8s::pod>::make(api_, o);
    pods_->subscribe([this](const k8s::informer<k8s::pod>::event& e) {
      using type = k8s::informer<k8s::pod>::event_type;
      if (e.type == type::resync)
        return;
      const auto at = clock::now();
      const auto& name = e.object->meta.name;
      std::lock_guard lock{m_mutex_};
      seen_.emplace(name, at);
      if (e.type == type::deleted) {
        gone_.insert(name);
        cv_.notify_all();
        return;
      }
      if (e.object->spec->scheduling_gates.empty())
        ungated_.emplace(name, at);
      else
        gated_.insert(name);
      // Bound: it "runs" for its class's time, then goes.
      if (!e.object->node_name.empty() && bound_.insert(name).second)
        due_.emplace(at + std::chrono::milliseconds{runtime_ms_[name]}, name);
      cv_.notify_all();
    });
    pods_->start();
  }

  // Deletes each bound pod when its runtime is up.
  void reap(const std::atomic<bool>& running) {
    std::unique_lock lock{m_mutex_};
    while (running) {
      if (due_.empty()) {
        cv_.wait_for(lock, std::chrono::milliseconds{100});
        continue;
      }
      const auto [when, name] = *due_.begin();
      if (when > clock::now()) {
        cv_.wait_until(lock, when);
        continue;
      }
      due_.erase(due_.begin());
      lock.unlock();
      k8s::delete_options del;
      del.grace_period_seconds = 0;
      api_.remove(k8s::kinds::pods, ns_, name, del, [](k8s::api_result) {});
      lock.lock();
    }
  }

  k8s::client& api_;
  std::string ns_;
  queue_membership m_;
  std::vector<pod_class> classes_;
  int queues_;
  std::shared_ptr<k8s::informer<k8s::pod>> pods_;
  std::mutex m_mutex_;
  std::condition_variable cv_;
  std::map<std::string, clock::time_point> created_, seen_, ungated_;  // create sent, first seen, ungated
  std::map<std::string, int> runtime_ms_;
  std::set<std::string> bound_, gone_, gated_;
  std::multimap<clock::time_point, std::string> due_;
};

}  // namespace headroom::bench::shape
