// ZMTP 3.1 as a DEALER with the NULL mechanism (https://rfc.zeromq.org/spec/37/), over a Unix
// socket, on the caller's thread.
#include "runtime/zmtp_link.h"

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "ir/error.h"
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

milliseconds left(Clock::time_point deadline) {
  return std::max(milliseconds(0),
                  std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

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

/// A TCP connection to a numeric "host:port" ("[v6]:port" too), made within `timeout`, with
/// Nagle's delay off as libzmq sets it; -1 and `why` when none could be made.
static int connectTcp(llvm::StringRef hostPort, milliseconds timeout, std::string &why) {
  auto [host, port] = hostPort.rsplit(':');
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.drop_front().drop_back();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV; // a name lookup could wait without bound
  addrinfo *found = nullptr;
  if (int rc = ::getaddrinfo(host.str().c_str(), port.str().c_str(), &hints, &found)) {
    why = ::gai_strerror(rc);
    return -1;
  }
  auto deadline = Clock::now() + timeout;
  int fd = -1;
  for (addrinfo *a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int err = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int ready = ::poll(&p, 1, static_cast<int>(left(deadline).count()));
      socklen_t size = sizeof(err);
      if (ready != 1 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &size) != 0)
        err = ready == 0 ? ETIMEDOUT : errno;
    }
    int one = 1;
    if (err == 0 && (::fcntl(fd, F_SETFL, 0) != 0 ||
                     ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0))
      err = errno;
    if (err != 0) {
      why = std::strerror(err);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

llvm::Expected<std::unique_ptr<ZmtpLink>>
ZmtpLink::connect(llvm::StringRef address, milliseconds timeout, PayloadLimit limit) {
  if (address.startswith("tcp://")) {
    std::string why;
    int fd = connectTcp(address.drop_front(6), timeout, why);
    if (fd < 0)
      return makeError("{0}: cannot connect: {1}", address, why);
    return greet(fd, address.str(), timeout, std::move(limit));
  }
  llvm::StringRef ipcAddress = address, path = address;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (!path.consume_front("ipc://") || path.empty() || path.size() >= sizeof(addr.sun_path))
    return makeError("{0}: not an ipc:// or tcp:// address", ipcAddress);
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
  int domain = 0;
  socklen_t domainBytes = sizeof(domain);
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &domainBytes) != 0)
    return link->fail(llvm::Twine("cannot ask the kernel what the socket is: ") +
                      std::strerror(errno));
  if (domain == AF_UNIX) { // a peer of this host: the kernel says whose
    ucred cred{};
    socklen_t credBytes = sizeof(cred);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credBytes) != 0)
      return link->fail(llvm::Twine("cannot ask the kernel who the peer is: ") +
                        std::strerror(errno));
    if (cred.uid != ::getuid())
      return link->refuse("held by process " + llvm::Twine(cred.pid) + " of user " +
                          llvm::Twine(cred.uid) + ", not of ours: refused");
    link->peerPid_ = cred.pid;
  }
  timeval slice = toTimeval(kSendSlice);
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &slice, sizeof(slice)) != 0)
    return link->fail(llvm::Twine("cannot set a send timeout: ") + std::strerror(errno));
  if (llvm::Error err = link->handshake(timeout))
    return err;
  return link;
}

