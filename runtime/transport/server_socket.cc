// Binding a server of the job.
#include "runtime/transport/server_socket.h"

#include "runtime/security/bind_policy.h"
#include "runtime/wire/protocol.h"
#include "support/endpoint.h"
#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {
/// Whether `held` is bound where `bind` (host:port) says: then it can stand in for binding it.
bool standsFor(const std::shared_ptr<HeldPort> &held, const std::string &bind) {
  return held && held->held() && bind == held->host() + ":" + std::to_string(held->port());
}
} // namespace

llvm::Expected<ServingSocket> serveOn(zmq::context_t &context, zmq::socket_t &socket,
                                      ServerSocketSpec spec) {
  ServingSocket serving;
  std::string bind =
      chooseBindAddress(spec.endpoint, spec.bind, spec.curve.enabled(), spec.risk, spec.log);
  if (spec.curve.enabled()) { // the handler first: without one libzmq accepts any key
    auto handler = ZapHandler::start(context, spec.allowed, spec.log);
    if (!handler)
      return handler.takeError();
    serving.zap = std::move(*handler);
    socket.set(zmq::sockopt::curve_server, true);
    socket.set(zmq::sockopt::curve_secretkey, spec.curve.own->secretKey);
    socket.set(zmq::sockopt::zap_domain, "oar");
  }
  try {
    // libzmq adopts the held socket in place of a new one bound to the same address; the IPC
    // bind below must then make its own.
    bool takeOver = standsFor(spec.held, bind);
    if (takeOver)
      socket.set(zmq::sockopt::use_fd, spec.held->fd());
    else if (spec.held)
      *spec.held = HeldPort(); // another address: its port is let go, and bound below
    socket.bind(zmqAddress(bind));
    if (takeOver) {
      spec.held->release(); // libzmq owns the fd now
      socket.set(zmq::sockopt::use_fd, -1);
    }
  } catch (const zmq::error_t &e) {
    return makeError("cannot bind {0}: {1}", bind, e.what());
  }
  serving.boundTcp = socket.get(zmq::sockopt::last_endpoint);
  // Peers on this host connect over IPC (localIpcAddress). Holding the TCP port makes the name
  // ours; if something else holds it anyway, refuse rather than let peers reach it.
  if (std::optional<std::string> ipc = localIpcAddress(spec.endpoint)) {
    serving.ownUserOnly = !spec.curve.enabled();
    try {
      socket.bind(*ipc);
    } catch (const zmq::error_t &e) {
      return makeError("cannot bind {0}: {1}; another process holds the name", *ipc, e.what());
    }
  }
  if (!serving.ownUserOnly && !spec.curve.enabled() && isLoopbackEndpoint(bind))
    spec.log(llvm::formatv("warning: {0} {1} over TCP without CURVE keys: a process of any user "
                           "on this host can {2} (unset OAR_LOCAL_TCP to serve only this user's "
                           "processes, or give keys)",
                           spec.serving, bind, spec.risk)
                 .str());
  return serving;
}

} // namespace oar::runtime
