#pragma once

// A relay is the stable address of a supervised child. A restarted child is a new actor; its
// peers keep the relay, never an incarnation, so nothing has to look the current one up under a
// lock. The supervisor points the relay at each incarnation (msg::relay_target, see
// child_spec::relay). Everything else sent to the relay reaches the current incarnation with its
// sender and request id kept, so a reply goes straight back to the asker. While the child is
// down, messages are dropped and counted (a request gets an error at once); the protocols built
// on relays recover by asking again when an incarnation starts.
//
// A relay exits with its owner (msg::relay_owner): the actor whose subtree wired it, which
// outlives every restart of the child.
//
// Watchers: an actor that sends the relay `watch_atom` is told (restarted_atom, child name) each
// time an incarnation after the first starts, so state the child kept for it (a subscription)
// is given again at once instead of when its absence is noticed. Held by weak reference: a
// watcher that ended is dropped at the next notice.

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>

#include "runtime/messages.hpp"

namespace headroom::runtime {

caf::actor spawn_relay(caf::actor_system& sys, std::string name);

// Ties `relay`'s lifetime to `owner`.
void own_relay(const caf::actor& relay, const caf::actor& owner);

// A relay's address under the typed interface of the child it stands for. The relay forwards
// whatever it is sent, so it is dynamically typed (with the supervisor, the only actors that
// are); its peers hold it as the child's contract (`typed_actor`), and the compiler checks
// every message they send against that contract.
template <class Handle>
Handle relay_as(const caf::actor& relay) {
  return caf::actor_cast<Handle>(relay);
}

// A relay held as its child's contract plus its own `watch_atom` (see above), for a watcher; the
// watcher is told (restarted_atom, child name), so its contract holds relay_watcher.
template <class Handle>
using watched_relay = typename Handle::template extend<caf::reacts_to<msg::watch_atom>>;
using relay_watcher = caf::typed_actor<caf::reacts_to<msg::restarted_atom, std::string>>;

}  // namespace headroom::runtime
