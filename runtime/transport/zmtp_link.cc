// ZMTP 3.1 as a DEALER with the NULL mechanism (https://rfc.zeromq.org/spec/37/), over a Unix
// socket, on the caller's thread.
#include "runtime/transport/zmtp_link.h"

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "support/deadline.h"
#include "support/error.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Endian.h"

namespace oar::runtime {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kGreetingBytes = 64;
/// Small, so that most of a large frame is read straight into its message instead of copied
/// there from the buffer; messages of a few KiB still come in one read.
constexpr size_t kBufferBytes = 8 << 10;
/// READY, PING, ERROR: short by the spec; a command announcing more is junk.
constexpr size_t kMaxCommandBytes = 64 << 10;
/// Payload frames up to this size are taken without asking the header what it announced.
constexpr size_t kUncheckedPayloadBytes = 64 << 10;
/// How long one blocking send may wait before the link looks at its own deadline again.
constexpr milliseconds kSendSlice(200);

enum FrameFlag : uint8_t { kMore = 1, kLong = 2, kCommand = 4 };

timeval toTimeval(milliseconds ms) {
  return {static_cast<time_t>(ms.count() / 1000),
          static_cast<suseconds_t>(ms.count() % 1000 * 1000)};
}

/// A command's body: its name's length, its name, then its data.
std::string command(llvm::StringRef name, llvm::StringRef data) {
  std::string body(1, static_cast<char>(name.size()));
  return body + name.str() + data.str();
}

/// A ZMTP metadata property: name length (1 byte), name, value length (4 bytes), value.
std::string property(llvm::StringRef name, llvm::StringRef value) {
  std::string p(1, static_cast<char>(name.size()));
  p += name.str();
  char size[4];
  llvm::support::endian::write32be(size, static_cast<uint32_t>(value.size()));
  p.append(size, 4);
  return p + value.str();
}

/// A command's name and data (its body: the name's length, the name, the data); nullopt when
/// the body is shorter than its name says.
std::optional<std::pair<llvm::StringRef, llvm::StringRef>>
commandParts(const zmq::message_t &command) {
  llvm::StringRef body(command.data<char>(), command.size());
  size_t nameBytes = body.empty() ? 0 : static_cast<uint8_t>(body[0]);
  if (body.size() < 1 + nameBytes)
    return std::nullopt;
  return std::make_pair(body.substr(1, nameBytes), body.substr(1 + nameBytes));
}

/// A frame's flags and size, as they precede its body (1 + 1 or 1 + 8 bytes).
size_t frameHead(uint8_t flags, uint64_t size, uint8_t *out) {
  if (size <= 255) {
    out[0] = flags;
    out[1] = static_cast<uint8_t>(size);
    return 2;
  }
  out[0] = flags | kLong;
  llvm::support::endian::write64be(out + 1, size);
  return 9;
}

} // namespace

ZmtpLink::ZmtpLink(int fd, std::string peerName, PayloadLimit limit)
    : fd_(fd), peerName_(std::move(peerName)), payloadLimit_(std::move(limit)),
      buffer_(kBufferBytes) {}

ZmtpLink::~ZmtpLink() { ::close(fd_); }

char ZmtpRefusal::ID = 0;

