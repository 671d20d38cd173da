// A pserver's settings: what a user may set on the pserver role (its flags, with their defaults
// and help, come from the declaration in pserver_options.cc).
#pragma once

#include <chrono>

#include "runtime/tables/table_memory.h"

namespace oar {
class OptionTable; // support/option_table.h
}

namespace oar::runtime {

struct PserverOptions {
  /// Distributed tables' memory (--table-memory-mb, --table-full): rows and admission counters
  /// stay within it; the log says what the limit did.
  TableBudget tableBudget;
  /// A gradient or table rows holding NaN or inf: false refuses them (the trainer hears why and
  /// a sync job ends); true skips the update they belong to for that step (--nonfinite-grads=skip,
  /// as a loss scaler skips a step) and answers OK. Never applied either way.
  bool skipNonFinite = false;
  /// Hybrid: how long a job that lost a trainer waits for its other trainers' next message (each
  /// is told why then) before it ends naming the silent ones, which died with the failure.
  std::chrono::milliseconds brokenJobGrace{5000};

  /// Declares these settings' flags (--table-memory-mb, --table-full, --nonfinite-grads).
  void declare(OptionTable &table);
};

} // namespace oar::runtime
