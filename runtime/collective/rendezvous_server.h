// Rank 0's side of a collective job's rendezvous: the key/value store the ranks meet at.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "runtime/security/curve.h"
#include "runtime/transport/held_port.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

struct RendezvousOptions {
  std::string endpoint; ///< host:port the ranks are told
  std::string bind;     ///< host:port to bind instead; empty: the endpoint's
  std::string jobId;    ///< a rank of another job is refused
  int ranks = 1;
  /// Enabled: CURVE, accepting the keys of `curve.allowed` and its own.
  CurveConfig curve;
  std::shared_ptr<HeldPort> heldPort; ///< the port a launcher held for it
  std::function<void(const std::string &)> log;
};

/// Serves the store on a thread of its own until destroyed. It holds at most kMaxKeys keys of
/// at most kMaxValueBytes each: a rank that wrote more is refused, not given the memory.
class RendezvousServer {
public:
  static constexpr size_t kMaxKeys = 4096;
  static constexpr size_t kMaxValueBytes = size_t(1) << 20;

  /// Binds (as every server of the job does: runtime/transport/server_socket.h) and starts
  /// serving. Errors name the endpoint.
  static llvm::Expected<std::unique_ptr<RendezvousServer>> start(RendezvousOptions options);
  ~RendezvousServer();

  struct Impl;

private:
  explicit RendezvousServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace oar::runtime
