// The kernel picks the source address of a connected socket from its routing table.
#include "runtime/collective/local_address.h"

#include <arpa/inet.h>
#include <cstring>
#include <netdb.h>
#include <unistd.h>

#include "support/error.h"

namespace oar::runtime {

llvm::Expected<std::string> localAddressToward(const std::string &host) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (int rc = getaddrinfo(host.c_str(), "9", &hints, &found); rc != 0 || !found)
    return makeError("cannot resolve {0}: {1}", host, gai_strerror(rc));
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(found);
    return makeError("no UDP socket to find the route to {0}: {1}", host, std::strerror(errno));
  }
  int rc = connect(fd, found->ai_addr, found->ai_addrlen);
  int err = errno; // before freeaddrinfo can change it
  freeaddrinfo(found);
  sockaddr_in own{};
  socklen_t len = sizeof(own);
  if (rc != 0 || getsockname(fd, reinterpret_cast<sockaddr *>(&own), &len) != 0) {
    if (rc == 0)
      err = errno;
    close(fd);
    return makeError("no route to {0}: {1}", host, std::strerror(err));
  }
  close(fd);
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &own.sin_addr, text, sizeof(text));
  return std::string(text);
}

} // namespace oar::runtime
