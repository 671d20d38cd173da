// A collective job's ranks, joined: all-reduce and broadcast among them through Gloo (the CPU
// collective library under PyTorch's and Horovod's gloo backends).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/security/curve.h"
#include "runtime/transport/held_port.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// How a rank joins its group.
struct CollectiveOptions {
  int rank = 0, ranks = 1;
  /// host:port of the rendezvous, which rank 0 serves (there or at `bind`).
  std::string rendezvous;
  std::string bind;
  /// The address this rank's Gloo pairs listen on (the others connect to it).
  std::string host = "127.0.0.1";
  std::string jobId; ///< a rank of another job is refused at the rendezvous
  /// The rendezvous with CURVE (its server key, this rank's pair; rank 0 allows `allowed`).
  CurveConfig curve;
  std::shared_ptr<HeldPort> heldPort; ///< rank 0: the rendezvous port a launcher held
  /// How long joining may take, and each collective's waits (Gloo's per operation; in shared
  /// memory per barrier, so a large all-reduce that makes progress is not cut short): a rank
  /// that is gone or stalls ends the others' wait with an error instead of a hang.
  std::chrono::milliseconds timeout{60000};
  /// Connections per pair of ranks (1 to kMaxStreams): an all-reduce of at least
  /// kMinStreamedBytes is cut into this many parts, each on its own Gloo context (its own TCP
  /// pairs and I/O thread), all at once: one TCP stream may not fill a link (Gloo's own tracker).
  int streams = 1;
  static constexpr int kMaxStreams = 8;
  static constexpr size_t kMinStreamedBytes = size_t(4) << 20;
  /// Ranks that all run on this host (sameHostKey) all-reduce through one shared memory
  /// segment (shared_segment.h) instead of Gloo's TCP ring: off here, or with OAR_LOCAL_TCP=1
  /// or OAR_PEER_MEMORY=0 in the environment (as the pservers' same-host path).
  bool sameHostMemory = true;
  /// Each rank's slot in that segment: an all-reduce runs in rounds of this many bytes.
  size_t segmentChunkBytes = size_t(2) << 20;
  std::function<bool()> shouldStop;
  /// Called (from the group's watchdog thread) when a collective has waited kStuckAfter and a
  /// rank's connection has closed: Gloo does not wake every wait when a pair closes (a send
  /// queued to a peer that died waits out the timeout), so such a collective would otherwise
  /// fail only at `timeout`. The message names the ranks gone; the caller decides what to do
  /// (oar-executor ends the process with it). Unset: the collective waits for its timeout.
  std::function<void(const std::string &)> onStuckWithPeerGone;
  static constexpr std::chrono::milliseconds kStuckAfter{2000};
  std::function<void(const std::string &)> log;
};

/// Joining ignores SIGPIPE in this process (unless it has a handler): Gloo's writes to a peer
/// that died would raise it and end the process without a word.
/// Broadcasts, and all-reduces among ranks of several hosts, run on Gloo's TCP pairs.
/// Gloo's pairs are plain TCP between the ranks, without authentication (Debian's Gloo has no
/// TLS transport): the rendezvous, where every rank learns the others' addresses, is what
/// CURVE protects. Not thread safe: one thread runs the collectives, in the same order on
/// every rank.
class CollectiveGroup {
public:
  /// Joins: rank 0 starts the rendezvous; every rank writes its address there and connects to
  /// every other (a full mesh); once all are connected (a barrier) rank 0 closes the rendezvous.
  /// Errors name this rank and the rendezvous.
  static llvm::Expected<std::unique_ptr<CollectiveGroup>> join(CollectiveOptions options);
  ~CollectiveGroup();

  int rank() const;
  int ranks() const;
  /// Whether all-reduces go through a shared memory segment (every rank on this host).
  bool sharesMemory() const;

  /// Sums `data` over the ranks in place. Each element is summed once, by one rank (in the
  /// ring's order on TCP, in rank order in shared memory), and copied to every rank, so every
  /// rank ends with the same bits.
  llvm::Error allreduceSum(float *data, size_t count);
  llvm::Error allreduceSum(double *data, size_t count);
  /// Averages `parts` over the ranks in place: one all-reduce of them laid end to end, each sum
  /// times 1/ranks. In shared memory they are copied straight in and out; on TCP through a
  /// buffer the group keeps from call to call.
  llvm::Error allreduceMean(llvm::ArrayRef<llvm::MutableArrayRef<float>> parts);
  llvm::Error allreduceMean(llvm::ArrayRef<llvm::MutableArrayRef<double>> parts);
  /// Copies `root`'s `bytes` at `data` to every rank.
  llvm::Error broadcast(void *data, size_t bytes, int root);

  struct Impl;

private:
  explicit CollectiveGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace oar::runtime