bool ZmtpLink::peerHungUp() const {
  pollfd p{fd_, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

llvm::Error ZmtpLink::refuse(const llvm::Twine &why, bool wantsCurve) {
  broken_ = true;
  return llvm::make_error<ZmtpRefusal>((peerName_ + ": " + why).str(), wantsCurve);
}

llvm::Error ZmtpLink::fail(const llvm::Twine &why) {
  broken_ = true;
  return makeError("{0}: {1}", peerName_, why.str());
}

llvm::Expected<std::unique_ptr<ZmtpLink>>
ZmtpLink::connect(llvm::StringRef ipcAddress, milliseconds timeout, PayloadLimit limit) {
  llvm::StringRef path = ipcAddress;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (!path.consume_front("ipc://") || path.empty() || path.size() >= sizeof(addr.sun_path))
    return makeError("{0}: not an ipc:// address of a Unix socket", ipcAddress);
  // As libzmq names them: "@name" is "\0name" in the abstract namespace, its length counted
  // without a terminating NUL; a path keeps its NUL.
  std::memcpy(addr.sun_path, path.data(), path.size());
  socklen_t length = offsetof(sockaddr_un, sun_path) + path.size();
  if (path.front() == '@')
    addr.sun_path[0] = '\0';
  else
    ++length;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return makeError("{0}: cannot make a socket: {1}", ipcAddress, std::strerror(errno));
  // A Unix connect waits while the listener's backlog is full, for as long as the send timeout.
  timeval wait = toTimeval(std::max(timeout, milliseconds(1)));
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr *>(&addr), length) != 0) {
    int err = errno;
    ::close(fd);
    return makeError("{0}: cannot connect: {1}", ipcAddress, std::strerror(err));
  }
  return greet(fd, ipcAddress.str(), timeout, std::move(limit));
}

llvm::Expected<std::unique_ptr<ZmtpLink>>
ZmtpLink::greet(int fd, std::string peerName, milliseconds timeout, PayloadLimit limit) {
  std::unique_ptr<ZmtpLink> link(new ZmtpLink(fd, std::move(peerName), std::move(limit)));
  ucred cred{};
  socklen_t credBytes = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credBytes) != 0)
    return link->fail(llvm::Twine("cannot ask the kernel who the peer is: ") +
                      std::strerror(errno));
  if (cred.uid != ::getuid())
    return link->refuse("held by process " + llvm::Twine(cred.pid) + " of user " +
                        llvm::Twine(cred.uid) + ", not of ours: refused");
  link->peerPid_ = cred.pid;
  timeval slice = toTimeval(kSendSlice);
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &slice, sizeof(slice)) != 0)
    return link->fail(llvm::Twine("cannot set a send timeout: ") + std::strerror(errno));
  if (llvm::Error err = link->handshake(timeout))
    return err;
  return link;
}

llvm::Error ZmtpLink::handshake(milliseconds timeout) {
  Deadline deadline(timeout);
  // Signature (0xFF, 8 bytes of padding, 0x7F), version 3.1, mechanism, as-server, filler.
  uint8_t greeting[kGreetingBytes] = {0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 1};
  std::memcpy(greeting + 12, "NULL", 4);
  std::string ready =
      command("READY", property("Socket-Type", "DEALER") + property("Identity", ""));
  uint8_t readyHead[9];
  size_t readyHeadBytes = frameHead(kCommand, ready.size(), readyHead);
  // The signature and major version first, as libzmq does: a peer sends its mechanism only
  // after seeing them, and closes on one it does not serve, so ours goes only after we saw its.
  constexpr size_t kVersionEnd = 11;
  iovec version[] = {{greeting, kVersionEnd}};
  if (llvm::Error err = writeAll(version, deadline.left()))
    return err;

  waitUntil(deadline.end(), timeout);
  while (end_ - begin_ < kGreetingBytes) {
    auto got = fill();
    if (!got)
      return got.takeError();
    if (!*got && deadline.passed())
      return fail("no ZeroMQ greeting in " + llvm::Twine(timeout.count()) + " ms");
  }
  const uint8_t *g = buffer_.data() + begin_;
  if (g[0] != 0xFF || !(g[9] & 1) || g[10] < 3)
    return refuse("does not speak ZeroMQ's ZMTP 3 (its greeting starts otherwise)");
  llvm::StringRef mechanism(reinterpret_cast<const char *>(g + 12),
                            strnlen(reinterpret_cast<const char *>(g + 12), 20));
  if (mechanism != "NULL")
    return refuse("asks for the " + mechanism +
                      " mechanism: does it serve CURVE keys (--curve-secret)? A trainer then "
                      "needs --curve-server-key",
                  mechanism == "CURVE");
  begin_ += kGreetingBytes;
  iovec rest[] = {{greeting + kVersionEnd, kGreetingBytes - kVersionEnd},
                  {readyHead, readyHeadBytes},
                  {ready.data(), ready.size()}};
  if (llvm::Error err = writeAll(rest, deadline.left()))
    return err;

  for (;;) {
    auto got = readFrame();
    if (!got)
      return got.takeError();
    if (*got)
      break;
    if (deadline.passed())
      return fail("no READY in " + llvm::Twine(timeout.count()) + " ms");
  }
  Frame frame = takeFrame();
  if (!(frame.flags & kCommand))
    return fail("sent a message before its READY");
  zmq::message_t command = frame.take();
  auto parts = commandParts(command);
  if (!parts)
    return fail("sent a command cut short");
  auto [name, data] = *parts;
  if (name == "ERROR")
    return refuse("refused the connection: " + data.drop_front(std::min<size_t>(1, data.size())));
  if (name != "READY")
    return refuse("sent " + name + " where READY belongs");
  std::optional<llvm::StringRef> socketType;
  while (!data.empty()) {
    uint8_t keyBytes = static_cast<uint8_t>(data[0]);
    if (data.size() < 1u + keyBytes + 4)
      return fail("sent READY metadata cut short");
    llvm::StringRef key = data.substr(1, keyBytes);
    uint32_t valueBytes = llvm::support::endian::read32be(data.data() + 1 + keyBytes);
    data = data.drop_front(1 + keyBytes + 4);
    if (data.size() < valueBytes)
      return fail("sent READY metadata cut short");
    if (key.equals_insensitive("Socket-Type"))
      socketType = data.take_front(valueBytes);
    data = data.drop_front(valueBytes);
  }
  if (socketType != llvm::StringRef("ROUTER"))
    return refuse("is a " + socketType.value_or("socket of no type") + ", not a pserver's ROUTER");
  return llvm::Error::success();
}

