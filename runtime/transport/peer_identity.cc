// Reading who a peer is from a message's metadata.
#include "runtime/transport/peer_identity.h"

#include <unistd.h>

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace oar::runtime {

/// A property of the connection a message came on (libzmq keeps it on every frame; the first
/// is read: a decoded message's payload frame may have moved into a tensor).
static std::string metadata(const Frames &message, const char *property) {
  if (message.empty())
    return "";
  try {
    return const_cast<zmq::message_t &>(message.parts().front()).gets(property);
  } catch (const zmq::error_t &) {
    return "";
  }
}

std::string peerAddress(const Frames &message) {
  std::string address = metadata(message, "Peer-Address");
  return address.empty() ? "local" : address;
}

std::string peerCurveKey(const Frames &message) { return metadata(message, "User-Id"); }

std::string strangerRefusal(const Frames &message, const std::string &server) {
  llvm::SmallVector<llvm::StringRef, 4> parts;
  std::string address = peerAddress(message);
  llvm::StringRef(address).split(parts, ':');
  unsigned long uid = 0;
  if (parts.size() != 4 || parts[1].getAsInteger(10, uid))
    return "without CURVE keys " + server +
           " serves only its own user's processes over its local socket, not TCP peers "
           "(OAR_LOCAL_TCP=1 on every node serves TCP, from any user of the host; CURVE keys "
           "authenticate)";
  if (uid != getuid())
    return "a process of another user (uid " + std::to_string(uid) +
           ") is refused: without CURVE keys " + server + " serves only its own user's processes";
  return "";
}

} // namespace oar::runtime
