#include "runtime/fault_hooks.hpp"

#include <caf/all.hpp>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/log.hpp"
#include "runtime/messages.hpp"

namespace headroom::runtime {

namespace {

const caf::atom_value broker_key = caf::atom("faults");

struct broker_state {
  std::vector<supervisor_actor> supervisors;
  static inline const char* name = "headroom.fault_broker";
};

using broker_actor = fault_broker_actor::stateful_base<broker_state>;

fault_broker_actor::behavior_type broker_behavior(broker_actor* self, std::string /* CAF 0.17.6: never spawn without an argument */) {
  self->set_down_handler([self](caf::down_msg& d) {
    std::erase_if(self->state.supervisors, [&](const supervisor_actor& a) { return a.address() == d.source; });
  });
  return {
      [self](msg::fault_atom, supervisor_actor supervisor) {  // a supervisor joins
        self->monitor(supervisor);
        self->state.supervisors.push_back(std::move(supervisor));
      },
      [self](msg::fault_atom, const std::string& child) -> caf::typed_response_promise<int64_t> {
        auto& sups = self->state.supervisors;
        auto rp = self->make_response_promise<int64_t>();
        if (sups.empty()) {
          rp.deliver(int64_t{0});
          return rp;
        }
        // Ask every supervisor; answer with the sum once all have (a gone one counts 0).
        struct fan_in {
          caf::typed_response_promise<int64_t> rp;
          size_t waiting;
          int64_t hit = 0;
        };
        auto f = std::make_shared<fan_in>(fan_in{rp, sups.size()});
        for (const auto& s : sups)
          self->request(s, std::chrono::seconds(1), msg::fault_atom_v, child)
              .then(
                  [f](int64_t n) {
                    f->hit += n;
                    if (--f->waiting == 0)
                      f->rp.deliver(f->hit);
                  },
                  [f](caf::error&) {
                    if (--f->waiting == 0)
                      f->rp.deliver(f->hit);
                  });
        return f->rp;
      },
  };
}

}  // namespace

bool fault_hooks_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("HEADROOM_TEST_FAULTS");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

fault_broker_actor spawn_fault_broker(caf::actor_system& sys) {
  if (!fault_hooks_enabled())
    return {};
  auto broker = sys.spawn(broker_behavior, std::string{"faults"});
  sys.registry().put(broker_key, broker);
  log::warn("faults", "test fault hooks are on (HEADROOM_TEST_FAULTS=1): POST /debug/fault?child=NAME fails that actor");
  return broker;
}

void stop_fault_broker(caf::actor_system& sys, const fault_broker_actor& broker) {
  if (!broker)
    return;
  sys.registry().erase(broker_key);
  caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
}

void join_fault_broker(caf::local_actor* supervisor) {
  if (!fault_hooks_enabled())
    return;
  if (auto broker = supervisor->home_system().registry().get<fault_broker_actor>(broker_key))
    caf::anon_send(broker, msg::fault_atom_v, caf::actor_cast<supervisor_actor>(supervisor));
}

namespace {

// From any thread: fails every running child named `child`; the number hit, or -1.
int64_t inject_fault(caf::actor_system& sys, const std::string& child) {
  auto broker = sys.registry().get<fault_broker_actor>(broker_key);
  if (!broker)
    return -1;
  caf::scoped_actor self{sys};
  int64_t out = -1;
  self->request(broker, std::chrono::seconds(2), msg::fault_atom_v, child)
      .receive([&](int64_t n) { out = n; }, [&](caf::error&) { out = -1; });
  return out;
}

}  // namespace

std::optional<web_route> fault_route(caf::actor_system& sys) {
  if (!fault_hooks_enabled())
    return std::nullopt;
  return web_route{"POST", "/debug/fault", [&sys](const web_request& req) {
                     auto it = req.query.find("child");
                     if (it == req.query.end() || it->second.empty() || it->second.size() > 200)
                       return web_reply{400, "text/plain", {}, "child: the name of a supervised actor is required\n"};
                     const auto hit = inject_fault(sys, it->second);
                     return web_reply{hit < 0 ? 503 : 200, "text/plain", {}, std::to_string(hit) + "\n"};
                   }};
}

}  // namespace headroom::runtime
