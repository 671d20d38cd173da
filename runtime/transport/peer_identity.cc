// Reading who a peer is from a message's metadata.
#include "runtime/security/peer_identity.h"

#include <unistd.h>

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace oar::runtime {

static std::string metadata(const zmq::message_t &frame, const char *property) {
  try {
    return const_cast<zmq::message_t &>(frame).gets(property);
  } catch (const zmq::error_t &) {
    return "";
  }
}

std::string peerAddress(const zmq::message_t &frame) {
  std::string address = metadata(frame, "Peer-Address");
  return address.empty() ? "local" : address;
}

std::string peerCurveKey(const zmq::message_t &frame) { return metadata(frame, "User-Id"); }

std::string strangerRefusal(const zmq::message_t &frame, const std::string &server) {
  llvm::SmallVector<llvm::StringRef, 4> parts;
  std::string address = peerAddress(frame);
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
