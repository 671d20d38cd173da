// A server's ROUTER socket: receive, reply, refuse.
#include "runtime/transport/router_server.h"

#include <cerrno>

#include "runtime/transport/peer_identity.h"
#include "runtime/transport/zap_handler.h"
#include "support/error.h"
#include "support/log_limiter.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

std::string Incoming::address() const { return peerAddress(frames); }
std::string Incoming::curveKey() const { return peerCurveKey(frames); }
std::string Incoming::peerName() const { return llvm::toHex(peer); }

struct RouterServer::Impl {
  RouterSpec spec;
  zmq::context_t context{1};
  /// Declared before the socket so it outlives it: a CURVE socket without a handler accepts
  /// every key.
  std::unique_ptr<ZapHandler> zap;
  zmq::socket_t socket{context, zmq::socket_type::router};
  /// Keyless on loopback: only processes of this user, over the local socket, are served.
  bool ownUserOnly = false;
  std::string boundTcp;
  LogLimiter rejections;

  void log(const std::string &line) {
    if (spec.socket.log)
      spec.socket.log(line);
  }

  llvm::Error setOptions() {
    try {
      socket.set(zmq::sockopt::linger, static_cast<int>(spec.linger.count()));
      if (spec.maxMessageBytes > 0)
        socket.set(zmq::sockopt::maxmsgsize, spec.maxMessageBytes);
      if (spec.mandatoryRouting)
        socket.set(zmq::sockopt::router_mandatory, true);
    } catch (const zmq::error_t &e) {
      return makeError("cannot set its socket's options: {0}", e.what());
    }
    return llvm::Error::success();
  }

  /// The frames of the next message, or nullopt, with `woken` set when `wakeFd` is readable.
  std::optional<Frames> next(std::chrono::milliseconds wait, int wakeFd, bool &woken) {
    // A receive that blocks up to the timeout costs fewer system calls than a poll followed by
    // a receive (bench_runtime): the poll is for a caller that waits on a descriptor too.
    if (wakeFd < 0)
      return receiveFrames(socket, wait);
    zmq::pollitem_t items[] = {{static_cast<void *>(socket), 0, ZMQ_POLLIN, 0},
                               {nullptr, wakeFd, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, wait);
    woken = items[1].revents & ZMQ_POLLIN;
    if (!(items[0].revents & ZMQ_POLLIN))
      return std::nullopt;
    return receiveFrames(socket, std::chrono::milliseconds(0));
  }
};

RouterServer::RouterServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RouterServer::~RouterServer() = default;

llvm::Expected<std::unique_ptr<RouterServer>> RouterServer::open(RouterSpec spec) {
  std::unique_ptr<Impl> impl;
  try {
    impl = std::make_unique<Impl>();
  } catch (const zmq::error_t &e) {
    return makeError("cannot open its socket: {0}", e.what());
  }
  impl->spec = std::move(spec);
  if (llvm::Error err = impl->setOptions())
    return err;
  try {
    auto serving = serveOn(impl->context, impl->socket, impl->spec.socket);
    if (!serving)
      return serving.takeError();
    impl->zap = std::move(serving->zap);
    impl->ownUserOnly = serving->ownUserOnly;
    impl->boundTcp = serving->boundTcp;
  } catch (const zmq::error_t &e) { // the CURVE options
    return makeError("cannot set up its socket: {0}", e.what());
  }
  return std::unique_ptr<RouterServer>(new RouterServer(std::move(impl)));
}

llvm::Expected<RouterServer::Received> RouterServer::receive(std::chrono::milliseconds wait,
                                                             int wakeFd) {
  Received got;
  std::optional<Frames> frames;
  try {
    frames = impl_->next(wait, wakeFd, got.woken);
  } catch (const zmq::error_t &e) {
    if (e.num() == EINTR) // a signal's handler ran on this thread: the caller's loop looks
      return got;
    return makeError("cannot receive: {0}", e.what());
  }
  // A ROUTER's message starts with its routing id; one with nothing after it is not a request.
  if (!frames || frames->size() < 2)
    return got;
  Incoming in;
  std::vector<zmq::message_t> &parts = frames->parts();
  in.peer.assign(parts[0].data<char>(), parts[0].size());
  parts.erase(parts.begin());
  in.frames = std::move(*frames);
  if (impl_->ownUserOnly)
    if (std::string why = strangerRefusal(in.frames, impl_->spec.name); !why.empty()) {
      refuse(in, "rejected a message from peer " + in.peerName() + ": " + why, why);
      return got;
    }
  got.message = std::move(in);
  return got;
}

llvm::Error RouterServer::send(const std::string &peer,
                               const std::function<EncodedMessage()> &encode) {
  try {
    EncodedMessage message = encode();
    sendFrame(impl_->socket, zmq::message_t(peer.data(), peer.size()),
              zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    sendEncoded(impl_->socket, std::move(message));
  } catch (const zmq::error_t &e) {
    return makeError("cannot reply to peer {0}: {1}", llvm::toHex(peer), e.what());
  }
  return llvm::Error::success();
}

llvm::Error RouterServer::sendMessage(const std::string &peer, const proto::MsgHeader &header,
                                      const Tensor *tensor) {
  return send(peer, [&] { return encodeMessage(header, tensor); });
}

llvm::Error RouterServer::sendBytes(const std::string &peer, llvm::StringRef bytes) {
  return send(peer, [&] { return encodeBytes(bytes); });
}

void RouterServer::logRefusal(const Incoming &from, const std::string &line) {
  std::string address = from.address();
  int64_t held = 0;
  if (!impl_->rejections.allow(address, held))
    return;
  impl_->log(line + " [from " + address + "]" +
             (held
                  ? llvm::formatv(" ({0} more lines about this address were held back)", held).str()
                  : std::string()));
}

void RouterServer::refuse(const Incoming &from, const std::string &line, const std::string &why) {
  logRefusal(from, line);
  if (impl_->spec.refusal)
    // A peer that went away or stopped reading: it asks again, or its timeout tells it.
    llvm::consumeError(sendBytes(from.peer, impl_->spec.refusal(why)));
}

const std::string &RouterServer::boundTcp() const { return impl_->boundTcp; }

} // namespace oar::runtime
