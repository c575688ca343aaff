#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "adapters/k8s/client.hpp"
#include "runtime/clock.hpp"

namespace headroom::k8s {

// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics:
//
// - every `retry_period` (2 s) the candidate reads the Lease; it takes or renews it when it holds
//   it already, when nobody does, or when the holder's record has not changed for
//   `lease_duration` (15 s) *as observed locally* — never by comparing the holder's clock to ours;
// - writes carry the read resourceVersion, so two candidates can never both win a round;
// - a leader that has not renewed for `renew_deadline` (10 s) stops leading before its lease can
//   expire for anyone else; `release()` hands the lease over at once on an orderly shutdown.
//
// Callbacks run on the transport's I/O thread: they should send a message to the supervisor that
// starts or stops the acting actors.
class leader_elector : public std::enable_shared_from_this<leader_elector> {
 public:
  struct options {
    std::string ns = "kube-system";
    std::string name = "headroom";
    std::string identity;  // pod name or hostname + a random suffix
    std::chrono::seconds lease_duration{15};
    std::chrono::seconds renew_deadline{10};
    std::chrono::seconds retry_period{2};
    std::function<void()> on_started_leading;
    std::function<void()> on_stopped_leading;
    std::function<void(const std::string&)> on_new_leader;  // whoever holds it now ("" = nobody)
    // The renew deadline and the lease's expiry are measured on it, and the Lease's times written
    // from its wall time; tests give a manual clock and move it. Null: the client's.
    const runtime::clock* clock = nullptr;
  };

  static std::shared_ptr<leader_elector> make(client& c, options opts);

  void start();
  // Stops campaigning; a leader stops leading (and, with release, clears the holder so another
  // candidate takes over on its next retry instead of after the lease duration).
  void stop(bool release, std::function<void()> released = {});

  bool leading() const { return leading_.load(); }
  const std::string& identity() const { return opts_.identity; }

 private:
  leader_elector(client& c, options opts) : client_(c), opts_(std::move(opts)) {}
  void tick();
  void on_read(api_result r);
  void write(bool create, const std::string& resource_version, int32_t transitions, const std::string& acquire_time);
  void on_write(api_result r, bool was_leader_attempt);
  void lose(const std::string& why);
  void schedule();

  client& client_;
  options opts_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> stopped_{false};
  // I/O thread only:
  std::string observed_holder_, observed_renew_time_;
  runtime::clock::time_point observed_at_{};
  runtime::clock::time_point last_renew_{};
  std::string last_holder_reported_ = "\x01";
};

// RFC 3339 with microseconds, as metav1.MicroTime is written: `clock`'s wall time.
std::string micro_time_now(const runtime::clock& clock);

}  // namespace headroom::k8s
