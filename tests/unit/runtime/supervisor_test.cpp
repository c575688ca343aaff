// Supervisor behaviour under CAF's deterministic test_coordinator: time moves only when a test
// advances it, so backoffs, windows and stop deadlines are exact.
#include "runtime/supervisor.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include "messages/type_ids.hpp"
#include "runtime/clock.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"
#include "runtime/relay.hpp"

using namespace std::chrono_literals;
using namespace headroom;
using runtime::child_spec;
using runtime::supervisor_options;

namespace {

using crash_atom = caf::atom_constant<caf::atom("crash")>;
using finish_atom = caf::atom_constant<caf::atom("finish")>;

// What the children did, in order: "start:a", "stop:a", …
using journal = std::shared_ptr<std::vector<std::string>>;

caf::behavior worker(caf::event_based_actor* self, journal j, std::string name, bool stubborn) {
  j->push_back("start:" + name);
  self->attach_functor([j, name](const caf::error&) { j->push_back("stop:" + name); });
  if (stubborn)  // ignores the supervisor's stop request
    self->set_exit_handler([](caf::exit_msg&) {});
  return {
      [self](crash_atom) { self->quit(caf::make_error(caf::sec::runtime_error, "boom")); },
      [self](finish_atom) { self->quit(); },
      [self](int32_t) { return static_cast<uint64_t>(self->id()); },  // which incarnation answered
  };
}

struct supervisor_fixture : ::testing::Test {
  static caf::actor_system_config& make_cfg() {
    static caf::actor_system_config cfg;
    cfg.set("scheduler.policy", caf::atom("testing"));
    return cfg;
  }
  supervisor_fixture() : sys(make_cfg()), sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}
  ~supervisor_fixture() override {
    for (auto& a : to_stop)
      caf::anon_send_exit(a, caf::exit_reason::kill);
    sched.run();
  }

  // A child spec whose latest incarnation is kept in handles[name].
  child_spec child(const std::string& name, bool stubborn = false,
                   runtime::restart_mode mode = runtime::restart_mode::transient) {
    return child_spec{name,
                      [this, name, stubborn](caf::actor_system& s) {
                        auto a = s.spawn(worker, events, name, stubborn);
                        handles[name] = a;
                        return a;
                      },
                      mode, {}};
  }

  supervisor_options options(const std::string& name) {
    supervisor_options o;
    o.name = name;
    o.restart.jitter = 0;
    o.stop_deadline = 2s;
    return o;
  }

  caf::actor start(supervisor_options o, std::vector<child_spec> children) {
    auto sup = runtime::untyped(runtime::spawn_supervisor(sys, std::move(o), std::move(children)));
    to_stop.push_back(sup);
    sched.run();
    return sup;
  }

  msg::supervisor_status status(const caf::actor& sup) {
    auto out = std::make_shared<std::optional<msg::supervisor_status>>();
    // Data goes in as spawn arguments, not captures: CAF 0.17.6 dereferences a null argument tuple
    // when an actor is spawned with none (UBSan flags it), so headroom never spawns that way.
    sys.spawn(
        [](caf::event_based_actor* self, caf::actor target, std::shared_ptr<std::optional<msg::supervisor_status>> result) {
          self->request(target, caf::infinite, caf::get_atom_v).then([result](msg::supervisor_status s) { *result = s; });
        },
        sup, out);
    sched.run();
    EXPECT_TRUE(out->has_value());
    return out->value_or(msg::supervisor_status{});
  }

  // Watches `target` and records its exit reason ("" until it exits).
  std::shared_ptr<std::optional<caf::error>> watch(const caf::actor& target) {
    auto out = std::make_shared<std::optional<caf::error>>();
    // Kept in `watchers`: a monitor holds its observer only weakly, and an actor nobody references
    // is collected before the down message can reach it.
    watchers.push_back(sys.spawn(
        [](caf::event_based_actor* self, caf::actor watched, std::shared_ptr<std::optional<caf::error>> result) -> caf::behavior {
          self->monitor(watched);
          self->set_down_handler([self, result](caf::down_msg& d) {
            *result = d.reason;
            self->quit();
          });
          return {[](int) {}};
        },
        target, out));
    sched.run();
    return out;
  }

  void crash(const std::string& name) {
    caf::anon_send(handles.at(name), crash_atom::value);
    sched.run();
  }

  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  journal events = std::make_shared<std::vector<std::string>>();
  std::map<std::string, caf::actor> handles;
  std::vector<caf::actor> to_stop;
  std::vector<caf::actor> watchers;
};

