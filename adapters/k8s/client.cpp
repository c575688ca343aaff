#include "adapters/k8s/client.hpp"

#include <simdjson.h>

#include <algorithm>
#include <memory>
#include <random>

#include "runtime/json_writer.hpp"
#include "runtime/log.hpp"
#include "adapters/k8s/time.hpp"
#include "runtime/clock.hpp"

namespace headroom::k8s {

namespace kinds {
const resource_kind pods{"", "v1", "pods", true};
const resource_kind nodes{"", "v1", "nodes", false};
const resource_kind namespaces{"", "v1", "namespaces", false};
const resource_kind configmaps{"", "v1", "configmaps", true};
const resource_kind secrets{"", "v1", "secrets", true};
const resource_kind events{"", "v1", "events", true};
const resource_kind priority_classes{"scheduling.k8s.io", "v1", "priorityclasses", false};
const resource_kind leases{"coordination.k8s.io", "v1", "leases", true};
const resource_kind pod_disruption_budgets{"policy", "v1", "poddisruptionbudgets", true};
}  // namespace kinds

std::string resource_kind::path(std::string_view ns, std::string_view name, std::string_view subresource) const {
  std::string p = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty())
    p += "/namespaces/" + url_encode(ns);
  p += "/" + plural;
  if (!name.empty())
    p += "/" + url_encode(name);
  if (!subresource.empty())
    p += "/" + std::string{subresource};
  return p;
}

std::pair<std::string, std::string> status_message(std::string_view body) {
  std::string message, reason;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded{body};
    auto doc = parser.iterate(padded);
    for (auto field : doc.get_object()) {
      std::string_view key = field.unescaped_key();
      if (key == "message")
        message = std::string{std::string_view{field.value().get_string()}};
      else if (key == "reason")
        reason = std::string{std::string_view{field.value().get_string()}};
    }
  } catch (const simdjson::simdjson_error&) {
    // Not a Status object: the caller falls back to the raw body.
  }
  return {message, reason};
}

namespace {
// metadata.name of a JSON object, for naming a create in errors ("" when absent).
std::string object_name(std::string_view body) {
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded{body};
    auto doc = parser.iterate(padded);
    for (auto field : doc.get_object()) {
      if (std::string_view{field.unescaped_key()} != "metadata")
        continue;
      for (auto m : field.value().get_object())
        if (std::string_view{m.unescaped_key()} == "name")
          return std::string{std::string_view{m.value().get_string()}};
    }
  } catch (const simdjson::simdjson_error&) {
  }
  return {};
}
}  // namespace

std::string api_error::describe() const {
  std::string out = verb + " " + resource;
  if (!name.empty() || !ns.empty())
    out += " " + (ns.empty() ? name : name.empty() ? ns : ns + "/" + name);
  out += ": ";
  if (status != 0)
    out += std::to_string(status) + " ";
  if (!reason.empty())
    out += reason + ": ";
  out += message;
  return out;
}

struct client::call {
  std::string verb;  // get, list, create, … for errors and logs
  // The kind's plural, copied: a call outlives the caller's resource_kind (a reactive target's
  // discovered kind, a caller's own copy), and a pointer to it once read freed memory when the
  // answer came (found by the chaos suite's restart: a crash counting the response).
  std::string resource;
  std::string ns, name;
  http_request req;
  api_callback done;
  std::string content_type = "application/json";
  bool eviction = false;
  bool idempotent = true;
  int attempt = 0;
};

client::client(connection conn, http::exchange& t, retry_policy retry)
    : conn_(std::move(conn)), tls_(std::make_shared<const tls_config>(conn_.tls)), transport_(t), retry_(retry) {}

