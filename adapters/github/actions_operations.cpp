// The Actions Service client: the operations (scale sets, sessions, messages, jobs, runners).
#include "adapters/github/actions_client.hpp"

#include <algorithm>
#include <atomic>
#include <ctime>

#include "adapters/github/actions_internal.hpp"
#include "adapters/github/auth.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/secrets.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::github {

using namespace detail;

// ---- operations ----

namespace {

// Runs a request and decodes its body with `decode`; decode failures are bad_response errors.
template <class T, class Decode>
std::function<void(actions_result<http::http_response>)> decoding(std::string operation,
                                                                  std::function<void(actions_result<T>)> cb,
                                                                  Decode decode) {
  return [operation = std::move(operation), cb = std::move(cb), decode](actions_result<http::http_response> res) {
    if (auto* e = std::get_if<actions_error>(&res))
      return cb(std::move(*e));
    auto& r = std::get<http::http_response>(res);
    std::variant<T, std::string> v = decode(r);
    if (auto* msg = std::get_if<std::string>(&v))
      return cb(make_error(actions_error::kind::bad_response, operation, r.status, *msg));
    cb(std::move(std::get<T>(v)));
  };
}

template <class T>
std::variant<T, std::string> unwrap(decoded<T> d) {
  if (auto* f = std::get_if<decode_failure>(&d))
    return f->message;
  return std::move(std::get<T>(d));
}

}  // namespace

void actions_client::get_runner_group(std::string name, callback<std::optional<runner_group>> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get runner group \"" + name + "\"";
  c->req.path = "_apis/runtime/runnergroups/?groupName=" + http::url_encode(name);
  c->req.ok = {200};
  c->done = decoding<std::optional<runner_group>>(
      c->req.operation, std::move(cb), [](const http::http_response& r) -> std::variant<std::optional<runner_group>, std::string> {
        auto list = unwrap(decode_runner_group_list(r.body));
        if (auto* msg = std::get_if<std::string>(&list))
          return *msg;
        auto& groups = std::get<std::vector<runner_group>>(list);
        if (groups.empty())
          return std::optional<runner_group>{};
        return std::optional<runner_group>{groups.front()};
      });
  run(c);
}

void actions_client::get_scale_set(int64_t runner_group_id, std::string name,
                                   callback<std::optional<runner_scale_set>> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get scale set \"" + name + "\"";
  c->req.path = scale_sets_path(0) + "?runnerGroupId=" + std::to_string(runner_group_id) +
                "&name=" + http::url_encode(name);
  c->req.ok = {200};
  c->done = decoding<std::optional<runner_scale_set>>(
      c->req.operation, std::move(cb),
      [](const http::http_response& r) -> std::variant<std::optional<runner_scale_set>, std::string> {
        auto list = unwrap(decode_scale_set_list(r.body));
        if (auto* msg = std::get_if<std::string>(&list))
          return *msg;
        auto& sets = std::get<std::vector<runner_scale_set>>(list);
        if (sets.size() > 1)
          return "more than one scale set has this name";
        if (sets.empty())
          return std::optional<runner_scale_set>{};
        return std::optional<runner_scale_set>{std::move(sets.front())};
      });
  run(c);
}

void actions_client::get_scale_set_by_id(int64_t id, callback<runner_scale_set> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get scale set " + std::to_string(id);
  c->req.path = scale_sets_path(id);
  c->req.ok = {200};
  c->done = decoding<runner_scale_set>(c->req.operation, std::move(cb),
                                       [](const http::http_response& r) { return unwrap(decode_scale_set(r.body)); });
  run(c);
}

void actions_client::create_scale_set(runner_scale_set set, callback<runner_scale_set> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "create scale set \"" + set.name + "\"";
  c->req.method = "POST";
  c->req.path = scale_sets_path(0);
  c->req.body = encode_scale_set(set);
  c->req.ok = {200, 201};
  c->done = decoding<runner_scale_set>(c->req.operation, std::move(cb),
                                       [](const http::http_response& r) { return unwrap(decode_scale_set(r.body)); });
  run(c);
}

