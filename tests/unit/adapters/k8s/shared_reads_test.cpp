// Start-up reads many scale sets make alike (adapters/k8s/shared_reads.hpp): askers while a read is
// in flight share it; a success is reused for its window and then read again; a failure is not
// kept; an object found in a list is answered as a GET of it would be.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/fields.hpp"
#include "adapters/k8s/shared_reads.hpp"
#include "runtime/clock.hpp"
#include "unit/support/scripted_exchange.hpp"

using namespace headroom;
using namespace std::chrono_literals;

namespace {

struct shared_reads_test : ::testing::Test {
  runtime::manual_clock clock;
  test_support::scripted_exchange io;
  k8s::client kube{k8s::connection{"https://api.test", {}, [] { return std::string{"token"}; }}, io};
  std::shared_ptr<k8s::shared_reads> reads = std::make_shared<k8s::shared_reads>(kube, 30s);
  std::vector<k8s::api_result> got;
  shared_reads_test() { io.use_clock(clock); }

  k8s::api_callback keep() {
    return [this](k8s::api_result r) { got.push_back(std::move(r)); };
  }
  const std::string* body(size_t i) const { return std::get_if<std::string>(&got.at(i)); }
  const k8s::api_error* error(size_t i) const { return std::get_if<k8s::api_error>(&got.at(i)); }
};

const auto& priority_classes = k8s::kinds::priority_classes;

TEST_F(shared_reads_test, askers_while_a_read_is_in_flight_share_it_and_a_success_is_reused_for_its_window) {
  for (int i = 0; i < 1000; ++i)
    reads->get(priority_classes, "", "arc-runner", keep());
  reads->get(priority_classes, "", "arc-workflow", keep());
  ASSERT_EQ(io.waiting().size(), 2u) << "one read per object, not one per asker";
  ASSERT_TRUE(io.answer("GET", "/priorityclasses/arc-runner", 200, R"({"metadata":{"name":"arc-runner"},"value":0})"));
  ASSERT_EQ(got.size(), 1000u);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NE(body(i), nullptr) << i;
  EXPECT_EQ(k8s::int_at(*body(999), {"value"}), 0);

  clock.advance(29s);
  reads->get(priority_classes, "", "arc-runner", keep());
  EXPECT_EQ(got.size(), 1001u) << "answered from the kept success";
  EXPECT_EQ(io.waiting().size(), 1u) << "only arc-workflow's read waits";
  clock.advance(2s);
  reads->get(priority_classes, "", "arc-runner", keep());
  EXPECT_EQ(io.waiting().size(), 2u) << "past its window: read again";
  EXPECT_EQ(reads->counted().requests, 3u);
  EXPECT_EQ(reads->counted().answers, 1003u);
}

TEST_F(shared_reads_test, a_failure_reaches_every_asker_and_is_not_kept) {
  reads->get(priority_classes, "", "arc-runner", keep());
  reads->get(priority_classes, "", "arc-runner", keep());
  ASSERT_TRUE(io.answer("GET", "/priorityclasses/arc-runner", 403, R"({"kind":"Status","reason":"Forbidden","code":403})"));
  ASSERT_EQ(got.size(), 2u);
  ASSERT_NE(error(0), nullptr);
  EXPECT_EQ(error(1)->what, k8s::api_error::kind::forbidden);
  reads->get(priority_classes, "", "arc-runner", keep());
  EXPECT_EQ(io.waiting().size(), 1u) << "the next asker reads again";
}

TEST_F(shared_reads_test, an_object_found_in_one_shared_list_is_answered_as_its_get_would_be) {
  for (const char* name : {"headroom-owner-a-linux", "headroom-owner-a-mac", "headroom-owner-a-new"})
    reads->find_in_list(k8s::kinds::configmaps, "arc", "headroom.dev/owner=true", name, keep());
  ASSERT_EQ(io.waiting().size(), 1u) << "one list for every asker";
  EXPECT_NE(io.waiting().front().request.url.find("labelSelector=headroom.dev%2Fowner%3Dtrue"), std::string::npos)
      << io.waiting().front().request.url;
  ASSERT_TRUE(io.answer("GET", "/namespaces/arc/configmaps", 200,
                        R"({"kind":"ConfigMapList","metadata":{},"items":[)"
                        R"({"metadata":{"name":"headroom-owner-a-linux","uid":"u-linux"}},)"
                        R"({"metadata":{"name":"headroom-owner-a-mac","uid":"u-mac"}}]})"));
  ASSERT_EQ(got.size(), 3u);
  ASSERT_NE(body(0), nullptr);
  EXPECT_EQ(k8s::uid_of(*body(0)), "u-linux");
  EXPECT_EQ(k8s::uid_of(*body(1)), "u-mac");
  ASSERT_NE(error(2), nullptr) << "not in the list";
  EXPECT_EQ(error(2)->what, k8s::api_error::kind::not_found);
  EXPECT_EQ(error(2)->name, "headroom-owner-a-new");
}

}  // namespace

namespace {

// The client kept a pointer to the caller's resource_kind until the answer came; the shared reads'
// copy of it was gone by then, and counting the response read freed memory (a crash in the chaos
// suite's restart; the ASan unit pass reads it here). A call now keeps what it needs of the kind.
TEST_F(shared_reads_test, a_call_outlives_the_resource_kind_it_was_given) {
  std::vector<std::string> counted;
  kube.on_response([&](const std::string& verb, const std::string& resource, long status) {
    counted.push_back(verb + " " + resource + " " + std::to_string(status));
  });
  {
    auto kind = std::make_unique<k8s::resource_kind>(k8s::resource_kind{"example.dev", "v1", "widgets", true});
    kube.get(*kind, "arc", "w-1", keep());
  }
  ASSERT_TRUE(io.answer("GET", "/apis/example.dev/v1/namespaces/arc/widgets/w-1", 404, R"({"kind":"Status","reason":"NotFound","code":404})"));
  ASSERT_EQ(got.size(), 1u);
  ASSERT_NE(error(0), nullptr);
  EXPECT_EQ(error(0)->resource, "widgets");
  EXPECT_EQ(counted, (std::vector<std::string>{"get widgets 404"}));
}

}  // namespace
