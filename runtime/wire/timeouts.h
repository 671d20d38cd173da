// The waits between a job's nodes, each bounded: their defaults are defined here only (the
// flags of oar-executor take theirs from here).
#pragma once

#include <chrono>

namespace oar::runtime {

/// Timeouts every wait in the runtime is bounded by.
struct Timeouts {
  std::chrono::milliseconds connect{30000}; ///< reaching a pserver (retries with backoff)
  std::chrono::milliseconds reply{60000};   ///< a pserver's reply to one request
  std::chrono::milliseconds barrier{60000}; ///< a pserver waiting for the other trainers
  std::chrono::milliseconds idle{600000};   ///< a pserver hearing from no trainer at all
};

} // namespace oar::runtime
