// A trainer's connection to a pserver of its own host without libzmq's I/O thread: ZMTP 3 (the
// NULL mechanism, as a DEALER) spoken over the pserver's Unix socket on the caller's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
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
/// blocking system calls. The pserver's side does not change.
///
/// Who is at the other end comes from the kernel (SO_PEERCRED): a process of another user that
/// holds the pserver's name is refused. What the peer sends is bounded: at most two frames a
/// message (an oar header and its payload), a header frame of at most kMaxHeaderFrame bytes, a
/// payload frame no larger than its header announces (`payloadLimit`), and a frame larger than
/// kEagerFrameBytes takes memory only as its bytes arrive.
///
/// Every call has a timeout: a call waits for the peer at most its timeout in all (a read
/// already waiting when it runs out ends at most one timeout later), however the peer trickles
/// its bytes.
class ZmtpLink {
public:
  static constexpr size_t kMaxHeaderFrame = size_t(16) << 20;
  static constexpr size_t kEagerFrameBytes = size_t(16) << 20;
  /// The payload bytes a header frame announces, or nullopt when it announces none; consulted
  /// before a payload frame is allocated.
  using PayloadLimit = std::function<std::optional<uint64_t>(const zmq::message_t &header)>;

  /// Connects to the Unix socket of `ipcAddress` ("ipc://@name": Linux's abstract namespace,
  /// or "ipc://path") and greets the peer, waiting at most `timeout`. Errors name the address.
  static llvm::Expected<std::unique_ptr<ZmtpLink>>
  connect(llvm::StringRef ipcAddress, std::chrono::milliseconds timeout, PayloadLimit limit);
  /// Greets the peer on `fd`, a connected Unix stream socket, which the link then owns (it is
  /// closed on an error too). `peerName` names the peer in errors. For tests and the fuzzer.
  static llvm::Expected<std::unique_ptr<ZmtpLink>>
  greet(int fd, std::string peerName, std::chrono::milliseconds timeout, PayloadLimit limit);
  ~ZmtpLink();
  ZmtpLink(const ZmtpLink &) = delete;
  ZmtpLink &operator=(const ZmtpLink &) = delete;

  /// Polled while a write waits for the peer to read: true gives the write up (unset: never).
  void setShouldStop(std::function<bool()> shouldStop) { shouldStop_ = std::move(shouldStop); }
  /// Sends one message of `frames` (their bytes are written before it returns: nothing is
  /// kept), waiting at most `timeout` while the peer does not read, and giving up once
  /// shouldStop says so. A message cut off part way breaks the link, as the stream cannot be
  /// resynchronised.
  llvm::Error send(llvm::ArrayRef<llvm::ArrayRef<uint8_t>> frames,
                   std::chrono::milliseconds timeout);
  /// The frames of the next message. nullopt when it is not complete within `timeout` (0: only
  /// what has arrived); what was read of it is kept for the next call. An error when the peer
  /// closed the connection, broke the protocol or announced too much.
  llvm::Expected<std::optional<std::vector<zmq::message_t>>>
  receive(std::chrono::milliseconds timeout);

  /// The peer's process (from the kernel).
  pid_t peerPid() const { return peerPid_; }
  /// Whether the link can carry no more messages (the peer left, or a message was cut off).
  bool broken() const { return broken_; }
  /// Whether the peer closed the connection (as a read found).
  bool peerClosed() const { return peerClosed_; }
  /// Whether the peer has closed its end, asked now without reading what it sent before.
  bool peerHungUp() const;

private:
  using Clock = std::chrono::steady_clock;
  ZmtpLink(int fd, std::string peerName, PayloadLimit limit);
  llvm::Error handshake(std::chrono::milliseconds timeout);
  /// How long reads of the current call may wait: until `deadline`, each read at most `slice`
  /// (the socket's receive timeout); past the deadline they take only what has arrived.
  void waitUntil(Clock::time_point deadline, std::chrono::milliseconds slice);
  /// Reads what has arrived into the buffer (waiting as waitUntil said). False when nothing.
  llvm::Expected<bool> fill();
  /// Reads into `dst` (at most `bytes`) straight from the socket: the count, 0 when nothing.
  llvm::Expected<size_t> readInto(uint8_t *dst, size_t bytes);
  /// Writes all of `iov` (advancing it) by `timeout`; one cut off part way breaks the link.
  llvm::Error writeAll(llvm::MutableArrayRef<struct iovec> iov, std::chrono::milliseconds timeout);
  /// The next whole frame (a command or a message frame) into current_; false when it has not
  /// all arrived in time.
  llvm::Expected<bool> readFrame();
  /// Parses a frame's head at the buffer's start, if all of it is there, and makes its body.
  llvm::Expected<bool> startFrame();
  /// Acts on a command frame after the handshake (PING is answered, ERROR ends the link).
  llvm::Error onCommand(const zmq::message_t &body);
  llvm::Error fail(const llvm::Twine &why);
  llvm::Error refuse(const llvm::Twine &why, bool wantsCurve = false);

  int fd_;
  std::string peerName_;
  std::function<bool()> shouldStop_;
  PayloadLimit payloadLimit_;
  pid_t peerPid_ = 0;
  bool broken_ = false, peerClosed_ = false;
  std::vector<uint8_t> buffer_; ///< bytes read and not yet parsed: [begin_, end_)
  size_t begin_ = 0, end_ = 0;
  int receiveTimeoutMs_ = -1; ///< SO_RCVTIMEO as last set
  Clock::time_point deadline_;
  std::chrono::milliseconds slice_{0};

  /// The frame being read: its flags, its body and how much of it has arrived.
  struct Frame {
    struct Free {
      void operator()(uint8_t *p) const { std::free(p); }
    };
    bool started = false;
    uint8_t flags = 0;
    uint64_t size = 0;
    size_t filled = 0;
    zmq::message_t body; ///< a frame of up to kEagerFrameBytes, allocated whole at its head
    std::unique_ptr<uint8_t, Free> grown; ///< a larger one, grown as its bytes arrive
    size_t capacity = 0;
    /// Where its next bytes go (growing `grown` first); empty when it cannot grow.
    llvm::MutableArrayRef<uint8_t> space();
    /// Its body as a message, once all of it arrived.
    zmq::message_t take();
  } current_;
  /// The frame read last, leaving current_ fresh for the next.
  Frame takeFrame();
  std::vector<zmq::message_t> message_; ///< the frames of the message being read
};

} // namespace oar::runtime
