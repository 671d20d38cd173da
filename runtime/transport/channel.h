// A client's connection to one server of the job, whatever carries it: the trainer's client
// (to each pserver) and the scheduler client speak through a Channel and never to a transport.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "runtime/security/curve.h"
#include "runtime/wire/protocol.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// What a channel learnt of its peer's end of the connection.
struct ChannelNews {
  bool dropped = false; ///< the peer closed the connection
  /// CURVE: the peer's ZAP handler refused our public key, with this status.
  std::optional<uint32_t> keyRefused;
  /// The security handshake failed: the mechanisms differ, or (CURVE) the server key we were
  /// given is not the peer's.
  bool handshakeFailed = false;
};

/// A refusal at the peer's door (another user's process, another socket type or mechanism):
/// trying again cannot help. The message says what to check.
class ChannelRefused : public llvm::ErrorInfo<ChannelRefused> {
public:
  static char ID;
  explicit ChannelRefused(std::string message) : message_(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message_; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
  std::string message_;
};

/// One connection, request and reply. Not thread safe.
///
/// Two kinds: a libzmq DEALER (any host, CURVE, libzmq's I/O thread queues and reconnects) and a
/// direct ZMTP link to a pserver of this host (the frames written and read on the caller's
/// thread). Peer memory (runtime/wire/peer_memory.h) is not a third kind: it is where a large
/// payload lies, named by a header that either kind carries.
class Channel {
public:
  virtual ~Channel() = default;
  /// Sends one message, waiting at most `timeout` while the peer takes none (0: no waiting), and
  /// no longer once the channel's shouldStop says so. A DEALER queues the payload without a copy
  /// (EncodedMessage::payloadOwner keeps it alive); a link has written it when this returns.
  virtual llvm::Error send(EncodedMessage &&message, std::chrono::milliseconds timeout) = 0;
  /// send() of a header and its tensor (encodeMessage), the tensor's buffer without a copy.
  llvm::Error sendMessage(const proto::MsgHeader &header, const Tensor *tensor,
                          std::chrono::milliseconds timeout);
  /// The frames of the next message, waiting at most `wait`; nullopt when none came (or a
  /// signal's handler ran: the caller's loop looks at its shouldStop).
  virtual llvm::Expected<std::optional<Frames>> receive(std::chrono::milliseconds wait) = 0;
  /// What happened to the connection since the last call. A link tells its state: once the
  /// peer closed it, every call says so.
  virtual ChannelNews news() = 0;
  /// Whether a read or write found the peer gone. A DEALER reconnects by itself and tells only
  /// through news().
  virtual bool peerClosed() const { return false; }
  /// The peer's process when the kernel names it (a link); 0 otherwise.
  virtual pid_t peerPid() const { return 0; }
  /// Whether it is a direct link (no libzmq I/O thread in between).
  virtual bool direct() const = 0;
};

/// The libzmq context the DEALER channels of one client share (one I/O thread for all). It is
/// made with the first channel, so that a failure to make it is that channel's error. Outlives
/// its channels.
class ClientContext {
public:
  ClientContext();
  ~ClientContext();
  ClientContext(const ClientContext &) = delete;
  ClientContext &operator=(const ClientContext &) = delete;

  struct Impl; ///< dealer_channel.cc's
  Impl &impl() { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

/// How a DEALER channel is set up.
struct DealerOptions {
  CurveConfig curve; ///< enabled: CURVE with our key pair, checking the server's public key
  std::chrono::milliseconds linger{0};
  std::optional<int64_t> maxMessageBytes; ///< a larger message from the peer drops the connection
  /// Watch the connection (ChannelNews); without it, news() says nothing.
  bool watch = false;
  /// Polled while a send waits for room: true ends the wait (unset: never).
  std::function<bool()> shouldStop;
};
/// A DEALER connecting to `endpoint` (host:port, or its IPC address on this host, see
/// connectAddress). libzmq connects in the background, so a server that starts later is
/// reached; what is sent meanwhile waits in the queue.
llvm::Expected<std::unique_ptr<Channel>>
openDealer(ClientContext &context, const std::string &endpoint, const DealerOptions &options);

/// A direct link to the pserver at `ipcAddress` (localIpcAddress), greeted within `timeout`.
/// A refusal is a ChannelRefused. `shouldStop` ends a write that waits for room.
llvm::Expected<std::unique_ptr<Channel>> openLink(const std::string &ipcAddress,
                                                  std::chrono::milliseconds timeout,
                                                  std::function<bool()> shouldStop = {});

} // namespace oar::runtime
