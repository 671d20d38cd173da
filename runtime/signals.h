// SIGTERM/SIGINT handling: loops poll stopRequested() and stop cleanly; SIGUSR1 asks for a
// checkpoint.
#pragma once

namespace oar::runtime {

/// What SIGTERM and SIGINT do before anything has called stopRequested().
enum class BeforeFirstPoll {
  SetFlag, ///< only set the flag (a launcher, whose loop must stop the nodes it started)
  End,     ///< end the process, as their default action does (a node: see below)
};
/// Installs handlers for SIGTERM and SIGINT that only set a flag; with BeforeFirstPoll::End,
/// only once something has polled the flag. A node still loading its programs or data polls
/// nothing, and a blocking open (a FIFO, a hung mount) is retried after the handler returns, so
/// a flag alone would never stop it; before its loops start it has nothing to finish.
void installStopHandlers(BeforeFirstPoll before = BeforeFirstPoll::SetFlag);
/// True once SIGTERM or SIGINT arrived. The first call marks the flag as polled.
bool stopRequested();
/// The signal that asked to stop (0 if none).
int stopSignal();

/// Installs a handler for SIGUSR1 that only sets a flag: a checkpointing pserver writes one
/// after its next step (`kill -USR1 PID`).
void installCheckpointHandler();
/// True once per SIGUSR1 since the last call.
bool takeCheckpointRequest();

} // namespace oar::runtime