void ZmtpLink::waitUntil(Clock::time_point deadline, milliseconds slice) {
  deadline_ = deadline;
  slice_ = slice;
}

llvm::Expected<size_t> ZmtpLink::readInto(uint8_t *dst, size_t bytes) {
  // Blocking, with the socket's receive timeout as the longest wait, until the call's deadline
  // (SO_RCVTIMEO of 0 would wait for ever); past it only what has arrived.
  int flags = MSG_DONTWAIT;
  int sliceMs = static_cast<int>(std::min<int64_t>(slice_.count(), INT32_MAX));
  if (sliceMs > 0 && Clock::now() < deadline_) {
    if (sliceMs != receiveTimeoutMs_) { // set once for the usual fixed slice
      timeval tv = toTimeval(milliseconds(sliceMs));
      if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
        return fail(llvm::Twine("cannot set a receive timeout: ") + std::strerror(errno));
      receiveTimeoutMs_ = sliceMs;
    }
    flags = 0;
  }
  ssize_t n = ::recv(fd_, dst, bytes, flags);
  if (n > 0)
    return static_cast<size_t>(n);
  if (n == 0) {
    peerClosed_ = true;
    return fail("closed the connection");
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) // the caller looks again
    return 0;
  if (errno == ECONNRESET) { // it closed with bytes of ours unread
    peerClosed_ = true;
    return fail("closed the connection (reset)");
  }
  return fail(llvm::Twine("cannot read: ") + std::strerror(errno));
}