namespace {

api_error::kind classify(long status, const std::string& reason, bool eviction) {
  switch (status) {
    case 400: return api_error::kind::bad_request;
    case 401: return api_error::kind::unauthorized;
    case 403: return api_error::kind::forbidden;
    case 404: return api_error::kind::not_found;
    case 409: return reason == "AlreadyExists" ? api_error::kind::already_exists : api_error::kind::conflict;
    case 410: return api_error::kind::gone;
    case 422: return api_error::kind::invalid;
    case 429: return eviction ? api_error::kind::disruption_blocked : api_error::kind::too_many_requests;
    default: return status >= 500 ? api_error::kind::server : api_error::kind::unexpected;
  }
}

std::chrono::milliseconds backoff(const retry_policy& p, int attempt, const std::string& retry_after) {
  if (!retry_after.empty() && std::all_of(retry_after.begin(), retry_after.end(), ::isdigit) && retry_after.size() < 6)
    return std::min<std::chrono::milliseconds>(std::chrono::seconds(std::stoi(retry_after)), std::chrono::seconds(30));
  thread_local std::mt19937 rng{std::random_device{}()};
  const auto base = std::min<int64_t>(p.max.count(), p.initial.count() << std::min(attempt, 16));
  std::uniform_int_distribution<int64_t> jitter{base / 2, base};
  return std::chrono::milliseconds(jitter(rng));
}

// What went wrong with a finished request, named by verb, resource and object.
api_error error_from(const http_response& r, std::string verb, std::string resource, std::string ns, std::string name,
                     bool eviction) {
  api_error e;
  e.verb = std::move(verb);
  e.resource = std::move(resource);
  e.ns = std::move(ns);
  e.name = std::move(name);
  e.status = r.status;
  if (r.cancelled) {
    e.what = api_error::kind::cancelled;
    e.message = "cancelled";
  } else if (r.status == 0) {
    e.what = api_error::kind::transport;
    e.message = r.transport_error;
  } else {
    auto [message, reason] = status_message(r.body);
    e.reason = reason;
    e.message = message.empty() ? r.body.substr(0, 512) : message;
    e.what = classify(r.status, reason, eviction);
  }
  return e;
}

}  // namespace

void client::send(std::shared_ptr<call> c) {
  // Headers are rebuilt on every attempt: a rotated service account token is picked up by retries.
  c->req.headers = {"Accept: application/json", "User-Agent: headroom"};
  if (!c->req.body.empty())
    c->req.headers.push_back("Content-Type: " + c->content_type);
  if (const auto token = conn_.token(); !token.empty())
    c->req.headers.push_back("Authorization: Bearer " + token);
  c->req.tls = tls_;
  http_request req = c->req;
  transport_.submit(std::move(req), [this, c](http_response r) {
    if (on_response_ && !r.cancelled)
      on_response_(c->verb, c->resource, r.status);
    if (r.status >= 200 && r.status < 300 && !r.cancelled) {
      c->done(std::move(r.body));
      return;
    }
    // Retry what the server did not (or may not have) acted on: 429 (except a PDB's answer to an
    // eviction), 5xx for idempotent verbs, and failures before any response for idempotent verbs.
    const bool throttled = r.status == 429 && !c->eviction && !r.cancelled;
    const bool server_side = r.status >= 500 && c->idempotent;
    const bool no_response = r.status == 0 && c->idempotent && !r.cancelled;
    if ((throttled || server_side || no_response) && c->attempt + 1 < retry_.max_attempts) {
      const auto wait = backoff(retry_, c->attempt, r.retry_after);
      ++c->attempt;
      runtime::log::debug("k8s/client", "retrying",
                          {{"verb", c->verb}, {"resource", c->resource}, {"name", c->name},
                           {"status", static_cast<int64_t>(r.status)}, {"attempt", c->attempt},
                           {"wait_ms", static_cast<int64_t>(wait.count())}});
      c->req.delay = wait;
      send(c);
      return;
    }
    c->done(error_from(r, c->verb, c->resource, c->ns, c->name, c->eviction));
  });
}

void client::track_informer(std::string resource, std::string ns, std::weak_ptr<const informer_stats> stats) {
  std::lock_guard lock{informers_mu_};
  informers_.push_back({std::move(resource), std::move(ns), std::move(stats)});
}

std::vector<tracked_informer> client::informers() const {
  std::vector<tracked_informer> out;
  std::lock_guard lock{informers_mu_};
  std::erase_if(informers_, [&](const weak_informer& w) {
    auto s = w.stats.lock();
    if (!s)
      return true;
    out.push_back({w.resource, w.ns, std::move(s)});
    return false;
  });
  return out;
}

namespace {
std::string query(std::initializer_list<std::pair<const char*, std::string>> params) {
  std::string q;
  for (const auto& [k, v] : params) {
    if (v.empty())
      continue;
    q += q.empty() ? "?" : "&";
    q += k;
    q += "=";
    q += url_encode(v);
  }
  return q;
}
}  // namespace

#define HEADROOM_CALL(VERB, METHOD, NAME)            \
  auto c = std::make_shared<call>();                 \
  c->verb = VERB;                                    \
  c->resource = k.plural;                            \
  c->ns = std::string{ns};                           \
  c->name = std::string{NAME};                       \
  c->req.method = METHOD;                            \
  c->req.priority = priority_;                       \
  c->done = std::move(cb)

void client::get(const resource_kind& k, std::string_view ns, std::string_view name, api_callback cb,
                 std::string_view subresource) {
  HEADROOM_CALL("get", "GET", name);
  c->req.url = conn_.server + k.path(ns, name, subresource);
  send(c);
}

