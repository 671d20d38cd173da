// Where a server of the job (a pserver, the scheduler) binds: unauthenticated, this host only.
#pragma once

#include <functional>
#include <string>

namespace oar::runtime {

/// The address to bind for a server advertised at `endpoint`. With CURVE, `bind` or the endpoint:
/// only listed keys get in. Without it traffic is not authenticated, so by default the server
/// serves this host only: a non-loopback endpoint binds 127.0.0.1 at its port unless `bind` says
/// otherwise (logged, with the flag to pass), and a non-loopback `bind` is served with a warning
/// that says what a stranger could do (`risk`, e.g. "read and change the model").
std::string chooseBindAddress(const std::string &endpoint, const std::string &bind, bool curve,
                              const std::string &risk,
                              const std::function<void(const std::string &)> &log);

} // namespace oar::runtime
