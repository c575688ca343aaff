#include "app/kubernetes_metrics.hpp"

#include "runtime/log.hpp"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/histogram.h>

#include <array>
#include <chrono>
#include <optional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

namespace headroom::app {

namespace {

class informer_collector final : public prometheus::Collectable {
 public:
  explicit informer_collector(std::function<std::vector<k8s::tracked_informer>()> informers)
      : informers_(std::move(informers)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    struct column {
      const char* name;
      const char* help;
      prometheus::MetricType type;
      const std::atomic<uint64_t> k8s::informer_stats::*field;
    };
    using prometheus::MetricType;
    using k8s::informer_stats;
    static const column columns[] = {
        {"headroom_kubernetes_informer_lists_total", "Lists an informer began (its first, and each relist)",
         MetricType::Counter, &informer_stats::lists},
        {"headroom_kubernetes_informer_watches_total",
         "Watches an informer started: the first, each resumed after the server ended one, each after a failure",
         MetricType::Counter, &informer_stats::watches},
        {"headroom_kubernetes_informer_watch_handovers_total",
         "Watches a successor took over from before the server ended them (make-before-break)", MetricType::Counter,
         &informer_stats::handovers},
        {"headroom_kubernetes_informer_watch_failures_total", "Watches that ended in an error or a stall",
         MetricType::Counter, &informer_stats::watch_errors},
        {"headroom_kubernetes_informer_expired_total", "Relists because the resourceVersion expired (410 Gone)",
         MetricType::Counter, &informer_stats::relists_410},
        {"headroom_kubernetes_informer_decode_errors_total", "Objects or events an informer could not decode (skipped)",
         MetricType::Counter, &informer_stats::decode_errors},
        {"headroom_kubernetes_informer_events_total", "Changes an informer delivered", MetricType::Counter,
         &informer_stats::events},
    };
    const auto live = informers_();
    // Two informers of one resource and namespace (two modes) are one series.
    std::map<std::pair<std::string, std::string>, std::vector<const k8s::informer_stats*>> by_key;
    for (const auto& i : live)
      by_key[{i.resource, i.ns}].push_back(i.stats.get());
    std::vector<prometheus::MetricFamily> out;
    for (const auto& c : columns) {
      prometheus::MetricFamily family{c.name, c.help, c.type, {}};
      for (const auto& [key, stats] : by_key) {
        double sum = 0;
        for (const auto* s : stats)
          sum += static_cast<double>((s->*c.field).load(std::memory_order_relaxed));
        prometheus::ClientMetric metric;
        metric.label = {{"resource", key.first}, {"namespace", key.second}};
        metric.counter.value = sum;
        family.metric.push_back(std::move(metric));
      }
      out.push_back(std::move(family));
    }
    return out;
  }

 private:
  std::function<std::vector<k8s::tracked_informer>()> informers_;
};

}  // namespace

void count_rate_limit_waits(http::transport::options& topts, runtime::metrics& m) {
  auto& family = prometheus::BuildHistogram()
                     .Name("headroom_kubernetes_rate_limiter_wait_seconds")
                     .Help("How long a Kubernetes request waited for the client-side rate budget (kubernetes.qps, "
                           "kubernetes.burst) before it started, by priority: urgent (watches, informers' lists, "
                           "scheduling-gate removals) go first, then normal (pod and scaling writes), then background "
                           "(status and Event writes)")
                     .Register(m.registry());
  const prometheus::Histogram::BucketBoundaries bounds{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  std::array<prometheus::Histogram*, 3> by_priority{};
  for (auto p : {http::priority::urgent, http::priority::normal, http::priority::background})
    by_priority[static_cast<size_t>(p)] = &family.Add({{"priority", std::string{http::to_string(p)}}}, bounds);
  topts.on_start = [by_priority](std::chrono::nanoseconds waited, http::priority p) {
    by_priority[static_cast<size_t>(p)]->Observe(std::chrono::duration<double>(waited).count());
  };
}

void time_io_turns(http::transport::options& topts, runtime::metrics& m) {
  const prometheus::Histogram::BucketBoundaries bounds{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
  auto& busy = prometheus::BuildHistogram()
                   .Name("headroom_kubernetes_io_busy_seconds")
                   .Help("How long each turn of the Kubernetes transport's I/O thread kept it busy: starting requests, "
                         "driving libcurl and handing every watch line and answer it read to its handler. A watch "
                         "event that arrives meanwhile is read after the turn")
                   .Register(m.registry())
                   .Add({}, bounds);
  auto& late = prometheus::BuildHistogram()
                   .Name("headroom_kubernetes_io_wake_late_seconds")
                   .Help("How much later than it asked the Kubernetes transport's I/O thread returned from each wait for "
                         "its sockets: the thread was ready to run but the machine's CPU was elsewhere")
                   .Register(m.registry())
                   .Add({}, bounds);
  struct last_line {  // shared by the transports made from these options: each has its I/O thread
    std::mutex m;
    std::optional<runtime::clock::time_point> at;
    uint64_t unsaid = 0;
  };
  topts.on_turn = [&busy, &late, clock = topts.clock, said = std::make_shared<last_line>()](std::chrono::nanoseconds b,
                                                                                           std::chrono::nanoseconds l) {
    busy.Observe(std::chrono::duration<double>(b).count());
    late.Observe(std::chrono::duration<double>(l).count());
    constexpr auto held_up = std::chrono::milliseconds(250);
    if (b < held_up && l < held_up)
      return;
    const auto now = clock->now();
    std::lock_guard lock{said->m};
    if (said->at && now - *said->at < std::chrono::seconds(1)) {
      ++said->unsaid;
      return;
    }
    runtime::log::info("kubernetes", "the I/O thread read late",
                       {{"busy_ms", std::chrono::duration_cast<std::chrono::milliseconds>(b).count()},
                        {"woke_late_ms", std::chrono::duration_cast<std::chrono::milliseconds>(l).count()},
                        {"more_since_last_line", said->unsaid}});
    said->at = now;
    said->unsaid = 0;
  };
}

void count_responses(std::initializer_list<k8s::client*> clients, runtime::metrics& m) {
  auto& family = prometheus::BuildCounter()
                     .Name("headroom_kubernetes_requests_total")
                     .Help("Responses from the API server by verb (get, list, create, update, patch, delete, evict, "
                           "watch…), resource (pods, events, scalesets…) and HTTP status code, each attempt of a "
                           "retried request counted; code \"0\": no response (connection failed or timed out)")
                     .Register(m.registry());
  using key = std::tuple<std::string, std::string, long>;
  auto cache = std::make_shared<std::pair<std::mutex, std::map<key, prometheus::Counter*>>>();
  auto count = [&family, cache](const std::string& verb, const std::string& resource, long status) {
    std::lock_guard lock{cache->first};
    auto& counter = cache->second[key{verb, resource, status}];
    if (counter == nullptr)
      counter = &family.Add({{"verb", verb}, {"resource", resource}, {"code", std::to_string(status)}});
    counter->Increment();
  };
  for (auto* c : clients)
    c->on_response(count);
}

void collect_informers(runtime::metrics& m, std::function<std::vector<k8s::tracked_informer>()> informers) {
  static const char key = 0;  // one collector per metrics registry
  m.collector(&key, [&informers] { return std::make_shared<informer_collector>(std::move(informers)); });
}

}  // namespace headroom::app