void actions_client::update_scale_set(int64_t id, runner_scale_set set, callback<runner_scale_set> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "update scale set " + std::to_string(id);
  c->req.method = "PATCH";
  c->req.path = scale_sets_path(id);
  c->req.body = encode_scale_set(set);
  c->req.ok = {200};
  c->done = decoding<runner_scale_set>(c->req.operation, std::move(cb),
                                       [](const http::http_response& r) { return unwrap(decode_scale_set(r.body)); });
  run(c);
}

void actions_client::delete_scale_set(int64_t id, callback<done> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "delete scale set " + std::to_string(id);
  c->req.method = "DELETE";
  c->req.path = scale_sets_path(id);
  c->req.ok = {204};
  c->done = decoding<done>(c->req.operation, std::move(cb),
                           [](const http::http_response&) -> std::variant<done, std::string> { return done{}; });
  run(c);
}

void actions_client::create_session(int64_t scale_set_id, std::string owner, callback<session_ptr> cb) {
  auto self = shared_from_this();
  auto tries = std::make_shared<int>(0);
  auto attempt_create = std::make_shared<std::function<void()>>();
  *attempt_create = [self, scale_set_id, owner, cb, tries, attempt_create]() {
    auto c = std::make_shared<call>();
    c->req.operation = "create session for scale set " + std::to_string(scale_set_id);
    c->req.method = "POST";
    c->req.path = scale_sets_path(scale_set_id, "sessions");
    runtime::json_writer w;
    w.begin_object().field("ownerName", owner).end_object();
    c->req.body = w.take();
    c->req.ok = {200};
    c->done = [self, scale_set_id, cb, tries, attempt_create, op = c->req.operation](
                  actions_result<http::http_response> res) {
      if (auto* e = std::get_if<actions_error>(&res)) {
        if (e->what == actions_error::kind::session_conflict && *tries < self->opts_.session_conflict_retries) {
          ++*tries;
          runtime::log::warn(actor,
                             "another listener holds this scale set's session; retrying (it expires when its "
                             "owner stops polling)",
                             {{"scale_set", scale_set_id}, {"attempt", *tries},
                              {"of", self->opts_.session_conflict_retries},
                              {"retry_in_ms", self->opts_.session_conflict_backoff.count()},
                              {"error", e->describe()}});
          self->io_.after(self->opts_.session_conflict_backoff, [attempt_create] { (*attempt_create)(); });
          return;
        }
        *attempt_create = nullptr;  // break the self-reference
        return cb(std::move(*e));
      }
      *attempt_create = nullptr;
      auto s = decode_session(std::get<http::http_response>(res).body);
      if (auto* f = std::get_if<decode_failure>(&s))
        return cb(make_error(actions_error::kind::bad_response, op, 200, f->message));
      auto session = std::get<message_session>(std::move(s));
      if (session.scale_set_id == 0)
        session.scale_set_id = scale_set_id;
      cb(std::make_shared<session_handle>(std::move(session)));
    };
    self->run(c);
  };
  (*attempt_create)();
}

void actions_client::refresh_session(session_ptr s, callback<done> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "refresh session " + current.session_id;
  c->req.method = "PATCH";
  c->req.path = scale_sets_path(current.scale_set_id, "sessions/" + current.session_id);
  c->req.ok = {200};
  c->req.session_op = true;
  c->done = [s, cb = std::move(cb), scale_set_id = current.scale_set_id,
             op = c->req.operation](actions_result<http::http_response> res) {
    if (auto* e = std::get_if<actions_error>(&res))
      return cb(std::move(*e));
    auto fresh = decode_session(std::get<http::http_response>(res).body);
    if (auto* f = std::get_if<decode_failure>(&fresh))
      return cb(make_error(actions_error::kind::bad_response, op, 200, f->message));
    auto session = std::get<message_session>(std::move(fresh));
    if (session.scale_set_id == 0)
      session.scale_set_id = scale_set_id;
    s->set(std::move(session));
    cb(done{});
  };
  run(c);
}

