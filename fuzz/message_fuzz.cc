// libFuzzer target: the decoder of a pserver's and a trainer's incoming messages. The input is
// cut into frames: byte 0 is the number of frames (0-3), each frame then takes a 2-byte
// little-endian length and that many bytes; the last frame takes what is left.
#include "runtime/wire/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  size_t frames = data[0] % 4, at = 1;
  std::vector<zmq::message_t> parts;
  for (size_t f = 0; f < frames; ++f) {
    size_t len = size - at;
    if (f + 1 < frames && size - at >= 2) {
      len = std::min<size_t>(data[at] | data[at + 1] << 8, size - at - 2);
      at += 2;
    }
    parts.emplace_back(data + at, len);
    at += len;
  }
  auto msg = oar::runtime::decodeMessage(parts, 0);
  if (msg && msg->hasTensor()) { // a decoded tensor must be usable as one
    oar::Tensor t;
    msg->moveInto(t);
  }
  if (!msg)
    llvm::consumeError(msg.takeError());
  return 0;
}
