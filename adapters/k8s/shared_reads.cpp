#include "adapters/k8s/shared_reads.hpp"

#include <simdjson.h>

#include <utility>

#include "runtime/json_writer.hpp"

namespace headroom::k8s {

namespace {

std::string key_of(const char* verb, const resource_kind& k, const std::string& ns, const std::string& what) {
  return std::string{verb} + '\n' + k.group + '/' + k.version + '/' + k.plural + '\n' + ns + '\n' + what;
}

// A list's items as "name\tuid\n" lines: what find_in_list needs, parsed once for all askers.
api_result digest_of(api_result listed) {
  if (std::holds_alternative<api_error>(listed))
    return listed;
  simdjson::dom::parser p;
  simdjson::dom::array items;
  std::string out;
  if (p.parse(std::get<std::string>(listed))["items"].get(items) == simdjson::SUCCESS)
    for (auto item : items) {
      std::string_view n, uid;
      if (item["metadata"]["name"].get(n) != simdjson::SUCCESS)
        continue;
      if (item["metadata"]["uid"].get(uid) != simdjson::SUCCESS)
        uid = {};
      out.append(n).append(1, '\t').append(uid).append(1, '\n');
    }
  return out;
}

// What a GET of `name` would answer, from a digest: its name and uid, or not found.
api_result item_as_get(const api_result& digest, const resource_kind& k, const std::string& ns, const std::string& name) {
  if (const auto* e = std::get_if<api_error>(&digest))
    return *e;
  const std::string_view lines = std::get<std::string>(digest);
  for (size_t at = 0; at < lines.size();) {
    const auto end = lines.find('\n', at);
    const auto line = lines.substr(at, end - at);
    at = end == std::string_view::npos ? lines.size() : end + 1;
    const auto tab = line.find('\t');
    if (line.substr(0, tab) != name)
      continue;
    runtime::json_writer w;
    w.begin_object().key("metadata").begin_object().field("name", name).field("uid", line.substr(tab + 1)).end_object().end_object();
    return w.take();
  }
  api_error missing;
  missing.what = api_error::kind::not_found;
  missing.verb = "get";
  missing.resource = k.plural;
  missing.ns = ns;
  missing.name = name;
  missing.status = 404;
  missing.reason = "NotFound";
  missing.message = "not in the list of " + k.plural;
  return missing;
}

}  // namespace

void shared_reads::ask(const std::string& key, std::function<void(api_callback)> read, answer_fn answer) {
  {
    std::unique_lock lock{mutex_};
    auto& e = entries_[key];
    ++counts_.answers;
    if (e.kept && client_.clock().now() < e.kept_at + reuse_) {
      auto kept = *e.kept;
      lock.unlock();
      answer(kept);
      return;
    }
    e.kept.reset();
    e.waiting.push_back(std::move(answer));
    if (e.in_flight)
      return;
    e.in_flight = true;
    ++counts_.requests;
  }
  read([self = shared_from_this(), key](api_result r) {
    std::vector<answer_fn> waiting;
    {
      std::lock_guard lock{self->mutex_};
      auto& e = self->entries_[key];
      e.in_flight = false;
      waiting.swap(e.waiting);
      if (std::holds_alternative<std::string>(r)) {
        e.kept = r;
        e.kept_at = self->client_.clock().now();
      }
    }
    for (auto& w : waiting)
      w(r);
  });
}

void shared_reads::get(const resource_kind& k, const std::string& ns, const std::string& name, api_callback cb) {
  ask(
      key_of("get", k, ns, name), [this, k, ns, name](api_callback done) { client_.get(k, ns, name, std::move(done)); },
      [cb = std::move(cb)](const api_result& r) { cb(r); });
}

void shared_reads::find_in_list(const resource_kind& k, const std::string& ns, const std::string& selector, const std::string& name,
                                api_callback cb) {
  ask(
      key_of("list", k, ns, selector),
      [this, k, ns, selector](api_callback done) {
        list_options lo;
        lo.label_selector = selector;
        client_.list(k, ns, lo, [done = std::move(done)](api_result r) { done(digest_of(std::move(r))); });
      },
      [k, ns, name, cb = std::move(cb)](const api_result& r) { cb(item_as_get(r, k, ns, name)); });
}

shared_reads::counts shared_reads::counted() const {
  std::lock_guard lock{mutex_};
  return counts_;
}

}  // namespace headroom::k8s
