// Ports held from their choice to their use.
#include "runtime/transport/held_port.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/env_names.h"
#include "support/error.h"
#include "llvm/ADT/StringRef.h"

namespace oar::runtime {

namespace {
/// The address and port `fd` is bound to, if it is an IPv4 TCP socket.
bool localAddress(int fd, sockaddr_in &addr) {
  socklen_t len = sizeof(addr);
  return getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) == 0 &&
         addr.sin_family == AF_INET;
}

std::string hostOf(const sockaddr_in &addr) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return text;
}
} // namespace

llvm::Expected<HeldPort> HeldPort::listenOn(uint32_t address) {
  // Close-on-exec: only the node a launcher hands it to gets it (see launcher.cc).
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(address);
  // Listening now, not only bound: a client that connects before the server takes the socket
  // over waits in its backlog instead of being refused.
  if (fd >= 0 && fd < 3) { // stdin, stdout or stderr were closed: a node's 0-2 are not ours
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    fd = high;
  }
  bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) == 0 &&
            listen(fd, SOMAXCONN) == 0 && localAddress(fd, addr);
  int err = errno;
  if (!ok) {
    if (fd >= 0)
      close(fd);
    return makeError("cannot hold a free TCP port on {0}: {1}",
                     address == INADDR_LOOPBACK ? "127.0.0.1" : "this host", strerror(err));
  }
  return HeldPort(fd, ntohs(addr.sin_port), hostOf(addr));
}

llvm::Expected<std::vector<HeldPort>> HeldPort::onLoopback(int n) {
  std::vector<HeldPort> ports;
  for (int i = 0; i < n; ++i) {
    auto port = listenOn(INADDR_LOOPBACK);
    if (!port)
      return port.takeError();
    ports.push_back(std::move(*port));
  }
  return ports;
}

llvm::Expected<HeldPort> HeldPort::onAllAddresses() { return listenOn(INADDR_ANY); }

llvm::Expected<HeldPort> HeldPort::adopt(int fd, const std::string &what) {
  sockaddr_in addr = {};
  int type = 0, listening = 0;
  socklen_t len = sizeof(type);
  bool isTcp = fcntl(fd, F_GETFD) != -1 && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
               type == SOCK_STREAM && localAddress(fd, addr);
  len = sizeof(listening);
  if (!isTcp || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
    return makeError("{0}: fd {1} is not a listening IPv4 TCP socket", what, fd);
  fcntl(fd, F_SETFD, FD_CLOEXEC); // ours now: not for the processes this one starts
  return HeldPort(fd, ntohs(addr.sin_port), hostOf(addr));
}

HeldPort::HeldPort(HeldPort &&other) noexcept
    : fd_(other.fd_), port_(other.port_), host_(std::move(other.host_)) {
  other.fd_ = -1;
}

HeldPort &HeldPort::operator=(HeldPort &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      close(fd_);
    fd_ = other.fd_, port_ = other.port_, host_ = std::move(other.host_);
    other.fd_ = -1;
  }
  return *this;
}

HeldPort::~HeldPort() {
  if (fd_ >= 0)
    close(fd_);
}

int HeldPort::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

llvm::Expected<HeldPort> takeHandedOverPort() {
  const char *value = std::getenv(env::kOarListenFd);
  if (!value || !*value)
    return HeldPort();
  std::string text = value;
  unsetenv(env::kOarListenFd);
  return adoptHandedOverPort(text.c_str());
}

llvm::Expected<HeldPort> adoptHandedOverPort(const char *value) {
  if (!value || !*value)
    return HeldPort();
  std::string text = value;
  int fd = -1;
  if (llvm::StringRef(text).getAsInteger(10, fd) || fd < 3)
    return makeError("{0}={1}: not a file descriptor number (3 or more)", env::kOarListenFd, text);
  return HeldPort::adopt(fd, std::string(env::kOarListenFd) + "=" + text);
}

} // namespace oar::runtime