void client::discover(std::string_view api_version, api_callback cb) {
  static const resource_kind k{"", "", "discovery", false};
  const std::string_view ns;
  HEADROOM_CALL("get", "GET", api_version);
  c->req.url = conn_.server + (api_version.find('/') == std::string_view::npos ? "/api/" : "/apis/") + std::string{api_version};
  send(c);
}

void client::list(const resource_kind& k, std::string_view ns, const list_options& opts, api_callback cb) {
  HEADROOM_CALL("list", "GET", "");
  c->req.delay = opts.delay;
  if (opts.urgent)
    c->req.priority = http::priority::urgent;
  c->req.url = conn_.server + k.path(ns) +
               query({{"labelSelector", opts.label_selector},
                      {"fieldSelector", opts.field_selector},
                      {"limit", opts.limit > 0 ? std::to_string(opts.limit) : ""},
                      {"continue", opts.continue_token},
                      {"resourceVersion", opts.resource_version}});
  c->req.timeout = std::chrono::seconds(120);
  // A list without a limit (the fallback when a continue token expired) holds the whole
  // collection: 100,000 pods are a few hundred MB. The API server is authenticated; the limit
  // only stops a runaway body.
  c->req.max_body_bytes = size_t{4} << 30;
  send(c);
}

void client::create(const resource_kind& k, std::string_view ns, std::string body, api_callback cb) {
  HEADROOM_CALL("create", "POST", object_name(body));
  c->req.url = conn_.server + k.path(ns);
  c->req.body = std::move(body);
  c->idempotent = false;  // a lost response may still have created it: the caller sees AlreadyExists
  send(c);
}

void client::replace(const resource_kind& k, std::string_view ns, std::string_view name, std::string body,
                     api_callback cb, std::string_view subresource) {
  HEADROOM_CALL("update", "PUT", name);
  c->req.url = conn_.server + k.path(ns, name, subresource);
  c->req.body = std::move(body);
  send(c);
}

void client::patch(const resource_kind& k, std::string_view ns, std::string_view name, std::string body,
                   api_callback cb, std::string_view subresource, const char* content_type, bool urgent) {
  HEADROOM_CALL("patch", "PATCH", name);
  if (urgent)
    c->req.priority = http::priority::urgent;
  c->req.url = conn_.server + k.path(ns, name, subresource);
  c->req.body = std::move(body);
  c->content_type = content_type;
  send(c);
}

void client::merge_patch(const resource_kind& k, std::string_view ns, std::string_view name, std::string body,
                         api_callback cb, std::string_view subresource) {
  patch(k, ns, name, std::move(body), std::move(cb), subresource, "application/merge-patch+json");
}

// A JSON patch with a "test" op is a precondition; retrying a 5xx is still safe.
void client::json_patch(const resource_kind& k, std::string_view ns, std::string_view name, std::string body,
                        api_callback cb, std::string_view subresource, bool urgent) {
  patch(k, ns, name, std::move(body), std::move(cb), subresource, "application/json-patch+json", urgent);
}

void client::strategic_merge_patch(const resource_kind& k, std::string_view ns, std::string_view name, std::string body,
                                   api_callback cb, std::string_view subresource) {
  patch(k, ns, name, std::move(body), std::move(cb), subresource, "application/strategic-merge-patch+json");
}

namespace {
// DeleteOptions, or an Eviction carrying them (with the pod's name and namespace).
std::string delete_options_json(const delete_options& opts, std::string_view ns = {}, std::string_view evicted = {}) {
  const bool eviction = !evicted.empty();
  runtime::json_writer w;
  auto options = [&] {
    if (opts.grace_period_seconds)
      w.field("gracePeriodSeconds", *opts.grace_period_seconds);
    if (!opts.propagation_policy.empty())
      w.field("propagationPolicy", opts.propagation_policy);
    if (!opts.precondition_uid.empty() || !opts.precondition_resource_version.empty()) {
      w.key("preconditions").begin_object();
      if (!opts.precondition_uid.empty())
        w.field("uid", opts.precondition_uid);
      if (!opts.precondition_resource_version.empty())
        w.field("resourceVersion", opts.precondition_resource_version);
      w.end_object();
    }
  };
  w.begin_object().field("apiVersion", eviction ? "policy/v1" : "v1").field("kind", eviction ? "Eviction" : "DeleteOptions");
  if (eviction) {
    w.key("metadata").begin_object().field("name", evicted).field("namespace", ns).end_object();
    w.key("deleteOptions").begin_object();
    options();
    w.end_object();
  } else {
    options();
  }
  w.end_object();
  return w.take();
}
}  // namespace