llvm::Expected<bool> ZmtpLink::fill() {
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (end_ == buffer_.size()) { // a frame's head straddles the end
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  auto n = readInto(buffer_.data() + end_, buffer_.size() - end_);
  if (!n)
    return n.takeError();
  end_ += *n;
  return *n > 0;
}

llvm::MutableArrayRef<uint8_t> ZmtpLink::Frame::space() {
  if (!grown)
    return {body.data<uint8_t>() + filled, body.size() - filled};
  if (filled == capacity) { // doubles: a large realloc moves pages (mremap), not bytes
    size_t more = static_cast<size_t>(std::min<uint64_t>(size, 2 * uint64_t(capacity)));
    auto *bigger = static_cast<uint8_t *>(std::realloc(grown.get(), more));
    if (!bigger)
      return {};
    (void)grown.release();
    grown.reset(bigger);
    capacity = more;
  }
  return {grown.get() + filled, capacity - filled};
}

ZmtpLink::Frame ZmtpLink::takeFrame() {
  Frame done = std::move(current_);
  current_ = Frame(); // a moved-from frame still says it started
  return done;
}

zmq::message_t ZmtpLink::Frame::take() {
  if (!grown)
    return std::move(body);
  return zmq::message_t(
      grown.release(), static_cast<size_t>(size), [](void *data, void *) { std::free(data); },
      nullptr);
}

llvm::Expected<bool> ZmtpLink::startFrame() {
  size_t have = end_ - begin_;
  const uint8_t *head = buffer_.data() + begin_;
  if (have < 2 || have < ((head[0] & kLong) ? 9u : 2u))
    return false;
  uint8_t flags = head[0];
  uint64_t size = (flags & kLong) ? llvm::support::endian::read64be(head + 1) : head[1];
  begin_ += (flags & kLong) ? 9 : 2;
  if (flags & ~(kMore | kLong | kCommand))
    return fail("sent a frame with unknown flags " + llvm::Twine(int(flags)));
  uint64_t limit = kMaxHeaderFrame;
  if (flags & kCommand) {
    limit = kMaxCommandBytes;
    if (flags & kMore)
      return fail("sent a command marked as followed by more frames");
  } else if (message_.size() >= 2) {
    return fail("sent a message of more than two frames (an oar header and its payload)");
  } else if (message_.size() == 1 && size > kUncheckedPayloadBytes) {
    // Allocated only when the header announced it (or it is small).
    std::optional<uint64_t> announced =
        payloadLimit_ ? payloadLimit_(message_[0]) : std::optional<uint64_t>(limit);
    limit = announced.value_or(0);
  }
  if (size > limit)
    return fail("announced a frame of " + llvm::Twine(size) + " bytes where at most " +
                llvm::Twine(limit) + " belong");
  Frame &f = current_;
  f.started = true;
  f.flags = flags;
  f.size = size;
  if (size <= kEagerFrameBytes) {
    try {
      f.body = zmq::message_t(static_cast<size_t>(size));
    } catch (const zmq::error_t &e) {
      return fail("announced a frame of " + llvm::Twine(size) + " bytes: " + e.what());
    }
  } else { // memory as its bytes arrive: an announcement alone takes none
    f.capacity = size_t(1) << 20;
    f.grown.reset(static_cast<uint8_t *>(std::malloc(f.capacity)));
    if (!f.grown)
      return fail("cannot allocate memory for a frame");
  }
  return true;
}

llvm::Expected<bool> ZmtpLink::readFrame() {
  Frame &f = current_;
  while (!f.started) {
    auto started = startFrame();
    if (!started)
      return started.takeError();
    if (*started)
      break;
    auto got = fill();
    if (!got || !*got)
      return got;
  }
  for (;;) {
    size_t need = static_cast<size_t>(f.size - f.filled);
    if (need == 0)
      return true;
    llvm::MutableArrayRef<uint8_t> space = f.space();
    if (space.empty())
      return fail("cannot allocate memory for a frame of " + llvm::Twine(f.size) + " bytes");
    size_t take = std::min({need, space.size(), end_ - begin_});
    if (take > 0) {
      std::memcpy(space.data(), buffer_.data() + begin_, take);
      begin_ += take;
      f.filled += take;
      continue;
    }
    // The buffer is empty: a large rest goes straight into the frame, a small one through the
    // buffer (which may bring the next frame's head with it).
    if (std::min(need, space.size()) >= kBufferBytes / 2) {
      auto n = readInto(space.data(), std::min(need, space.size()));
      if (!n)
        return n.takeError();
      if (*n == 0)
        return false;
      f.filled += *n;
      continue;
    }
    auto got = fill();
    if (!got || !*got)
      return got;
  }
}

llvm::Error ZmtpLink::onCommand(const zmq::message_t &body) {
  auto parts = commandParts(body);
  if (!parts)
    return fail("sent a command cut short");
  auto [name, data] = *parts;
  if (name == "PONG")
    return llvm::Error::success();
  if (name == "PING") { // a 2-byte TTL, then a context that the PONG returns
    std::string pong = command("PONG", data.drop_front(std::min<size_t>(2, data.size())));
    uint8_t head[9];
    size_t headBytes = frameHead(kCommand, pong.size(), head);
    iovec iov[] = {{head, headBytes}, {pong.data(), pong.size()}};
    return writeAll(iov, kSendSlice);
  }
  if (name == "ERROR")
    return fail("ended the connection: " + data.drop_front(std::min<size_t>(1, data.size())));
  return fail("sent an unknown command '" + name + "'");
}

llvm::Error ZmtpLink::writeAll(llvm::MutableArrayRef<iovec> iov, milliseconds timeout) {
  Deadline deadline(timeout);
  size_t first = 0, written = 0;
  // A message cut off part way leaves the stream unreadable for the peer: the link is broken.
  auto failed = [&](llvm::Error err) {
    broken_ |= written > 0;
    return err;
  };
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = iov.size() - first;
    ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        if (errno == EPIPE || errno == ECONNRESET)
          peerClosed_ = true;
        return fail(llvm::Twine("cannot write: ") + std::strerror(errno));
      }
      if (shouldStop_ && shouldStop_())
        return failed(makeError("{0}: stopped by signal while writing", peerName_));
      n = 0;
    }
    written += static_cast<size_t>(n);
    for (size_t done = static_cast<size_t>(n); first < iov.size(); ++first) {
      if (done < iov[first].iov_len) {
        iov[first].iov_base = static_cast<char *>(iov[first].iov_base) + done;
        iov[first].iov_len -= done;
        break;
      }
      done -= iov[first].iov_len;
    }
    // Each send waits at most its slice (SO_SNDTIMEO): a peer that takes a little at a time
    // still meets the deadline.
    if (first < iov.size() && deadline.passed())
      return failed(makeError("{0}: did not take a message in {1} ms", peerName_, timeout.count()));
  }
  return llvm::Error::success();
}

