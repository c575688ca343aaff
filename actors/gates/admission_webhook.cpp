// admission_webhook: owns the HTTPS server the API server calls at Pod CREATE (seed 002). The
// mutation itself is a pure function (adapters/k8s/admission.hpp) run on the server's threads, so
// a review never waits on this actor's mailbox; the actor owns the server's lifetime and keeps its
// certificate fresh: it re-reads the files when they change (a Secret update, cert-manager), and a
// bad new pair is refused with the old one still served.

#include <caf/all.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "actors/gates/gates.hpp"
#include "adapters/k8s/admission.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/https_server.hpp"
#include "runtime/log.hpp"

namespace headroom::actors::gates {

namespace {

constexpr std::string_view actor_name = "admission_webhook";

struct file_stamp {
  std::filesystem::file_time_type when{};
  std::uintmax_t size = 0;
  friend bool operator==(const file_stamp&, const file_stamp&) = default;
};

std::optional<file_stamp> stamp_of(const std::string& path) {
  std::error_code ec;
  file_stamp s;
  s.when = std::filesystem::last_write_time(path, ec);
  if (ec)
    return std::nullopt;
  s.size = std::filesystem::file_size(path, ec);
  if (ec)
    return std::nullopt;
  return s;
}

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct webhook_state {
  std::shared_ptr<const webhook_options> opts;
  std::unique_ptr<runtime::actor_system_clock> clock;  // the server's request timing (outlives it)
  std::unique_ptr<runtime::https_server> server;
  std::optional<file_stamp> cert_stamp, key_stamp;
  static inline const char* name = "headroom.admission_webhook";
};
using webhook_self = admission_webhook_actor::stateful_base<webhook_state>;

runtime::https_reply review(const webhook_metrics& m, const runtime::https_request& req) {
  namespace adm = k8s::admission;
  auto decoded = adm::decode_review(req.body);
  if (auto* e = std::get_if<adm::review_error>(&decoded)) {
    // Allowed unchanged (the seed never blocks pod creation); counted and logged, never the body.
    if (m.reviewed)
      m.reviewed("malformed");
    runtime::log::warn(actor_name, "malformed AdmissionReview: allowed unchanged", {{"problem", e->message}});
    return {200, "application/json", adm::encode_response(e->api_version, e->uid, "", "headroom: " + e->message)};
  }
  const auto& r = std::get<adm::review_request>(decoded);
  const auto m2 = adm::decide(r);
  if (m.reviewed)
    m.reviewed(adm::outcome_name(m2.what));
  return {200, "application/json", adm::encode_response(r.api_version, r.uid, m2.patch, m2.warning)};
}

// A pod in a namespace labelled headroom.dev/queue (the API server sends only those here, and fails
// the create when this cannot answer: failurePolicy Fail): put behind the namespace's Queue,
// whatever the pod says. A namespace not read yet is refused with a reason (its controller tries
// again); one whose label is gone by now is left alone.
runtime::https_reply review_enforced(const webhook_options& o, const runtime::https_request& req) {
  namespace adm = k8s::admission;
  const auto& m = o.metrics;
  auto decoded = adm::decode_review(req.body);
  if (auto* e = std::get_if<adm::review_error>(&decoded)) {
    if (m.reviewed)
      m.reviewed("malformed");
    runtime::log::warn(actor_name, "malformed AdmissionReview in an enforced namespace: refused", {{"problem", e->message}});
    return {200, "application/json", adm::encode_denial(e->api_version, e->uid, "headroom: " + e->message, 400)};
  }
  const auto& r = std::get<adm::review_request>(decoded);
  const auto queue = o.namespace_queue ? o.namespace_queue(r.ns) : std::nullopt;
  if (!queue) {
    if (o.namespaces_ready && o.namespaces_ready()) {  // unlabelled since the API server matched it
      if (m.reviewed)
        m.reviewed(adm::outcome_name(adm::outcome::not_opted_in));
      return {200, "application/json", adm::encode_response(r.api_version, r.uid, "")};
    }
    if (m.reviewed)
      m.reviewed("namespace_unknown");
    return {200, "application/json",
            adm::encode_denial(r.api_version, r.uid,
                               "headroom: namespace " + r.ns.substr(0, 63) + " puts its pods behind a Queue and headroom has not read it yet; try again",
                               503)};
  }
  const auto m2 = adm::enforce(r, *queue);
  if (m.reviewed)
    m.reviewed(adm::outcome_name(m2.what));
  return {200, "application/json", adm::encode_response(r.api_version, r.uid, m2.patch, m2.warning)};
}

// Re-reads the pair when either file changed; true when a new one is served.
bool reload(webhook_self* self, bool first) {
  auto& st = self->state;
  const auto& o = *st.opts;
  auto cs = stamp_of(o.cert_file), ks = stamp_of(o.key_file);
  if (!first && cs == st.cert_stamp && ks == st.key_stamp)
    return false;
  auto cert = slurp(o.cert_file), key = slurp(o.key_file);
  std::optional<std::string> problem;
  if (!cert)
    problem = "cannot read " + o.cert_file;
  else if (!key)
    problem = "cannot read " + o.key_file;
  else
    problem = st.server->set_certificate(*cert, *key);
  st.cert_stamp = cs;
  st.key_stamp = ks;  // a bad pair is reported once, not at every check
  if (problem) {
    runtime::log::error(actor_name, "serving certificate not reloaded: the previous one stays",
                        {{"cert", o.cert_file}, {"problem", *problem}});
    if (o.metrics.certificate)
      o.metrics.certificate(false, st.server->not_after());
    return false;
  }
  runtime::log::info(actor_name, "serving certificate loaded", {{"cert", o.cert_file}, {"not_after", st.server->not_after()}});
  if (o.metrics.certificate)
    o.metrics.certificate(true, st.server->not_after());
  return true;
}

admission_webhook_actor::behavior_type webhook_behavior(webhook_self* self, std::shared_ptr<const webhook_options> opts) {
  auto& st = self->state;
  st.opts = opts;
  runtime::https_options so;
  so.listen = opts->listen;
  so.threads = opts->threads;
  auto cert = slurp(opts->cert_file), key = slurp(opts->key_file);
  if (!cert || !key) {
    runtime::log::error(actor_name, "cannot read the serving certificate", {{"cert", opts->cert_file}, {"key", opts->key_file}});
    self->quit(caf::sec::runtime_error);
    return admission_webhook_actor::behavior_type::make_empty_behavior();
  }
  so.cert_pem = std::move(*cert);
  so.key_pem = std::move(*key);
  const webhook_metrics m = opts->metrics;
  so.routes.push_back({"/mutate-pods", [m](const runtime::https_request& req) { return review(m, req); }});
  so.routes.push_back({"/mutate-pods-enforced", [opts](const runtime::https_request& req) { return review_enforced(*opts, req); }});
  so.observe = [m](const std::string&, int, double seconds) {
    if (m.latency)
      m.latency(seconds);
  };
  st.clock = std::make_unique<runtime::actor_system_clock>(self->clock());
  so.clock = st.clock.get();
  try {
    st.server = std::make_unique<runtime::https_server>(std::move(so));
  } catch (const std::exception& e) {
    runtime::log::error(actor_name, "cannot serve the admission webhook", {{"listen", opts->listen}, {"error", e.what()}});
    self->quit(caf::sec::runtime_error);
    return admission_webhook_actor::behavior_type::make_empty_behavior();
  }
  st.cert_stamp = stamp_of(opts->cert_file);
  st.key_stamp = stamp_of(opts->key_file);
  if (opts->metrics.certificate)
    opts->metrics.certificate(true, st.server->not_after());
  runtime::log::info(actor_name, "serving", {{"listen", opts->listen}, {"port", static_cast<int64_t>(st.server->port())},
                                              {"path", "/mutate-pods, /mutate-pods-enforced"}});
  self->delayed_send(self, opts->reload_interval, msg::reload_atom_v);
  return {
      [self](msg::reload_atom) {
        reload(self, false);
        self->delayed_send(self, self->state.opts->reload_interval, msg::reload_atom_v);
      },
  };
}

}  // namespace

admission_webhook_actor spawn_admission_webhook(caf::actor_system& sys, std::shared_ptr<const webhook_options> opts) {
  return sys.spawn(webhook_behavior, std::move(opts));
}

}  // namespace headroom::actors::gates
