// The libzmq DEALER channel: any host, CURVE, queues and reconnects on libzmq's I/O thread.
#include <atomic>
#include <cerrno>
#include <cstring>

#include "runtime/transport/channel.h"
#include "support/deadline.h"
#include "support/error.h"

namespace oar::runtime {

char ChannelRefused::ID = 0;

struct ClientContext::Impl {
  std::optional<zmq::context_t> context;
  /// The context, made now if it is the first channel's.
  llvm::Expected<zmq::context_t *> get() {
    if (!context) {
      try {
        context.emplace(1);
      } catch (const zmq::error_t &e) {
        return makeError("cannot start libzmq: {0}", e.what());
      }
    }
    return &*context;
  }
};

ClientContext::ClientContext() : impl_(std::make_unique<Impl>()) {}
ClientContext::~ClientContext() = default;

namespace {

/// How long one blocking send waits before the loop looks at its deadline and at signals.
constexpr int kSendSliceMs = 200;

class DealerChannel final : public Channel {
public:
  DealerChannel(zmq::context_t &context, bool curve, std::function<bool()> shouldStop)
      : socket_(context, zmq::socket_type::dealer), curve_(curve),
        shouldStop_(std::move(shouldStop)) {}

  llvm::Error setUp(zmq::context_t &context, const std::string &endpoint,
                    const DealerOptions &options) {
    try {
      socket_.set(zmq::sockopt::linger, static_cast<int>(options.linger.count()));
      // Not ZMQ_IMMEDIATE: with it libzmq drops replies not yet read when the server
      // disconnects, and a pserver exits right after acknowledging the last `complete`. A
      // missing server is caught by the caller's reply timeout instead.
      socket_.set(zmq::sockopt::sndtimeo, kSendSliceMs);
      if (options.maxMessageBytes)
        socket_.set(zmq::sockopt::maxmsgsize, *options.maxMessageBytes);
      if (options.curve.enabled()) {
        const CurveConfig &c = options.curve;
        socket_.set(zmq::sockopt::curve_serverkey,
                    c.serverKey.empty() ? c.own->publicKey : c.serverKey);
        socket_.set(zmq::sockopt::curve_publickey, c.own->publicKey);
        socket_.set(zmq::sockopt::curve_secretkey, c.own->secretKey);
      }
      if (options.watch)
        watch(context);
      socket_.connect(connectAddress(endpoint));
    } catch (const zmq::error_t &e) {
      return makeError("cannot set up a connection to {0}: {1}", endpoint, e.what());
    }
    return llvm::Error::success();
  }

  ~DealerChannel() override {
    if (monitor_)
      monitor_->close(); // before the socket it watches
    socket_.close();
  }

  llvm::Error send(EncodedMessage &&message, std::chrono::milliseconds timeout) override {
    // A send fails (EAGAIN) only when the queue to the peer is full: retry until the timeout,
    // so a peer that stopped reading is reported, not waited for forever.
    Deadline deadline(timeout);
    for (;;) {
      try {
        sendEncoded(socket_, std::move(message), false, timeout.count() == 0);
        return llvm::Error::success();
      } catch (const zmq::error_t &e) {
        if (e.num() != EAGAIN || deadline.passed() || (shouldStop_ && shouldStop_()))
          return makeError("cannot send: {0}", e.what());
      }
    }
  }

  llvm::Expected<std::optional<Frames>> receive(std::chrono::milliseconds wait) override {
    try {
      return receiveFrames(socket_, wait);
    } catch (const zmq::error_t &e) {
      if (e.num() == EINTR) // a signal's handler ran on this thread
        return std::nullopt;
      return makeError("cannot receive: {0}", e.what());
    }
  }

  ChannelNews news() override {
    ChannelNews news;
    if (!monitor_)
      return news;
    try {
      readEvents(news);
    } catch (const zmq::error_t &) { // a signal's handler, or no memory: the next call reads on
    }
    return news;
  }

  bool direct() const override { return false; }

private:
  /// The monitor's events so far, into `news`.
  void readEvents(ChannelNews &news) {
    zmq::message_t event;
    while (monitor_->recv(event, zmq::recv_flags::dontwait)) {
      uint16_t id = 0; // the frame: a 16-bit event id, then a 32-bit value
      uint32_t value = 0;
      if (event.size() >= 6) {
        std::memcpy(&id, event.data(), sizeof(id));
        std::memcpy(&value, static_cast<const char *>(event.data()) + 2, sizeof(value));
      }
      if (event.more()) { // the event frame is followed by the address frame
        zmq::message_t address;
        (void)monitor_->recv(address, zmq::recv_flags::dontwait);
      }
      if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        news.keyRefused = value;
      else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) // mechanisms that differ
        news.handshakeFailed = true;
      else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) // CURVE: a server key not its own
        (curve_ ? news.handshakeFailed : news.dropped) = true;
      else
        news.dropped = true;
    }
  }

  /// Watches disconnects and failed handshakes on an inproc PAIR (libzmq's socket monitor).
  void watch(zmq::context_t &context) {
    static std::atomic<uint64_t> count{0};
    std::string address = "inproc://oar-monitor-" + std::to_string(count++);
    int events = ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                 ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;
    if (zmq_socket_monitor(socket_.handle(), address.c_str(), events) == 0) {
      monitor_ = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pair);
      monitor_->connect(address);
    }
  }

  zmq::socket_t socket_;
  std::unique_ptr<zmq::socket_t> monitor_;
  bool curve_;
  std::function<bool()> shouldStop_;
};

} // namespace

llvm::Expected<std::unique_ptr<Channel>>
openDealer(ClientContext &client, const std::string &endpoint, const DealerOptions &options) {
  auto context = client.impl().get();
  if (!context)
    return makeError("cannot open a socket to {0}: {1}", endpoint,
                     llvm::toString(context.takeError()));
  std::unique_ptr<DealerChannel> channel;
  try {
    channel =
        std::make_unique<DealerChannel>(**context, options.curve.enabled(), options.shouldStop);
  } catch (const zmq::error_t &e) {
    return makeError("cannot open a socket to {0}: {1}", endpoint, e.what());
  }
  if (llvm::Error err = channel->setUp(**context, endpoint, options))
    return err;
  return std::unique_ptr<Channel>(std::move(channel));
}

} // namespace oar::runtime