TEST_F(supervisor_fixture, starts_children_in_order) {
  start(options("root"), {child("a"), child("b"), child("c")});
  EXPECT_EQ(*events, (std::vector<std::string>{"start:a", "start:b", "start:c"}));
}

TEST_F(supervisor_fixture, restarts_a_crashed_child_after_its_backoff) {
  auto sup = start(options("root"), {child("a"), child("b")});
  crash("a");
  EXPECT_FALSE(status(sup).children[0].running);
  sched.advance_time(99ms);
  sched.run();
  EXPECT_FALSE(status(sup).children[0].running) << "restarted before the 100 ms backoff";
  sched.advance_time(1ms);
  sched.run();
  auto s = status(sup);
  EXPECT_TRUE(s.children[0].running);
  EXPECT_EQ(s.children[0].restarts, 1u);
  EXPECT_EQ(s.children[0].last_exit, "runtime_error");
  EXPECT_TRUE(s.children[1].running) << "a sibling is not touched";
  // Second crash inside the window: 200 ms.
  crash("a");
  sched.advance_time(199ms);
  sched.run();
  EXPECT_FALSE(status(sup).children[0].running);
  sched.advance_time(1ms);
  sched.run();
  EXPECT_TRUE(status(sup).children[0].running);
}

TEST_F(supervisor_fixture, transient_child_that_finishes_is_not_restarted) {
  auto sup = start(options("root"), {child("a")});
  caf::anon_send(handles.at("a"), finish_atom::value);
  sched.run();
  sched.advance_time(1min);
  sched.run();
  auto s = status(sup);
  EXPECT_FALSE(s.children[0].running);
  EXPECT_EQ(s.children[0].restarts, 0u);
  EXPECT_EQ(s.children[0].last_exit, "normal");
}

TEST_F(supervisor_fixture, permanent_child_is_restarted_even_after_a_normal_exit) {
  auto sup = start(options("root"), {child("a", false, runtime::restart_mode::permanent)});
  caf::anon_send(handles.at("a"), finish_atom::value);
  sched.run();
  sched.advance_time(100ms);
  sched.run();
  EXPECT_TRUE(status(sup).children[0].running);
}

TEST_F(supervisor_fixture, gives_up_after_too_many_restarts_and_exits_abnormally) {
  auto sup = start(options("root"), {child("a"), child("b")});
  auto exit = watch(sup);
  for (int i = 0; i < 5; ++i) {
    crash("a");
    sched.advance_time(1s);  // every backoff up to 1.6 s has elapsed only once it is due
    sched.advance_time(1s);
    sched.run();
    ASSERT_FALSE(exit->has_value()) << "gave up after " << i + 1 << " crashes";
  }
  crash("a");  // the sixth exit within 60 s
  ASSERT_TRUE(exit->has_value());
  EXPECT_TRUE(static_cast<bool>(**exit)) << "the parent must see an abnormal exit";
  EXPECT_NE(sys.render(**exit).find("gave up on child a"), std::string::npos) << sys.render(**exit);
  EXPECT_EQ(events->back(), "stop:b") << "the sibling is stopped before the supervisor exits";
}

// #40: a child that exited with a message (an actor's quit(make_error(…, "why"))) is logged with
// it, and a supervisor that gives up carries it up: "runtime_error" alone named no cause.
TEST_F(supervisor_fixture, an_exit_and_a_give_up_name_the_childs_error) {
  std::vector<std::string> lines;
  runtime::logger::global().set_sink([&lines](std::string_view line) { lines.emplace_back(line); });
  auto sup = start(options("root"), {child("a")});
  auto exit = watch(sup);
  for (int i = 0; i < 6; ++i) {
    crash("a");
    sched.advance_time(2s);
    sched.run();
  }
  runtime::logger::global().set_sink(nullptr);
  int exited = 0;
  for (const auto& l : lines)
    exited += l.find("\"msg\":\"child exited\"") != std::string::npos && l.find("\"error\":\"boom\"") != std::string::npos;
  EXPECT_GE(exited, 5) << "the exit's message is in the log";
  ASSERT_TRUE(exit->has_value());
  EXPECT_EQ(runtime::exit_reason_detail(**exit), "supervisor root gave up on child a: boom");
}

caf::behavior failing_at_start(caf::event_based_actor* self, journal j) {
  j->push_back("start:leaf");
  self->quit(caf::make_error(caf::sec::runtime_error, "permanent problem"));
  return {[](int32_t) {}};
}

