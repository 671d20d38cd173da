// The server half of the transport: one ROUTER socket that takes requests, answers them and
// refuses them, for every server of a job (the pserver, the scheduler, the rendezvous). Who sent
// a message and the log lines about refused ones are worked out here, once.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "runtime/transport/server_socket.h"
#include "runtime/wire/protocol.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// How a server binds and speaks.
struct RouterSpec {
  ServerSocketSpec socket; ///< where it binds and whom it lets in (server_socket.h)
  /// The server, as a stranger's refusal names it ("this pserver").
  std::string name;
  /// The answer its protocol gives a refused message, saying `why`: one frame's bytes.
  std::function<std::string(const std::string &why)> refusal;
  /// A peer announcing a larger frame is cut off before libzmq allocates it (0: no limit).
  int64_t maxMessageBytes = 0;
  std::chrono::milliseconds linger{0}; ///< how long replies still queued at the end may take
  /// A reply to a peer that is gone fails (and is dropped) at once, instead of queueing.
  bool mandatoryRouting = false;
};

/// One message a server took: the connection it came on and its frames (the routing id off).
struct Incoming {
  std::string peer; ///< the connection's routing id: replies go back to it
  Frames frames;
  /// The sender's address for people (peer_identity.h).
  std::string address() const;
  /// The Z85 key it authenticated with ("" without CURVE).
  std::string curveKey() const;
  /// The routing id in hex, for logs.
  std::string peerName() const;
};

/// A bound ROUTER socket. Not thread safe: one thread receives and sends (the pserver's service
/// threads hand their replies to it).
class RouterServer {
public:
  /// Binds as `spec` says. Errors say what failed without naming the server; the caller does.
  static llvm::Expected<std::unique_ptr<RouterServer>> open(RouterSpec spec);
  ~RouterServer();

  struct Received {
    std::optional<Incoming> message; ///< none: nothing came, or a signal's handler ran
    bool woken = false;              ///< `wakeFd` became readable
  };
  /// Waits up to `wait` for a message, and with `wakeFd` >= 0 also for that descriptor to be
  /// readable. Without keys on loopback, a message of another user's process (or a TCP peer) is
  /// refused here, answered with the spec's refusal and logged; it is not returned.
  llvm::Expected<Received> receive(std::chrono::milliseconds wait, int wakeFd = -1);
  /// Sends `header` and `tensor`'s bytes (encodeMessage) to the connection `peer`, the payload
  /// without a copy. A reply never waits: one to a peer whose queue is full is dropped (with
  /// mandatoryRouting, an error).
  llvm::Error sendMessage(const std::string &peer, const proto::MsgHeader &header,
                          const Tensor *tensor);
  /// Sends a message of one frame holding `bytes` (a serialized protobuf), as sendMessage.
  llvm::Error sendBytes(const std::string &peer, llvm::StringRef bytes);
  /// Logs `line` about `from`'s sender, with its address, within the sender's budget (5 lines per
  /// address per 10 s, then a count of what was held back: support/log_limiter.h).
  void logRefusal(const Incoming &from, const std::string &line);
  /// logRefusal, then the spec's refusal saying `why` sent to the peer.
  void refuse(const Incoming &from, const std::string &line, const std::string &why);

  /// libzmq's name of the TCP address bound ("tcp://127.0.0.1:4242").
  const std::string &boundTcp() const;

  struct Impl;

private:
  explicit RouterServer(std::unique_ptr<Impl> impl);
  /// Encodes the message and sends it; libzmq's failures (no memory, a peer gone) are errors.
  llvm::Error send(const std::string &peer, const std::function<EncodedMessage()> &encode);
  std::unique_ptr<Impl> impl_;
};

} // namespace oar::runtime
