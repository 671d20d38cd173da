// A trainer's connection to a pserver without libzmq's I/O thread: ZMTP 3 (the NULL mechanism,
// as a DEALER) spoken over the pserver's Unix socket, or TCP, on the caller's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "zmq.hpp"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// A peer that answered, but as no pserver of ours can: another user's process, another socket
/// type, a mechanism other than NULL (`wantsCurve`: CURVE), or an ERROR in place of READY.
/// Trying again cannot help.
class ZmtpRefusal : public llvm::ErrorInfo<ZmtpRefusal> {
public:
  static char ID;
  ZmtpRefusal(std::string message, bool wantsCurve)
      : message_(std::move(message)), wantsCurve_(wantsCurve) {}
  void log(llvm::raw_ostream &os) const override { os << message_; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }
  bool wantsCurve() const { return wantsCurve_; }

private:
  std::string message_;
  bool wantsCurve_;
};

/// libzmq hands every message from the calling thread to its I/O thread, and every reply back:
/// two thread wake-ups per round trip on the trainer's side that a pull of a small param waits
/// for, and on two shared cores the I/O thread competes with the trainer for its core
/// (docs/runtime.md, "Direct links"). A link writes and reads the very frames the pserver's
/// ROUTER speaks (ZMTP 3.1, https://rfc.zeromq.org/spec/37/), on the trainer's thread, with
/// blocking system calls that each have a timeout. The pserver's side does not change.
///
/// On a Unix socket, who is at the other end comes from the kernel (SO_PEERCRED): a process of
/// another user that holds the pserver's name is refused. Over TCP nobody is named (peerPid 0),
/// as on libzmq's TCP connections without CURVE. What the peer sends is bounded before anything is
/// allocated for it: at most two frames a message (an oar header and its payload), a header
/// frame of at most kMaxHeaderFrame bytes, and a payload frame no larger than its header says
/// (`payloadLimit`).
class ZmtpLink {
public:
  static constexpr size_t kMaxHeaderFrame = size_t(16) << 20;
  /// The payload bytes a header frame announces, or nullopt when it announces none; consulted
  /// before a payload frame is allocated.
  using PayloadLimit = std::function<std::optional<uint64_t>(const zmq::message_t &header)>;

  /// Connects to `address` and greets the peer, waiting at most `timeout`: a Unix socket
  /// ("ipc://@name" in Linux's abstract namespace, or "ipc://path"), or TCP to a numeric host
  /// ("tcp://10.0.0.2:6170", "tcp://[::1]:6170"; a name lookup has no timeout). Errors name
  /// the address.
  static llvm::Expected<std::unique_ptr<ZmtpLink>>
  connect(llvm::StringRef address, std::chrono::milliseconds timeout, PayloadLimit limit);
  /// Greets the peer on `fd`, a connected stream socket, which the link then owns (it is closed
  /// on an error too). `peerName` names the peer in errors. For tests and the fuzzer.
  static llvm::Expected<std::unique_ptr<ZmtpLink>>
  greet(int fd, std::string peerName, std::chrono::milliseconds timeout, PayloadLimit limit);
  ~ZmtpLink();
  ZmtpLink(const ZmtpLink &) = delete;
  ZmtpLink &operator=(const ZmtpLink &) = delete;

  /// Sends one message of `frames` (their bytes are written before it returns: nothing is
  /// kept), waiting at most `timeout` while the peer does not read. A message cut off part way
  /// breaks the link, as the stream cannot be resynchronised.
  llvm::Error send(llvm::ArrayRef<llvm::ArrayRef<uint8_t>> frames,
                   std::chrono::milliseconds timeout);
  /// The frames of the next message. nullopt when it is not complete within `timeout` (0: only
  /// what has arrived); what was read of it is kept for the next call. An error when the peer
  /// closed the connection, broke the protocol or announced too much.
  llvm::Expected<std::optional<std::vector<zmq::message_t>>>
  receive(std::chrono::milliseconds timeout);

  /// The peer's process (from the kernel; 0 when it did not say).
  pid_t peerPid() const { return peerPid_; }
  /// Whether the link can carry no more messages (the peer left, or a message was cut off).
  bool broken() const { return broken_; }
  /// Whether the peer closed the connection (as a read found).
  bool peerClosed() const { return peerClosed_; }
  /// Whether the peer has closed its end, asked now without reading what it sent before.
  bool peerHungUp() const;
  const std::string &peerName() const { return peerName_; }

private:
  ZmtpLink(int fd, std::string peerName, PayloadLimit limit);
  llvm::Error handshake(std::chrono::milliseconds timeout);
  /// Reads what has arrived into the buffer, waiting at most `timeout`. False on timeout.
  llvm::Expected<bool> fill(std::chrono::milliseconds timeout);
  /// Reads into `dst` (at most `bytes`) straight from the socket. Returns the count, 0 on
  /// timeout.
  llvm::Expected<size_t> readInto(uint8_t *dst, size_t bytes, std::chrono::milliseconds timeout);
  /// Writes all of `iov`, waiting at most `timeout` in all; `written` counts what went.
  llvm::Error writeAll(std::vector<struct iovec> iov, std::chrono::milliseconds timeout,
                       size_t &written);
  /// The next whole frame (a command or a message frame) into current_; false on timeout.
  llvm::Expected<bool> readFrame(std::chrono::milliseconds timeout);
  /// Acts on a command frame after the handshake (PING is answered, ERROR ends the link).
  llvm::Error onCommand(const zmq::message_t &body);
  llvm::Error fail(const llvm::Twine &why);
  llvm::Error refuse(const llvm::Twine &why, bool wantsCurve = false);
  void setReceiveTimeout(std::chrono::milliseconds timeout);

  int fd_;
  std::string peerName_;
  PayloadLimit payloadLimit_;
  pid_t peerPid_ = 0;
  bool broken_ = false, peerClosed_ = false;
  std::vector<uint8_t> buffer_; ///< bytes read and not yet parsed: [begin_, end_)
  size_t begin_ = 0, end_ = 0;
  int receiveTimeoutMs_ = -1; ///< SO_RCVTIMEO as last set

  /// The frame being read: its flags, body and how much of it has arrived.
  struct Frame {
    bool started = false;
    uint8_t flags = 0;
    zmq::message_t body;
    size_t filled = 0;
  } current_;
  std::vector<zmq::message_t> message_; ///< the frames of the message being read
};

} // namespace oar::runtime
