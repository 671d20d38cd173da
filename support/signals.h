// SIGTERM/SIGINT handling: loops poll stopRequested() and stop cleanly; SIGUSR1 asks for a
// checkpoint. The signals are taken by a watcher thread and blocked in every other thread, so no
// working thread's blocking call is ever interrupted: call the installers from main before any
// thread starts (a thread started earlier would take the signal's default action, ending the
// process).
#pragma once

#include "llvm/Support/Error.h"

namespace oar::runtime {

/// What SIGTERM and SIGINT do before anything has called stopRequested().
enum class BeforeFirstPoll {
  SetFlag, ///< only set the flag (a launcher, whose loop must stop the nodes it started)
  End,     ///< end the process, as their default action does (a node: see below)
};
/// Makes SIGTERM and SIGINT only set a flag; with BeforeFirstPoll::End, only once something has
/// polled the flag, and end the process before. A node still loading its programs or data polls
/// nothing, and may wait in a blocking open (a FIFO, a hung mount) that a flag would never stop;
/// before its loops start it has nothing to finish.
/// An error when the watcher thread cannot start.
llvm::Error installStopHandlers(BeforeFirstPoll before = BeforeFirstPoll::SetFlag);
/// True once SIGTERM or SIGINT arrived. The first call marks the flag as polled.
bool stopRequested();
/// The signal that asked to stop (0 if none).
int stopSignal();

/// Makes SIGUSR1 only set a flag (its default action ends the process): a checkpointing pserver
/// writes one after its next step (`kill -USR1 PID`).
llvm::Error installCheckpointHandler();
/// True once per SIGUSR1 since the last call.
bool takeCheckpointRequest();

/// Unblocks the watched signals in a child process between fork() and exec(): the blocked mask
/// survives exec, and the program run must get its SIGTERM. Async-signal-safe.
void unblockWatchedSignals();

} // namespace oar::runtime
