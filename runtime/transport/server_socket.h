// One way for a server of the job (a pserver, the scheduler) to start taking connections: where
// it binds, CURVE with its ZAP handler, this host's IPC name, a held port taken over, and the
// warning when anyone on the host could connect.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>

#include <zmq.hpp>

#include "runtime/security/curve.h"
#include "runtime/transport/held_port.h"
#include "runtime/transport/zap_handler.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// What a server binds and whom it lets in.
struct ServerSocketSpec {
  std::string endpoint; ///< host:port the peers were told
  std::string bind;     ///< host:port to bind instead (--bind); empty: the endpoint's
  /// With keys: CURVE, accepting the public keys of `allowed` only.
  CurveConfig curve;
  std::set<std::string> allowed;
  /// What a stranger who connects could do ("read and change the model"), and the action the
  /// warning names ("serving", "taking registrations on").
  std::string risk, serving;
  /// The port a launcher picked and held for this server (HeldPort): taken over when it is the
  /// address to bind, so no other process can have taken the port meanwhile; else closed.
  std::shared_ptr<HeldPort> held;
  std::function<void(const std::string &)> log;
};

/// A socket serving as its spec says.
struct ServingSocket {
  std::string boundTcp; ///< libzmq's name of the TCP address bound ("tcp://127.0.0.1:4242")
  /// Without keys on loopback: peers come over IPC, and only this user's (the kernel names a
  /// local peer's user); no TCP peer.
  bool ownUserOnly = false;
  std::unique_ptr<ZapHandler> zap; ///< CURVE's handler, alive as long as the socket
};

/// Binds `socket` (its other options already set) as `spec` says. Errors say what failed
/// without naming the server; the caller does.
llvm::Expected<ServingSocket> serveOn(zmq::context_t &context, zmq::socket_t &socket,
                                      ServerSocketSpec spec);

} // namespace oar::runtime