// #40: a cause that never goes away, three supervisors deep (a leaf that fails as it starts): the
// leaf's supervisor gives up, its parent restarts it and gives up in turn, and the root gives up
// too, so the process can exit non-zero; before, the give-ups never crowded into one parent's
// window and the tree restarted for good. The reason says what failed all the way up.
TEST_F(supervisor_fixture, a_permanent_failure_deep_in_the_tree_reaches_the_root) {
  std::vector<child_spec> leaf;
  leaf.push_back(child_spec{"leaf", [this](caf::actor_system& s) { return s.spawn(failing_at_start, events); },
                            runtime::restart_mode::permanent, {}});
  std::vector<child_spec> mid;
  mid.push_back(runtime::supervisor_child(options("inner"), std::move(leaf)));
  std::vector<child_spec> top;
  top.push_back(runtime::supervisor_child(options("middle"), std::move(mid)));
  auto root = start(options("root"), std::move(top));
  auto exit = watch(root);
  runtime::logger::global().set_sink([](std::string_view) {});  // hundreds of restarts
  int steps = 0;
  for (; steps < 2000 && !exit->has_value(); ++steps) {
    sched.advance_time(5s);
    sched.run();
  }
  runtime::logger::global().set_sink(nullptr);
  std::printf("the root gave up after %d s of test time\n", steps * 5);
  ASSERT_TRUE(exit->has_value()) << "the root never gave up";
  const auto why = runtime::exit_reason_detail(**exit);
  EXPECT_NE(why.find("supervisor root gave up on child middle"), std::string::npos) << why;
  EXPECT_NE(why.find("permanent problem"), std::string::npos) << why;
}

// The actors' wall time moves with the test clock (runtime::actor_system_clock), so a cooldown or
// an age kept in wall time is driven by advance_time like a timer.
TEST_F(supervisor_fixture, an_actors_wall_time_moves_with_the_test_clock) {
  runtime::actor_system_clock clock{sys.clock()};
  const auto wall = clock.wall();
  const auto now = clock.now();
  sched.advance_time(90s);
  EXPECT_EQ(clock.now() - now, std::chrono::seconds(90));
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(clock.wall() - wall), std::chrono::seconds(90));
  EXPECT_EQ(clock.wall_ms() - std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count(), 90'000);
}

TEST_F(supervisor_fixture, stops_children_in_reverse_start_order) {
  auto sup = start(options("root"), {child("a"), child("b"), child("c")});
  auto exit = watch(sup);
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  sched.run();
  ASSERT_TRUE(exit->has_value());
  EXPECT_EQ(**exit, caf::exit_reason::user_shutdown);
  EXPECT_EQ(*events, (std::vector<std::string>{"start:a", "start:b", "start:c", "stop:c", "stop:b", "stop:a"}));
}

TEST_F(supervisor_fixture, kills_a_child_that_misses_its_stop_deadline) {
  auto sup = start(options("root"), {child("a"), child("stubborn", true), child("c")});
  auto exit = watch(sup);
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  sched.run();
  EXPECT_FALSE(exit->has_value()) << "waits for the stubborn child";
  EXPECT_EQ(events->back(), "stop:c");
  sched.advance_time(2s);
  sched.run();
  ASSERT_TRUE(exit->has_value());
  EXPECT_EQ(*events, (std::vector<std::string>{"start:a", "start:stubborn", "start:c", "stop:c", "stop:stubborn",
                                               "stop:a"}));
}

// parallel_stop (independent children, one per scale set): every child is asked at once, so one
// that holds on delays none of the others; it is killed at its own deadline.
TEST_F(supervisor_fixture, parallel_stop_asks_every_child_at_once_and_kills_only_the_late_one) {
  auto o = options("scale_sets");
  o.parallel_stop = true;
  auto sup = start(o, {child("a"), child("stubborn", true), child("c")});
  auto exit = watch(sup);
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  sched.run();
  EXPECT_FALSE(exit->has_value()) << "waits for the stubborn child";
  EXPECT_EQ(*events, (std::vector<std::string>{"start:a", "start:stubborn", "start:c", "stop:a", "stop:c"}))
      << "a stopped beside c, not after the stubborn child";
  sched.advance_time(2s);
  sched.run();
  ASSERT_TRUE(exit->has_value());
  EXPECT_EQ(**exit, caf::exit_reason::user_shutdown);
  EXPECT_EQ(events->back(), "stop:stubborn");
}

