#include "adapters/bigfleet/shard_stream.hpp"

#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>

#include "bigfleet/v1alpha1/shard.grpc.pb.h"
#include "runtime/log.hpp"

namespace headroom::bigfleet {

namespace {
constexpr std::string_view actor = "shard_stream";
}

// ---- send_queue ----

send_queue::grpc_hold::grpc_hold() { grpc_init(); }
send_queue::grpc_hold::~grpc_hold() { grpc_shutdown(); }

send_queue::~send_queue() = default;

send_queue::send_queue(size_t outbox_capacity)
    : rollup_("bigfleet_rollup", [this] { signal(); }),
      outbox_("bigfleet_outbox", [this] { signal(); }, outbox_capacity) {}

void send_queue::signal() {
  {
    std::lock_guard lock(mu_);
    signalled_ = true;
  }
  cv_.notify_all();
}

void send_queue::wake() { signal(); }

void send_queue::offer_rollup(pb::ClusterCapacityNeeds rollup) { rollup_.offer(std::move(rollup)); }

bool send_queue::enqueue(pb::OperatorMessage message) { return outbox_.push(std::move(message)); }

std::optional<pb::OperatorMessage> send_queue::next(const std::atomic<bool>& stop) {
  for (;;) {
    if (stop.load())
      return std::nullopt;
    // Each consume re-arms its buffer before taking, so a value offered after this point wakes
    // the wait below: nothing is ever left behind.
    if (auto items = outbox_.consume(1); !items.empty())
      return std::move(items.front());
    if (auto rollup = rollup_.consume()) {
      pb::OperatorMessage m;
      *m.mutable_rollup() = std::move(*rollup);
      return m;
    }
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return signalled_ || stop.load(); });
    signalled_ = false;
  }
}

// ---- shard_stream ----

shard_stream::shard_stream(shard_endpoint endpoint, std::shared_ptr<send_queue> queue, callbacks cb)
    : endpoint_(std::move(endpoint)), queue_(std::move(queue)), cb_(std::move(cb)) {
  thread_ = std::thread([this] { run(); });
}

shard_stream::~shard_stream() {
  silenced_ = true;
  close();
  if (thread_.joinable())
    thread_.join();
}

void shard_stream::close() {
  stop_ = true;
  {
    std::lock_guard lock(ctx_mu_);
    if (ctx_)
      ctx_->TryCancel();
  }
  queue_->wake();
}

void shard_stream::fail(const std::string& reason) {
  std::call_once(failed_, [&] {
    failure_ = reason;
    close();
  });
}

void shard_stream::run() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(endpoint_.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(endpoint_.max_message_bytes));
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (endpoint_.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = endpoint_.ca_pem;
    ssl.pem_cert_chain = endpoint_.cert_pem;
    ssl.pem_private_key = endpoint_.key_pem;
    creds = grpc::SslCredentials(ssl);
    if (!endpoint_.tls_server_name.empty())
      args.SetSslTargetNameOverride(endpoint_.tls_server_name);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  auto channel = grpc::CreateCustomChannel(endpoint_.target, creds, args);
  auto stub = pb::Shard::NewStub(channel);
  grpc::ClientContext ctx;
  bool stopped;
  {
    std::lock_guard lock(ctx_mu_);
    stopped = stop_.load();
    if (!stopped)
      ctx_ = &ctx;
  }
  if (stopped)
    fail("closed before connecting");
  std::unique_ptr<grpc::ClientReaderWriter<pb::OperatorMessage, pb::ShardMessage>> stream;
  std::thread writer;
  if (failure_.empty()) {
    stream = stub->Session(&ctx);
    pb::OperatorMessage hello;
    hello.mutable_hello()->set_cluster_id(endpoint_.cluster_id);
    hello.mutable_hello()->set_protocol_version("v1alpha1");
    if (!stream->Write(hello)) {
      fail("could not send Hello");
    } else {
      if (cb_.on_open)
        cb_.on_open();
      writer = std::thread([this, &stream] {
        while (auto m = queue_->next(stop_)) {
          if (!stream->Write(*m)) {
            fail("send failed");
            return;
          }
        }
      });
      pb::ShardMessage in;
      while (!stop_ && stream->Read(&in)) {
        if (cb_.on_message)
          cb_.on_message(std::move(in));
        in.Clear();
      }
      fail("the shard ended the stream");
    }
  }
  if (writer.joinable())
    writer.join();
  std::string reason = failure_;
  if (stream) {
    const grpc::Status status = stream->Finish();
    if (!status.ok())
      reason += ": " + std::to_string(static_cast<int>(status.error_code())) + " " + status.error_message();
  }
  {
    std::lock_guard lock(ctx_mu_);
    ctx_ = nullptr;
  }
  runtime::log::debug(actor, "shard stream closed", {{"target", endpoint_.target}, {"reason", reason}});  // the session logs the state change
  if (!silenced_ && cb_.on_closed)
    cb_.on_closed(reason);
}

}  // namespace headroom::bigfleet
