// Who sent a message, as ZeroMQ's metadata tells: the peer's address (TCP), its user (the local
// socket's SO_PEERCRED) or its CURVE key (what the ZAP handler accepted).
#pragma once

#include <string>

#include "runtime/wire/frames.h"

namespace oar::runtime {

/// The address a message came from (TCP), or "host:uid:gid:pid" (the local socket of this host),
/// or "local" when ZeroMQ names none.
std::string peerAddress(const Frames &message);

/// Why a keyless server on loopback (`server`: "this pserver", "this scheduler") refuses the
/// sender of `message`, or "": it serves only its own user's processes over the local socket.
std::string strangerRefusal(const Frames &message, const std::string &server);

/// The Z85 public key the sender authenticated with, or "" without CURVE.
std::string peerCurveKey(const Frames &message);

} // namespace oar::runtime
