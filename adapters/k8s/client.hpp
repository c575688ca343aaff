#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "adapters/k8s/connection.hpp"
#include "adapters/k8s/transport.hpp"

namespace headroom::k8s {

// Which REST collection: group/version/plural, and whether it lives in namespaces.
struct resource_kind {
  std::string group;  // "" = core
  std::string version;
  std::string plural;
  bool namespaced = true;

  // /api/v1/namespaces/ns/pods/name/sub or /apis/group/version/…
  std::string path(std::string_view ns, std::string_view name = {}, std::string_view subresource = {}) const;
};

namespace kinds {
extern const resource_kind pods, nodes, namespaces, configmaps, secrets, events, priority_classes, leases,
    pod_disruption_budgets;
}

struct api_error {
  enum class kind {
    transport,           // no response (connection refused, TLS failure, timeout)
    cancelled,
    bad_request,         // 400
    unauthorized,        // 401
    forbidden,           // 403 (RBAC)
    not_found,           // 404
    conflict,            // 409 with reason Conflict (stale resourceVersion, failed precondition)
    already_exists,      // 409 with reason AlreadyExists
    gone,                // 410 (expired resourceVersion)
    invalid,             // 422
    too_many_requests,   // 429 after retries
    disruption_blocked,  // 429 from pods/eviction: a PodDisruptionBudget refused it
    server,              // 5xx after retries
    unexpected,
  };
  kind what = kind::unexpected;
  std::string verb, resource, ns, name;
  long status = 0;
  std::string reason;   // Status.reason
  std::string message;  // Status.message, or the transport's description

  // "create pods ci/runner-1: 409 AlreadyExists: pods \"runner-1\" already exists"
  std::string describe() const;
};

using api_result = std::variant<std::string, api_error>;  // the response body, or what went wrong
using api_callback = std::function<void(api_result)>;

struct list_options {
  std::string label_selector, field_selector, continue_token, resource_version;
  int64_t limit = 0;
  std::chrono::milliseconds delay{0};  // start later (relist backoff)
  // Ahead of the writes waiting for the rate budget (http::priority::urgent): an informer's pages,
  // so a relist does not wait behind the writes the controller is making.
  bool urgent = false;
};

struct watch_options {
  std::string resource_version, label_selector, field_selector;
  bool allow_bookmarks = true;
  int64_t timeout_seconds = 0;  // server-side end of the watch; 0 = server default
  std::chrono::seconds stall_timeout{0};  // reconnect when nothing (not even a bookmark) arrives; 0: the client's
  std::chrono::milliseconds delay{0};     // start later (reconnect backoff)
};

struct delete_options {
  std::optional<int64_t> grace_period_seconds;
  std::string precondition_uid, precondition_resource_version;
  std::string propagation_policy;  // Foreground | Background | Orphan
};

struct retry_policy {
  int max_attempts = 5;
  std::chrono::milliseconds initial{200};
  std::chrono::milliseconds max{5'000};
};

// What an informer has done (lists, watches started, failures…), read at scrape time.
struct informer_stats {
  std::atomic<uint64_t> lists{0}, list_pages{0}, list_full_fallbacks{0}, relists_410{0}, watches{0}, watch_errors{0},
      decode_errors{0}, events{0}, handovers{0};
};

struct tracked_informer {
  std::string resource, ns;  // ns "" = every namespace
  std::shared_ptr<const informer_stats> stats;
};

// Asynchronous REST client over the transport. Callbacks run on the transport's I/O thread.
class client {
 public:
  client(connection conn, http::exchange& t, retry_policy retry = {});
  // The clock of its exchange: retries, informers and leader election built on it use it.
  const runtime::clock& clock() const { return transport_.clock(); }