void client::remove(const resource_kind& k, std::string_view ns, std::string_view name, const delete_options& opts,
                    api_callback cb) {
  HEADROOM_CALL("delete", "DELETE", name);
  c->req.url = conn_.server + k.path(ns, name);
  c->req.body = delete_options_json(opts);
  send(c);
}

void client::evict(std::string_view ns, std::string_view name, const delete_options& opts, api_callback cb) {
  const resource_kind& k = kinds::pods;
  HEADROOM_CALL("evict", "POST", name);
  c->req.url = conn_.server + k.path(ns, name, "eviction");
  c->req.body = delete_options_json(opts, ns, name);
  c->eviction = true;
  send(c);
}

void client::cordon(std::string_view node, bool unschedulable, api_callback cb) {
  runtime::json_writer w;
  w.begin_object().key("spec").begin_object().field("unschedulable", unschedulable).end_object().end_object();
  merge_patch(kinds::nodes, "", node, w.take(), std::move(cb));
}

std::string time_now(const runtime::clock& clock) {
  return format_rfc3339(static_cast<double>(clock.wall_ms() / 1000), 0);
}

request_id client::watch(const resource_kind& k, std::string_view ns, const watch_options& opts,
                         std::function<void(std::string_view)> on_line,
                         std::function<void(std::optional<api_error>)> on_end) {
  http_request req;
  req.method = "GET";
  req.url = conn_.server + k.path(ns) +
            query({{"watch", "true"},
                   {"resourceVersion", opts.resource_version},
                   {"allowWatchBookmarks", opts.allow_bookmarks ? "true" : ""},
                   {"labelSelector", opts.label_selector},
                   {"fieldSelector", opts.field_selector},
                   {"timeoutSeconds", opts.timeout_seconds > 0 ? std::to_string(opts.timeout_seconds) : ""}});
  req.tls = tls_;
  req.timeout = std::chrono::milliseconds(0);
  req.stream = true;
  // Every watch ends on the server after timeoutSeconds and is resumed at once from its
  // resourceVersion. Queued behind a backlog of writes waiting for the rate budget (50 qps: a
  // burst of pair replacements at 1,000 scale sets is a few hundred), the resumed watch waited
  // seconds, and every change the server made meanwhile with it: headroom saw nothing for 4-9 s.
  // It still spends a token.
  req.priority = http::priority::urgent;
  req.stall_timeout = opts.stall_timeout.count() > 0 ? opts.stall_timeout : watch_stall_timeout_;
  req.delay = opts.delay;
  req.headers = {"Accept: application/json", "User-Agent: headroom"};
  if (const auto token = conn_.token(); !token.empty())
    req.headers.push_back("Authorization: Bearer " + token);
  // Events arrive as newline-delimited JSON split arbitrarily across chunks.
  auto partial = std::make_shared<std::string>();
  auto chunk = [partial, on_line](std::string_view data) {
    size_t start = 0;
    for (size_t i = 0; i < data.size(); ++i) {
      if (data[i] != '\n')
        continue;
      if (partial->empty()) {
        if (i > start)
          on_line(data.substr(start, i - start));
      } else {
        partial->append(data.substr(start, i - start));
        on_line(*partial);
        partial->clear();
      }
      start = i + 1;
    }
    partial->append(data.substr(start));
  };
  const std::string plural = k.plural;
  const std::string ns_copy{ns};
  return transport_.submit(std::move(req),
                           [this, on_end, plural, ns_copy](http_response r) {
                             if (on_response_ && !r.cancelled)
                               on_response_("watch", plural, r.status);
                             if (r.status >= 200 && r.status < 300 && !r.cancelled) {
                               on_end(std::nullopt);
                               return;
                             }
                             on_end(error_from(r, "watch", plural, ns_copy, "", false));
                           },
                           std::move(chunk));
}

void retry_on_conflict(std::function<void(std::function<void(api_result)>)> attempt, api_callback done,
                       int attempts) {
  auto step = std::make_shared<std::function<void(int)>>();
  *step = [attempt, done, attempts, step](int n) {
    attempt([done, attempts, step, n](api_result r) {
      if (auto* e = std::get_if<api_error>(&r); e != nullptr && e->what == api_error::kind::conflict && n + 1 < attempts) {
        (*step)(n + 1);
        return;
      }
      done(std::move(r));
      *step = nullptr;  // break the self-reference
    });
  };
  (*step)(0);
}

}  // namespace headroom::k8s
