// scheduler_http (actors/scheduler/http.cpp) and the process's http endpoint
// (runtime/http_endpoint.cpp) under CAF's deterministic test_coordinator: each holds its server
// (which answers on its own threads) and tells the port it bound (port 0: one the system picked);
// a port it cannot bind makes it exit abnormally, for its supervisor to retry with backoff.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "actors/scheduler/scheduler.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"
#include "runtime/http_endpoint.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"

using namespace headroom;

namespace {

struct server_fixture : test_support::actor_fixture {
  ~server_fixture() override {
    for (const auto& a : actors)
      caf::anon_send_exit(a, caf::exit_reason::kill);
    sched.run();
  }

  // The port `a` answers to get_atom, or nullopt when it does not answer.
  template <class Handle>
  std::optional<uint16_t> port_of(const Handle& a) {
    auto out = std::make_shared<std::optional<uint16_t>>();
    actors.push_back(sys.spawn(
        [](caf::event_based_actor* self, Handle h, std::shared_ptr<std::optional<uint16_t>> out) {
          self->request(h, caf::infinite, caf::get_atom_v).then([out](uint16_t p) { *out = p; }, [](caf::error&) {});
        },
        a, out));
    sched.run();
    return *out;
  }
  // Whether `a` has ended, and how.
  template <class Handle>
  std::shared_ptr<std::optional<caf::error>> watch(const Handle& a) {
    auto out = std::make_shared<std::optional<caf::error>>();
    actors.push_back(sys.spawn(
        [](caf::event_based_actor* self, Handle h, std::shared_ptr<std::optional<caf::error>> out) -> caf::behavior {
          self->monitor(h);
          self->set_down_handler([out](caf::down_msg& d) { *out = d.reason; });
          return {[](int) {}};
        },
        a, out));
    sched.run();
    return out;
  }
  std::shared_ptr<const actors::scheduler::http_context> scheduler_http(const std::string& listen) {
    auto ctx = std::make_shared<actors::scheduler::http_context>();
    ctx->listen = listen;
    ctx->threads = 2;
    ctx->now_ms = [] { return int64_t{1'790'000'000'000}; };
    return ctx;
  }

  runtime::metrics m;         // outlive the endpoints, which hold them
  runtime::readiness ready;
  std::vector<caf::actor> actors;
};

TEST_F(server_fixture, scheduler_http_tells_the_port_it_bound_and_exits_when_it_cannot_bind) {
  auto first = actors::scheduler::spawn_scheduler_http(sys, scheduler_http("127.0.0.1:0"));
  actors.push_back(caf::actor_cast<caf::actor>(first));
  const auto port = port_of(first);
  ASSERT_TRUE(port.has_value());
  EXPECT_GT(*port, 0);
  auto second = actors::scheduler::spawn_scheduler_http(sys, scheduler_http("127.0.0.1:" + std::to_string(*port)));
  auto ended = watch(second);
  ASSERT_TRUE(ended->has_value()) << "the port is taken";
  EXPECT_TRUE(static_cast<bool>(**ended)) << "abnormally: its supervisor retries";
}

TEST_F(server_fixture, the_http_endpoint_tells_its_port_is_ready_and_exits_when_it_cannot_bind) {
  auto first = runtime::spawn_http_endpoint(sys, "127.0.0.1:0", m, ready);
  actors.push_back(caf::actor_cast<caf::actor>(first));
  const auto port = port_of(first);
  ASSERT_TRUE(port.has_value());
  EXPECT_GT(*port, 0);
  const auto r = ready.check();
  EXPECT_TRUE(r.ready) << r.body;
  EXPECT_NE(r.body.find("ok http"), std::string::npos) << r.body;
  auto second = runtime::spawn_http_endpoint(sys, "127.0.0.1:" + std::to_string(*port), m, ready);
  auto ended = watch(second);
  ASSERT_TRUE(ended->has_value());
  EXPECT_TRUE(static_cast<bool>(**ended));
}

}  // namespace