  // `k` must outlive the call (retries read it): a static kind, or one the callback holds.
  void get(const resource_kind& k, std::string_view ns, std::string_view name, api_callback cb,
           std::string_view subresource = {});
  void list(const resource_kind& k, std::string_view ns, const list_options& opts, api_callback cb);
  void create(const resource_kind& k, std::string_view ns, std::string body, api_callback cb);
  void replace(const resource_kind& k, std::string_view ns, std::string_view name, std::string body, api_callback cb,
               std::string_view subresource = {});
  // The APIResourceList of a group version ("v1", "apps/v1"): what kinds it serves, their plural
  // names and scopes (see find_resource in scale.hpp).
  void discover(std::string_view api_version, api_callback cb);
  void merge_patch(const resource_kind& k, std::string_view ns, std::string_view name, std::string patch,
                   api_callback cb, std::string_view subresource = {});
  // `urgent`: ahead of the other writes waiting for the rate budget (see http::priority).
  void json_patch(const resource_kind& k, std::string_view ns, std::string_view name, std::string patch,
                  api_callback cb, std::string_view subresource = {}, bool urgent = false);
  // Built-in kinds only: lists merge by their key (a pod condition by its type), so one condition
  // is set without replacing the others.
  void strategic_merge_patch(const resource_kind& k, std::string_view ns, std::string_view name, std::string patch,
                             api_callback cb, std::string_view subresource = {});
  void remove(const resource_kind& k, std::string_view ns, std::string_view name, const delete_options& opts,
              api_callback cb);
  // policy/v1 Eviction; a PDB refusal is api_error::kind::disruption_blocked (not retried here:
  // the caller decides, e.g. reclaim_drain retries every 2 s until its deadline).
  void evict(std::string_view ns, std::string_view name, const delete_options& opts, api_callback cb);
  void cordon(std::string_view node, bool unschedulable, api_callback cb);
  // A watch: `on_line` gets each newline-delimited event (JSON); `on_end` gets nothing when the
  // server closed the stream normally, or the error. Always urgent: a watch (re)start goes ahead of
  // the writes waiting for the rate budget (see client.cpp).
  request_id watch(const resource_kind& k, std::string_view ns, const watch_options& opts,
                   std::function<void(std::string_view)> on_line,
                   std::function<void(std::optional<api_error>)> on_end);
  void cancel(request_id id) { transport_.cancel(id); }
  void after(std::chrono::milliseconds delay, std::function<void()> fn) { transport_.after(delay, std::move(fn)); }

  const std::string& server() const { return conn_.server; }
  // The stall timeout of a watch whose options leave it 0 (see watch_options::stall_timeout).
  void set_watch_stall_timeout(std::chrono::seconds t) { watch_stall_timeout_ = t; }
  // The priority of this client's calls among those waiting for the shared rate budget (urgent
  // ones stay urgent): a client for status and Event writes is `background`, behind the pod writes.
  void set_priority(http::priority p) { priority_ = p; }

  // Every response, each attempt of a retried call included: the call's verb, the resource (its
  // plural) and the HTTP status (0: none came). Not for cancelled calls. Set before the first
  // call; runs on the I/O thread.
  using response_observer = std::function<void(const std::string& verb, const std::string& resource, long status)>;
  void on_response(response_observer fn) { on_response_ = std::move(fn); }
  // Informers made on this client report here (held weakly: a stopped one leaves the list).
  void track_informer(std::string resource, std::string ns, std::weak_ptr<const informer_stats> stats);
  std::vector<tracked_informer> informers() const;

 private:
  struct call;
  void send(std::shared_ptr<call> c);
  void patch(const resource_kind& k, std::string_view ns, std::string_view name, std::string body, api_callback cb,
             std::string_view subresource, const char* content_type, bool urgent = false);

  connection conn_;
  std::shared_ptr<const tls_config> tls_;
  http::exchange& transport_;
  retry_policy retry_;
  std::chrono::seconds watch_stall_timeout_{90};
  response_observer on_response_;
  http::priority priority_ = http::priority::normal;
  struct weak_informer {
    std::string resource, ns;
    std::weak_ptr<const informer_stats> stats;
  };
  mutable std::mutex informers_mu_;
  mutable std::vector<weak_informer> informers_;
};

// Optimistic concurrency: runs `attempt` (read, change, write) until it does not end in a
// conflict, at most `attempts` times. `attempt` reports through the continuation it is given.
void retry_on_conflict(std::function<void(std::function<void(api_result)>)> attempt, api_callback done,
                       int attempts = 5);

// The message of a metav1.Status body ({"message": …, "reason": …}), or "" when it is not one.
std::pair<std::string, std::string> status_message(std::string_view body);

using http::url_encode;

// Now as a metav1.Time: RFC 3339 in UTC, whole seconds ("2026-11-22T07:00:00Z").
std::string time_now(const runtime::clock& clock);

}  // namespace headroom::k8s
