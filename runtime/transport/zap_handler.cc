// The ZAP handler.
#include "runtime/transport/zap_handler.h"

#include "runtime/security/curve.h"
#include "support/error.h"
#include "support/log_limiter.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {
/// Where libzmq sends its authentication requests (RFC 27).
constexpr const char *kZapEndpoint = "inproc://zeromq.zap.01";

std::string text(const zmq::message_t &frame) {
  return std::string(static_cast<const char *>(frame.data()), frame.size());
}

/// The address a ZAP request names, for people: libzmq gives an IPC peer as
/// "localhost:UID:GID:PID" (its credentials, from the kernel).
std::string peerDescription(const std::string &address) {
  llvm::SmallVector<llvm::StringRef, 4> parts;
  llvm::StringRef(address).split(parts, ':');
  if (parts.size() == 4 && parts[0] == "localhost")
    return llvm::formatv("a local process (pid {0}, uid {1})", parts[3], parts[1]).str();
  return address.empty() ? "an unknown address" : address;
}

std::string z85(const std::string &binaryKey) {
  char out[41] = {};
  zmq_z85_encode(out, reinterpret_cast<const uint8_t *>(binaryKey.data()), binaryKey.size());
  return out;
}
} // namespace

llvm::Expected<std::unique_ptr<ZapHandler>>
ZapHandler::start(zmq::context_t &context, const std::set<std::string> &allowed, Log log) {
  if (allowed.empty())
    return makeError("a CURVE pserver needs at least one trainer public key to accept");
  std::set<std::string> binary;
  for (const std::string &key : allowed) {
    auto bytes = decodeCurveKey(key);
    if (!bytes)
      return bytes.takeError();
    binary.insert(*bytes);
  }
  std::unique_ptr<ZapHandler> handler(new ZapHandler(context, std::move(binary), std::move(log)));
  try {
    handler->socket_.bind(kZapEndpoint);
  } catch (const zmq::error_t &e) {
    return makeError("cannot bind the authentication handler {0}: {1}", kZapEndpoint, e.what());
  }
  handler->thread_ = std::thread([h = handler.get()] { h->serve(); });
  return handler;
}

ZapHandler::ZapHandler(zmq::context_t &context, std::set<std::string> allowedBinary, Log log)
    : socket_(context, zmq::socket_type::rep), allowed_(std::move(allowedBinary)),
      log_(std::move(log)) {
  socket_.set(zmq::sockopt::linger, 0);
}

ZapHandler::~ZapHandler() {
  stop_ = true;
  if (thread_.joinable())
    thread_.join();
  socket_.close();
}

void ZapHandler::serve() {
  LogLimiter limiter;
  while (!stop_) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    // Wakes now and then to notice stop_; a handshake waits at most this long for its answer.
    if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0)
      continue;
    std::vector<zmq::message_t> request;
    for (bool more = true; more;) {
      zmq::message_t frame;
      if (!socket_.recv(frame, zmq::recv_flags::dontwait))
        break;
      more = frame.more();
      request.push_back(std::move(frame));
    }
    std::vector<std::string> reply = answer(request);
    if (reply[2] != "200") {
      ++refused_;
      int64_t held = 0;
      std::string address = request.size() > 3 ? text(request[3]) : "";
      if (log_ && limiter.allow(address, held))
        log_(llvm::formatv(
                 "refused a connection from {0}: {1}{2}", peerDescription(address), reply[3],
                 held ? llvm::formatv(" ({0} more refusals of this address held back)", held).str()
                      : std::string())
                 .str());
    }
    for (size_t i = 0; i < reply.size(); ++i)
      socket_.send(zmq::buffer(reply[i]),
                   i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

std::vector<std::string> ZapHandler::answer(const std::vector<zmq::message_t> &request) {
  // Request: version, request id, domain, address, routing id, mechanism, credentials...
  // Reply: version, request id, status code, status text, user id, metadata.
  std::string id = request.size() > 1 ? text(request[1]) : "";
  auto reply = [&](const char *code, std::string why, std::string user = "") {
    return std::vector<std::string>{"1.0", id, code, std::move(why), std::move(user), ""};
  };
  if (request.size() < 6 || text(request[0]) != "1.0")
    return reply("500", "malformed ZAP request");
  std::string mechanism = text(request[5]);
  if (mechanism != "CURVE")
    return reply("400", "it offers no CURVE key (mechanism " + mechanism +
                            "); this pserver "
                            "serves CURVE clients only");
  if (request.size() < 7 || request[6].size() != 32)
    return reply("400", "malformed CURVE credentials");
  std::string key = text(request[6]);
  if (!allowed_.count(key))
    return reply("400", "its CURVE key " + z85(key) + " is not on the allow-list");
  return reply("200", "OK", z85(key));
}

} // namespace oar::runtime
