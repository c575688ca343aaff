// object_catalog (see object_catalog.hpp): one entry per declared object, reconciled one step at
// a time. A step (start a subtree, stop one) is a request to the mode's supervisor;
// while it is in flight the entry is busy, and its answer reconciles the entry again against the
// newest object, so a burst of edits costs at most one replacement after the one under way.

#include "actors/k8s/object_catalog.hpp"

#include <caf/all.hpp>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <map>
#include <optional>
#include <set>

#include "actors/k8s/api_calls.hpp"
#include "actors/k8s/informer_feed.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/fields.hpp"
#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/rfc3339.hpp"

namespace headroom::actors {

namespace {

constexpr auto step_timeout = std::chrono::seconds(60);
constexpr auto retry_after = std::chrono::seconds(2);

struct entry {
  std::string ns, name, uid;
  std::shared_ptr<const k8s::unstructured> object;  // the newest; null once deleted
  int64_t generation = 0;  // the newest object's
  // "uid/generation" of the newest spec seen, of the one whose subtree runs ("": none) and of
  // the newest refused (not tried again): an object deleted and made again is a new spec.
  std::string seen, running, refused;
  std::string refused_for;  // the reason (a NamespaceLimit is looked at again when its namespace asks less)
  int64_t running_generation = 0;
  std::string claim, child;  // of the subtree that runs (or starts)
  std::optional<catalog_leftover> leftover;
  std::function<void(bool)> hand_over, on_running;
  std::vector<caf::actor> relays;
  std::map<std::string, int64_t> asks;  // what the running subtree asks of its namespace
  bool busy = false;       // a start or a stop is under way
  bool replacing = false;  // stopped for a new spec (for the log and the count)
};

struct catalog_state {
  std::shared_ptr<const catalog_options> opts;
  std::unique_ptr<informer_feed<k8s::unstructured>> feed;
  std::map<std::string, entry> entries;  // "namespace/name"
  std::map<std::string, std::string> serving;  // claim → the entry key that serves it
  api_calls<std::string> calls;  // the key of the object a status write or owner delete is about
  bool synced = false;           // every informer has listed once: an entry never seen is gone
};

using retry_atom = msg::sweep_atom;  // (retry, key): a step that failed is tried again
using catalog_impl = catalog_actor::extend<caf::reacts_to<retry_atom, std::string>, caf::reacts_to<msg::api_reply>>;
using catalog_self = catalog_impl::stateful_base<catalog_state>;

void reconcile(catalog_self* self, const std::string& key);

// What runs, for the next incarnation (a restarted catalog finds its subtrees still running).
void remember(catalog_self* self) {
  auto& st = self->state;
  if (!st.opts->memo)
    return;
  std::map<std::string, catalog_running> out;
  for (const auto& [key, e] : st.entries)
    if (!e.running.empty())
      out[key] = catalog_running{e.ns, e.name, e.running, e.running_generation, e.claim, e.child, e.leftover, e.hand_over,
                                  e.on_running, e.asks, e.relays};
  st.opts->memo->set(std::move(out));
}

std::string now_text(catalog_self* self) {
  return runtime::format_rfc3339(runtime::actor_system_clock{self->clock()}.wall_seconds(), 0);
}

void count(catalog_self* self, const std::string& outcome) {
  if (self->state.opts->count)
    self->state.opts->count(outcome);
}

void write_status(catalog_self* self, const entry& e, std::string body) {
  auto& st = self->state;
  st.calls.start(self, e.ns + "/" + e.name, [kube = st.opts->kube, resource = st.opts->kind.resource, ns = e.ns, name = e.name,
                                             body = std::move(body)](k8s::api_callback cb) {
    kube->merge_patch(resource, ns, name, body, std::move(cb), "status");
  });
}

// Says why a generation does not run: the object's status when nothing runs for it (no status
// actor writes it then), and a Warning Event either way.
void refuse(catalog_self* self, entry& e, const std::string& reason, const std::string& message) {
  auto& st = self->state;
  e.refused = e.seen;
  e.refused_for = reason;
  const int64_t running = e.running_generation;
  count(self, "refused");
  const auto& kind = st.opts->kind;
  runtime::log::warn(kind.actor_name, kind.kind + " refused",
                     {{"namespace", e.ns}, {"name", e.name}, {"generation", e.generation}, {"reason", reason}, {"error", message},
                      {"running_generation", running}});
  msg::k8s_event ev{kind.api_version, kind.kind, e.ns, e.name, e.uid, "Warning", reason, "Validate",
                    running > 0 ? message + " (generation " + std::to_string(running) + " keeps running)" : message};
  if (st.opts->events)
    tell_event(st.opts->events, std::move(ev));
  if (!e.running.empty() || st.opts->kube == nullptr || !kind.refused_patch)
    return;
  write_status(self, e, kind.refused_patch(e.generation, reason, message, now_text(self)));
}

// Its namespace now asks less (a subtree stopped, or runs a smaller spec): the specs refused
// for the namespace's bounds are judged again.
void namespace_eased(catalog_self* self, const std::string& ns) {
  std::vector<std::string> again;
  for (auto& [key, e] : self->state.entries)
    if (e.ns == ns && e.refused_for == "NamespaceLimit" && !e.refused.empty()) {
      e.refused.clear();
      e.refused_for.clear();
      again.push_back(key);
    }
  for (const auto& key : again)
    reconcile(self, key);
}

catalog_claim claim_of(const catalog_state& st, const entry& e) {
  return st.opts->claim_of ? st.opts->claim_of(*e.object) : catalog_claim{e.ns + "/" + e.name, "metadata.name", e.name};
}

// What an object served is free again (it stopped, or serves another now): the specs refused for
// wanting it are judged again.
void claim_freed(catalog_self* self, const std::string& claim) {
  auto& st = self->state;
  if (st.opts->file_claims.count(claim))
    return;
  std::vector<std::string> again;
  for (auto& [key, e] : st.entries)
    if (e.refused_for == "NameTaken" && !e.refused.empty() && e.object && claim_of(st, e).claim == claim) {
      e.refused.clear();
      e.refused_for.clear();
      again.push_back(key);
    }
  for (const auto& key : again)
    reconcile(self, key);
}

void drop_relays(entry& e) {
  for (const auto& r : e.relays)
    caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
  e.relays.clear();
}

void retry_later(catalog_self* self, const std::string& key) {
  self->delayed_send(self, retry_after, msg::sweep_atom_v, key);
}

// Stops the entry's subtree for good; its answer reconciles the entry again.
void stop(catalog_self* self, entry& e, const std::string& key) {
  e.busy = true;
  if (e.on_running)
    e.on_running(false);
  if (e.hand_over)
    e.hand_over(e.replacing);
  self->request(self->state.opts->parent, step_timeout, msg::stop_child_atom_v, e.child)
      .then(
          [self, key](bool) {
            auto& st = self->state;
            auto it = st.entries.find(key);
            if (it == st.entries.end())
              return;
            it->second.busy = false;
            drop_relays(it->second);  // the subtree is gone: its addresses too
            it->second.on_running = nullptr;
            it->second.running.clear();
            it->second.running_generation = 0;
            it->second.asks.clear();
            if (auto s = st.serving.find(it->second.claim); s != st.serving.end() && s->second == key)
              st.serving.erase(s);
            remember(self);
            const auto ns = it->second.ns;
            const auto claim = it->second.claim;
            reconcile(self, key);
            namespace_eased(self, ns);
            if (!st.serving.count(claim))
              claim_freed(self, claim);
          },
          [self, key](caf::error& err) {
            runtime::log::warn(self->state.opts->kind.actor_name, "could not stop a subtree; trying again",
                               {{"object", key}, {"error", self->system().render(err)}});
            if (auto it = self->state.entries.find(key); it != self->state.entries.end())
              it->second.busy = false;
            retry_later(self, key);
          });
}

void start(catalog_self* self, entry& e, const std::string& key, const catalog_claim& claim, catalog_build built) {
  e.busy = true;
  const int64_t generation = built.generation;
  const std::string token = e.seen;
  e.claim = claim.claim;
  e.child = built.subtree.name;
  e.leftover = built.leftover;
  e.hand_over = built.hand_over;
  e.on_running = built.running;
  e.relays = built.relays;
  e.asks = built.asks;
  self->state.serving[e.claim] = key;
  self->request(self->state.opts->parent, step_timeout, std::move(built.subtree))
      .then(
          [self, key, generation, token](bool added) {
            auto& st = self->state;
            auto it = st.entries.find(key);
            if (it == st.entries.end())
              return;
            auto& en = it->second;
            en.busy = false;
            if (!added) {  // its predecessor is still stopping (or the supervisor is): later
              drop_relays(en);
              retry_later(self, key);
              return;
            }
            count(self, en.replacing ? "replaced" : "started");
            const auto& kind = st.opts->kind;
            runtime::log::info(kind.actor_name,
                               en.replacing ? kind.what + " replaced: its " + kind.kind + "'s spec changed"
                                            : kind.what + " started from its " + kind.kind + " object",
                               {{"namespace", en.ns}, {"name", en.name}, {"generation", generation}});
            if (kind.ready_patch && st.opts->kube != nullptr)
              write_status(self, en, kind.ready_patch(generation, now_text(self)));
            en.replacing = false;
            if (en.on_running)
              en.on_running(true);
            en.running = token;
            en.running_generation = generation;
            remember(self);
            reconcile(self, key);
          },
          [self, key](caf::error& err) {
            runtime::log::warn(self->state.opts->kind.actor_name, "could not start a subtree; trying again",
                               {{"object", key}, {"error", self->system().render(err)}});
            if (auto it = self->state.entries.find(key); it != self->state.entries.end()) {
              it->second.busy = false;
              drop_relays(it->second);
            }
            retry_later(self, key);
          });
}

// The object is gone and nothing runs for it: what it leaves goes (a scale set's owner ConfigMap,
// whose placeholders the garbage collector removes), and the entry is forgotten.
void retire(catalog_self* self, const std::string& key) {
  auto& st = self->state;
  auto& e = st.entries.at(key);
  if (auto s = st.serving.find(e.claim); s != st.serving.end() && s->second == key)
    st.serving.erase(s);
  if (!e.child.empty()) {
    const auto& kind = st.opts->kind;
    count(self, "stopped");
    runtime::log::info(kind.actor_name, kind.what + " stopped: its " + kind.kind + " object was deleted", {{"namespace", e.ns}, {"name", e.name}});
  }
  if (e.leftover && st.opts->kube != nullptr)
    st.calls.start(self, key, [kube = st.opts->kube, ns = e.ns, left = *e.leftover](k8s::api_callback cb) {
      kube->remove(left.kind, ns, left.name, {}, std::move(cb));
    });
  const auto claim = e.child.empty() ? std::string{} : e.claim;
  st.entries.erase(key);
  if (!claim.empty())
    claim_freed(self, claim);
}

// Over its namespace's bounds with this spec in place of the one it runs: what the refusal says.
std::optional<std::string> over_limits(const catalog_state& st, const entry& e, const catalog_build& b) {
  for (const auto& limit : st.opts->limits) {
    if (limit.limit <= 0)
      continue;
    auto asked = [&](const std::map<std::string, int64_t>& asks) {
      auto it = asks.find(limit.field);
      return it == asks.end() ? int64_t{0} : it->second;
    };
    int64_t total = asked(b.asks);
    for (const auto& [key, other] : st.entries)
      if (&other != &e && other.ns == e.ns)  // each asks from its start until it has stopped
        total += asked(other.asks);
    if (total > limit.limit)
      return limit.field + ": the " + st.opts->kind.kind + " objects of namespace " + e.ns + " would ask for " + std::to_string(total) +
             " together, over " + limit.key + " (" + std::to_string(limit.limit) + ")";
  }
  return std::nullopt;
}

void reconcile(catalog_self* self, const std::string& key) {
  auto& st = self->state;
  auto it = st.entries.find(key);
  if (it == st.entries.end() || it->second.busy)
    return;
  auto& e = it->second;
  if (!e.object) {  // deleted
    if (e.seen.empty())
      return;  // known from the memo; not listed yet
    if (!e.running.empty())
      return stop(self, e, key);
    return retire(self, key);
  }
  if (e.seen == e.running || e.seen == e.refused)
    return;
  const auto claim = claim_of(st, e);
  if (!claim.claim.empty()) {
    if (st.opts->file_claims.count(claim.claim))
      return refuse(self, e, "NameTaken", claim.field + ": " + claim.text + " is served from headroom's configuration file");
    if (auto s = st.serving.find(claim.claim); s != st.serving.end() && s->second != key)
      return refuse(self, e, "NameTaken", claim.field + ": " + claim.text + " is declared by the " + st.opts->kind.kind + " " + s->second +
                                              "; one object each");
  }
  auto built = st.opts->build(self->system(), e.object->raw);
  if (auto* problem = std::get_if<std::string>(&built))
    return refuse(self, e, "SpecRefused", *problem);
  if (auto over = over_limits(st, e, std::get<catalog_build>(built)))
    return refuse(self, e, "NamespaceLimit", *over);
  if (!e.running.empty()) {  // a new generation: the old subtree goes first (the new one adopts its pairs)
    e.replacing = true;
    return stop(self, e, key);
  }
  start(self, e, key, claim, std::get<catalog_build>(std::move(built)));
}

void on_object(catalog_self* self, const msg::object_event<k8s::unstructured>& ev) {
  auto& st = self->state;
  const auto& o = *ev.object;
  if (const auto* by = o.meta.label("app.kubernetes.io/managed-by"); by != nullptr && *by == "headroom")
    return;  // a status object of an entry of the file
  const std::string key = o.meta.ns + "/" + o.meta.name;
  auto& e = st.entries[key];
  e.ns = o.meta.ns;
  e.name = o.meta.name;
  if (ev.change == msg::object_change::deleted || !o.meta.deletion_timestamp.empty()) {
    e.object.reset();
    e.seen = "deleted";
  } else {
    e.uid = o.meta.uid;
    e.object = ev.object;
    e.generation = k8s::int_at(o.raw, {"metadata", "generation"}).value_or(1);
    e.seen = e.uid + "/" + std::to_string(e.generation);
  }
  reconcile(self, key);
}

void on_reply(catalog_self* self, const msg::api_reply& r) {
  auto key = self->state.calls.take(r);
  if (!key || r.ok || static_cast<k8s::api_error::kind>(r.error_kind) == k8s::api_error::kind::not_found)
    return;
  const auto& kind = self->state.opts->kind;
  runtime::log::warn(kind.actor_name, "a " + kind.kind + "'s status or leftovers could not be written", {{"object", *key}, {"error", r.error}});
}

// Once every informer has listed, the caches are read whole: a restarted catalog hears no event
// for the objects already listed, and an entry the memo brought whose object is not cached was
// deleted while no catalog ran.
void check_synced(catalog_self* self) {
  auto& st = self->state;
  for (const auto& source : st.opts->objects)
    if (!source->synced()) {
      self->delayed_send(self, std::chrono::seconds(1), msg::sweep_atom_v, std::string{});
      return;
    }
  st.synced = true;
  std::set<std::string> listed;
  for (const auto& source : st.opts->objects)
    for (const auto& o : source->list()) {
      listed.insert(o->meta.ns + "/" + o->meta.name);
      on_object(self, msg::object_event<k8s::unstructured>{msg::object_change::added, o});
    }
  std::vector<std::string> gone;
  for (const auto& [key, e] : st.entries)
    if (!listed.count(key) && !e.object)
      gone.push_back(key);
  for (const auto& key : gone) {
    st.entries[key].seen = "deleted";
    reconcile(self, key);
  }
}

catalog_impl::behavior_type catalog_behavior(catalog_self* self, std::shared_ptr<const catalog_options> opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
  if (st.opts->memo)
    for (auto& [key, r] : st.opts->memo->get()) {
      auto& e = st.entries[key];
      e.ns = r.ns;
      e.name = r.name;
      e.running = r.token;
      e.running_generation = r.generation;
      e.claim = r.claim;
      e.child = r.child;
      e.leftover = r.leftover;
      e.hand_over = r.hand_over;
      e.on_running = r.running;
      e.relays = r.relays;
      e.asks = r.asks;
      st.serving[r.claim] = key;
    }
  st.feed = std::make_unique<informer_feed<k8s::unstructured>>(st.opts->kind.feed, self, 0);
  for (const auto& source : st.opts->objects)
    st.feed->attach(source);
  check_synced(self);
  return {
      [self](msg::buffer_wakeup) {
        self->state.feed->drain([self](const msg::object_event<k8s::unstructured>& ev) { on_object(self, ev); });
      },
      [self](retry_atom, const std::string& key) {
        if (key.empty())
          return check_synced(self);
        reconcile(self, key);
      },
      [self](msg::api_reply& r) { on_reply(self, r); },
  };
}

}  // namespace

std::string ready_condition_patch(int64_t generation, bool ready, const std::string& reason, const std::string& message,
                                  const std::string& now) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w{out};
  auto text = [&w](const char* key, const std::string& v) {
    w.Key(key);
    w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
  };
  w.StartObject();
  w.Key("status");
  w.StartObject();
  w.Key("observedGeneration");
  w.Int64(generation);
  w.Key("conditions");
  w.StartArray();
  w.StartObject();
  text("type", "Ready");
  text("status", ready ? "True" : "False");
  w.Key("observedGeneration");
  w.Int64(generation);
  text("lastTransitionTime", now);
  text("reason", reason);
  text("message", message);
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return out.GetString();
}

