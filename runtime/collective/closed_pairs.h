// Which ranks of a Gloo group have closed their connection to this one: how a failed collective
// names the rank that is gone.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}
} // namespace gloo

namespace oar::runtime {

/// Asks each pair of a group, after a collective failed, whether it is closed.
class ClosedPairs {
public:
  explicit ClosedPairs(gloo::Context &context);
  ~ClosedPairs();

  /// The ranks whose TCP pair with this rank has ended, in rank order. Gloo's device loop notices
  /// a closed connection at once, even on a pair no collective is using, so a rank that died
  /// shows here although it was not this rank's neighbour in the ring. Each open pair gets an
  /// empty message on a slot no collective uses: call only once the group is given up.
  std::vector<int> list();

private:
  std::mutex lock_; ///< the watchdog and a failed collective may both ask
  gloo::Context &context_;
  char byte_ = 0;
  /// Gloo's pairs hold a weak reference to a buffer they send from: one destroyed with its
  /// send still queued drops the send.
  std::unique_ptr<gloo::transport::UnboundBuffer> probe_;
};

} // namespace oar::runtime
