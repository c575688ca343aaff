// The policy buffers wired to a real CAF actor under the deterministic test_coordinator: whatever
// producers do, the actor's mailbox holds at most one wake-up per buffer.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>

#include "messages/type_ids.hpp"
#include "runtime/mailbox/actor_waker.hpp"
#include "runtime/mailbox/bounded_fifo.hpp"
#include "runtime/mailbox/coalescing_slot.hpp"

namespace {

using namespace headroom;

struct consumer_state {
  std::unique_ptr<runtime::coalescing_slot<uint32_t>> capacity;
  std::unique_ptr<runtime::bounded_fifo<int>> outbox;
  std::vector<uint32_t> capacities_seen;
  std::vector<int> outbox_seen;
  int wakeups = 0;
};

struct fixture : ::testing::Test {
  fixture() : sys(make_cfg()), sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}
  static caf::actor_system_config& make_cfg() {
    static caf::actor_system_config cfg;
    cfg.set("scheduler.policy", caf::atom("testing"));
    return cfg;
  }
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
};

TEST_F(fixture, thousand_offers_make_one_wakeup_and_the_actor_sees_only_the_newest) {
  auto shared = std::make_shared<consumer_state*>(nullptr);
  // `shared` is a spawn argument, not a capture: see supervisor_test.cpp on CAF's empty-argument spawn.
  auto consumer = sys.spawn([](caf::stateful_actor<consumer_state>* self, std::shared_ptr<consumer_state*> shared) -> caf::behavior {
    *shared = &self->state;
    self->state.capacity = std::make_unique<runtime::coalescing_slot<uint32_t>>(
        "listener/capacity", runtime::wake_actor(caf::actor_cast<caf::actor>(self), 0));
    self->state.outbox = std::make_unique<runtime::bounded_fifo<int>>(
        "shard/outbox", runtime::wake_actor(caf::actor_cast<caf::actor>(self), 1), 8);
    return {[self](msg::buffer_wakeup w) {
      ++self->state.wakeups;
      if (w.buffer == 0) {
        if (auto v = self->state.capacity->consume())
          self->state.capacities_seen.push_back(*v);
      } else {
        for (int item : self->state.outbox->consume())
          self->state.outbox_seen.push_back(item);
      }
    }};
  }, shared);
  sched.run();
  auto* st = *shared;
  ASSERT_NE(st, nullptr);
  for (uint32_t i = 1; i <= 1000; ++i)
    st->capacity->offer(i);
  for (int i = 0; i < 20; ++i)
    st->outbox->push(i);
  // Two wake-ups queued in total (one per buffer), however many items arrived.
  sched.run();
  EXPECT_EQ(st->wakeups, 2);
  EXPECT_EQ(st->capacities_seen, (std::vector<uint32_t>{1000}));
  EXPECT_EQ(st->outbox_seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(st->outbox->stats()->dropped.load(), 12u);
  caf::anon_send_exit(consumer, caf::exit_reason::user_shutdown);
  sched.run();
}

}  // namespace
