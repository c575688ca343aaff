#pragma once

// What the Kubernetes client does, in the metrics: responses by verb, resource and status, how long
// requests waited for the client-side rate budget (kubernetes.qps) by priority, and each informer's
// lists, watches and failures. Responses and waits are counted as they happen (on the transport's
// I/O thread); the informers' counters are read at scrape time.

#include <functional>
#include <initializer_list>
#include <vector>

#include "adapters/k8s/client.hpp"
#include "runtime/metrics.hpp"

namespace headroom::app {

// headroom_kubernetes_rate_limiter_wait_seconds{priority}: set on the options before the transport
// is made.
void count_rate_limit_waits(http::transport::options& opts, runtime::metrics& m);

// headroom_kubernetes_io_busy_seconds and headroom_kubernetes_io_wake_late_seconds: each turn of
// the transport's I/O thread, and a log line (at most one a second) when a turn held the reads up by
// 250 ms or more. Set on the options (their clock set) before the transport is made; options
// copied to several transports share the histograms and the line's rate (each I/O thread reports).
void time_io_turns(http::transport::options& opts, runtime::metrics& m);

// headroom_kubernetes_requests_total{verb,resource,code}: every response of these clients.
void count_responses(std::initializer_list<k8s::client*> clients, runtime::metrics& m);

// headroom_kubernetes_informer_*_total{resource,namespace}: what `informers` returns at each scrape
// (two informers of one resource and namespace are one series).
void collect_informers(runtime::metrics& m, std::function<std::vector<k8s::tracked_informer>()> informers);

}  // namespace headroom::app
