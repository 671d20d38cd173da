// What a user sets on the scheduler role (--max-trainers, --heartbeat-timeout-ms).
#pragma once

#include <chrono>
#include <cstdint>

#include "runtime/cluster/scheduler_timeouts.h"

namespace oar {
class OptionTable; // support/option_table.h
}

namespace oar::runtime {

struct SchedulerSettings {
  /// Elastic: the most trainers running at once; a join beyond it is refused.
  int64_t maxTrainers = 64;
  /// Nodes send a heartbeat every second; one silent this long is gone.
  std::chrono::milliseconds heartbeatTimeout = kDefaultHeartbeatTimeout;

  void declare(OptionTable &table);
};

} // namespace oar::runtime
