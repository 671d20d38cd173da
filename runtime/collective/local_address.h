// The address this host reaches another one from: where a rank's Gloo pairs listen when its
// launcher names no address of its own (mpirun, srun across hosts).
#pragma once

#include <string>

#include "llvm/Support/Error.h"

namespace oar::runtime {

/// This host's IPv4 address on the route to `host` (a name or an address): a UDP socket
/// connected there (no packet is sent) and asked for its own end. Errors name `host`.
llvm::Expected<std::string> localAddressToward(const std::string &host);

} // namespace oar::runtime