llvm::Error ZmtpLink::send(llvm::ArrayRef<llvm::ArrayRef<uint8_t>> frames, milliseconds timeout) {
  if (broken_)
    return makeError("{0}: the connection is broken", peerName_);
  // An oar message is a header and at most a payload: no allocation on this path.
  llvm::SmallVector<std::array<uint8_t, 9>, 2> heads(frames.size());
  llvm::SmallVector<iovec, 4> iov;
  for (size_t i = 0; i < frames.size(); ++i) {
    uint8_t flags = i + 1 < frames.size() ? kMore : 0;
    size_t headBytes = frameHead(flags, frames[i].size(), heads[i].data());
    iov.push_back({heads[i].data(), headBytes});
    if (!frames[i].empty())
      iov.push_back({const_cast<uint8_t *>(frames[i].data()), frames[i].size()});
  }
  return writeAll(iov, timeout);
}

llvm::Expected<std::optional<std::vector<zmq::message_t>>> ZmtpLink::receive(milliseconds timeout) {
  if (broken_)
    return makeError("{0}: the connection is {1}", peerName_, peerClosed_ ? "closed" : "broken");
  waitUntil(Clock::now() + timeout, timeout);
  for (;;) {
    auto got = readFrame();
    if (!got)
      return got.takeError();
    if (!*got)
      return std::nullopt;
    Frame frame = takeFrame();
    if (frame.flags & kCommand) {
      if (llvm::Error err = onCommand(frame.take()))
        return err;
      continue;
    }
    message_.push_back(frame.take());
    if (!(frame.flags & kMore)) {
      std::vector<zmq::message_t> done = std::move(message_);
      message_.clear();
      return std::optional<std::vector<zmq::message_t>>(std::move(done));
    }
  }
}

} // namespace oar::runtime