TEST_F(supervisor_fixture, a_nested_supervisor_that_gives_up_is_restarted_by_its_parent) {
  auto inner_opts = options("inner");
  auto root = start(options("root"), {child("a"), runtime::supervisor_child(inner_opts, {child("w")})});
  for (int i = 0; i < 6; ++i) {
    crash("w");
    sched.advance_time(2s);
    sched.run();
  }
  auto s = status(root);
  ASSERT_EQ(s.children.size(), 2u);
  EXPECT_EQ(s.children[1].name, "inner");
  EXPECT_EQ(s.children[1].restarts, 1u) << "the parent restarted the inner supervisor once";
  EXPECT_TRUE(s.children[1].running);
  EXPECT_TRUE(s.children[0].running);
  EXPECT_EQ(std::count(events->begin(), events->end(), "start:w"), 7) << "6 incarnations + the fresh inner one";
}

// Asks `sup` something answered with a bool (an added child, a child stopped for good).
template <class... Ts>
std::optional<bool> ask_bool(caf::actor_system& sys, caf::scheduler::test_coordinator& sched, const caf::actor& sup, Ts... xs) {
  auto out = std::make_shared<std::optional<bool>>();
  sys.spawn(
      [](caf::event_based_actor* self, caf::actor t, std::shared_ptr<std::optional<bool>> result, Ts... args) {
        self->request(t, caf::infinite, std::move(args)...).then([result](bool b) { *result = b; });
      },
      sup, out, xs...);
  sched.run();
  return *out;
}

TEST_F(supervisor_fixture, a_child_added_while_running_is_supervised_and_one_stopped_for_good_stays_down) {
  auto sup = start(options("root"), {child("a"), child("b")});
  EXPECT_EQ(ask_bool(sys, sched, sup, child("c")), std::optional<bool>{true});
  EXPECT_EQ(ask_bool(sys, sched, sup, child("c")), std::optional<bool>{false}) << "a running child's name is taken";
  crash("c");
  sched.advance_time(100ms);
  sched.run();
  EXPECT_EQ(std::count(events->begin(), events->end(), "start:c"), 2) << "an added child is restarted like the others";
  EXPECT_EQ(ask_bool(sys, sched, sup, msg::stop_child_atom_v, std::string{"b"}), std::optional<bool>{true});
  EXPECT_EQ(ask_bool(sys, sched, sup, msg::stop_child_atom_v, std::string{"b"}), std::optional<bool>{false});
  sched.advance_time(10s);
  sched.run();
  EXPECT_EQ(std::count(events->begin(), events->end(), "start:b"), 1) << "stopped for good: never restarted";
  EXPECT_EQ(std::count(events->begin(), events->end(), "start:a"), 1) << "the others never noticed";
  auto s = status(sup);
  ASSERT_EQ(s.children.size(), 3u);
  EXPECT_FALSE(s.children[1].running);
  // The name is free again: a child added under it takes the slot.
  EXPECT_EQ(ask_bool(sys, sched, sup, child("b")), std::optional<bool>{true});
  EXPECT_EQ(status(sup).children.size(), 3u);
  EXPECT_EQ(std::count(events->begin(), events->end(), "start:b"), 2);
  // An orderly stop of the whole supervisor stops the added ones too.
  auto exit = watch(sup);
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  sched.run();
  ASSERT_TRUE(exit->has_value());
  EXPECT_EQ(events->back(), "stop:a");
}

TEST_F(supervisor_fixture, a_child_stopped_for_good_that_ignores_the_request_is_killed_at_its_deadline) {
  auto sup = start(options("root"), {child("a"), child("stubborn", true)});
  auto answered = std::make_shared<std::optional<bool>>();
  sys.spawn(
      [](caf::event_based_actor* self, caf::actor t, std::shared_ptr<std::optional<bool>> result) {
        self->request(t, caf::infinite, msg::stop_child_atom_v, std::string{"stubborn"}).then([result](bool b) { *result = b; });
      },
      sup, answered);
  sched.run();
  EXPECT_FALSE(answered->has_value()) << "answered only once the child is down";
  sched.advance_time(2s);
  sched.run();
  EXPECT_EQ(*answered, std::optional<bool>{true});
  EXPECT_EQ(events->back(), "stop:stubborn");
  EXPECT_TRUE(status(sup).children[0].running);
}

