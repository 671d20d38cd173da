// process_vm_readv between the nodes of one host: one copy per payload, made by the receiver.
#include "runtime/wire/peer_memory.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "support/env_names.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

#include "runtime/wire/protocol.h"
#include "support/error.h"

namespace oar::runtime {

namespace {

using Probe = std::array<unsigned char, 16>;

/// This process's probe: random, so that a peer naming another process's pid cannot match it.
const Probe &ownProbe() {
  static const Probe probe = [] {
    Probe p;
    std::random_device random;
    for (unsigned char &b : p)
      b = static_cast<unsigned char>(random());
    return p;
  }();
  return probe;
}

/// process_vm_readv or process_vm_writev: they share their signature.
using CrossMemoryCall = ssize_t (*)(pid_t, const iovec *, unsigned long, const iovec *,
                                    unsigned long, unsigned long);

/// Moves `n` bytes between `local` here and `address` in process `pid` with `call`; false with
/// errno set otherwise. A call may stop short at a page boundary: it goes on from there.
bool crossMemory(CrossMemoryCall call, pid_t pid, uint64_t address, void *local, size_t n) {
  size_t done = 0;
  while (done < n) {
    iovec here{static_cast<char *>(local) + done, n - done};
    iovec there{reinterpret_cast<void *>(address + done), n - done};
    ssize_t moved = call(pid, &here, 1, &there, 1, 0);
    if (moved < 0 && errno == EINTR)
      continue;
    if (moved <= 0) {
      if (moved == 0)
        errno = EFAULT;
      return false;
    }
    done += static_cast<size_t>(moved);
  }
  return true;
}
bool readFrom(pid_t pid, uint64_t address, void *dst, size_t n) {
  return crossMemory(process_vm_readv, pid, address, dst, n);
}
bool writeTo(pid_t pid, uint64_t address, const void *src, size_t n) {
  return crossMemory(process_vm_writev, pid, address, const_cast<void *>(src), n);
}

} // namespace

ProcessWatch::ProcessWatch(pid_t pid) : fd_(static_cast<int>(syscall(SYS_pidfd_open, pid, 0))) {}

ProcessWatch::~ProcessWatch() {
  if (fd_ >= 0)
    close(fd_);
}

ProcessWatch &ProcessWatch::operator=(ProcessWatch &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

bool ProcessWatch::running() const {
  if (fd_ < 0)
    return false;
  pollfd p{fd_, POLLIN, 0};
  return poll(&p, 1, 0) == 0; // a pidfd turns readable when its process ends
}

llvm::Error writePeerMemory(pid_t pid, uint64_t address, const void *src, size_t n,
                            llvm::StringRef what) {
  if (!writeTo(pid, address, src, n))
    return makeError("cannot write {0} ({1} bytes) into process {2}: {3}", what, n, pid,
                     std::strerror(errno));
  return llvm::Error::success();
}

bool peerMemoryEnabled() {
  const char *off = std::getenv(env::kOarPeerMemory);
  const char *tcp = std::getenv(env::kOarLocalTcp);
  return !(off && std::strcmp(off, "0") == 0) && !(tcp && *tcp == '1');
}

pid_t localSenderPid(const zmq::message_t &frame) {
  // "host:uid:gid:pid" for a Unix socket's peer; an IP address (no such tail) for TCP.
  const char *address = zmq_msg_gets(frame.handle(), "Peer-Address");
  if (!address)
    return 0;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  llvm::StringRef(address).split(parts, ':');
  unsigned long uid = 0, pid = 0;
  if (parts.size() != 4 || parts[1].getAsInteger(10, uid) || parts[3].getAsInteger(10, pid) ||
      uid != getuid() || pid == 0 || pid > static_cast<unsigned long>(INT32_MAX))
    return 0;
  return static_cast<pid_t>(pid);
}

bool landingsEnabled() {
  const char *mode = std::getenv(env::kOarPeerMemory);
  return peerMemoryEnabled() && !(mode && std::strcmp(mode, "read") == 0);
}

void offerPeerMemory(proto::MsgHeader &h) {
  if (!peerMemoryEnabled())
    return;
  h.set_probe_address(reinterpret_cast<uint64_t>(ownProbe().data()));
  h.set_probe(ownProbe().data(), ownProbe().size());
}

pid_t verifiedPeerPid(const proto::MsgHeader &h, pid_t pid) {
  // Never ourselves: a peer that sees our probe in our reply could otherwise make us read our
  // own memory (a key, say) into a gradient.
  if (!peerMemoryEnabled() || pid <= 0 || pid == getpid() || h.probe().size() != Probe().size() ||
      h.probe_address() == 0)
    return 0;
  Probe read;
  if (!readFrom(pid, h.probe_address(), read.data(), read.size()))
    return 0;
  return std::memcmp(read.data(), h.probe().data(), read.size()) == 0 ? pid : 0;
}

bool worthPeerMemory(const Tensor *t, size_t minBytes) {
  return t && t->initialized() && t->device() == Device::Cpu && t->bytes() >= minBytes;
}

void placeInPeerMemory(proto::MsgHeader &h, const Tensor &t) {
  h.set_peer_address(reinterpret_cast<uint64_t>(t.raw()));
}

llvm::Error readPeerPayload(Message &m, pid_t pid, llvm::StringRef peer, Tensor into) {
  if (pid <= 0)
    return makeError("{0}: {1}'s payload lies in its memory, but it offered no probe that "
                     "reads back",
                     peer, m.header.var());
  if (m.senderPid != pid)
    return makeError("{0}: {1}'s payload lies in the memory of a process other than the one "
                     "that said HELLO",
                     peer, m.header.var());
  size_t n = m.peerBytes;
  bool reuse = into.initialized() && into.device() == Device::Cpu && into.bytes() == n;
  zmq::message_t payload;
  if (!reuse) {
    try {
      payload.rebuild(n);
    } catch (const zmq::error_t &e) {
      return makeError("{0}: cannot allocate {1} bytes for {2}: {3}", peer, n, m.header.var(),
                       e.what());
    }
  }
  if (!readFrom(pid, m.header.peer_address(), reuse ? into.raw() : payload.data(), n)) {
    if (errno == ESRCH) // no such process, or one exiting whose memory is gone
      return llvm::make_error<PeerProcessGone>(
          llvm::formatv("{0}: its process {1} ended while {2}'s {3} bytes were read from its "
                        "memory",
                        peer, pid, m.header.var(), n)
              .str());
    return makeError("{0}: cannot read {1}'s {2} bytes from its memory (process {3}): {4}", peer,
                     m.header.var(), n, pid, std::strerror(errno));
  }
  if (reuse)
    m.readInto = into.buffer();
  else
    m.payload = std::move(payload);
  m.peerBytes = 0;
  m.header.clear_peer_address();
  return llvm::Error::success();
}

} // namespace oar::runtime
