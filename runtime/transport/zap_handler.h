// The ZAP handler (ZeroMQ RFC 27) that decides which CURVE clients a pserver accepts.
#pragma once

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include <zmq.hpp>

#include "llvm/Support/Error.h"

namespace oar::runtime {

/// Answers libzmq's authentication requests for every socket of `context` that serves CURVE:
/// a client is accepted only if its public key is on the allow-list. Runs on a thread of its
/// own, which libzmq needs (it asks during the handshake, inside its I/O thread). Start it
/// before binding: libzmq accepts any CURVE client when no handler is bound.
class ZapHandler {
public:
  using Log = std::function<void(const std::string &)>;
  /// `allowed` are Z85 public keys; `log` gets a line per refused connection (rate limited per
  /// address) and may be called from the handler's thread.
  static llvm::Expected<std::unique_ptr<ZapHandler>>
  start(zmq::context_t &context, const std::set<std::string> &allowed, Log log);
  ~ZapHandler();

  /// How many connections were refused so far.
  int64_t refused() const { return refused_; }

private:
  ZapHandler(zmq::context_t &context, std::set<std::string> allowedBinary, Log log);
  void serve();
  /// The reply to one request: its frames, each checked.
  std::vector<std::string> answer(const std::vector<zmq::message_t> &request);

  zmq::socket_t socket_;
  std::set<std::string> allowed_; ///< 32-byte keys
  Log log_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> refused_{0};
  std::thread thread_;
};

} // namespace oar::runtime
