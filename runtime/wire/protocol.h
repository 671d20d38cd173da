// The runtime's wire format: a MsgHeader frame, then the tensor bytes, if it carries any, as a
// second frame.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "executor/tensor.h"
#include "runtime/wire/frames.h"
#include "runtime/wire/message.pb.h"
#include "runtime/wire/timeouts.h"
#include "zmq.hpp"

namespace oar::runtime {

inline constexpr int kProtocolVersion = 1;

/// A decoded message: its header and, for var messages, the tensor bytes (checked against the
/// header's dtype and dims).
struct Message {
  proto::MsgHeader header;
  zmq::message_t payload;
  /// The payload's size while it still lies in the sender's memory (header.peer_address; see
  /// readPeerPayload), else 0.
  size_t peerBytes = 0;
  /// The sending process when it is on this host under our user (localSenderPid), else 0.
  pid_t senderPid = 0;
  /// The bytes, when they were read from the sender's memory into a buffer of ours that
  /// existed before (readPeerPayload's `into`) instead of into `payload`.
  std::shared_ptr<std::byte> readInto;
  bool inPeerMemory() const { return peerBytes > 0; }
  bool hasTensor() const { return header.dtype() != proto::DTYPE_UNSET; }
  std::vector<int64_t> dims() const { return {header.dims().begin(), header.dims().end()}; }
  /// Makes `dst` the payload itself (no copy); the message's payload is empty afterwards.
  /// Anything else sharing dst's old buffer keeps the old bytes. A payload still in the
  /// sender's memory, or written into ours already, makes `dst` empty (read or use it first).
  void moveInto(Tensor &dst);
};

/// Sets `h`'s dtype and dims to `t`'s, as sendMessage sends them.
void describeTensor(proto::MsgHeader &h, const Tensor &t);
/// Sends header + payload. The payload frame points at `tensor`'s buffer (no copy); the buffer
/// stays alive until ZeroMQ has sent it. A header without tensor bytes (a request, an
/// acknowledgement, an empty tensor) or whose bytes lie elsewhere (peer_address: the receiver
/// reads them from this process; landed: they are in the receiver's memory already) goes alone.
void sendMessage(zmq::socket_t &socket, const proto::MsgHeader &header, const Tensor *tensor,
                 bool more = false);
/// What sendMessage sends, also for a sender that writes the frames itself (ZmtpLink): the
/// header's frame (describing the tensor) and the tensor's bytes, empty when the header goes
/// alone.
struct EncodedMessage {
  zmq::message_t header;
  llvm::ArrayRef<uint8_t> payload; ///< the tensor's own buffer: valid while the tensor is
  /// The payload's buffer, for a sender that queues the payload (a DEALER) instead of writing it.
  std::shared_ptr<std::byte> payloadOwner = {};
};
EncodedMessage encodeMessage(const proto::MsgHeader &header, const Tensor *tensor);
/// A message of one frame holding `bytes` (a serialized protobuf: the scheduler's and the
/// rendezvous's messages), copied.
EncodedMessage encodeBytes(llvm::StringRef bytes);
/// Queues an encoded message on `socket` (see sendMessage), its payload without a copy. With
/// `dontWait`, a full queue refuses it at once (EAGAIN) instead of after the send timeout. On
/// EAGAIN nothing is sent and `m` is whole: it may be sent again.
void sendEncoded(zmq::socket_t &socket, EncodedMessage &&m, bool more = false,
                 bool dontWait = false);
/// The payload bytes a header frame announces (nullopt: none, or not a header): a receiver
/// allocates no more for the frame that follows it (ZmtpLink::PayloadLimit).
std::optional<uint64_t> announcedPayloadBytes(const zmq::message_t &headerFrame);
/// Whether a message with this header needs its sender's process (Message::senderPid): it
/// carries a memory probe or a payload in either side's memory, or accepts one.
bool namesSenderProcess(const proto::MsgHeader &h);
/// Sends one frame, again when a signal's handler interrupted the send (EINTR). Any other
/// failure throws zmq::error_t, EAGAIN (a full queue or the send timeout) included: cppzmq
/// reports that one by an empty result, which a caller ignoring it would take for a send.
void sendFrame(zmq::socket_t &socket, zmq::message_t &&frame, zmq::send_flags flags);
/// Decodes the frames of one message (after any routing frame): checks the protocol version,
/// that the header parses, and that the payload size equals dims x dtype size (for a payload in
/// the sender's memory, sets peerBytes to that size instead).
llvm::Expected<Message> decodeMessage(Frames &frames, size_t first);
llvm::Expected<Message> decodeMessage(std::vector<zmq::message_t> &frames, size_t first);
/// Receives all frames of one message, waiting at most `timeout`; nullopt on timeout.
std::optional<Frames> receiveFrames(zmq::socket_t &socket, std::chrono::milliseconds timeout);
/// A header for a message about `var`.
proto::MsgHeader makeHeader(proto::MsgKind kind, llvm::StringRef var, int64_t trainerId,
                            int64_t step);
llvm::StringRef kindName(proto::MsgKind kind);
/// "tcp://host:port" for an endpoint "host:port".
std::string zmqAddress(llvm::StringRef endpoint);

/// Pservers on this host are also reached over a Unix socket in Linux's abstract namespace
/// (`ipc://@oar-127.0.0.1:6170`): it moves a step's tensors with less CPU than TCP over
/// loopback. nullopt for an endpoint that is not a loopback address. The name is tied to the
/// TCP port the pserver holds, so no two pservers of a host (and network namespace) share it.
/// OAR_LOCAL_TCP=1 in the environment turns this off (TCP everywhere).
std::optional<std::string> localIpcAddress(llvm::StringRef endpoint);
/// Where a trainer connects for `endpoint`: its local IPC address, else TCP.
std::string connectAddress(llvm::StringRef endpoint);

} // namespace oar::runtime
