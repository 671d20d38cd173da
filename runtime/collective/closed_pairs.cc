// A closed pair refuses any send at once with the exception that closed it (Gloo keeps it),
// which is the only view of a pair's state Gloo's public API gives.
#include "runtime/collective/closed_pairs.h"

#include <limits>

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

namespace oar::runtime {

/// Far past the tags collectives use (CollectiveGroup counts up from 0).
static constexpr uint64_t kProbeSlot = std::numeric_limits<uint64_t>::max() - 1;

ClosedPairs::ClosedPairs(gloo::Context &context)
    : context_(context), probe_(context.createUnboundBuffer(&byte_, 1)) {}

ClosedPairs::~ClosedPairs() = default;

std::vector<int> ClosedPairs::list() {
  std::lock_guard<std::mutex> hold(lock_);
  std::vector<int> closed;
  for (int r = 0; r < context_.size; ++r) {
    if (r == context_.rank)
      continue;
    try {
      probe_->send(r, kProbeSlot, 0, 0);
    } catch (const std::exception &) {
      closed.push_back(r);
    }
  }
  return closed;
}

} // namespace oar::runtime
