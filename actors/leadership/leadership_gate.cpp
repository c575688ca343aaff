#include "actors/leadership/leadership_gate.hpp"

#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/supervisor.hpp"

namespace headroom::actors {

namespace {

struct gate_state {
  runtime::child_spec acting;
  std::chrono::milliseconds stop_deadline{10'000};
  caf::actor running;
  bool leading = false;
  bool exiting = false;
  caf::error exit_reason;
  uint64_t generation = 0;
  static inline const char* name = "headroom.leadership_gate";
};

// Its own timer: the acting subtree's stop deadline (generation).
using gate_impl = leadership_gate_actor::extend<caf::reacts_to<msg::deadline_atom, uint32_t, uint64_t>>;
using gate = gate_impl::stateful_base<gate_state>;

void stop_acting(gate* self) {
  auto& st = self->state;
  if (!st.running)
    return;
  runtime::log::info("leadership_gate", "stopping the acting actors", {{"subtree", st.acting.name}});
  self->send_exit(st.running, caf::exit_reason::user_shutdown);
  self->delayed_send(self, st.stop_deadline, msg::deadline_atom_v, uint32_t{0}, ++st.generation);
}

void start_acting(gate* self) {
  auto& st = self->state;
  if (st.running)
    return;
  st.running = st.acting.start(self->system());
  self->monitor(st.running);
  runtime::log::info("leadership_gate", "leading: started the acting actors", {{"subtree", st.acting.name}});
}

gate_impl::behavior_type gate_behavior(gate* self, runtime::child_spec acting, std::chrono::milliseconds stop_deadline) {
  self->state.acting = std::move(acting);
  self->state.stop_deadline = stop_deadline;
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    if (!st.running || down.source != st.running.address())
      return;
    st.running = caf::actor{};
    ++st.generation;
    if (st.exiting) {
      self->quit(st.exit_reason);
      return;
    }
    const bool requested = !down.reason || down.reason == caf::exit_reason::user_shutdown;
    if (st.leading && !requested) {
      runtime::log::error("leadership_gate", "acting subtree failed while leading",
                          {{"reason", runtime::exit_reason_label(self->system(), down.reason)}});
      self->quit(down.reason);
      return;
    }
    if (st.leading)  // finished on its own while we still lead: start it again
      start_acting(self);
  });
  self->set_exit_handler([self](caf::exit_msg& exit) {
    auto& st = self->state;
    st.exiting = true;
    st.exit_reason = std::move(exit.reason);
    if (!st.running) {
      self->quit(st.exit_reason);
      return;
    }
    stop_acting(self);
  });
  return {
      [self](msg::leadership l) {
        auto& st = self->state;
        if (st.exiting || l.leading == st.leading)
          return;
        st.leading = l.leading;
        if (l.leading)
          start_acting(self);
        else
          stop_acting(self);
      },
      [self](msg::deadline_atom, uint32_t, uint64_t generation) {
        auto& st = self->state;
        if (!st.running || generation != st.generation)
          return;
        runtime::log::warn("leadership_gate", "acting subtree missed its stop deadline, killing it");
        self->send_exit(st.running, caf::exit_reason::kill);
        runtime::note_child_killed();
      },
      [self](caf::get_atom) { return static_cast<bool>(self->state.running); },
  };
}

}  // namespace

leadership_gate_actor spawn_leadership_gate(caf::actor_system& sys, runtime::child_spec acting,
                                            std::chrono::milliseconds stop_deadline) {
  return sys.spawn(gate_behavior, std::move(acting), stop_deadline);
}

}  // namespace headroom::actors
