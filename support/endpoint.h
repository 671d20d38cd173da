// Facts about a host:port endpoint that several layers need.
#pragma once

#include "llvm/ADT/StringRef.h"

namespace oar {

/// Whether `host` is this machine's loopback: 127.x, localhost or [::1].
bool isLoopbackHost(llvm::StringRef host);
/// Whether `endpoint` (host:port) names this host's loopback.
bool isLoopbackEndpoint(llvm::StringRef endpoint);

} // namespace oar
