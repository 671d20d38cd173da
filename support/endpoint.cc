// Facts about a host:port endpoint that several layers need.
#include "support/endpoint.h"

namespace oar {

bool isLoopbackHost(llvm::StringRef host) {
  return host.startswith("127.") || host == "localhost" || host == "[::1]";
}

bool isLoopbackEndpoint(llvm::StringRef endpoint) {
  return isLoopbackHost(endpoint.rsplit(':').first);
}

} // namespace oar