llvm::Error ZmtpLink::handshake(milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  // Signature (0xFF, 8 bytes of padding, 0x7F), version 3.1, mechanism, as-server, filler.
  uint8_t greeting[kGreetingBytes] = {0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 1};
  std::memcpy(greeting + 12, "NULL", 4);
  std::string ready =
      command("READY", property("Socket-Type", "DEALER") + property("Identity", ""));
  uint8_t readyHead[9];
  size_t readyHeadBytes = frameHead(kCommand, ready.size(), readyHead);
  size_t written = 0;
  // The signature and major version first, as libzmq does: a peer sends its mechanism only
  // after seeing them, and closes on one it does not serve, so ours goes only after we saw its.
  constexpr size_t kVersionEnd = 11;
  if (llvm::Error err = writeAll({{greeting, kVersionEnd}}, left(deadline), written))
    return err;

  while (end_ - begin_ < kGreetingBytes) {
    auto got = fill(left(deadline));
    if (!got)
      return got.takeError();
    if (!*got && Clock::now() >= deadline)
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
  if (llvm::Error err = writeAll({{greeting + kVersionEnd, kGreetingBytes - kVersionEnd},
                                  {readyHead, readyHeadBytes},
                                  {ready.data(), ready.size()}},
                                 left(deadline), written))
    return err;

  for (;;) {
    auto got = readFrame(left(deadline));
    if (!got)
      return got.takeError();
    if (*got)
      break;
    if (Clock::now() >= deadline)
      return fail("no READY in " + llvm::Twine(timeout.count()) + " ms");
  }
  Frame frame = std::move(current_);
  current_ = Frame();
  if (!(frame.flags & kCommand))
    return fail("sent a message before its READY");
  llvm::StringRef body(frame.body.data<char>(), frame.body.size());
  uint8_t nameBytes = body.empty() ? 0 : static_cast<uint8_t>(body[0]);
  if (body.size() < 1u + nameBytes)
    return fail("sent a command cut short");
  llvm::StringRef name = body.substr(1, nameBytes), data = body.substr(1 + nameBytes);
  if (name == "ERROR")
    return refuse("refused the connection: " + data.drop_front(1));
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

void ZmtpLink::setReceiveTimeout(milliseconds timeout) {
  int ms = static_cast<int>(std::min<int64_t>(timeout.count(), INT32_MAX));
  if (ms == receiveTimeoutMs_)
    return;
  timeval tv = toTimeval(milliseconds(ms));
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0)
    receiveTimeoutMs_ = ms;
}

llvm::Expected<size_t> ZmtpLink::readInto(uint8_t *dst, size_t bytes, milliseconds timeout) {
  int flags = timeout.count() > 0 ? 0 : MSG_DONTWAIT; // SO_RCVTIMEO 0 would wait for ever
  if (flags == 0)
    setReceiveTimeout(timeout);
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

llvm::Expected<bool> ZmtpLink::fill(milliseconds timeout) {
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (end_ == buffer_.size()) { // a frame's head straddles the end
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  auto n = readInto(buffer_.data() + end_, buffer_.size() - end_, timeout);
  if (!n)
    return n.takeError();
  end_ += *n;
  return *n > 0;
}

llvm::Expected<bool> ZmtpLink::readFrame(milliseconds timeout) {
  Frame &f = current_;
  while (!f.started) {
    size_t have = end_ - begin_;
    const uint8_t *head = buffer_.data() + begin_;
    if (have >= 2 && have >= ((head[0] & kLong) ? 9u : 2u)) {
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
      f.started = true;
      f.flags = flags;
      f.body = zmq::message_t(static_cast<size_t>(size));
      f.filled = 0;
      break;
    }
    auto got = fill(timeout);
    if (!got || !*got)
      return got;
  }
  for (;;) {
    size_t need = f.body.size() - f.filled;
    size_t take = std::min(need, end_ - begin_);
    std::memcpy(f.body.data<uint8_t>() + f.filled, buffer_.data() + begin_, take);
    begin_ += take;
    f.filled += take;
    need -= take;
    if (need == 0)
      return true;
    // The buffer is empty: a large rest goes straight into the frame, a small one through the
    // buffer (which may bring the next frame's head with it).
    if (need >= kBufferBytes / 2) {
      auto n = readInto(f.body.data<uint8_t>() + f.filled, need, timeout);
      if (!n)
        return n.takeError();
      if (*n == 0)
        return false;
      f.filled += *n;
      continue;
    }
    auto got = fill(timeout);
    if (!got || !*got)
      return got;
  }
}

llvm::Error ZmtpLink::onCommand(const zmq::message_t &body) {
  llvm::StringRef b(body.data<char>(), body.size());
  uint8_t nameBytes = b.empty() ? 0 : static_cast<uint8_t>(b[0]);
  if (b.size() < 1u + nameBytes)
    return fail("sent a command cut short");
  llvm::StringRef name = b.substr(1, nameBytes), data = b.substr(1 + nameBytes);
  if (name == "PONG")
    return llvm::Error::success();
  if (name == "PING") { // a 2-byte TTL, then a context that the PONG returns
    std::string pong = command("PONG", data.drop_front(std::min<size_t>(2, data.size())));
    uint8_t head[9];
    size_t headBytes = frameHead(kCommand, pong.size(), head);
    size_t written = 0;
    llvm::Error err =
        writeAll({{head, headBytes}, {pong.data(), pong.size()}}, kSendSlice, written);
    if (err && written > 0)
      broken_ = true;
    return err;
  }
  if (name == "ERROR")
    return fail("ended the connection: " + data.drop_front(std::min<size_t>(1, data.size())));
  return fail("sent an unknown command '" + name + "'");
}

llvm::Error ZmtpLink::writeAll(std::vector<iovec> iov, milliseconds timeout, size_t &written) {
  auto deadline = Clock::now() + timeout;
  size_t first = 0;
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = iov.size() - first;
    ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        if (Clock::now() < deadline) // the send timeout is a slice of ours
          continue;
        return makeError("{0}: did not take a message in {1} ms", peerName_, timeout.count());
      }
      if (errno == EPIPE || errno == ECONNRESET)
        peerClosed_ = true;
      return fail(llvm::Twine("cannot write: ") + std::strerror(errno));
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
  }
  return llvm::Error::success();
}

llvm::Error ZmtpLink::send(llvm::ArrayRef<llvm::ArrayRef<uint8_t>> frames, milliseconds timeout) {
  if (broken_)
    return makeError("{0}: the connection is broken", peerName_);
  std::vector<std::array<uint8_t, 9>> heads(frames.size());
  std::vector<iovec> iov;
  iov.reserve(2 * frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    uint8_t flags = i + 1 < frames.size() ? kMore : 0;
    size_t headBytes = frameHead(flags, frames[i].size(), heads[i].data());
    iov.push_back({heads[i].data(), headBytes});
    if (!frames[i].empty())
      iov.push_back({const_cast<uint8_t *>(frames[i].data()), frames[i].size()});
  }
  size_t written = 0;
  llvm::Error err = writeAll(std::move(iov), timeout, written);
  if (err && written > 0)
    broken_ = true;
  return err;
}

llvm::Expected<std::optional<std::vector<zmq::message_t>>> ZmtpLink::receive(milliseconds timeout) {
  if (broken_)
    return makeError("{0}: the connection is {1}", peerName_, peerClosed_ ? "closed" : "broken");
  for (;;) {
    auto got = readFrame(timeout);
    if (!got)
      return got.takeError();
    if (!*got)
      return std::nullopt;
    Frame frame = std::move(current_);
    current_ = Frame();
    if (frame.flags & kCommand) {
      if (llvm::Error err = onCommand(frame.body))
        return err;
      continue;
    }
    message_.push_back(std::move(frame.body));
    if (!(frame.flags & kMore)) {
      std::vector<zmq::message_t> done = std::move(message_);
      message_.clear();
      return std::optional<std::vector<zmq::message_t>>(std::move(done));
    }
  }
}

} // namespace oar::runtime
