// What every channel does alike, over its kind's send and receive.
#include "runtime/transport/channel.h"

#include "support/error.h"

namespace oar::runtime {

llvm::Error Channel::sendMessage(const proto::MsgHeader &header, const Tensor *tensor,
                                 std::chrono::milliseconds timeout) {
  std::optional<EncodedMessage> encoded;
  try {
    encoded.emplace(encodeMessage(header, tensor));
  } catch (const zmq::error_t &e) { // libzmq could not allocate the header's frame
    return makeError("cannot encode {0}: {1}", header.var(), e.what());
  }
  return send(std::move(*encoded), timeout);
}

} // namespace oar::runtime
