// A group's all-reduce through one shared memory segment, for ranks that all run on one host:
// what NCCL's and MPI's shared-memory transports do, and Gloo (TCP pairs only) does not. Between
// processes of one host a loopback TCP ring copies every byte through the kernel twice; here
// each rank copies its buffer in, sums its slice of every rank's, and copies the sums out.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// Thrown by SharedSegment::allreduce when a rank left the group or its process ended while
/// this one waited for it; the message names the ranks ("rank 1 is gone (its process ended)").
struct SharedSegmentPeerGone : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What ranks compare to know they can share a segment: the same boot, user, network namespace
/// (ranks in other network namespaces are other hosts to oar: no same-host path there) and PID
/// namespace (their pids are watched).
std::string sameHostKey();

/// One segment: per rank an input slot of `chunkBytes`, one output slot, and the barrier. Rank 0
/// creates it under a random name (mode 0600: this user's processes only) and the others open
/// that name, which they learn through the group's rendezvous; once every rank has it open,
/// rank 0 unlinks the name, so nothing outlives the ranks, even killed ones.
class SharedSegment {
public:
  static constexpr int kMaxRanks = 64;
  /// Rank 0: a new segment for `ranks` ranks, with this process's pid in rank 0's place.
  static llvm::Expected<std::unique_ptr<SharedSegment>> create(int ranks, size_t chunkBytes);
  /// Rank `rank` (> 0): the segment `name` of rank 0, checked against `ranks` and `chunkBytes`.
  static llvm::Expected<std::unique_ptr<SharedSegment>> open(const std::string &name, int rank,
                                                             int ranks, size_t chunkBytes);
  /// Marks this rank as gone (a rank waiting for it ends at once) and unmaps.
  ~SharedSegment();

  const std::string &name() const { return name_; }
  /// Removes the name (rank 0, once every rank has opened it); the mapping stays.
  void unlink();

  /// Sums `parts`, laid end to end, over the ranks in place and multiplies the sums by `scale`
  /// (1: the sums as they are), in rounds of `chunkBytes`: each rank copies its share of the
  /// round in, sums one slice of every rank's in rank order, and copies every slice's sums out,
  /// so every rank ends with the same bits. Each wait for the other ranks ends after
  /// `waitTimeout` (a large all-reduce on a slow host may take longer in all, while it makes
  /// progress), or as soon as a rank left or its process ended (SharedSegmentPeerGone); a timeout
  /// throws a runtime_error that says "Timed out". Every rank calls it with the same element
  /// count, in the same order.
  template <typename T>
  void allreduce(llvm::ArrayRef<llvm::MutableArrayRef<T>> parts, T scale,
                 std::chrono::milliseconds waitTimeout);

  struct Layout;

private:
  SharedSegment(std::string name, int rank, int ranks, size_t chunkBytes, void *base, size_t bytes);
  void barrier(std::chrono::steady_clock::time_point deadline);
  void watchPeers();
  /// Throws SharedSegmentPeerGone naming the ranks gone, if any.
  void checkPeers();

  std::string name_;
  int rank_, ranks_;
  size_t chunkBytes_;
  void *base_;
  size_t bytes_;
  bool linked_ = true;
  struct Watches;
  std::unique_ptr<Watches> watches_; ///< the other ranks' processes
};

} // namespace oar::runtime
