#pragma once

// Kubernetes API calls from an actor: the callback runs on the I/O thread, so the result comes
// back to the actor as msg::api_reply{correlation, …}, and the actor matches it to what it asked.

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/weak_intrusive_ptr.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>

#include "adapters/k8s/client.hpp"
#include "messages/type_ids.hpp"
#include "runtime/typed_handle.hpp"

namespace headroom::actors {

// Starts an API call whose result comes back to `target` (an actor's `this` or its typed handle,
// whose contract must take msg::api_reply: the compiler checks it) as msg::api_reply{correlation,
// …}. `start` receives the callback to hand to the client. The target is held weakly: a reply for
// an actor that is gone is dropped.
template <class Target>
void call_into(const Target& target, uint64_t correlation, const std::function<void(k8s::api_callback)>& start) {
  start([weak = runtime::weak_handle_of(target), correlation](k8s::api_result r) {
    if (!weak.alive())
      return;
    msg::api_reply reply;
    reply.correlation = correlation;
    if (auto* body = std::get_if<std::string>(&r)) {
      reply.ok = true;
      reply.body = std::move(*body);
    } else {
      const auto& e = std::get<k8s::api_error>(r);
      reply.error_kind = static_cast<int32_t>(e.what);
      reply.status = static_cast<int32_t>(e.status);
      reply.error = e.describe();
    }
    weak.send(std::move(reply));
  });
}

// The calls one actor has in flight, each with what the actor needs to know when its reply comes
// back (`Info`). Lives in the actor's state; only that actor touches it.
template <class Info>
class api_calls {
 public:
  // Starts a call (see call_into) whose reply take() will match to `info`.
  template <class Target>
  void start(const Target& self, Info info, const std::function<void(k8s::api_callback)>& start) {
    const uint64_t id = next_++;
    calls_.emplace(id, std::move(info));
    call_into(self, id, start);
  }

  // What the call `reply` answers was about, removed from the table; nullopt for a reply this
  // table does not know (a call from before a restart, or already matched).
  std::optional<Info> take(const msg::api_reply& reply) {
    auto it = calls_.find(reply.correlation);
    if (it == calls_.end())
      return std::nullopt;
    std::optional<Info> out{std::move(it->second)};
    calls_.erase(it);
    return out;
  }

  size_t in_flight() const { return calls_.size(); }

  // Visits what every call in flight is about.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [id, info] : calls_)
      f(info);
  }

 private:
  std::unordered_map<uint64_t, Info> calls_;
  uint64_t next_ = 1;
};

}  // namespace headroom::actors
