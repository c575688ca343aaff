#pragma once

// The environment one test binary shares across its tests (a control plane, a test peer, an I/O
// thread, an actor system): made on first use, and stopped after the last test but before static
// destruction, while the logger and the secret registry still exist (the I/O thread's last
// callbacks log). Declare one at namespace scope:
//
//   testenv::shared_env<env> the_env{make_env, stop_env};
//   env& shared() { return the_env.get(); }

#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <optional>
#include <utility>

namespace headroom::testenv {

template <class Env>
class shared_env {
 public:
  shared_env(std::function<Env()> make, std::function<void(Env&)> stop) : make_(std::move(make)), stop_(std::move(stop)) {
    ::testing::AddGlobalTestEnvironment(new teardown{this});  // gtest owns it
  }

  Env& get() {
    std::call_once(once_, [this] { env_.emplace(make_()); });
    return *env_;
  }

 private:
  struct teardown : ::testing::Environment {
    explicit teardown(shared_env* o) : owner(o) {}
    void TearDown() override {
      if (owner->env_)
        owner->stop_(*owner->env_);
    }
    shared_env* owner;
  };

  std::function<Env()> make_;
  std::function<void(Env&)> stop_;
  std::once_flag once_;
  std::optional<Env> env_;
};

}  // namespace headroom::testenv
