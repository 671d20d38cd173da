// A TCP port held from the moment it is picked until its server listens on it: nothing else can
// take it in between (a freed port may go to another test's server, or to any outgoing
// connection as its source port).
#pragma once

#include <string>
#include <vector>

#include "llvm/Support/Error.h"

namespace oar::runtime {

/// A listening TCP socket on a port the kernel chose. A server takes it over (its fd, which
/// libzmq adopts with ZMQ_USE_FD) instead of binding the port again; a launcher hands it to the
/// node it starts (heldPortEnvironment). Closed when dropped, unless released.
class HeldPort {
public:
  /// `n` ports on 127.0.0.1, all different.
  static llvm::Expected<std::vector<HeldPort>> onLoopback(int n);
  /// A port on every address of this host (for a server reached from other hosts).
  static llvm::Expected<HeldPort> onAllAddresses();
  /// Adopts `fd`, which must be a listening TCP socket; `what` names it in errors.
  static llvm::Expected<HeldPort> adopt(int fd, const std::string &what);

  HeldPort() = default;
  HeldPort(HeldPort &&other) noexcept;
  HeldPort &operator=(HeldPort &&other) noexcept;
  HeldPort(const HeldPort &) = delete;
  HeldPort &operator=(const HeldPort &) = delete;
  ~HeldPort();

  bool held() const { return fd_ >= 0; }
  int port() const { return port_; }
  /// The address it is bound to: "127.0.0.1" or "0.0.0.0".
  const std::string &host() const { return host_; }
  int fd() const { return fd_; }
  /// Gives the socket up to the caller, who then owns the fd.
  int release();

private:
  HeldPort(int fd, int port, std::string host) : fd_(fd), port_(port), host_(std::move(host)) {}
  static llvm::Expected<HeldPort> listenOn(uint32_t address);
  int fd_ = -1;
  int port_ = 0;
  std::string host_;
};

/// The port a launcher handed this process (OAR_LISTEN_FD), if any; the variable is then
/// cleared, so processes this one starts do not claim the same socket. An unusable value is an
/// error naming the variable.
llvm::Expected<HeldPort> takeHandedOverPort();
/// The port a descriptor number names (`value`, as OAR_LISTEN_FD gives it; null or empty:
/// none), the environment left as it is.
llvm::Expected<HeldPort> adoptHandedOverPort(const char *value);

} // namespace oar::runtime