TEST_F(supervisor_fixture, restarts_and_exit_reasons_are_metrics_and_readiness_follows) {
  runtime::metrics m;
  runtime::readiness ready;
  auto o = options("root");
  o.metrics = &m.supervision();
  o.ready = &ready;
  start(o, {child("a")});
  EXPECT_TRUE(ready.check().ready);
  crash("a");
  EXPECT_FALSE(ready.check().ready) << "a child waiting for its restart makes the supervisor not ready";
  EXPECT_NE(ready.check().body.find("restarting a"), std::string::npos);
  sched.advance_time(100ms);
  sched.run();
  EXPECT_TRUE(ready.check().ready);
  const auto text = m.render();
  EXPECT_NE(text.find("headroom_supervisor_restarts_total{child=\"a\",supervisor=\"root\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("headroom_supervisor_child_last_exit_info{child=\"a\",reason=\"runtime_error\",supervisor=\"root\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("headroom_supervisor_child_up{child=\"a\",supervisor=\"root\"} 1"), std::string::npos);
}

}  // namespace

namespace {

// Asks `target` (a relay) which incarnation answers: its actor id, or 0 when the request failed.
uint64_t ask(caf::actor_system& sys, caf::scheduler::test_coordinator& sched, const caf::actor& target) {
  auto out = std::make_shared<uint64_t>(~uint64_t{0});
  sys.spawn(
      [](caf::event_based_actor* self, caf::actor t, std::shared_ptr<uint64_t> result) {
        self->request(t, caf::infinite, int32_t{1}).then([result](uint64_t id) { *result = id; }, [result](caf::error&) { *result = 0; });
      },
      target, out);
  sched.run();
  EXPECT_NE(*out, ~uint64_t{0}) << "no answer at all";
  return *out;
}

}  // namespace

// A watcher hears of each restart (not of the first start), by name; one that ended is dropped.
TEST_F(supervisor_fixture, relay_tells_its_watchers_of_each_new_incarnation) {
  auto relay = runtime::spawn_relay(sys, "a");
  auto spec = child("a");
  spec.relay = relay;
  auto heard = std::make_shared<std::vector<std::string>>();
  // Data goes in as a spawn argument: CAF 0.17.6 dereferences a null argument tuple when an actor
  // is spawned with none (UBSan flags it).
  auto watcher = sys.spawn(
      [](caf::event_based_actor*, std::shared_ptr<std::vector<std::string>> heard) -> caf::behavior {
        return {[heard](msg::restarted_atom, const std::string& child) { heard->push_back(child); }};
      },
      heard);
  auto gone = sys.spawn(
      [](caf::event_based_actor*, std::shared_ptr<std::vector<std::string>> heard) -> caf::behavior {
        return {[heard](msg::restarted_atom, const std::string& child) { heard->push_back("gone:" + child); }};
      },
      heard);
  caf::anon_send(relay, msg::watch_atom_v);  // anonymous: no one to tell, ignored
  caf::send_as(watcher, relay, msg::watch_atom_v);
  caf::send_as(gone, relay, msg::watch_atom_v);
  auto sup = start(options("root"), {spec});
  runtime::own_relay(relay, sup);
  sched.run();
  EXPECT_TRUE(heard->empty()) << "the first incarnation is no restart";
  caf::anon_send_exit(gone, caf::exit_reason::kill);
  sched.run();
  crash("a");
  sched.advance_time(100ms);
  sched.run();
  ASSERT_EQ(*heard, std::vector<std::string>{"a"});
  crash("a");
  sched.advance_time(1s);
  sched.run();
  EXPECT_EQ(heard->size(), 2u) << "each restart";
  to_stop.push_back(watcher);
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  sched.run();
}

TEST_F(supervisor_fixture, relay_reaches_each_incarnation_and_refuses_while_the_child_is_down) {
  auto relay = runtime::spawn_relay(sys, "a");
  auto spec = child("a");
  spec.relay = relay;
  auto sup = start(options("root"), {spec});
  runtime::own_relay(relay, sup);
  sched.run();
  const auto first = handles.at("a").id();
  EXPECT_EQ(ask(sys, sched, relay), first) << "the request reaches the child and its answer the asker";

  crash("a");
  EXPECT_EQ(ask(sys, sched, relay), 0u) << "while the child is down a request fails at once";
  sched.advance_time(100ms);
  sched.run();
  const auto second = handles.at("a").id();
  ASSERT_NE(second, first);
  EXPECT_EQ(ask(sys, sched, relay), second) << "the same relay reaches the restarted child";

  auto relay_exit = watch(relay);
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  sched.run();
  EXPECT_TRUE(relay_exit->has_value()) << "the relay exits with its owner";
}
