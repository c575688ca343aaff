#pragma once

// The one connection to the BigFleet shard: a gRPC bidirectional stream (Shard.Session), opened by
// headroom (no inbound listener). gRPC's synchronous stream API blocks, so each open stream has a
// reader thread and a writer thread of its own; neither ever runs on an actor's scheduler thread.
//
// Send side (shared across reconnects): the newest roll-up in a coalescing slot (a newer roll-up
// replaces an unsent one, so a slow stream carries only the latest state) and an outbox, a
// bounded FIFO of 256 with drop-newest, for BootstrapBlobResponse and ReclaimAck.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "bigfleet/v1alpha1/shard.pb.h"
#include "runtime/mailbox/bounded_fifo.hpp"
#include "runtime/mailbox/coalescing_slot.hpp"

namespace grpc {
class ClientContext;
}

namespace headroom::bigfleet {

namespace pb = ::bigfleet::v1alpha1;

struct shard_endpoint {
  std::string target;      // host:port
  std::string cluster_id;  // Hello.cluster_id; with mTLS, the client certificate's URI SAN is
                           // bigfleet://cluster/<cluster_id>
  // mTLS (optional): one CA bundle verifies the shard; our certificate and key identify us.
  bool tls = false;
  std::string ca_pem, cert_pem, key_pem;
  std::string tls_server_name;  // overrides the name checked in the shard's certificate
  size_t max_message_bytes = 256u << 20;  // both directions, as the shard sets them
};

class send_queue {
 public:
  explicit send_queue(size_t outbox_capacity = 256);
  ~send_queue();
  send_queue(const send_queue&) = delete;
  send_queue& operator=(const send_queue&) = delete;

  // Any thread.
  void offer_rollup(pb::ClusterCapacityNeeds rollup);
  bool enqueue(pb::OperatorMessage message);  // false: the outbox was full and it was dropped

  // The writer: the next message to send (outbox first, then the newest roll-up), or nullopt once
  // `stop` is set. Blocks.
  std::optional<pb::OperatorMessage> next(const std::atomic<bool>& stop);
  void wake();  // wakes a writer blocked in next() (to notice `stop`)

  const runtime::buffer_stats_ptr& rollup_stats() const { return rollup_.stats(); }
  const runtime::buffer_stats_ptr& outbox_stats() const { return outbox_.stats(); }

 private:
  void signal();
  // Holds gRPC initialised while the queue lives (across reconnects and a restarted session):
  // else each stream's teardown, its channel the last gRPC object, ran gRPC's whole shutdown
  // (joining its timer and executor threads) on the closing actor's thread, and each reconnect
  // started gRPC again.
  struct grpc_hold {
    grpc_hold();
    ~grpc_hold();
  } grpc_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool signalled_ = false;
  runtime::coalescing_slot<pb::ClusterCapacityNeeds> rollup_;
  runtime::bounded_fifo<pb::OperatorMessage> outbox_;
};

class shard_stream {
 public:
  struct callbacks {
    std::function<void()> on_open;                            // Hello was sent
    std::function<void(pb::ShardMessage&&)> on_message;       // reader thread
    std::function<void(const std::string& reason)> on_closed;  // once, after both threads ended
  };

  // Starts connecting at once; results arrive through the callbacks.
  shard_stream(shard_endpoint endpoint, std::shared_ptr<send_queue> queue, callbacks cb);
  ~shard_stream();  // closes (without on_closed if it had not closed yet) and joins
  shard_stream(const shard_stream&) = delete;
  shard_stream& operator=(const shard_stream&) = delete;

  void close();

 private:
  void run();
  void fail(const std::string& reason);

  shard_endpoint endpoint_;
  std::shared_ptr<send_queue> queue_;
  callbacks cb_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> silenced_{false};
  std::mutex ctx_mu_;
  grpc::ClientContext* ctx_ = nullptr;  // owned by run(); cancelled through here
  std::string failure_;
  std::once_flag failed_;
  std::thread thread_;
};

}  // namespace headroom::bigfleet
