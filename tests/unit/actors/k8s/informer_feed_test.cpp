// informer_feed: informer events reach an actor as typed messages, coalesced per object, with
// one wake-up however many events arrive.
#include "actors/k8s/informer_feed.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include "messages/type_ids.hpp"

using namespace headroom;
using pod_informer = k8s::informer<k8s::pod>;

namespace {

struct consumer_state {
  std::unique_ptr<actors::informer_feed<k8s::pod>> feed;
  std::vector<std::string> seen;
  int wakeups = 0;
};

std::shared_ptr<const k8s::pod> make_pod(const std::string& name, const std::string& phase) {
  auto p = std::make_shared<k8s::pod>();
  p->meta.ns = "ci";
  p->meta.name = name;
  p->phase = phase;
  return p;
}

}  // namespace

TEST(informer_feed, latest_state_per_object_one_wakeup) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.policy", caf::atom("testing"));
  caf::actor_system sys{cfg};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  pod_informer::handler emit;
  auto state_ptr = std::make_shared<consumer_state*>(nullptr);
  auto consumer = sys.spawn(
      [](caf::stateful_actor<consumer_state>* self, std::shared_ptr<consumer_state*> out,
         pod_informer::handler* hook) -> caf::behavior {
        *out = &self->state;
        self->state.feed = std::make_unique<actors::informer_feed<k8s::pod>>(
            "pods/capacity_monitor", caf::actor_cast<caf::actor>(self), 7);
        self->state.feed->attach([hook](pod_informer::handler h) { *hook = std::move(h); });
        return {[self](msg::buffer_wakeup w) {
          EXPECT_EQ(w.buffer, 7u);
          ++self->state.wakeups;
          self->state.feed->drain([self](const msg::pod_event& e) {
            self->state.seen.push_back(e.object->meta.name + ":" + e.object->phase + ":" +
                                       std::to_string(static_cast<int>(e.change)));
          });
        }};
      },
      state_ptr, &emit);
  sched.run();
  ASSERT_TRUE(emit);
  // A burst from the I/O thread: three updates of one pod, one of another, then a deletion.
  emit({pod_informer::event_type::added, make_pod("runner-1", "Pending"), nullptr});
  emit({pod_informer::event_type::modified, make_pod("runner-1", "Running"), nullptr});
  emit({pod_informer::event_type::added, make_pod("placeholder-3", "Pending"), nullptr});
  emit({pod_informer::event_type::modified, make_pod("runner-1", "Succeeded"), nullptr});
  emit({pod_informer::event_type::deleted, make_pod("placeholder-3", "Pending"), nullptr});
  sched.run();
  auto* st = *state_ptr;
  EXPECT_EQ(st->wakeups, 1);
  EXPECT_EQ(st->seen, (std::vector<std::string>{"runner-1:Succeeded:1", "placeholder-3:Pending:2"}));
  EXPECT_EQ(st->feed->stats()->coalesced.load(), 3u);
  caf::anon_send_exit(consumer, caf::exit_reason::kill);
  sched.run();
}
