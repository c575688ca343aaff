#include "runtime/relay.hpp"

#include <caf/all.hpp>

#include "runtime/log.hpp"
#include "runtime/messages.hpp"

namespace headroom::runtime {

namespace {

struct relay_state {
  std::string child;
  caf::actor target;
  caf::actor_addr owner;
  uint64_t dropped = 0;
  bool started_once = false;                // an incarnation has run: the next one is a restart
  std::vector<caf::actor_addr> watchers;    // weak: see relay.hpp
  static inline const char* name = "headroom.relay";
};

using relay_actor = caf::stateful_actor<relay_state>;

caf::behavior relay_behavior(relay_actor* self, std::string name) {
  self->state.child = std::move(name);
  self->set_default_handler([self](caf::scheduled_actor*, caf::message_view& x) -> caf::result<caf::message> {
    auto& st = self->state;
    if (!st.target) {
      ++st.dropped;
      log::debug("relay/" + st.child, "child down: message dropped", {{"dropped", st.dropped}});
      // A request fails at once; an asynchronous message vanishes without an answer (an error
      // sent back would land in the sender's mailbox as if it had asked something).
      if (self->current_mailbox_element()->mid.is_request())
        return caf::sec::request_receiver_down;
      return caf::message{};
    }
    auto rp = self->make_response_promise();  // takes the sender and request id along
    rp.delegate(st.target, x.move_content_to_message());
    return rp;
  });
  self->set_down_handler([self](caf::down_msg& d) {
    if (d.source == self->state.owner)
      self->quit(d.reason);
  });
  return {
      [self](msg::relay_target& t) {
        auto& st = self->state;
        st.target = std::move(t.target);
        if (!st.target)
          return;
        if (!st.started_once) {
          st.started_once = true;
          return;
        }
        std::erase_if(st.watchers, [&](const caf::actor_addr& a) {
          auto w = caf::actor_cast<caf::actor>(a);
          if (!w)
            return true;
          self->send(w, msg::restarted_atom_v, st.child);
          return false;
        });
      },
      [self](msg::watch_atom) {
        if (auto sender = self->current_sender())
          self->state.watchers.push_back(caf::actor_cast<caf::actor_addr>(sender));
      },
      [self](msg::relay_owner& o) {
        self->state.owner = o.owner.address();
        self->monitor(o.owner);
      },
  };
}

}  // namespace

caf::actor spawn_relay(caf::actor_system& sys, std::string name) { return sys.spawn(relay_behavior, std::move(name)); }

void own_relay(const caf::actor& relay, const caf::actor& owner) { caf::anon_send(relay, msg::relay_owner{owner}); }

}  // namespace headroom::runtime
