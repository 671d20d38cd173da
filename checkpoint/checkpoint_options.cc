// The checkpoint settings' flags.
#include "checkpoint/checkpoint_options.h"

#include "support/option_table.h"

namespace oar {

void CheckpointOptions::declare(OptionTable &t) {
  t.add("checkpoint-dir", dir, "DIR",
        "write checkpoints to DIR (one machine: DIR/step-<N>/; pservers: DIR/pserver.<i>/) and "
        "resume from the newest when started again");
  t.add("checkpoint-every", every,
        "steps between checkpoints (0: only on request, kill -USR1 PID, and at the end)", 0);
  t.add("checkpoint-keep", keep, "checkpoints kept, newest first (at least 2)");
}

} // namespace oar
