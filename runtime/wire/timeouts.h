// The waits between a job's nodes, each bounded: their defaults are defined here only, and so
// are their flags (declare()).
#pragma once

#include <chrono>

namespace oar {
class OptionTable; // support/option_table.h
}

namespace oar::runtime {

/// Timeouts every wait in the runtime is bounded by.
struct Timeouts {
  std::chrono::milliseconds connect{30000}; ///< reaching a pserver (retries with backoff)
  std::chrono::milliseconds reply{60000};   ///< a pserver's reply to one request
  std::chrono::milliseconds barrier{60000}; ///< a pserver waiting for the other trainers
  std::chrono::milliseconds idle{600000};   ///< a pserver hearing from no trainer at all

  /// Declares --connect-timeout-ms, --reply-timeout-ms, --barrier-timeout-ms and
  /// --idle-timeout-ms.
  void declare(OptionTable &table);
};

} // namespace oar::runtime
