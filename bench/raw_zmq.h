// Plain ZeroMQ between a DEALER and a ROUTER over the transport trainers use (connectAddress):
// no protobuf, no tensors. It is the limit the push/pull figures of the runtime are set against.
#pragma once

#include <chrono>
#include <string>

#include "runtime/wire/protocol.h"
#include "zmq.hpp"

namespace oar::bench {

/// A frame over `bytes` without a copy, as the runtime's tensor frames are (the buffer outlives
/// every send).
inline zmq::message_t unowned(const std::string &bytes) {
  return zmq::message_t(const_cast<char *>(bytes.data()), bytes.size(), nullptr, nullptr);
}

/// The ROUTER end: answers a one-byte request with `bytes` (as a pserver answers a pull) and
/// anything longer with a one-byte acknowledgement (as it answers a push); four bytes stop it.
class RawEcho {
public:
  RawEcho(const std::string &endpoint, int64_t bytes) : payload_(bytes, 'x') {
    socket_.bind(runtime::connectAddress(endpoint));
  }
  void serve() {
    for (;;) {
      zmq::message_t id, body;
      (void)socket_.recv(id);
      (void)socket_.recv(body);
      if (body.size() == 4)
        return;
      bool pull = body.size() == 1;
      socket_.send(id, zmq::send_flags::sndmore);
      socket_.send(pull ? unowned(payload_) : zmq::message_t("k", 1), zmq::send_flags::none);
    }
  }

private:
  std::string payload_;
  zmq::context_t context_; ///< its own, so its I/O thread is not the client's
  zmq::socket_t socket_{context_, zmq::socket_type::router};
};

/// The DEALER end. A round trip sends a small request and gets `bytes` back (as a pull does);
/// the stream sends `bytes` one way with a small acknowledgement per message, collected at the
/// end (as pipelined pushes are).
class RawClient {
public:
  RawClient(const std::string &endpoint, int64_t bytes) : payload_(bytes, 'x') {
    socket_.connect(runtime::connectAddress(endpoint));
  }
  ~RawClient() { socket_.send(zmq::message_t("stop", 4), zmq::send_flags::none); }
  /// Seconds to stream `rounds` messages one way.
  double stream(int rounds) {
    // At most 256 unacknowledged, as the communicator keeps: a ROUTER drops replies past its
    // queue limit.
    auto start = std::chrono::steady_clock::now();
    int acked = 0;
    for (int i = 0; i < rounds; ++i) {
      socket_.send(unowned(payload_), zmq::send_flags::none);
      for (; i + 1 - acked >= 256; ++acked)
        receiveOne();
    }
    for (; acked < rounds; ++acked)
      receiveOne();
    return secondsSince(start);
  }
  /// Seconds for `rounds` round trips that each bring `bytes` back.
  double roundTrip(int rounds) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < rounds; ++i) {
      socket_.send(zmq::message_t("?", 1), zmq::send_flags::none);
      receiveOne();
    }
    return secondsSince(start);
  }

private:
  static double secondsSince(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  void receiveOne() {
    zmq::message_t reply;
    (void)socket_.recv(reply);
  }
  std::string payload_;
  zmq::context_t context_;
  zmq::socket_t socket_{context_, zmq::socket_type::dealer};
};

} // namespace oar::bench
