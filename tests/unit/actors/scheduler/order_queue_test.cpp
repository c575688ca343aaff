// Concurrent provisioning's queue (actors/scheduler/runner_maker.hpp): orders go out oldest
// first, no more than the free makers; none while provisioning is paused; those of a scope GitHub
// refused since they were decided are dropped, not sent; and a worker is "being made" from the
// moment its order is queued until its maker answers (the cycle leaves such workers alone).

#include <gtest/gtest.h>

#include "actors/scheduler/runner_maker.hpp"

namespace {

using namespace headroom;
using namespace headroom::actors::scheduler;

runner_order order(const std::string& name, const std::string& scope = "orgs/acme") {
  runner_order o;
  o.worker.name = name;
  o.scope = scope;
  o.pool = std::make_shared<const pool_options>();
  return o;
}

std::vector<std::string> names(const std::vector<runner_order>& orders) {
  std::vector<std::string> out;
  for (const auto& o : orders)
    out.push_back(o.worker.name);
  return out;
}

const auto no_scope_waits = [](const std::string&) { return false; };

TEST(order_queue, orders_go_oldest_first_and_no_more_than_the_free_makers) {
  order_queue q;
  for (const auto* n : {"r-1", "r-2", "r-3", "r-4", "r-5"})
    q.add(order(n));
  std::vector<runner_order> dropped;
  EXPECT_EQ(names(q.take(2, false, no_scope_waits, dropped)), (std::vector<std::string>{"r-1", "r-2"}));
  EXPECT_EQ(q.in_flight(), 2u);
  EXPECT_EQ(q.queued(), 3u);
  EXPECT_TRUE(q.take(0, false, no_scope_waits, dropped).empty()) << "no maker free";
  q.done("r-1");
  EXPECT_EQ(q.in_flight(), 1u);
  EXPECT_EQ(names(q.take(1, false, no_scope_waits, dropped)), (std::vector<std::string>{"r-3"}));
  EXPECT_EQ(names(q.take(8, false, no_scope_waits, dropped)), (std::vector<std::string>{"r-4", "r-5"}));
  EXPECT_TRUE(dropped.empty());
  EXPECT_EQ(q.queued(), 0u);
}

TEST(order_queue, a_worker_is_being_made_from_its_order_until_its_maker_answers) {
  order_queue q;
  EXPECT_FALSE(q.making("r-1"));
  q.add(order("r-1"));
  EXPECT_TRUE(q.making("r-1")) << "queued";
  std::vector<runner_order> dropped;
  ASSERT_EQ(q.take(1, false, no_scope_waits, dropped).size(), 1u);
  EXPECT_TRUE(q.making("r-1")) << "sent";
  q.done("r-1");
  EXPECT_FALSE(q.making("r-1")) << "answered";
}

TEST(order_queue, while_paused_orders_wait_and_none_is_lost) {
  order_queue q;
  q.add(order("r-1"));
  q.add(order("r-2"));
  std::vector<runner_order> dropped;
  EXPECT_TRUE(q.take(8, true, no_scope_waits, dropped).empty());
  EXPECT_TRUE(dropped.empty());
  EXPECT_TRUE(q.making("r-1") && q.making("r-2")) << "still counted as being made";
  EXPECT_EQ(names(q.take(8, false, no_scope_waits, dropped)), (std::vector<std::string>{"r-1", "r-2"}));
}

TEST(order_queue, orders_of_a_scope_in_its_backoff_are_dropped_and_the_others_still_go) {
  order_queue q;
  q.add(order("r-1", "orgs/refused"));
  q.add(order("r-2", "orgs/acme"));
  q.add(order("r-3", "orgs/refused"));
  q.add(order("r-4", "repos/o/r"));
  std::vector<runner_order> dropped;
  const auto go = q.take(2, false, [](const std::string& scope) { return scope == "orgs/refused"; }, dropped);
  EXPECT_EQ(names(go), (std::vector<std::string>{"r-2", "r-4"})) << "a dropped order takes no maker";
  EXPECT_EQ(names(dropped), (std::vector<std::string>{"r-1", "r-3"}));
  EXPECT_FALSE(q.making("r-1")) << "a dropped order is no longer being made: its worker is over";
  EXPECT_EQ(q.queued(), 0u);
}

}  // namespace