void actions_client::delete_session(session_ptr s, callback<done> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "delete session " + current.session_id;
  c->req.method = "DELETE";
  c->req.path = scale_sets_path(current.scale_set_id, "sessions/" + current.session_id);
  c->req.ok = {204};
  c->req.session_op = true;
  c->done = decoding<done>(c->req.operation, std::move(cb),
                           [](const http::http_response&) -> std::variant<done, std::string> { return done{}; });
  run(c);
}

std::shared_ptr<pending_call> actions_client::get_message(session_ptr s, int64_t last_message_id, int64_t max_capacity,
                                                          callback<std::optional<session_message>> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "get message (capacity " + std::to_string(max_capacity) + ")";
  c->req.url = current.message_queue_url;
  if (last_message_id > 0)
    c->req.url = with_query(c->req.url, "lastMessageId", std::to_string(last_message_id));
  c->req.how = request::auth::queue;
  c->req.session = s;
  c->req.poll = true;
  c->req.session_op = true;
  c->req.ok = {200, 202};
  c->req.headers = {"Accept: application/json; api-version=6.0-preview",
                    "X-ScaleSetMaxCapacity: " + std::to_string(std::max<int64_t>(0, max_capacity))};
  c->done = decoding<std::optional<session_message>>(
      c->req.operation, std::move(cb),
      [](const http::http_response& r) -> std::variant<std::optional<session_message>, std::string> {
        if (r.status == 202)
          return std::optional<session_message>{};
        auto m = unwrap(decode_session_message(r.body));
        if (auto* msg = std::get_if<std::string>(&m))
          return *msg;
        auto& message = std::get<session_message>(m);
        if (message.message_type != "RunnerScaleSetJobMessages")
          return "unsupported message type \"" + message.message_type + "\"";
        return std::optional<session_message>{std::move(message)};
      });
  run(c);
  return c;
}

void actions_client::delete_message(session_ptr s, int64_t message_id, callback<done> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "delete message " + std::to_string(message_id);
  c->req.method = "DELETE";
  std::string base = current.message_queue_url;
  std::string query;
  if (const auto q = base.find('?'); q != std::string::npos) {
    query = base.substr(q);
    base.resize(q);
  }
  c->req.url = join_url(base, std::to_string(message_id)) + query;
  c->req.how = request::auth::queue;
  c->req.session = s;
  c->req.session_op = true;
  c->req.ok = {204, 200};
  c->done = decoding<done>(c->req.operation, std::move(cb),
                           [](const http::http_response&) -> std::variant<done, std::string> { return done{}; });
  run(c);
}

void actions_client::acquire_jobs(session_ptr s, std::vector<int64_t> ids, callback<std::vector<int64_t>> cb) {
  const auto current = s->get();
  auto c = std::make_shared<call>();
  c->req.operation = "acquire " + std::to_string(ids.size()) + " jobs";
  c->req.method = "POST";
  c->req.path = scale_sets_path(current.scale_set_id, "acquirejobs");
  c->req.how = request::auth::queue;  // on the tenant URL, with the message-queue token
  c->req.session = s;
  std::string body = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    body += (i ? "," : "") + std::to_string(ids[i]);
  c->req.body = body + "]";
  c->req.ok = {200};
  c->done = decoding<std::vector<int64_t>>(c->req.operation, std::move(cb), [](const http::http_response& r) {
    return unwrap(decode_acquired_jobs(r.body));
  });
  run(c);
}

void actions_client::generate_jit_config(int64_t scale_set_id, std::string runner_name, std::string work_folder,
                                         callback<jit_config> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "generate JIT config for runner \"" + runner_name + "\"";
  c->req.method = "POST";
  c->req.path = scale_sets_path(scale_set_id, "generatejitconfig");
  runtime::json_writer w;
  w.begin_object().field("name", runner_name).field("workFolder", work_folder).end_object();
  c->req.body = w.take();
  c->req.ok = {200};
  c->done = decoding<jit_config>(c->req.operation, std::move(cb),
                                 [](const http::http_response& r) { return unwrap(decode_jit_config(r.body)); });
  run(c);
}

