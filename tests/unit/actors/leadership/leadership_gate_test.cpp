// The leadership gate under CAF's deterministic test_coordinator: the acting subtree runs only
// while leading, and losing the lease stops it.
#include "actors/leadership/leadership_gate.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include "messages/type_ids.hpp"

using namespace std::chrono_literals;
using namespace headroom;

namespace {

using crash_atom = caf::atom_constant<caf::atom("crash")>;

struct gate_fixture : ::testing::Test {
  static caf::actor_system_config& make_cfg() {
    static caf::actor_system_config cfg;
    cfg.set("scheduler.policy", caf::atom("testing"));
    return cfg;
  }
  gate_fixture() : sys(make_cfg()), sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}
  ~gate_fixture() override {
    caf::anon_send_exit(gate, caf::exit_reason::kill);
    sched.run();
  }

  void start(bool stubborn = false) {
    runtime::child_spec acting;
    acting.name = "acting";
    acting.start = [this, stubborn](caf::actor_system& s) {
      ++starts;
      auto a = s.spawn(
          [](caf::event_based_actor* self, int* stops, bool stubborn_child) -> caf::behavior {
            self->attach_functor([stops](const caf::error&) { ++*stops; });
            if (stubborn_child)
              self->set_exit_handler([](caf::exit_msg&) {});
            return {[self](crash_atom) { self->quit(caf::make_error(caf::sec::runtime_error, "boom")); }};
          },
          &stops, stubborn);
      current = a;
      return a;
    };
    gate = actors::spawn_leadership_gate(sys, acting, 3s);
    sched.run();
  }

  bool acting_runs() {
    auto out = std::make_shared<bool>(false);
    sys.spawn(
        [](caf::event_based_actor* self, actors::leadership_gate_actor g, std::shared_ptr<bool> result) {
          self->request(g, caf::infinite, caf::get_atom_v).then([result](bool b) { *result = b; });
        },
        gate, out);
    sched.run();
    return *out;
  }

  void lead(bool leading) {
    caf::anon_send(gate, msg::leadership{leading, leading ? "me" : "other"});
    sched.run();
  }

  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  actors::leadership_gate_actor gate;
  caf::actor current;
  int starts = 0;
  int stops = 0;
};

}  // namespace

TEST_F(gate_fixture, acting_actors_run_only_while_leading) {
  start();
  EXPECT_FALSE(acting_runs()) << "a follower acts on nothing";
  lead(true);
  EXPECT_TRUE(acting_runs());
  EXPECT_EQ(starts, 1);
  lead(true);  // a repeated verdict changes nothing
  EXPECT_EQ(starts, 1);
  lead(false);
  EXPECT_FALSE(acting_runs()) << "losing the lease stops the acting actors";
  EXPECT_EQ(stops, 1);
  lead(true);
  EXPECT_TRUE(acting_runs());
  EXPECT_EQ(starts, 2);
}

TEST_F(gate_fixture, a_subtree_that_ignores_the_stop_is_killed_after_the_deadline) {
  start(/*stubborn=*/true);
  lead(true);
  lead(false);
  EXPECT_TRUE(acting_runs()) << "still stopping";
  sched.advance_time(3s);
  sched.run();
  EXPECT_FALSE(acting_runs());
  EXPECT_EQ(stops, 1);
}

TEST_F(gate_fixture, a_failing_subtree_takes_the_gate_down_for_its_supervisor) {
  start();
  lead(true);
  auto down = std::make_shared<std::optional<caf::error>>();
  auto watcher = sys.spawn(
      [](caf::event_based_actor* self, actors::leadership_gate_actor g, std::shared_ptr<std::optional<caf::error>> out) -> caf::behavior {
        self->monitor(g);
        self->set_down_handler([out](caf::down_msg& d) { *out = d.reason; });
        return {[](int) {}};
      },
      gate, down);
  sched.run();
  caf::anon_send(current, crash_atom::value);
  sched.run();
  ASSERT_TRUE(down->has_value());
  EXPECT_TRUE(static_cast<bool>(**down)) << "an abnormal exit the gate's supervisor will see";
  caf::anon_send_exit(watcher, caf::exit_reason::kill);
  sched.run();
}
