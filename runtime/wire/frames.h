// The frames of one message as they came off a connection. Layers above the transport hold and
// read them through this, and never name libzmq's types.
#pragma once

#include <optional>
#include <vector>

#include "zmq.hpp"
#include "llvm/ADT/StringRef.h"

namespace oar::runtime {

/// One received message: its frames in order.
class Frames {
public:
  Frames() = default;
  explicit Frames(std::vector<zmq::message_t> parts) : parts_(std::move(parts)) {}

  size_t size() const { return parts_.size(); }
  bool empty() const { return parts_.empty(); }
  /// Frame `i`'s bytes, valid while this holds them.
  llvm::StringRef bytes(size_t i) const {
    return {static_cast<const char *>(parts_[i].data()), parts_[i].size()};
  }
  /// The frame of a message of exactly one (the scheduler's and the rendezvous's protobufs);
  /// nullopt for any other count.
  std::optional<llvm::StringRef> single() const {
    if (parts_.size() != 1)
      return std::nullopt;
    return bytes(0);
  }
  /// For wire/ and transport/ only: the frames themselves.
  std::vector<zmq::message_t> &parts() { return parts_; }
  const std::vector<zmq::message_t> &parts() const { return parts_; }

private:
  std::vector<zmq::message_t> parts_;
};

} // namespace oar::runtime