catalog_kind condition_kind(k8s::resource_kind resource, std::string kind, std::string actor_name, std::string what, std::string feed,
                            std::string ready_reason, std::string ready_message) {
  catalog_kind out{std::move(resource), "headroom.dev/v1alpha1", std::move(kind), std::move(actor_name), std::move(what), std::move(feed),
                   nullptr, nullptr};
  out.refused_patch = [](int64_t g, const std::string& reason, const std::string& message, const std::string& now) {
    return ready_condition_patch(g, false, reason, message, now);
  };
  out.ready_patch = [reason = std::move(ready_reason), message = std::move(ready_message)](int64_t g, const std::string& now) {
    return ready_condition_patch(g, true, reason, message, now);
  };
  return out;
}

runtime::child_spec catalog_child_spec(std::shared_ptr<const catalog_options> opts) {
  runtime::child_spec out;
  out.name = opts->kind.actor_name;
  out.restart = runtime::restart_mode::permanent;
  out.start = [opts](caf::actor_system& s) { return runtime::untyped(spawn_object_catalog(s, opts)); };
  return out;
}

catalog_actor spawn_object_catalog(caf::actor_system& sys, std::shared_ptr<const catalog_options> opts) {
  return sys.spawn(catalog_behavior, std::move(opts));
}

}  // namespace headroom::actors
