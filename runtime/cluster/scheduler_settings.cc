// The scheduler role's flags.
#include "runtime/cluster/scheduler_settings.h"

#include "support/option_table.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

void SchedulerSettings::declare(OptionTable &t) {
  t.add("max-trainers", maxTrainers,
        "scheduler, with --elastic: the most trainers running at once; joins beyond are refused");
  static const std::string heartbeatHelp =
      llvm::formatv("scheduler: a node silent this long is gone (heartbeats every {0} ms; at "
                    "least {1})",
                    kHeartbeatEvery.count(), kMinHeartbeatTimeout.count());
  t.add("heartbeat-timeout-ms", heartbeatTimeout, heartbeatHelp);
}

} // namespace oar::runtime
