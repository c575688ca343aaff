// The process's informer set (adapters/k8s/informer_set.hpp): two modes asking for the same kind,
// namespace and selectors get one informer (one list, one watch, one cache); other selectors or
// another namespace get their own; an informer started by each of its users lists once; the set
// stops every watch it made.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/informer_set.hpp"
#include "runtime/clock.hpp"
#include "unit/support/scripted_exchange.hpp"

using namespace headroom;

namespace {

struct informer_set_test : ::testing::Test {
  runtime::manual_clock clock;
  test_support::scripted_exchange io;
  k8s::client kube{k8s::connection{"https://api.test", {}, [] { return std::string{"token"}; }}, io};
  informer_set_test() { io.use_clock(clock); }

  int requests(const std::string& part) const {
    int n = 0;
    for (const auto& c : io.waiting())
      n += c.request.url.find(part) != std::string::npos ? 1 : 0;
    return n;
  }
};

TEST_F(informer_set_test, one_informer_per_kind_namespace_and_selector_started_once) {
  k8s::informer_set set{kube};
  k8s::informer<k8s::node>::options nodes;
  nodes.kind = k8s::kinds::nodes;
  auto for_scale_sets = set.get<k8s::node>(nodes);
  auto for_scheduler = set.get<k8s::node>(nodes);
  EXPECT_EQ(for_scale_sets, for_scheduler) << "the same nodes: one informer";

  k8s::informer<k8s::pod>::options pods;
  pods.kind = k8s::kinds::pods;
  pods.ns = "arc";
  pods.label_selector = "headroom.dev/scale-set in (linux)";
  auto runners = set.get<k8s::pod>(pods);
  pods.label_selector = "headroom.dev/scale-set=pool";
  auto workers = set.get<k8s::pod>(pods);
  pods.ns = "ci";
  auto elsewhere = set.get<k8s::pod>(pods);
  EXPECT_NE(runners, workers) << "another selector";
  EXPECT_NE(workers, elsewhere) << "another namespace";
  EXPECT_EQ(set.size(), 4u);

  for_scale_sets->start();
  for_scheduler->start();
  EXPECT_EQ(requests("/api/v1/nodes"), 1) << "started by both users, listed once";
  ASSERT_TRUE(io.answer("GET", "/api/v1/nodes", 200, R"({"kind":"NodeList","metadata":{"resourceVersion":"7"},"items":[]})"));
  EXPECT_TRUE(for_scheduler->synced());
  EXPECT_EQ(requests("watch=true"), 1) << "one watch for both";
  set.stop();
  io.deliver_cancelled();
  EXPECT_EQ(requests("watch=true"), 0) << "the set stops what it made";
}

}  // namespace