void actions_client::get_runner(int64_t runner_id, callback<runner_ref> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get runner " + std::to_string(runner_id);
  c->req.path = std::string{agents_path} + "/" + std::to_string(runner_id);
  c->req.ok = {200};
  c->done = [cb = std::move(cb), op = c->req.operation](actions_result<http::http_response> res) {
    if (auto* e = std::get_if<actions_error>(&res)) {
      if (e->what == actions_error::kind::not_found)
        e->what = actions_error::kind::runner_not_found;
      return cb(std::move(*e));
    }
    auto r = decode_runner(std::get<http::http_response>(res).body);
    if (auto* f = std::get_if<decode_failure>(&r))
      return cb(make_error(actions_error::kind::bad_response, op, 200, f->message));
    cb(std::get<runner_ref>(std::move(r)));
  };
  run(c);
}

void actions_client::get_runner_by_name(std::string name, callback<std::optional<runner_ref>> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "get runner \"" + name + "\"";
  c->req.path = std::string{agents_path} + "?agentName=" + http::url_encode(name);
  c->req.ok = {200};
  c->done = decoding<std::optional<runner_ref>>(
      c->req.operation, std::move(cb),
      [](const http::http_response& r) -> std::variant<std::optional<runner_ref>, std::string> {
        auto list = unwrap(decode_runner_list(r.body));
        if (auto* msg = std::get_if<std::string>(&list))
          return *msg;
        auto& runners = std::get<std::vector<runner_ref>>(list);
        if (runners.size() > 1)
          return "more than one runner has this name";
        if (runners.empty())
          return std::optional<runner_ref>{};
        return std::optional<runner_ref>{runners.front()};
      });
  run(c);
}

void actions_client::list_runners(callback<std::vector<runner_ref>> cb) {
  auto& share = *runner_list_;
  std::shared_ptr<const std::vector<runner_ref>> fresh;
  {
    std::lock_guard lock{share.mu};
    if (share.last && io_.clock().now() - share.last_at < opts_.runner_list_reuse) {
      fresh = share.last;
    } else {
      share.waiting.push_back(std::move(cb));
      if (share.in_flight)
        return;  // the request in flight answers this caller too
      share.in_flight = true;
    }
  }
  if (fresh) {
    cb(std::vector<runner_ref>{*fresh});
    return;
  }
  fetch_runner_list();
}

void actions_client::fetch_runner_list() {
  auto c = std::make_shared<call>();
  c->req.operation = "list runners";
  c->req.path = std::string{agents_path};
  c->req.ok = {200};
  runner_list_->requests.fetch_add(1, std::memory_order_relaxed);
  // Every caller that joined while it was in flight gets the answer (or the error).
  auto answer = [share = runner_list_, &clock = io_.clock()](actions_result<std::vector<runner_ref>> r) {
    std::vector<callback<std::vector<runner_ref>>> callers;
    {
      std::lock_guard lock{share->mu};
      callers.swap(share->waiting);
      share->in_flight = false;
      if (auto* list = std::get_if<std::vector<runner_ref>>(&r)) {
        share->last = std::make_shared<const std::vector<runner_ref>>(*list);
        share->last_at = clock.now();
      }
    }
    for (auto& cb : callers)
      cb(r);
  };
  c->done = decoding<std::vector<runner_ref>>(c->req.operation, std::move(answer),
                                               [](const http::http_response& r) { return unwrap(decode_runner_list(r.body)); });
  run(c);
}

uint64_t actions_client::runner_list_requests() const { return runner_list_->requests.load(std::memory_order_relaxed); }

void actions_client::remove_runner(int64_t runner_id, callback<done> cb) {
  auto c = std::make_shared<call>();
  c->req.operation = "remove runner " + std::to_string(runner_id);
  c->req.method = "DELETE";
  c->req.path = std::string{agents_path} + "/" + std::to_string(runner_id);
  c->req.ok = {204, 200};
  c->done = [cb = std::move(cb)](actions_result<http::http_response> res) {
    if (auto* e = std::get_if<actions_error>(&res)) {
      if (e->what == actions_error::kind::not_found)
        e->what = actions_error::kind::runner_not_found;
      return cb(std::move(*e));
    }
    cb(done{});
  };
  run(c);
}

}  // namespace headroom::github
