// Same-host payloads read straight from the sender's memory instead of through a socket.
#pragma once

#include <sys/types.h>

#include "executor/tensor.h"
#include "runtime/wire/message.pb.h"
#include "support/error.h"
#include "zmq.hpp"
#include "llvm/Support/Error.h"

namespace oar::runtime {

struct Message;

/// Payloads at least this large go through peer memory where both sides agreed to it; smaller
/// ones are cheaper as a socket frame than as a system call on each side.
inline constexpr size_t kPeerMemoryMinBytes = 32 << 10;
/// A param a trainer reads from the pserver's memory is at least this large. A read is one more
/// copy on the trainer's critical path, where the socket's copies overlap in ZeroMQ's I/O
/// threads: between two processes of a 2-core host, a 64-256 KiB pull through memory took 5-15%
/// longer than through the socket, and a 512 KiB one 15-40% less (bench_runtime --processes).
/// A gradient written into a landing is pipelined, so those keep the lower bound.
inline constexpr size_t kPeerParamMinBytes = 256 << 10;

/// Off when OAR_PEER_MEMORY=0 is in the environment (every payload then goes through the
/// socket), or when OAR_LOCAL_TCP=1 turns the same-host path off.
bool peerMemoryEnabled();
/// Whether trainers write their gradients into the pserver's memory (landings); off with
/// OAR_PEER_MEMORY=read (the pserver then reads them from the trainers' memory).
bool landingsEnabled();

/// The process that sent `frame` when it came over a Unix socket from a process of our own
/// user (the kernel's SO_PEERCRED, which ZeroMQ hands on as the "Peer-Address" property);
/// 0 for TCP, another user, or no credentials.
pid_t localSenderPid(const zmq::message_t &frame);

/// Puts this process's probe (16 random bytes, alive as long as the process) into a HELLO or
/// its reply.
void offerPeerMemory(proto::MsgHeader &h);

/// `pid` (the sender of `h`, from localSenderPid) when `h` carries a probe that reads back equal
/// from that process's memory; 0 otherwise (another host, no permission to read it, no probe).
pid_t verifiedPeerPid(const proto::MsgHeader &h, pid_t pid);

/// Whether `t` is worth sending through peer memory: a CPU tensor of at least `minBytes`.
bool worthPeerMemory(const Tensor *t, size_t minBytes = kPeerMemoryMinBytes);

/// Marks `h` as a message whose payload stays at `t`'s address in this process: sendMessage
/// then sends the header alone. The sender keeps the buffer alive and unchanged until the
/// receiver is done with it.
void placeInPeerMemory(proto::MsgHeader &h, const Tensor &t);

/// Whether a process still runs, through a pidfd: once it ended, its pid may belong to another
/// process, which nothing must write into.
class ProcessWatch {
public:
  ProcessWatch() = default;
  explicit ProcessWatch(pid_t pid);
  ~ProcessWatch();
  ProcessWatch(ProcessWatch &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ProcessWatch &operator=(ProcessWatch &&other) noexcept;
  /// False once the process ended, or when it could not be watched.
  bool running() const;
  /// Whether a pidfd was had (none: an old kernel, or a sandbox that refuses pidfd_open).
  bool watchable() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

/// Writes `n` bytes at `src` to `address` in process `pid` (a landing the peer announced).
llvm::Error writePeerMemory(pid_t pid, uint64_t address, const void *src, size_t n,
                            llvm::StringRef what);

/// What readPeerPayload fails with when the process it reads from is gone (exited or killed,
/// its memory released): the peer is lost, as when its socket closes, not merely unreadable.
using PeerProcessGone = KindedError<struct PeerProcessGoneKind>;

/// Reads the payload of `m` (header.peer_address, dims x dtype bytes, checked by decodeMessage)
/// into `m.payload` from process `pid`, which the sender's HELLO (or its reply) verified and
/// which must be the process that sent `m`. `peer` names the sender in the error. When `into`
/// (the old value of a fetched param, which nobody else holds) has that many bytes on the CPU,
/// they land in its buffer instead of a fresh one, which would cost a page fault per page on
/// the trainer's critical path. Fails with PeerProcessGone when `pid` has no memory left to read.
llvm::Error readPeerPayload(Message &m, pid_t pid, llvm::StringRef peer, Tensor into = {});

} // namespace oar::runtime
