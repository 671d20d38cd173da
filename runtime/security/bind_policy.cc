// Bind addresses of the job's servers.
#include "runtime/security/bind_policy.h"

#include "support/endpoint.h"
#include "llvm/ADT/StringRef.h"

namespace oar::runtime {

std::string chooseBindAddress(const std::string &endpoint, const std::string &bind, bool curve,
                              const std::string &risk,
                              const std::function<void(const std::string &)> &log) {
  if (curve)
    return bind.empty() ? endpoint : bind;
  if (!bind.empty()) {
    if (!isLoopbackEndpoint(bind))
      log("warning: serving " + bind + " without authentication: any host that reaches it can " +
          risk + " (give CURVE keys: --curve-secret, --curve-allow)");
    return bind;
  }
  if (isLoopbackEndpoint(endpoint))
    return endpoint;
  std::string local = "127.0.0.1:" + llvm::StringRef(endpoint).rsplit(':').second.str();
  log("binding " + local + " only (this host): pass --bind " + endpoint +
      " (or 0.0.0.0:port) to serve other hosts; without CURVE keys (--curve-secret, "
      "--curve-allow) traffic is not authenticated");
  return local;
}

} // namespace oar::runtime
