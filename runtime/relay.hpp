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
#include <caf/actor_system.hpp>

#include <string>

namespace headroom::runtime {

caf::actor spawn_relay(caf::actor_system& sys, std::string name);

// Ties `relay`'s lifetime to `owner`.
void own_relay(const caf::actor& relay, const caf::actor& owner);

}  // namespace headroom::runtime
