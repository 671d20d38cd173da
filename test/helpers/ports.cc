// Ports for the servers a test starts.
#include "test/helpers/ports.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/env_names.h"
#include "test/helpers/expect.h"

namespace oar {

std::shared_ptr<runtime::HeldPort> holdPort() {
  auto ports = requireValue(runtime::HeldPort::onLoopback(1));
  return std::make_shared<runtime::HeldPort>(std::move(ports.front()));
}

std::string endpointOf(const runtime::HeldPort &port) {
  return "127.0.0.1:" + std::to_string(port.port());
}

std::string handOver(runtime::HeldPort &port) {
  fcntl(port.fd(), F_SETFD, 0);
  return "env " + std::string(env::kOarListenFd) + "=" + std::to_string(port.fd());
}

UnservedPort::UnservedPort() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd_ >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  REQUIRE(bind(fd_, reinterpret_cast<sockaddr *>(&address), length) == 0); // port 0: the kernel's
  REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr *>(&address), &length) == 0);
  port_ = ntohs(address.sin_port);
}

UnservedPort::~UnservedPort() { close(fd_); }

std::vector<int> pickFreePorts(int n) {
  std::vector<int> numbers;
  for (const runtime::HeldPort &p : requireValue(runtime::HeldPort::onLoopback(n)))
    numbers.push_back(p.port());
  return numbers; // the sockets close here
}

} // namespace oar
