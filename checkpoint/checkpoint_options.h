// Where and how often a run checkpoints (--checkpoint-dir, --checkpoint-every,
// --checkpoint-keep): the same settings on one machine, on a collective job's trainer 0 and on a
// job's pservers.
#pragma once

#include <cstdint>
#include <string>

namespace oar {

class OptionTable; // support/option_table.h

struct CheckpointOptions {
  /// Checkpoints go here (one machine: DIR/step-<N>/; pservers: DIR/pserver.<i>/), and a run
  /// started again resumes from the newest. Empty: none.
  std::string dir;
  /// Steps between checkpoints; 0: only on request (kill -USR1 PID) and at the end.
  int64_t every = 100;
  /// Checkpoints kept, newest first (at least 2 are).
  int keep = 3;

  void declare(OptionTable &table);
};

} // namespace oar
