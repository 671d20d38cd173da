// Encoding, decoding and checking runtime messages.
#include "runtime/wire/protocol.h"
#include "runtime/wire/peer_memory.h"
#include "support/endpoint.h"
#include "support/env_names.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "support/error.h"
#include "llvm/ADT/STLExtras.h"

namespace oar::runtime {

llvm::StringRef kindName(proto::MsgKind kind) {
  switch (kind) {
  case proto::SEND_VAR:
    return "send_var";
  case proto::GET_VAR:
    return "get_var";
  case proto::SEND_BARRIER:
    return "send_barrier";
  case proto::FETCH_BARRIER:
    return "fetch_barrier";
  case proto::COMPLETE:
    return "complete";
  case proto::HELLO:
    return "hello";
  case proto::REPLY_OK:
    return "ok";
  case proto::REPLY_VAR:
    return "var";
  case proto::REPLY_ERROR:
    return "error";
  case proto::PULL_ROWS:
    return "pull_rows";
  case proto::PUSH_ROWS:
    return "push_rows";
  case proto::SAVE_BEST:
    return "save_best";
  case proto::STOP:
    return "stop";
  default:
    return "unknown";
  }
}

std::string zmqAddress(llvm::StringRef endpoint) { return ("tcp://" + endpoint).str(); }

std::optional<std::string> localIpcAddress(llvm::StringRef endpoint) {
  if (const char *tcp = std::getenv(env::kOarLocalTcp); tcp && *tcp == '1')
    return std::nullopt;
  auto [host, port] = endpoint.rsplit(':');
  if (!isLoopbackHost(host) || port.empty() || port == "0")
    return std::nullopt;
  return ("ipc://@oar-" + endpoint).str();
}

std::string connectAddress(llvm::StringRef endpoint) {
  if (std::optional<std::string> ipc = localIpcAddress(endpoint))
    return *ipc;
  return zmqAddress(endpoint);
}

proto::MsgHeader makeHeader(proto::MsgKind kind, llvm::StringRef var, int64_t trainerId,
                            int64_t step) {
  proto::MsgHeader h;
  h.set_version(kProtocolVersion);
  h.set_kind(kind);
  h.set_var(var.str());
  h.set_trainer_id(trainerId);
  h.set_step(step);
  return h;
}

void describeTensor(proto::MsgHeader &h, const Tensor &t) {
  h.set_dtype(t.dtype());
  h.clear_dims();
  for (int64_t d : t.dims())
    h.add_dims(d);
}

static bool describes(const proto::MsgHeader &h, const Tensor &t) {
  return h.dtype() == t.dtype() && llvm::equal(h.dims(), t.dims());
}

/// The header's bytes, serialized straight into the frame (a small one is held inside the
/// message_t: no allocation).
static zmq::message_t headerFrame(const proto::MsgHeader &h) {
  zmq::message_t frame(h.ByteSizeLong());
  h.SerializeWithCachedSizesToArray(static_cast<uint8_t *>(frame.data()));
  return frame;
}

/// Without bytes to carry (a request, an acknowledgement, a payload in the sender's memory or in
/// the receiver's already) the header goes alone: a frame less to send and to receive.
static bool goesAlone(const proto::MsgHeader &h, const Tensor *tensor) {
  return !tensor || !tensor->initialized() || tensor->bytes() == 0 || h.peer_address() != 0 ||
         h.landed();
}

EncodedMessage encodeMessage(const proto::MsgHeader &header, const Tensor *tensor) {
  // A header that does not describe its tensor yet is copied to do so. The pserver's replies
  // to pulls describe it beforehand: the copy was a sixth of its instructions per pull
  // (callgrind, bench_runtime push-pull).
  const proto::MsgHeader *h = &header;
  std::optional<proto::MsgHeader> described;
  if (tensor && tensor->initialized() && !describes(header, *tensor)) {
    described.emplace(header);
    describeTensor(*described, *tensor);
    h = &*described;
  }
  EncodedMessage m{headerFrame(*h), {}};
  if (!goesAlone(*h, tensor)) {
    m.payload = {static_cast<const uint8_t *>(tensor->raw()), tensor->bytes()};
    m.payloadOwner = tensor->buffer();
  }
  return m;
}

EncodedMessage encodeBytes(llvm::StringRef bytes) {
  return EncodedMessage{zmq::message_t(bytes.data(), bytes.size()), {}};
}

void sendMessage(zmq::socket_t &socket, const proto::MsgHeader &header, const Tensor *tensor,
                 bool more) {
  sendEncoded(socket, encodeMessage(header, tensor), more);
}

void sendEncoded(zmq::socket_t &socket, EncodedMessage &&m, bool more, bool dontWait) {
  // Once the first frame is taken, libzmq takes the rest of the message without waiting.
  zmq::send_flags first = dontWait ? zmq::send_flags::dontwait : zmq::send_flags::none;
  zmq::send_flags last = more ? zmq::send_flags::sndmore : zmq::send_flags::none;
  if (m.payload.empty()) {
    sendFrame(socket, std::move(m.header), first | last);
    return;
  }
  sendFrame(socket, std::move(m.header), first | zmq::send_flags::sndmore);
  // Zero copy: ZeroMQ reads the tensor's buffer; the heap-held shared_ptr keeps it alive until
  // ZeroMQ calls the release function.
  auto *owner = new std::shared_ptr<std::byte>(std::move(m.payloadOwner));
  zmq::message_t payload(
      const_cast<uint8_t *>(m.payload.data()), m.payload.size(),
      [](void *, void *hint) { delete static_cast<std::shared_ptr<std::byte> *>(hint); }, owner);
  sendFrame(socket, std::move(payload), last);
}

void sendFrame(zmq::socket_t &socket, zmq::message_t &&frame, zmq::send_flags flags) {
  for (;;) {
    try {
      if (!socket.send(frame, flags)) // cppzmq's way of saying EAGAIN
        throw zmq::error_t();
      return;
    } catch (const zmq::error_t &e) {
      if (e.num() != EINTR) // a signal's handler ran on this thread: nothing was queued
        throw;
    }
  }
}

/// Receives a later frame of a message whose first frame was read. A signal may interrupt it
/// (EINTR) before it takes the frame: then it tries again, as giving up would leave the rest of
/// the message to be read as the start of the next.
static bool receiveRest(zmq::socket_t &socket, zmq::message_t &frame) {
  for (;;) {
    try {
      return socket.recv(frame, zmq::recv_flags::none).has_value();
    } catch (const zmq::error_t &e) {
      if (e.num() != EINTR)
        throw;
    }
  }
}

std::optional<Frames> receiveFrames(zmq::socket_t &socket, std::chrono::milliseconds timeout) {
  // A receive that blocks up to the timeout costs fewer system calls per message than a
  // zmq_poll followed by a receive: it is the round trip's latency (see bench_runtime).
  std::vector<zmq::message_t> frames;
  frames.reserve(3); // a pserver's identity, a header and a payload: grown at most once
  frames.emplace_back();
  socket.set(zmq::sockopt::rcvtimeo, static_cast<int>(timeout.count()));
  if (!socket.recv(frames[0], zmq::recv_flags::none))
    return std::nullopt;         // EAGAIN: nothing came in time
  while (frames.back().more()) { // the rest of a message arrives with its first frame
    frames.emplace_back();
    if (!receiveRest(socket, frames.back()))
      break;
  }
  return Frames(std::move(frames));
}

/// The elements a header's dims announce. Dims come from the peer: their product may overflow
/// (and wrap to the payload's size), so it is checked while it is formed, and bounded well below
/// any size a payload can have.
static llvm::Expected<int64_t> elementCount(const proto::MsgHeader &h) {
  if (dtypeSize(h.dtype()) == 0)
    return makeError("{0}: dtype {1} is unknown", h.var(), static_cast<int>(h.dtype()));
  int64_t numel = 1;
  for (int64_t d : h.dims()) {
    if (d < 0 || d > (int64_t(1) << 40))
      return makeError("{0}: dim {1} is out of range", h.var(), d);
    if (__builtin_mul_overflow(numel, d, &numel) || numel > (int64_t(1) << 50))
      return makeError("{0}: dims {1} hold too many elements", h.var(),
                       dimsString(std::vector<int64_t>(h.dims().begin(), h.dims().end())));
  }
  return numel;
}

std::optional<uint64_t> announcedPayloadBytes(const zmq::message_t &headerFrame) {
  proto::MsgHeader h;
  if (!h.ParseFromArray(headerFrame.data(), static_cast<int>(headerFrame.size())) ||
      h.peer_address() != 0 || h.landed())
    return std::nullopt;
  auto elements = elementCount(h);
  if (!elements) {
    llvm::consumeError(elements.takeError());
    return std::nullopt;
  }
  return static_cast<uint64_t>(*elements) * dtypeSize(h.dtype());
}

bool namesSenderProcess(const proto::MsgHeader &h) {
  return !h.probe().empty() || h.peer_address() != 0 || h.landed() || h.accepts_peer_memory();
}

llvm::Expected<Message> decodeMessage(std::vector<zmq::message_t> &frames, size_t first) {
  if (frames.size() != first + 1 && frames.size() != first + 2)
    return makeError("expected a header and at most one payload frame, got {0} frames",
                     frames.size() - first);
  Message msg;
  const zmq::message_t &head = frames[first];
  if (!msg.header.ParseFromArray(head.data(), static_cast<int>(head.size())))
    return makeError("header is not a valid MsgHeader ({0} bytes)", head.size());
  if (msg.header.version() != kProtocolVersion)
    return makeError("protocol version {0}, expected {1}", msg.header.version(), kProtocolVersion);
  if (msg.header.kind() == proto::MSG_UNSET || !proto::MsgKind_IsValid(msg.header.kind()))
    return makeError("message kind {0} is unknown", static_cast<int>(msg.header.kind()));
  if (namesSenderProcess(msg.header)) // see peer_memory.h
    msg.senderPid = localSenderPid(head);
  static const zmq::message_t none;
  const zmq::message_t &payload = frames.size() > first + 1 ? frames[first + 1] : none;
  if (msg.header.dims_size() == 0 && msg.header.dtype() == proto::DTYPE_UNSET) {
    if (payload.size() != 0)
      return makeError("{0}: payload of {1} bytes without dtype and dims", msg.header.var(),
                       payload.size());
    return msg;
  }
  size_t elem = dtypeSize(msg.header.dtype());
  auto elements = elementCount(msg.header);
  if (!elements)
    return elements.takeError();
  int64_t numel = *elements;
  if (msg.header.landed() && msg.header.kind() != proto::SEND_VAR)
    return makeError("{0}: only a send_var is written into the receiver's memory",
                     msg.header.var());
  if (msg.header.peer_address() != 0 && msg.header.kind() != proto::SEND_VAR &&
      msg.header.kind() != proto::REPLY_VAR)
    return makeError("{0}: only a send_var or a reply_var leaves its payload in the sender's "
                     "memory",
                     msg.header.var());
  if (msg.header.peer_address() != 0 || msg.header.landed()) { // see peer_memory.h
    if (payload.size() != 0 || numel == 0 ||
        (msg.header.peer_address() != 0 && msg.header.landed()))
      return makeError("{0}: a payload in the sender's memory, or written to the receiver's "
                       "already, comes without bytes of its own, holds at least one element, "
                       "and is one of the two",
                       msg.header.var());
    if (msg.header.landed())
      return msg;
    msg.peerBytes = static_cast<size_t>(numel) * elem;
    return msg;
  }
  if (static_cast<size_t>(numel) * elem != payload.size())
    return makeError(
        "{0}: payload is {1} bytes but {2}{3} needs {4}", msg.header.var(), payload.size(),
        dtypeName(msg.header.dtype()),
        dimsString(std::vector<int64_t>(msg.header.dims().begin(), msg.header.dims().end())),
        static_cast<size_t>(numel) * elem);
  // ZeroMQ may hand over a small frame inside its receive buffer at any byte offset; kernels and
  // tables read elements as their type, so such a payload is copied (a fresh message_t is
  // 8-aligned at least). The UBSan build caught the misaligned loads.
  if (reinterpret_cast<uintptr_t>(payload.data()) % elem != 0) {
    try {
      msg.payload = zmq::message_t(payload.data(), payload.size());
    } catch (const zmq::error_t &e) {
      return makeError("{0}: cannot copy its {1} bytes: {2}", msg.header.var(), payload.size(),
                       e.what());
    }
  } else if (frames.size() > first + 1) // else an empty tensor, its header alone
    msg.payload = std::move(frames[first + 1]);
  return msg;
}

llvm::Expected<Message> decodeMessage(Frames &frames, size_t first) {
  return decodeMessage(frames.parts(), first);
}

void Message::moveInto(Tensor &dst) {
  if (inPeerMemory() || header.landed()) { // its bytes are not here: nothing to make from them
    dst = Tensor();
    return;
  }
  if (readInto) { // the very buffer, so that reading into it round after round nests nothing
    dst.adopt(header.dtype(), dims(), std::move(readInto));
    return;
  }
  if (payload.size() == 0) { // an empty tensor: nothing to share
    dst.resize(header.dtype(), dims());
    return;
  }
  auto owner = std::make_shared<zmq::message_t>(std::move(payload));
  std::shared_ptr<std::byte> bytes(owner, static_cast<std::byte *>(owner->data()));
  dst.adopt(header.dtype(), dims(), std::move(bytes));
}

} // namespace oar::runtime
